"""Is a predicted result the gold one? Result-set comparison, as text-to-SQL benchmarks judge.

Execution accuracy compares what two queries *return*, not how they are written, with the
semantics of the public benchmarks' test-suite evaluation:

- **rows** are a multiset (duplicates count, order does not) unless the gold query orders
  them (``order_matters``: the gold SQL has an outermost ORDER BY), then the sequence;
- **columns** are matched by values, not names: ``ColumnPolicy`` says how —
  ``"exact"`` (same columns in the same order), ``"permute"`` (the same columns in any
  order) or ``"superset"`` (the default: the gold columns in any order, and the prediction
  may add columns, such as an identifying ``id`` beside a name);
- **values** are normalised before they are compared: numbers (``int``, ``float``,
  ``Decimal``, numpy) within ``rel_tol``/``abs_tol``, ``NaN``/``None``/``NaT`` as one NULL,
  dates and timestamps as ISO text (a ``datetime`` at midnight equals its ``date``; a
  string that *is* an ISO date or timestamp is read as one), booleans as 0/1, other values
  as their text with surrounding spaces stripped.

:func:`compare_results` returns a :class:`Comparison` whose ``reason`` names the first
thing wrong: ``column mismatch`` (too few columns, more than the policy allows, or — under
``"exact"`` — the right ones in another order), ``missing rows`` / ``extra rows`` (the
multisets differ in size), ``wrong values`` (as many rows, other values), or ``wrong order``
(the right rows in the wrong order). Turn-level reasons — refused, error, no
query, timeout, over the cost cap — are the runner's, not this module's.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import Counter
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ColumnPolicy", "Comparison", "MissReason", "Table", "compare_results"]

ColumnPolicy = Literal["exact", "permute", "superset"]
MissReason = Literal["column mismatch", "missing rows", "extra rows", "wrong values", "wrong order"]
_MAX_ASSIGNMENTS = 5_000
"""Column assignments tried before giving up (only wide results with many look-alike
columns get near it)."""
_MAX_STEPS = 50_000
"""Steps of the search for assignments (each a candidate column tried at one position)."""
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?")


class Table(BaseModel):
    """Rows as tuples, with their column names (names are shown, never matched)."""

    model_config = ConfigDict(frozen=True)

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    @classmethod
    def of(cls, value: Any) -> Table:
        """A :class:`Table` from itself, a pandas DataFrame, or ``(columns, rows)``."""
        if isinstance(value, Table):
            return value
        if hasattr(value, "itertuples") and hasattr(value, "columns"):
            return cls(
                columns=tuple(str(c) for c in value.columns),
                rows=tuple(tuple(row) for row in value.itertuples(index=False, name=None)),
            )
        columns, rows = value
        return cls(columns=tuple(map(str, columns)), rows=tuple(tuple(r) for r in rows))


class Comparison(BaseModel):
    """Whether the prediction is right, and if not, why."""

    model_config = ConfigDict(frozen=True)

    match: bool
    reason: MissReason | None = None
    detail: str = ""
    """One line for the report: how many rows, which column was not found."""
    columns: tuple[int, ...] = ()
    """For a match: the prediction's column for each gold column."""


def compare_results(
    predicted: Any,
    gold: Any,
    *,
    order_matters: bool = False,
    columns: ColumnPolicy = "superset",
    rel_tol: float = 1e-6,
    abs_tol: float = 1e-9,
) -> Comparison:
    """Compare ``predicted`` with ``gold`` (each a DataFrame, a :class:`Table` or
    ``(columns, rows)``) under the rules in the module docstring."""
    pred, want = Table.of(predicted), Table.of(gold)
    norm = _Normaliser(rel_tol, abs_tol)
    pred_rows = [tuple(norm(v) for v in row) for row in pred.rows]
    gold_rows = [tuple(norm(v) for v in row) for row in want.rows]
    width, gold_width = len(pred.columns), len(want.columns)
    if (columns in ("exact", "permute") and width != gold_width) or width < gold_width:
        return Comparison(
            match=False,
            reason="column mismatch",
            detail=f"{_count(width, 'column')} where the gold result has {gold_width}",
        )
    candidates = _candidates(pred_rows, gold_rows, width, gold_width, columns, norm)
    if any(not c for c in candidates):
        missing = [want.columns[i] for i, c in enumerate(candidates) if not c]
        if len(pred_rows) != len(gold_rows):
            return _size_miss(len(pred_rows), len(gold_rows))
        return Comparison(
            match=False,
            reason="wrong values",
            detail=f"no column holds the values of {', '.join(missing)}{_example(pred, want)}",
        )
    wanted = Counter(gold_rows)
    tried = 0
    best_order: tuple[int, ...] | None = None
    for assignment in _assignments(candidates):
        tried += 1
        if tried > _MAX_ASSIGNMENTS:
            break
        projected = [tuple(row[i] for i in assignment) for row in pred_rows]
        if Counter(projected) != wanted:
            continue
        if not order_matters or projected == gold_rows:
            return Comparison(match=True, columns=assignment)
        best_order = assignment
    if best_order is not None:
        return Comparison(
            match=False, reason="wrong order", detail="the right rows, in another order"
        )
    if len(pred_rows) != len(gold_rows):
        return _size_miss(len(pred_rows), len(gold_rows))
    if (
        columns == "exact"
        and compare_results(
            pred,
            want,
            order_matters=order_matters,
            columns="permute",
            rel_tol=rel_tol,
            abs_tol=abs_tol,
        ).match
    ):
        return Comparison(
            match=False, reason="column mismatch", detail="the right columns, in another order"
        )
    return Comparison(
        match=False,
        reason="wrong values",
        detail=f"{_count(len(gold_rows), 'row')} on both sides, but not the same rows"
        + _example(pred, want),
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _example(pred: Table, want: Table) -> str:
    """`` (expected (2924), got (3200))`` for a one-row result: what to look at first."""
    if len(want.rows) != 1 or len(pred.rows) != 1:
        return ""

    def shown(row: tuple[Any, ...]) -> str:
        text = ", ".join(f"{v:.10g}" if isinstance(v, float) else str(v) for v in row)
        return text if len(text) <= 60 else text[:59] + "…"

    return f" (expected {shown(want.rows[0])}, got {shown(pred.rows[0])})"


def _size_miss(predicted: int, gold: int) -> Comparison:
    if predicted < gold:
        return Comparison(
            match=False,
            reason="missing rows",
            detail=f"{_count(predicted, 'row')} where gold has {gold}",
        )
    return Comparison(
        match=False, reason="extra rows", detail=f"{_count(predicted, 'row')} where gold has {gold}"
    )


def _candidates(
    pred_rows: list[tuple[Any, ...]],
    gold_rows: list[tuple[Any, ...]],
    width: int,
    gold_width: int,
    policy: ColumnPolicy,
    norm: _Normaliser,
) -> list[list[int]]:
    """For each gold column, the prediction columns that hold the same values (as a set:
    row counts may still differ, which the row comparison then reports)."""
    if policy == "exact":
        return [[i] for i in range(gold_width)]
    pred_sets = [frozenset(row[i] for row in pred_rows) for i in range(width)]
    found = []
    for g in range(gold_width):
        gold_set = frozenset(row[g] for row in gold_rows)
        found.append([i for i in range(width) if pred_sets[i] == gold_set])
    return found


def _assignments(candidates: list[list[int]]) -> Iterable[tuple[int, ...]]:
    """Distinct prediction columns, one per gold column, from each one's candidates: a
    depth-first search that stops after :data:`_MAX_STEPS` steps, so a wide prediction
    with many look-alike columns costs a bounded time, not a factorial one."""
    steps = 0
    chosen: list[int] = []

    def extend(depth: int) -> Iterable[tuple[int, ...]]:
        nonlocal steps
        if depth == len(candidates):
            yield tuple(chosen)
            return
        for column in candidates[depth]:
            steps += 1
            if steps > _MAX_STEPS:
                return
            if column in chosen:
                continue
            chosen.append(column)
            yield from extend(depth + 1)
            chosen.pop()

    yield from extend(0)


class _Normaliser:
    """One comparable form per value (see the module docstring)."""

    def __init__(self, rel_tol: float, abs_tol: float) -> None:
        self.rel_tol = rel_tol
        self.abs_tol = abs_tol

    def __call__(self, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, bool):
            return _Number(float(value), self)
        if isinstance(value, int | float | Decimal) or type(value).__module__ == "numpy":
            try:
                number = float(value)
            except (TypeError, ValueError):
                return str(value).strip()
            return None if math.isnan(number) else _Number(number, self)
        if isinstance(value, dt.datetime):
            if value != value:  # pandas NaT
                return None
            return _moment(value)
        if isinstance(value, dt.date):
            return value.isoformat()
        if type(value).__name__ == "NaTType":
            return None
        text = str(value).strip()
        if _ISO.fullmatch(text):
            try:
                return _moment(dt.datetime.fromisoformat(text.replace(" ", "T")))
            except ValueError:  # looks like a date, is not one (MySQL's '0000-00-00')
                return text
        return text


def _moment(value: dt.datetime) -> str:
    """A timestamp as ISO text (in UTC when it has a time zone); at midnight, its day (so it
    equals a ``date``)."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
    value = value.replace(tzinfo=None)
    if value.time() == dt.time(0):
        return value.date().isoformat()
    return value.isoformat(sep=" ")


class _Number:
    """A float that equals another within the tolerances. Equal numbers must hash alike
    for the row multisets: a whole number (within tolerance) hashes as itself, any other as
    one shared value — rounding would split two close numbers at a rounding boundary, and
    results compared here are small enough for the shared bucket."""

    __slots__ = ("norm", "value")

    def __init__(self, value: float, norm: _Normaliser) -> None:
        self.value = value
        self.norm = norm

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Number):
            return False
        return math.isclose(
            self.value, other.value, rel_tol=self.norm.rel_tol, abs_tol=self.norm.abs_tol
        )

    def __hash__(self) -> int:
        if math.isinf(self.value):
            return hash(self.value)
        whole = round(self.value)
        if math.isclose(self.value, whole, rel_tol=self.norm.rel_tol, abs_tol=self.norm.abs_tol):
            return hash(whole)
        return hash("not a whole number")

    def __repr__(self) -> str:
        return repr(self.value)
