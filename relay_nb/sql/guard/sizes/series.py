"""``range`` and ``generate_series`` used as values: lists whose length the bounds set.

In ``FROM`` they are row generators that stream (the LIMIT and the timeout bound them); as a
value — ``SELECT range(0, 500000000)``, ``unnest(generate_series(start, stop, INTERVAL 1
DAY))`` — the whole list is built first, per row, without regard to DuckDB's memory limit.

Literal bounds are counted, dates and timestamps included (a month counts as 28 days, so
the count is an upper bound). Bounds from the data are checked at run time by rewriting the
stop value: ``CASE WHEN stop > start + K * step THEN error('…') ELSE stop END`` (``<`` for a
negative step), so every series of up to K + 1 elements is unchanged and a longer one fails
with a message instead of being cut short. That needs a literal step (its sign decides the
direction) and deterministic bounds (they are written twice).
"""

from __future__ import annotations

import datetime as dt
import math
import re

from sqlglot import exp

from relay_nb.sql.guard.sizes import counts
from relay_nb.sql.guard.sizes.call import Call
from relay_nb.sql.guard.sizes.model import FIXED, FIXED_BYTES, LIST, Size, Val

__all__ = ["series"]

_SECONDS = {
    "microsecond": 1e-6, "millisecond": 1e-3, "second": 1, "minute": 60, "hour": 3600,
    "day": 86400, "week": 7 * 86400, "month": 28 * 86400, "quarter": 89 * 86400,
    "year": 365 * 86400, "decade": 3650 * 86400, "century": 36500 * 86400,
    "millennium": 365000 * 86400,
}  # fmt: skip
"""The *shortest* length of each unit: a count divided by them is an upper bound."""

_INTERVAL_PART = re.compile(r"(?<![\d.])([-+]?\d+(?:\.\d+)?)\s*([a-z]+)")
"""``2 days``, ``1.5 hours``: a number starts only where no digit stands before it, so a run
of digits without a unit is tried once, not from each of its digits (quadratic)."""
_TEMPORAL = exp.DataType.TEMPORAL_TYPES


def series(call: Call) -> Val:
    """The ``series`` kind: a list of 16-byte elements (parameter 1: end inclusive)."""
    start, end, step = _bounds(call)
    inclusive = (
        not call.node.args.get("is_end_exclusive")
        if isinstance(call.node, exp.GenerateSeries)
        else bool(call.param(1))
    )
    count = _static_count(start, end, step, inclusive)
    checked = _checked_limit(start, end, step)
    if checked is not None:
        count = checked + 1 if count is None else min(count, checked + 1)
    if count is not None:
        size = Size(FIXED_BYTES * (count + 1))
        if call.ctx.fits(size):
            return _list(count, _top(start, end))
        if counts.constant(start) and counts.constant(end):
            call.too_large(size, "generate the rows in FROM range(…) or generate_series(…)")
    direction = _direction(step)
    if direction is None:
        call.refuse("needs a literal step when its bounds come from the data")
    if not (counts.duplicable(start) and counts.duplicable(end)):
        call.refuse("needs bounds without random(), subqueries or window functions")
    limit = call.ctx.limits.clamp_bytes // FIXED_BYTES - 1
    most = exp.Add(
        this=_implicit(start),
        expression=exp.Mul(this=exp.Literal.number(limit), expression=_step(step)),
    )
    message = (
        f"value_too_large: {call.name}() would build more than {limit + 1} elements per row; "
        "generate the rows in FROM generate_series(…) and join them"
    )
    counts.check(end, most, message, larger=direction > 0)
    return _list(limit + 1)


def _list(count: int, top: int | None = None) -> Val:
    element = Val(Size(FIXED_BYTES), FIXED, top=top)
    inner = Size(FIXED_BYTES * count)
    return Val(inner + Size(FIXED_BYTES), LIST, Size(count), element, inner)


def _top(start: exp.Expr, end: exp.Expr) -> int | None:
    """The largest element of an integer series with literal bounds."""
    first, last = counts.literal_int(start), counts.literal_int(end)
    return None if first is None or last is None else max(first, last)


def _bounds(call: Call) -> tuple[exp.Expr, exp.Expr, exp.Expr | None]:
    args = call.args
    if len(args) == 1:
        return exp.Literal.number(0), args[0], None
    return args[0], args[1], args[2] if len(args) > 2 else None


def _implicit(node: exp.Expr) -> exp.Expr:
    """A copy of a bound for the check (``range(n)``'s implicit start is a fresh 0)."""
    return node.copy() if node.parent is not None else node


def _step(step: exp.Expr | None) -> exp.Expr:
    return exp.Literal.number(1) if step is None else step.copy()


def _checked_limit(start: exp.Expr, end: exp.Expr, step: exp.Expr | None) -> int | None:
    """The K of a stop value rewritten by :func:`series` for these bounds, or ``None``."""
    end = counts.unwrap(end)
    ifs = end.args.get("ifs") if isinstance(end, exp.Case) else None
    if not ifs or len(ifs) != 1 or end.this is not None or end.args.get("default") is None:
        return None
    condition, failure = ifs[0].this, ifs[0].args["true"]
    if not isinstance(condition, exp.GT | exp.LT) or not counts.is_error_call(failure):
        return None
    if not counts.same(condition.this, end.args["default"]):
        return None
    most = counts.unwrap(condition.expression)
    if not isinstance(most, exp.Add) or not counts.same(most.this, start):
        return None
    scaled = counts.unwrap(most.expression)
    if not isinstance(scaled, exp.Mul) or not counts.same(scaled.expression, _step(step)):
        return None
    return counts.literal_int(scaled.this)


def _direction(step: exp.Expr | None) -> int | None:
    if step is None:
        return 1
    seconds = _step_value(step)
    if seconds is None or seconds == 0:
        return None
    return 1 if seconds > 0 else -1


def _static_count(
    start: exp.Expr, end: exp.Expr, step: exp.Expr | None, inclusive: bool
) -> int | None:
    first, last = _point(start), _point(end)
    size = 1.0 if step is None else _step_value(step)
    if first is None or last is None or size is None:
        return None
    if size == 0:
        return 0
    span = (last - first) / size
    if span < 0:
        return 0
    return math.floor(span) + 1 if inclusive or not span.is_integer() else int(span)


def _point(node: exp.Expr) -> float | None:
    """A literal bound as a number: an integer, or a date or timestamp in seconds."""
    number = counts.literal_int(node)
    if number is not None:
        return float(number)
    node = counts.unwrap(node)
    if isinstance(node, exp.Cast) and node.to.this in _TEMPORAL:
        text = counts.literal_text(node.this)
        try:
            moment = dt.datetime.fromisoformat(text) if text is not None else None
        except ValueError:
            return None
        if moment is not None:
            return moment.replace(tzinfo=moment.tzinfo or dt.UTC).timestamp()
    return None


def _step_value(node: exp.Expr) -> float | None:
    """A literal step: a number, or an interval in seconds (at its shortest)."""
    number = counts.literal_int(node)
    if number is not None:
        return float(number)
    node = counts.unwrap(node)
    if not isinstance(node, exp.Interval):
        return None
    amount = node.this.name if isinstance(node.this, exp.Literal) else None
    unit = node.args.get("unit")
    text = f"{amount} {unit.name}" if unit is not None else amount
    parts = _INTERVAL_PART.findall((text or "").lower())
    if not parts:
        return None
    total = 0.0
    for value, name in parts:
        seconds = _SECONDS.get(name.rstrip("s")) or _SECONDS.get(name)
        if seconds is None:
            return None
        total += float(value) * seconds
    return total
