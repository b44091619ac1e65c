"""Notebook DataFrames as SQL tables: sources, names, change signatures and the scanned frame.

Everything here is pure pandas and knows nothing of DuckDB, so the rules can be read (and
tested) on their own:

- a *source* is a DataFrame or a zero-argument callable returning one (a notebook variable
  looked up by name each time, so ``sales = sales[sales.x > 0]`` is seen);
- a *table name* is snake_case, because the model writes it unquoted in SQL;
- a *signature* (object identity, shape, column labels, dtypes, index shape) tells cheaply
  whether the schema the model was shown is still true, without hashing any data;
- the *SQL frame* is what DuckDB scans: column labels as strings (ints, ``MultiIndex``
  tuples), meaningful index levels as columns, and the few dtypes DuckDB cannot scan turned
  into ones it can. It shares the original's data (pandas copy-on-write), so nothing is
  copied except those converted columns and exposed index levels.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from relay_nb.errors import ConfigurationError
from relay_nb.redaction import redact

__all__ = [
    "TABLE_NAME",
    "FrameError",
    "FrameSource",
    "SQLFrame",
    "check_table_name",
    "normalize_sources",
    "resolve",
    "signature",
    "sql_frame",
]

FrameSource = pd.DataFrame | Callable[[], pd.DataFrame]
"""A DataFrame, or a function re-read before every query and prompt."""

TABLE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_MAX_CATEGORIES_SHOWN = 8
_PANDAS_MAJOR = int(pd.__version__.split(".", 1)[0])
_MAX_ERROR_CHARS = 200


class FrameError(Exception):
    """A source cannot be read as a table right now; the message names the table and the fix.

    The connector raises it as ``ConfigurationError`` at connect time and as
    ``QueryExecutionError`` at query time, so the same words reach the analyst and the model.
    ``reason`` is the few words the prompt shows next to a table that broke after it worked.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def check_table_name(name: object) -> str:
    """Table names are written unquoted by the model, so they must be plain snake_case."""
    if not isinstance(name, str) or not TABLE_NAME.match(name):
        raise ConfigurationError(
            f"table name {name!r} must be snake_case: a lowercase letter, then up to 62 "
            "lowercase letters, digits or underscores (e.g. 'orders' or 'sales_2026'); "
            "rename the key, e.g. {'sales_2026': df}"
        )
    return name


def normalize_sources(connector_id: str, frames: object) -> dict[str, FrameSource]:
    """One source becomes a table named like the connector; a mapping, one table per key."""
    if isinstance(frames, Mapping):
        if not frames:
            raise ConfigurationError(
                "no DataFrames given; pass at least one, e.g. {'orders': orders_df}"
            )
        return {check_table_name(k): _check_source(k, v) for k, v in frames.items()}
    return {connector_id: _check_source(connector_id, frames)}


def _check_source(table: str, value: object) -> FrameSource:
    if isinstance(value, pd.DataFrame):
        return value
    if callable(value) and not isinstance(value, type):
        # checked when called: at connect, then before every query and prompt
        return cast("Callable[[], pd.DataFrame]", value)
    raise ConfigurationError(f"table {table!r}: {_not_a_frame(value)}")


def _not_a_frame(value: object) -> str:
    if isinstance(value, pd.Series):
        return (
            "got a pandas Series, not a DataFrame; pass series.to_frame() (or "
            "series.reset_index() to keep its index as a column)"
        )
    return (
        f"got {type(value).__name__}, not a pandas DataFrame; pass a DataFrame or a "
        "function that returns one"
    )


def resolve(table: str, source: FrameSource) -> pd.DataFrame:
    """The DataFrame behind ``source`` now; a callable is called (it may raise anything)."""
    if isinstance(source, pd.DataFrame):
        return source
    try:
        value = source()
    except Exception as exc:
        text = redact(f"{type(exc).__name__}: {exc}")
        if len(text) > _MAX_ERROR_CHARS:
            text = text[: _MAX_ERROR_CHARS - 1] + "…"
        raise FrameError(
            f"table {table!r}: reading its DataFrame failed ({text}); define the variable "
            "again in the notebook, or connect the frame anew",
            f"reading it failed ({type(exc).__name__})",
        ) from None
    if not isinstance(value, pd.DataFrame):
        raise FrameError(
            f"table {table!r}: its source now returns {type(value).__name__}, not a pandas "
            "DataFrame; assign a DataFrame to the variable again",
            f"it is now a {type(value).__name__}, not a DataFrame",
        )
    return value


def signature(frame: pd.DataFrame) -> tuple[Any, ...]:
    """What the model's schema depends on, in O(columns): no data is read or hashed.

    Identity covers a variable rebound to a new frame; shape, labels and dtypes cover in-place
    changes (a new column, appended rows, ``astype``). The connector keeps a reference to the
    frame, so an identity cannot be reused by another object while it is compared.
    """
    index = frame.index
    index_dtypes = tuple(index.dtypes) if isinstance(index, pd.MultiIndex) else (index.dtype,)
    return (
        id(frame),
        frame.shape,
        tuple(frame.columns),
        tuple(frame.dtypes),
        type(index).__name__,
        tuple(index.names),
        index_dtypes,
    )


@dataclass(frozen=True)
class SQLFrame:
    """What DuckDB scans for one table, and what the prompt should say about its columns."""

    frame: pd.DataFrame
    notes: dict[str, str] = field(default_factory=dict)
    """Column name -> a short comment (index level, categories, time zone, conversion)."""
    nullable: dict[str, bool] = field(default_factory=dict)
    """Column name -> whether its dtype can hold a missing value (ints and bools cannot)."""


def sql_frame(table: str, frame: pd.DataFrame) -> SQLFrame:
    """The frame DuckDB scans: string labels, meaningful index levels, scannable dtypes.

    Raises :class:`FrameError` when two columns would share a name in SQL (DuckDB names are
    case-insensitive and it would silently rename one).
    """
    names = [_column_name(label, position) for position, label in enumerate(frame.columns)]
    _refuse_duplicates(table, names)
    index_levels = _exposed_index_levels(frame, {n.lower() for n in names})
    conversions = {
        position: converted
        for position, (_, series) in enumerate(frame.items())
        if (converted := _scannable(series)) is not None
    }
    view = frame
    if names != list(frame.columns) or index_levels or conversions:
        view = _relabel(frame, names)
        for position, (series, _note) in conversions.items():
            view.isetitem(position, series)
        for offset, (name, level) in enumerate(index_levels):
            view.insert(offset, name, frame.index.get_level_values(level))
    notes: dict[str, str] = {}
    nullable: dict[str, bool] = {}
    view_dtypes, dtypes = list(view.dtypes), list(frame.dtypes)
    for offset, (name, _level) in enumerate(index_levels):
        notes[name] = "index"
        nullable[name] = _can_be_missing(view_dtypes[offset])
    for position, name in enumerate(names):
        dtype = dtypes[position]
        note = conversions[position][1] if position in conversions else _dtype_note(dtype)
        if note:
            notes[name] = note
        nullable[name] = _can_be_missing(view_dtypes[len(index_levels) + position])
    return SQLFrame(view, notes, nullable)


def _relabel(frame: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """A new frame over the same data with new column labels: never a copy of the data, so
    the columns converted or inserted into it afterwards leave the original untouched."""
    if _PANDAS_MAJOR >= 3:  # copy-on-write always: the result shares the original's arrays
        return frame.set_axis(names, axis=1)
    return frame.set_axis(names, axis=1, copy=False)  # pandas 2 copies unless told not to


def _column_name(label: object, position: int) -> str:
    """``"amount"`` as is, ``3`` -> ``"3"``, ``("amount", "sum")`` -> ``"amount_sum"``."""
    if isinstance(label, tuple):
        parts = [str(p) for p in label if not _is_blank(p)]
        text = "_".join(parts)
    elif _is_blank(label):
        text = ""
    else:
        text = str(label)
    text = text.strip()
    return text if text else f"column_{position}"


def _is_blank(value: object) -> bool:
    if value is None or (isinstance(value, str) and not value.strip()):
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # array-like labels: not blank
        return False


def _refuse_duplicates(table: str, names: list[str]) -> None:
    seen: dict[str, str] = {}
    for name in names:
        other = seen.get(name.lower())
        if other is None:
            seen[name.lower()] = name
        else:
            clash = (
                "have the same name" if other == name else "differ only in case, which SQL ignores"
            )
            raise FrameError(
                f"table {table!r}: columns {other!r} and {name!r} {clash}; rename one, e.g. "
                "df = df.rename(columns={...}), or set unique labels with df.columns = [...]",
                "two columns share a name",
            )


def _exposed_index_levels(frame: pd.DataFrame, taken: set[str]) -> list[tuple[str, int]]:
    """Index levels worth a column: named ones, or one unnamed index that is not positions.

    ``df.set_index("date")`` hides the date from SQL unless it comes back as a column; an
    unnamed integer index (0..n, or what is left of it after a filter) is only row numbers.
    A level whose name is already a column is skipped (``set_index(..., drop=False)``).
    """
    index = frame.index
    if isinstance(index, pd.RangeIndex) and index.name is None:
        return []
    levels: list[tuple[str, int]] = []
    for level, label in enumerate(index.names):
        if label is None:
            if index.nlevels > 1 or pd.api.types.is_integer_dtype(index.dtype):
                continue
            name = "index"
        else:
            name = _column_name(label, level)
        if name.lower() in taken:
            continue
        taken.add(name.lower())
        levels.append((name, level))
    return levels


def _scannable(series: pd.Series) -> tuple[pd.Series, str] | None:
    """Dtypes DuckDB cannot scan, converted (a copy of that column only), with a note."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if _text_kind(dtype.categories.dtype) is None:
            return None
        # pd.cut bins and the like: the categories become their text, order kept, codes shared
        renamed = series.cat.rename_categories([str(c) for c in dtype.categories])
        return renamed, _dtype_note(renamed.dtype)
    if isinstance(dtype, pd.SparseDtype):
        return series.sparse.to_dense(), ""
    kind = _text_kind(dtype)
    if kind is not None:
        return series.astype("string"), f"{kind} as text"
    return None


def _text_kind(dtype: object) -> str | None:
    """Dtypes DuckDB cannot scan whose text is what an analyst reads anyway."""
    if isinstance(dtype, pd.PeriodDtype):
        return str(dtype)  # period[M]
    if isinstance(dtype, pd.IntervalDtype):
        return "interval"
    if isinstance(dtype, np.dtype) and dtype.kind == "c":
        return "complex"
    return None


def _dtype_note(dtype: object) -> str:
    if isinstance(dtype, pd.CategoricalDtype):
        categories = [str(c) for c in dtype.categories[:_MAX_CATEGORIES_SHOWN]]
        more = ", …" if len(dtype.categories) > _MAX_CATEGORIES_SHOWN else ""
        return f"categories: {', '.join(categories)}{more}"
    if isinstance(dtype, pd.DatetimeTZDtype):
        return f"time zone {dtype.tz}; SQL sees UTC"
    return ""


def _can_be_missing(dtype: object) -> bool:
    return not (isinstance(dtype, np.dtype) and dtype.kind in "iub")
