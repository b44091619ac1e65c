"""Turn fetched rows into the analyst's DataFrame and the model's compact preview.

Shared by every connector kind: SQL rows, Mongo documents and HTTP JSON records all end as a
``QueryResult`` whose ``df`` the notebook shows and whose preview the model reads.

The two audiences want different things: the notebook keeps every fetched row with correct
dtypes; the model gets column names, types and the first rows within a token cap, because a
200-row table in the prompt costs money and drowns the question.

The preview's layout is data-proof: values are CSV (a value holding a line end or a quote is
quoted, so it cannot start a line of its own, and the character budget keeps or drops whole
records), and a column name holding a line break, a comma or a quote is written as a JSON
string in the ``columns:`` line. Data - which someone other than the user wrote - can
therefore never forge the row count, the column list or the "showing" line that the model
reads as relay_nb's own.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import decimal
import io
import json
import re
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import AfterValidator, BaseModel, ConfigDict

from relay_nb.connectors.bounds import (
    DEFAULT_MAX_COLUMNS,
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    ResultBudget,
)
from relay_nb.connectors.preflight import Estimate, Preflight, approve_if_costly
from relay_nb.redaction import SecretPatterns, secret_patterns
from relay_nb.tools import ToolResult, short_float

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "QueryResult",
    "RowTotal",
    "answer_query",
    "build_frame",
    "column_label",
    "csv_records",
    "csv_text",
    "frame_from_records",
    "preview_for_model",
    "redact_rows",
]


def _a_frame(value: Any) -> Any:
    import pandas as pd

    if not isinstance(value, pd.DataFrame):
        raise ValueError(f"df must be a pandas DataFrame, not {type(value).__name__}")
    return value


if TYPE_CHECKING:
    Frame = pd.DataFrame
else:
    # pandas is imported by the first result, not by the module: connecting a database
    # (which imports this module) stays ~200 ms faster (docs/performance.md)
    Frame = Annotated[Any, AfterValidator(_a_frame)]


class RowTotal(BaseModel):
    """How many rows a query cut at its row limit would have returned in all: ``counted``
    (a count that ended), ``more_than`` (the count stopped at its own cap: at least
    ``rows``), or ``estimated`` (the engine's planner guessed it; it can be far off)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rows: int
    how: Literal["counted", "more_than", "estimated"]

    def describe(self) -> str:
        """``"3,503"``, ``"more than 100,000"``, ``"≈87,575"``."""
        prefix = {"counted": "", "more_than": "more than ", "estimated": "≈"}[self.how]
        return f"{prefix}{self.rows:,}"


class QueryResult(BaseModel):
    """One executed query: the DataFrame plus what ran and how it went.

    ``executed_sql`` is what actually ran, in ``language``: SQL (carrying ``LIMIT
    row_limit + 1``: the extra row is how ``truncated`` tells "exactly row_limit rows" from
    "more existed"; it is dropped from ``df``), a Mongo query as canonical JSON, or an HTTP
    request line. The name stays ``executed_sql`` because SQL is the common case.
    """

    model_config = ConfigDict(frozen=True)

    df: Frame
    executed_sql: str
    row_count: int
    truncated: bool
    elapsed_ms: float
    connector_id: str = ""
    submitted_sql: str = ""
    tables: tuple[str, ...] = ()
    language: str = "sql"
    """How ``executed_sql`` is written: ``"sql"``, ``"mongo"`` (JSON) or ``"http"``."""
    limit: Literal["rows", "bytes"] = "rows"
    """Which bound ``truncated`` means: the row limit, or the result's byte limit."""
    notes: tuple[str, ...] = ()
    """What the result's bounds did (values clipped, reading stopped at the byte limit,
    columns left out), in sentences for the model and the analyst."""
    dialect: str = ""
    """The sqlglot dialect ``executed_sql`` is written in (SQL results only), so a view can
    lay it out for reading."""
    row_limit: int | None = None
    """The connector's row limit when ``executed_sql`` fetches one row past it (``LIMIT
    row_limit + 1``): views show the analyst's limit, not that internal fetch size."""
    estimate: Estimate | None = None
    """What the engine expected the query to scan, asked before it ran (the connector's
    preflight, :mod:`relay_nb.connectors.preflight`); None without one."""
    total: RowTotal | None = None
    """For a result cut at the row limit, how many rows the query had in all, where the
    connector could find out cheaply (:mod:`relay_nb.connectors.sql.total`); else None."""

    def __repr__(self) -> str:
        more = ", truncated" if self.truncated else ""
        return f"<QueryResult {self.row_count} rows{more}, {self.elapsed_ms:.0f} ms>"


def build_frame(
    columns: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
    *,
    temporal_columns: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Rows to a DataFrame with honest dtypes, every known secret redacted.

    Redaction happens here because every connector's rows pass here (SQL, the DataFrame
    connector, Mongo documents, HTTP records, MCP records, web-search hits): a credential
    stored in a table never reaches the prompt, the trace, the events or a saved notebook.
    Decimals become float64 (as ``pandas.read_sql`` does), all-``date`` columns become
    datetime64, and columns the catalog declares temporal but the driver returned as text
    (SQLite) are parsed as ISO 8601 when every value parses — otherwise left untouched.
    Integers with NULLs among them become pandas' nullable ``Int64`` (``UInt64`` past its
    range), not float64 with NaN, which rounds every value past 2**53 (ClickHouse's UInt64
    ids and hashes). Repeated column names are made distinct (:func:`distinct_columns`).
    """
    import pandas as pd

    columns, rows = redact_rows(columns, rows)
    columns = distinct_columns(columns)
    records = list(rows)
    frame = pd.DataFrame.from_records(records, columns=columns, coerce_float=True)
    temporal = temporal_columns or {}
    # decided on the driver's values, not on Series: most columns are settled by their
    # first value, and a 1-row result then costs no pandas call beyond the frame itself
    for index, name in enumerate(columns):
        kind = _temporal_kind(records, index, text_is_temporal=name in temporal)
        if kind == "date":
            frame[name] = pd.to_datetime(frame[name])
        elif kind == "iso":
            # the names are unique (checked above), so a name selects one Series
            frame[name] = _parse_iso(cast("pd.Series", frame[name]))
        elif frame.dtypes.iloc[index] == "float64" and _ints_with_missing(records, index):
            frame[name] = _nullable_ints([record[index] for record in records])
    return frame


def distinct_columns(names: Sequence[Any]) -> list[Any]:
    """``names`` with each repeat made distinct: ``SELECT o.*, c.*`` gives ``id`` and
    ``id_2`` (``_3``… further, past any name the result already has), so ``df["id"]`` is
    one column and every column can be named."""
    if len(set(names)) == len(names):
        return list(names)
    taken = set(names)
    seen: set[Any] = set()
    out = []
    for name in names:
        if name in seen and isinstance(name, str):
            n = 2
            while f"{name}_{n}" in taken:
                n += 1
            name = f"{name}_{n}"
            taken.add(name)
        seen.add(name)
        out.append(name)
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ints_with_missing(records: Sequence[tuple[Any, ...]], index: int) -> bool:
    """Every value an integer or missing, and one missing at least (pandas made it float)."""
    values = [record[index] for record in records]
    first = next((value for value in values if not _missing(value)), None)
    return (
        _is_int(first)
        and any(_missing(value) for value in values)
        and all(_missing(value) or _is_int(value) for value in values)
    )


def _nullable_ints(values: list[Any]) -> Any:
    """The integers exactly, missing ones as ``pd.NA``: Int64, UInt64, or objects past both
    (ClickHouse's Int128 and UInt256)."""
    import pandas as pd

    cells = [None if _missing(value) else value for value in values]
    present = [value for value in cells if value is not None]
    if all(-(1 << 63) <= value < 1 << 63 for value in present):
        return pd.array(cells, dtype="Int64")
    if all(0 <= value < 1 << 64 for value in present):
        return pd.array(cells, dtype="UInt64")
    return pd.Series(cells, dtype=object)


def _is_date(value: Any) -> bool:
    return isinstance(value, dt.date) and not isinstance(value, dt.datetime)


def _missing(value: Any) -> bool:
    """None, NaN, NaT or pd.NA: what ``dropna`` skipped (records from Mongo or HTTP carry
    NaN where SQL drivers give None)."""
    if value is None:
        return True
    if isinstance(value, float):
        return value != value
    pd = sys.modules.get("pandas")  # no NaT or NA exists before pandas is imported
    return pd is not None and (value is pd.NaT or value is pd.NA)


def _temporal_kind(
    records: Sequence[tuple[Any, ...]], index: int, *, text_is_temporal: bool
) -> Literal["date", "iso"] | None:
    """``"date"`` when every value of the column is a ``date`` (None aside), ``"iso"`` when
    the catalog calls it temporal and every value is text, else None."""
    values = (record[index] for record in records)
    first = next((value for value in values if not _missing(value)), None)
    if _is_date(first):
        return "date" if all(_missing(value) or _is_date(value) for value in values) else None
    if text_is_temporal and isinstance(first, str):
        return "iso" if all(_missing(v) or isinstance(v, str) for v in values) else None
    return None


def redact_rows(
    columns: Sequence[Any], rows: Sequence[tuple[Any, ...]]
) -> tuple[list[Any], Sequence[tuple[Any, ...]]]:
    """Column names and cells with every known secret replaced by ``[REDACTED]``: text,
    binary, and containers (a JSON value, an array, a struct) walked keys and all. The rows
    come back untouched (the same list) when nothing matched.

    Column by column: a column of text is searched as one string (its values joined, so every
    value's match is found there too), and only a column where the search finds something
    is redacted value by value. Numbers, dates and other scalars cannot hold a secret and
    are not looked at. 100,000 rows cost milliseconds,
    not a regex call per cell."""
    patterns = secret_patterns()
    if patterns is None:
        return list(columns), rows
    names = [patterns.redact(c) for c in columns]
    if len(rows) == 0:  # (rows may be an array, whose truth is ambiguous)
        return names, rows
    width = len(rows[0])
    if any(len(row) != width for row in rows):
        return names, _redact_each(patterns, rows)
    changed: dict[int, list[Any]] = {}
    for index, values in enumerate(zip(*rows, strict=True)):
        kinds = set(map(type, values))
        if kinds <= _SCALARS:
            continue
        if kinds <= _TEXT and patterns.text.search("\0".join(filter(None, values))) is None:
            continue  # (a match across two values only costs the pass below)
        cleaned = [patterns.redact(v) if isinstance(v, _REDACTABLE) else v for v in values]
        if any(a is not b for a, b in zip(cleaned, values, strict=True)):
            changed[index] = cleaned
    if not changed:
        return names, rows
    out: list[tuple[Any, ...]] = []
    for position, row in enumerate(rows):
        cells = list(row)
        for index, cleaned in changed.items():
            cells[index] = cleaned[position]
        out.append(tuple(cells))
    return names, out


def _redact_each(
    patterns: SecretPatterns, rows: Sequence[tuple[Any, ...]]
) -> Sequence[tuple[Any, ...]]:
    """Rows of differing lengths (records of a connector that keeps them so): cell by cell."""
    out: list[tuple[Any, ...]] | None = None
    for index, row in enumerate(rows):
        cleaned = tuple(patterns.redact(v) if isinstance(v, _REDACTABLE) else v for v in row)
        if out is None and any(a is not b for a, b in zip(cleaned, row, strict=True)):
            out = list(rows[:index])
        if out is not None:
            out.append(cleaned)
    return out if out is not None else rows


_TEXT = frozenset({str, type(None)})
_SCALARS = frozenset(
    {
        type(None), bool, int, float, dt.date, dt.datetime, dt.time, dt.timedelta,
        decimal.Decimal, uuid.UUID,
    }
)  # fmt: skip
"""Types whose values hold no text, so no secret (exact types: a subclass of int or str
could carry anything in its repr, so it is looked at)."""
_REDACTABLE = (str, bytes, bytearray, memoryview, dict, list, tuple)


def frame_from_records(
    records: Iterable[Mapping[str, Any]],
    *,
    max_depth: int = 1,
    max_columns: int = DEFAULT_MAX_COLUMNS,
    budget: ResultBudget | None = None,
) -> pd.DataFrame:
    """JSON-like records (Mongo documents, API responses) to a flat DataFrame, bounded.

    Nested objects become dotted columns down to ``max_depth`` levels (``customer.name``);
    deeper objects and lists stay one cell each, serialised as compact JSON so the frame
    holds only scalars (a list cell cannot be sorted, grouped or shown in a pager).
    At most ``max_columns`` columns are kept, in order of first appearance: a record with
    tens of thousands of keys costs a walk of its keys, not a DataFrame column each. Records
    are taken one at a time (a generator is read only as far as the budget allows) and go
    through ``budget`` (values clipped, stop at the result's byte limit); what was left out
    is added to its notes. Callers convert driver types (ObjectId, Decimal128…) first.
    """
    if budget is None:
        budget = ResultBudget(DEFAULT_MAX_VALUE_BYTES, DEFAULT_MAX_RESULT_BYTES, unit="records")
    patterns = secret_patterns()
    columns: dict[str, None] = {}
    dropped: dict[str, None] = {}
    rows: list[tuple[Any, ...]] = []
    for record in records:
        flat: dict[str, Any] = {}
        _flatten(record, "", 0, max_depth, flat)
        del record  # the next one is read while this one would still be held
        for name in flat:
            if name in columns or name in dropped:
                continue
            if len(columns) < max_columns:
                columns[name] = None
            else:
                dropped[name] = None
        row = budget.admit(tuple(_cell(flat.get(name), patterns) for name in columns))
        if row is None:
            break
        rows.append(row)
    if dropped:
        budget.extra_notes.append(
            f"the {budget.unit} have {len(columns) + len(dropped):,} fields; the first "
            f"{len(columns):,} became columns and {len(dropped):,} were left out (a limit of "
            f"{max_columns:,} columns); ask for fewer fields"
        )
    if not columns:
        import pandas as pd

        return pd.DataFrame(index=range(len(rows))) if rows else pd.DataFrame()
    width = len(columns)
    padded = [row + (None,) * (width - len(row)) for row in rows]  # later columns: missing
    return build_frame(list(columns), padded)


def _flatten(
    record: Mapping[str, Any], prefix: str, depth: int, max_depth: int, out: dict[str, Any]
) -> None:
    """One level's plain fields, then its nested objects' (as ``pandas.json_normalize``
    orders them: a flattened object's fields come after its siblings)."""
    nested: list[tuple[str, Mapping[str, Any]]] = []
    for key, value in record.items():
        if isinstance(value, Mapping) and depth < max_depth:
            nested.append((f"{prefix}{key}.", value))
        else:
            out[f"{prefix}{key}"] = value
    for inner_prefix, value in nested:
        _flatten(value, inner_prefix, depth + 1, max_depth, out)


def _cell(value: Any, patterns: SecretPatterns | None) -> Any:
    """A nested value as one compact-JSON cell, its secrets redacted *before* it is written
    (redacting the JSON text works too, since every escaped form is matched, but a value
    cut by the budget may then hold half a secret)."""
    if not isinstance(value, (list, dict, tuple)):
        return value
    if patterns is not None:
        value = patterns.redact(value)
    return json.dumps(value, default=str, separators=(",", ":"), ensure_ascii=False)


def _parse_iso(series: pd.Series) -> pd.Series:
    import pandas as pd

    try:
        return pd.to_datetime(series, format="ISO8601")
    except (ValueError, TypeError):
        return series


def preview_for_model(result: QueryResult, *, max_chars: int = 4000, max_rows: int = 50) -> str:
    """Columns with dtypes, then CSV rows until ``max_chars``; always says how many exist."""
    frame = result.df
    header = f"{result.row_count} row{'s' if result.row_count != 1 else ''}"
    if result.total is not None:
        header = f"{result.row_count} of {result.total.describe()} rows"
    if result.truncated and result.limit == "bytes":
        header += " (stopped at the result's byte limit; more rows may exist)"
    elif result.truncated:
        header += (
            " (stopped at the row limit; more rows exist — aggregate or filter in the query "
            "instead of paging)"
        )
    labels = [f"{column_label(name)} {dtype}" for name, dtype in frame.dtypes.items()]
    width = _columns_within(labels, max_chars // 3)
    columns = ", ".join(labels[:width])
    if width < len(labels):  # a wide result: the first columns, so rows still fit
        frame = frame.iloc[:, :width]
        columns += f", … {len(labels) - width:,} more columns not shown here"
    lines = [header, *(f"note: {note}" for note in result.notes)]
    lines.append(f"columns: {columns}" if labels else "columns: (none)")
    budget = max_chars - sum(len(line) + 1 for line in lines)
    shown = 0
    kept: list[str] = []
    head = frame if len(frame) <= max_rows else frame.head(max_rows)  # head() costs 50 µs
    for index, record in enumerate(csv_records(csv_text(head), "\r\n")):
        if len(record) + 1 > budget:
            break
        kept.append(record)
        budget -= len(record) + 1
        shown = index  # the header is record 0
    lines += kept
    if shown < len(frame):
        lines.append(f"… showing {shown} of {result.row_count} rows")
    return "\n".join(lines)


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV, exactly as ``to_csv(index=False, float_format=short_float)`` writes
    it, records ended by ``"\r\n"`` (so the writer quotes a value holding either character:
    with ``"\n"`` alone a lone ``"\r"`` went out unquoted, and reads as a line end).

    Columns of text, integers, booleans and float64 are written from their Python values by
    the ``csv`` module: pandas' ``to_csv`` costs ~0.7 ms even for a few rows (~1 ms with
    arrow-backed strings, whose conversion releases and retakes the GIL: under ``ask_many``
    that wait is paid on the event loop's thread), and so are the nullable Int64 and UInt64
    of integers with NULLs. Any other dtype (dates, categories, other nullable numbers)
    keeps pandas' own formatting.
    """
    cells = _plain_cells(frame)
    buffer = io.StringIO()
    if cells is None:
        frame.to_csv(buffer, index=False, lineterminator="\r\n", float_format=short_float)
        return buffer.getvalue()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(frame.columns)
    writer.writerows(zip(*cells, strict=True))
    return buffer.getvalue()


def _plain_cells(frame: pd.DataFrame) -> list[list[str]] | None:
    """Each column's cells as ``to_csv`` writes them, or None when one is not plain."""
    import numpy as np
    import pandas as pd

    if not len(frame.columns) or not all(isinstance(name, str) for name in frame.columns):
        return None
    columns: list[list[str]] = []
    for _name, series in frame.items():  # position by position, duplicate names too
        dtype, values = series.dtype, series.tolist()
        if isinstance(dtype, pd.StringDtype) or dtype == np.dtype(object):
            if not all(type(v) is str or _missing(v) for v in values):
                return None  # objects pandas writes by str(): keep its writer
            columns.append([v if type(v) is str else "" for v in values])
        elif dtype.kind in "iub" and isinstance(dtype, np.dtype):
            columns.append([str(v) for v in values])
        elif isinstance(dtype, pd.Int64Dtype | pd.UInt64Dtype):  # build_frame's NULL integers
            columns.append(["" if v is pd.NA else str(v) for v in values])
        elif dtype == np.dtype("float64"):
            columns.append([short_float(v) if v == v else "" for v in values])
        else:
            return None
    return columns


_ALWAYS_LISTED = 10
"""A result with this few columns lists them all, however long their names."""


def _columns_within(labels: Sequence[str], max_chars: int) -> int:
    """How many of the first column labels fit on a line of ``max_chars`` (at least the first
    :data:`_ALWAYS_LISTED`: only a wide result is cut)."""
    used = 0
    for count, label in enumerate(labels):
        used += len(label) + 2
        if used > max_chars and count >= _ALWAYS_LISTED:
            return count
    return len(labels)


def csv_records(text: str, terminator: str = "\n") -> list[str]:
    """CSV text whose records end with ``terminator``, split into whole records.

    A terminator inside a quoted value does not end its record, so the budget keeps or drops
    a row whole - never half a quoted value, which would swallow what follows. Only the
    terminator splits (``str.splitlines`` would also split at ``\\x85`` or U+2028 inside a
    value the writer left unquoted, and turn it into a line of its own). A record is complete
    when it holds an even number of quote characters: the writer doubles every quote inside a
    value.
    """
    records: list[str] = []
    pending: list[str] = []
    quotes = 0
    for piece in text.split(terminator):
        pending.append(piece)
        quotes += piece.count('"')
        if quotes % 2 == 0:
            records.append(terminator.join(pending))
            pending, quotes = [], 0
    if pending:
        records.append(terminator.join(pending))
    if records and records[-1] == "":
        records.pop()  # the writer's final line end
    return records


_PLAIN_LABEL = re.compile(r'[^\x00-\x1f\x7f-\x9f\u2028\u2029,"]+')


def column_label(name: Any) -> str:
    """A column name for the preview's ``columns:`` line: as is when plain, else a JSON string
    (so a line break, comma or quote in it cannot break the line; see the module docstring)."""
    text = str(name)
    if _PLAIN_LABEL.fullmatch(text) and text == text.strip():
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    return quoted.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


async def answer_query(
    sql: str,
    *,
    connector_id: str,
    preflight: Preflight,
    estimate: Callable[[str], Estimate | None],
    run: Callable[[str], Awaitable[QueryResult]],
    preview_chars: int,
) -> ToolResult:
    """A query tool's answer: with a preflight, the engine's estimate first (in a thread) and
    the analyst's approval above the threshold; then the query, the estimate kept on its
    result, and the preview the model reads."""
    estimated = None
    if preflight.enabled:
        estimated = await asyncio.to_thread(estimate, sql)
        refused = await approve_if_costly(preflight, estimated, connector_id=connector_id)
        if refused is not None:
            return refused
    result = await run(sql)
    if estimated is not None:
        result = result.model_copy(update={"estimate": estimated})
    return ToolResult(content=preview_for_model(result, max_chars=preview_chars), artifact=result)
