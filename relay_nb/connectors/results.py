"""Turn fetched rows into the analyst's DataFrame and the model's compact preview.

Shared by every connector kind: SQL rows, Mongo documents and HTTP JSON records all end as a
``QueryResult`` whose ``df`` the notebook shows and whose preview the model reads.

The two audiences want different things: the notebook keeps every fetched row with correct
dtypes; the model gets column names, types and the first rows within a token cap, because a
200-row table in the prompt costs money and drowns the question.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

__all__ = ["QueryResult", "build_frame", "frame_from_records", "preview_for_model"]


class QueryResult(BaseModel):
    """One executed query: the DataFrame plus what ran and how it went.

    ``executed_sql`` is what actually ran, in ``language``: SQL (carrying ``LIMIT
    row_limit + 1``: the extra row is how ``truncated`` tells "exactly row_limit rows" from
    "more existed"; it is dropped from ``df``), a Mongo query as canonical JSON, or an HTTP
    request line. The name stays ``executed_sql`` because SQL is the common case.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    df: pd.DataFrame
    executed_sql: str
    row_count: int
    truncated: bool
    elapsed_ms: float
    connector_id: str = ""
    submitted_sql: str = ""
    tables: tuple[str, ...] = ()
    language: str = "sql"
    """How ``executed_sql`` is written: ``"sql"``, ``"mongo"`` (JSON) or ``"http"``."""

    def __repr__(self) -> str:
        more = ", truncated" if self.truncated else ""
        return f"<QueryResult {self.row_count} rows{more}, {self.elapsed_ms:.0f} ms>"


def build_frame(
    columns: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
    *,
    temporal_columns: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Rows to a DataFrame with honest dtypes.

    Decimals become float64 (as ``pandas.read_sql`` does), all-``date`` columns become
    datetime64, and columns the catalog declares temporal but the driver returned as text
    (SQLite) are parsed as ISO 8601 when every value parses — otherwise left untouched.
    """
    frame = pd.DataFrame.from_records(list(rows), columns=list(columns), coerce_float=True)
    if frame.columns.has_duplicates:
        return frame  # positional access only; conversions below address columns by name
    for name in frame.columns:
        series = frame[name]
        # pandas 3 infers text as its own string dtype, older pandas leaves it object
        if not (pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series)):
            continue
        values = series.dropna()
        if values.empty:
            continue
        if all(isinstance(v, dt.date) and not isinstance(v, dt.datetime) for v in values):
            frame[name] = pd.to_datetime(series)
        elif (
            temporal_columns
            and name in temporal_columns
            and all(isinstance(v, str) for v in values)
        ):
            frame[name] = _parse_iso(series)
    return frame


def frame_from_records(records: Sequence[Mapping[str, Any]], *, max_depth: int = 1) -> pd.DataFrame:
    """JSON-like records (Mongo documents, API responses) to a flat DataFrame.

    Nested objects become dotted columns down to ``max_depth`` levels (``customer.name``);
    deeper objects and lists stay one cell each, serialised as compact JSON so the frame
    holds only scalars (a list cell cannot be sorted, grouped or shown in a pager).
    Callers convert driver types (ObjectId, Decimal128…) to plain Python first.
    """
    if not records:
        return pd.DataFrame()
    frame = pd.json_normalize(list(records), max_level=max_depth)
    for name in frame.columns:
        series = frame[name]
        if series.map(lambda v: isinstance(v, (list, dict, tuple))).any():
            frame[name] = series.map(_compact_json)
    return build_frame(list(frame.columns), list(frame.itertuples(index=False, name=None)))


def _compact_json(value: Any) -> Any:
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, default=str, separators=(",", ":"), ensure_ascii=False)
    return value


def _parse_iso(series: pd.Series) -> pd.Series:
    try:
        return pd.to_datetime(series, format="ISO8601")
    except (ValueError, TypeError):
        return series


def preview_for_model(result: QueryResult, *, max_chars: int = 4000, max_rows: int = 50) -> str:
    """Columns with dtypes, then CSV rows until ``max_chars``; always says how many exist."""
    frame = result.df
    header = f"{result.row_count} row{'s' if result.row_count != 1 else ''}"
    if result.truncated:
        header += (
            " (stopped at the row limit; more rows exist — aggregate or filter in the query "
            "instead of paging)"
        )
    columns = ", ".join(f"{name} {dtype}" for name, dtype in frame.dtypes.items())
    lines = [header, f"columns: {columns}" if columns else "columns: (none)"]
    budget = max_chars - sum(len(line) + 1 for line in lines)
    buffer = io.StringIO()
    frame.head(max_rows).to_csv(buffer, index=False, lineterminator="\n")
    shown = 0
    csv_lines = buffer.getvalue().splitlines()
    kept: list[str] = []
    for index, line in enumerate(csv_lines):
        if len(line) + 1 > budget:
            break
        kept.append(line)
        budget -= len(line) + 1
        shown = index  # header line is index 0
    lines += kept
    if shown < len(frame):
        lines.append(f"… showing {shown} of {result.row_count} rows")
    return "\n".join(lines)
