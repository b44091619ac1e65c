"""DuckDB's results read as Arrow batches and priced per column: a query's DataFrame at the
engine's own speed, with the same byte budget, clipping and redaction as the row path.

The row path (:mod:`~relay_nb.connectors.sql.fetch`) turns every value into a Python object,
prices it and checks it for secrets; on 100,000 DuckDB rows that was 34 times the engine's
own ``.df()``. Here each batch is priced column by column with Arrow's kernels, each value at
what :meth:`ResultBudget.admit <relay_nb.connectors.bounds.ResultBudget.admit>` charges for
it (16 bytes a value, plus 8 for a number, a boolean or a NULL, 16 for a date or a time, the
UTF-8 length of a text, the length of a binary value, 8 and its digits for a DECIMAL); the
rows up to the result's limit are kept, values over the value limit are clipped (the few,
one by one), text columns are searched for secrets as one string each, and the frame gets
the dtypes :func:`~relay_nb.connectors.results.build_frame` gives the same values (64-bit
integers, ``Int64`` with NULLs, float64 for a DECIMAL, an all-NULL column as objects …).

Only results whose every column has a type listed in :data:`_NATIVE` come this way; a list,
a struct, a UUID, a HUGEINT … and the whole result takes the row path, as does any DuckDB
without pyarrow, and any value limit under 64 bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay_nb.connectors.bounds import ResultBudget, clip_value
from relay_nb.connectors.results import build_frame, distinct_columns
from relay_nb.redaction import secret_patterns

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ColumnarOutcome", "fetch_duckdb_frame"]

_BATCH_ROWS = 8_192
_LEAST_VALUE_LIMIT = 64
"""Below this value limit a number, a date or a DECIMAL could be over it, and the row path
clips it to text; this path clips only text and binary values."""
_VALUE_OVERHEAD, _SMALL, _SIXTEEN = 16, 8, 16

_NATIVE = re.compile(
    r"(BOOLEAN|TINYINT|SMALLINT|INTEGER|BIGINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT"
    r"|DOUBLE|DECIMAL\(\d+,\d+\)|VARCHAR|DATE|TIMESTAMP|TIMESTAMP WITH TIME ZONE|TIME|BLOB)"
)
"""DuckDB's names of the column types this path reads (``str(relation.types[i])``)."""


def _native(type_name: str) -> bool:
    """A type this path reads."""
    return _NATIVE.fullmatch(type_name) is not None


@dataclass
class ColumnarOutcome:
    columns: list[str]
    frame: pd.DataFrame


def fetch_duckdb_frame(
    connection: Any, sql: str, *, max_rows: int, budget: ResultBudget
) -> ColumnarOutcome | None:
    """``sql`` run on the DuckDB ``connection`` and read as a DataFrame within ``budget``
    and ``max_rows``; None (nothing run) when a column's type needs the row path."""
    if budget.max_value_bytes < _LEAST_VALUE_LIMIT:
        return None
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    relation = connection.sql(sql)
    if relation is None or not all(_native(str(t)) for t in relation.types):
        return None
    columns = list(relation.columns)
    reader = _reader(relation)
    if reader is None:
        return None
    kept: list[Any] = []
    taken = 0
    for batch in reader:
        if taken >= max_rows or budget.full:
            break
        if batch.num_rows > max_rows - taken:
            batch = batch.slice(0, max_rows - taken)
        batch = _admit(batch, budget, pa, pc)
        kept.append(batch)
        taken += batch.num_rows
    if not taken:  # no rows: the frame the row path builds (its columns have no dtype)
        return ColumnarOutcome(columns, build_frame(columns, []))
    table = pa.Table.from_batches(kept, schema=reader.schema)
    return ColumnarOutcome(columns, _frame(table, pa, pc))


def _reader(relation: Any) -> Any:
    """The relation's batches, streamed (DuckDB 2 and 1.x name the call differently)."""
    for name in ("to_arrow_reader", "fetch_arrow_reader", "record_batch"):
        read: Callable[[int], Any] | None = getattr(relation, name, None)
        if read is not None:
            return read(_BATCH_ROWS)
    return None


# -- the byte budget -------------------------------------------------------------------------


def _admit(batch: Any, budget: ResultBudget, pa: Any, pc: Any) -> Any:
    """The head of ``batch`` that fits the budget, its oversized values clipped; charges
    the budget as ``admit`` would have, row by row."""
    import numpy as np

    rows = batch.num_rows
    costs = np.full(rows, _VALUE_OVERHEAD * batch.num_columns, dtype=np.int64)
    oversized: list[tuple[int, Any]] = []
    for index, column in enumerate(batch.columns):
        cost, over = _column_cost(column, budget.max_value_bytes, pa, pc, np)
        costs += cost
        if over is not None:
            oversized.append((index, over))
    total = budget.used + np.cumsum(costs)
    fits = int(np.searchsorted(total, budget.max_result_bytes, side="right"))
    if fits < rows:
        budget.full = True
        batch = batch.slice(0, fits)
    if fits:
        budget.used = int(total[fits - 1])
        budget.kept += fits
    for index, over in oversized:
        mask = over[:fits]
        if mask.any():
            batch = batch.set_column(
                index, batch.schema.field(index), _clipped(batch.column(index), mask, budget, pa)
            )
    return batch


def _column_cost(column: Any, limit: int, pa: Any, pc: Any, np: Any) -> tuple[Any, Any]:
    """Each value's price, and which are over ``limit`` (None when none can be)."""
    kind = column.type
    nulls = column.is_null().to_numpy(zero_copy_only=False) if column.null_count else None
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
        lengths = pc.binary_length(column).fill_null(_SMALL).to_numpy(zero_copy_only=False)
        lengths = lengths.astype(np.int64)
        over = lengths > limit
        return lengths, over if over.any() else None
    if pa.types.is_decimal(kind):
        digits = _SMALL + _decimal_digits(column, np)
        return (np.where(nulls, _SMALL, digits) if nulls is not None else digits), None
    price = _SIXTEEN if pa.types.is_temporal(kind) else _SMALL  # else numbers, booleans
    if nulls is None or price == _SMALL:
        return price, None
    return np.where(nulls, _SMALL, price), None


_POWERS_OF_TEN = [10**n for n in range(19)]


def _decimal_digits(column: Any, np: Any) -> Any:
    """How many digits each DECIMAL value's ``as_tuple()`` holds (its unscaled integer's,
    at least one), read from the Arrow buffer of 128-bit values: those within 64 bits (all
    but the rare huge one) counted at once, the rest one by one."""
    words = np.frombuffer(column.buffers()[1], dtype=np.int64)
    start = column.offset * 2
    low = words[start : start + 2 * len(column) : 2]
    high = words[start + 1 : start + 2 * len(column) : 2]
    digits = np.searchsorted(np.array(_POWERS_OF_TEN), np.abs(low), side="right")
    digits = np.maximum(digits, 1).astype(np.int64)
    for position in np.flatnonzero(high != (low >> 63)):  # past 64 bits
        unscaled = (int(high[position]) << 64) | (int(low[position]) & ((1 << 64) - 1))
        digits[position] = len(str(abs(unscaled)))
    return digits


def _clipped(column: Any, mask: Any, budget: ResultBudget, pa: Any) -> Any:
    """``column`` with the values ``mask`` marks clipped to the value limit."""
    values = column.to_pylist()
    for position in mask.nonzero()[0]:
        values[position] = clip_value(values[position], budget.max_value_bytes)
        budget.clipped += 1
    return pa.array(values, type=column.type)


# -- the frame -------------------------------------------------------------------------------


def _frame(table: Any, pa: Any, pc: Any) -> pd.DataFrame:
    """``table`` as the DataFrame the row path builds from the same values, every known
    secret redacted."""
    import pandas as pd

    patterns = secret_patterns()
    names = [patterns.redact(n) if patterns is not None else n for n in table.column_names]
    names = distinct_columns(names)
    data: dict[int, Any] = {}
    for index, column in enumerate(table.columns):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        data[index] = _series(column, patterns, pa, pc, pd)
    frame = pd.DataFrame(data)
    frame.columns = names
    return frame


def _series(column: Any, patterns: Any, pa: Any, pc: Any, pd: Any) -> Any:
    kind = column.type
    nulls = column.null_count
    if nulls == len(column):  # the row path cannot tell an all-NULL column's type either
        return pd.Series([None] * nulls, dtype=object)
    if pa.types.is_integer(kind):
        if pa.types.is_uint64(kind) and len(column) and (pc.max(column).as_py() or 0) >= 1 << 63:
            return column.to_pandas(types_mapper={pa.uint64(): pd.UInt64Dtype()}.get)
        wide = column.cast(pa.int64())
        return (
            wide.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
            if nulls
            else (wide.to_numpy())
        )
    if pa.types.is_boolean(kind):
        return (
            column.to_numpy(zero_copy_only=False)
            if not nulls
            else pd.Series(column.to_pylist(), dtype=object)
        )
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return column.cast(pa.float64()).to_numpy(zero_copy_only=False)
    if pa.types.is_date(kind):
        return pd.to_datetime(column.to_pandas())
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        if patterns is not None and len(column) and _holds_secret(column, patterns, pa, pc):
            column = pa.array([patterns.redact(v) for v in column.to_pylist()], type=kind)
        return column.to_pandas()
    if pa.types.is_binary(kind):
        values = column.to_pylist()
        if patterns is not None:
            values = [patterns.redact(v) if v is not None else None for v in values]
        return pd.Series(values, dtype=object)
    return column.to_pandas()


def _holds_secret(column: Any, patterns: Any, pa: Any, pc: Any) -> bool:
    """Whether any value of a text column may hold a secret: the column searched as one
    string (its values joined), as the row path's ``redact_rows`` does."""
    present = column.drop_null()
    if not len(present):
        return False
    joined = pc.binary_join(pa.ListArray.from_arrays([0, len(present)], present), "\0")
    return patterns.text.search(joined[0].as_py()) is not None
