"""Counts in the size analysis: how large a count argument can be, and clamping the ones that
are not known in advance.

``repeat(s, n)``, ``lpad(s, n, f)``, ``range(a, b)``, ``list_resize(l, n)`` build values whose
size is set by a number. A literal number is checked as it is. Anything else gets an upper
bound from the tree when the tree allows one (``id % 10`` is at most 9, ``length(title)`` at
most the title's bytes, a ``CASE`` at most its largest branch); when it does not, the
analysis rewrites the count in the tree so that every result under the bound is unchanged:

- *clamp* (presentation: bars, padding): ``CASE WHEN n > K THEN K ELSE n END``;
- *check* (data: series, resized lists): ``CASE WHEN n > K THEN error('…') ELSE n END``, so a
  series is never silently cut short — the query fails and says why.

Both keep ``NULL`` and negative counts as they were (``LEAST`` would turn ``NULL`` into
``K``), and both are read back by :func:`count_bound`, so guarding the rewritten SQL again
changes nothing. A rewrite that repeats an expression needs it to be deterministic
(:func:`duplicable`): ``random()`` twice is two different numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from sqlglot import exp

from relay_nb.sql.guard.sizes.model import LIST, Size, Val
from relay_nb.sql.guard.text import fold

__all__ = [
    "NEVER",
    "check",
    "clamp",
    "constant",
    "count_bound",
    "duplicable",
    "is_error_call",
    "literal_int",
    "literal_text",
    "payload",
    "runtime_clamp",
    "runtime_clamp_limit",
    "same",
    "unwrap",
]

NEVER = Size(-1)
"""The bound of ``error(…)``: it never returns a value (a ``CASE`` branch that can be skipped)."""

_VOLATILE = frozenset(
    {
        "random", "rand", "uuid", "gen_random_uuid", "uuidv4", "uuidv7", "setseed", "nextval",
        "randomblob",
    }
)  # fmt: skip
_VOLATILE_CLASSES = (exp.Rand, exp.Randn, exp.Uuid, exp.Query, exp.Window)

_LENGTHS = frozenset(
    {
        "length", "len", "strlen", "char_length", "character_length", "octet_length",
        "length_grapheme", "array_length", "bit_length", "arraysize", "array_size",
    }
)  # fmt: skip
"""Functions whose result is at most the bytes (or elements) of their argument."""

_NUMBER_TYPES = (exp.DataType.NUMERIC_TYPES | exp.DataType.TEXT_TYPES) - {exp.DataType.Type.BIT}
"""Casts that keep a count's magnitude (``CAST(n AS BIGINT)``, ``n::VARCHAR`` read back)."""


def unwrap(node: exp.Expr) -> exp.Expr:
    """The value under parentheses, named arguments and casts between number types."""
    while True:
        if isinstance(node, exp.Paren | exp.PropertyEQ):
            node = node.expression if isinstance(node, exp.PropertyEQ) else node.this
        elif isinstance(node, exp.Cast | exp.TryCast) and node.to.this in _NUMBER_TYPES:
            node = node.this
        else:
            return node


def literal_int(node: exp.Expr | None) -> int | None:
    """An integer the count is known to be (``3``, ``'3'``, ``-2``, ``3.0``)."""
    if node is None:
        return None
    node = unwrap(node)
    if isinstance(node, exp.Neg):
        inner = literal_int(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Literal):
        try:
            number = float(node.this)
        except ValueError:
            return None
        return math.ceil(number) if math.isfinite(number) else None
    return None


def literal_text(node: exp.Expr | None) -> str | None:
    if node is None:
        return None
    node = unwrap(node)
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    if isinstance(node, exp.RawString):
        return node.this
    return None


def payload(node: exp.Expr, val: Val) -> Size:
    """The bytes a piece adds when it is spliced in: a literal's exact bytes, else its bound."""
    text = literal_text(node)
    return Size(len(text.encode())) if text is not None else val.size


def is_error_call(node: exp.Expr) -> bool:
    node = unwrap(node)
    return isinstance(node, exp.Anonymous) and fold(node.name) == "error"


def constant(node: exp.Expr) -> bool:
    """A value fixed by the query text (literals, arithmetic, casts): no column, no call."""
    dynamic = exp.Column | exp.Identifier | exp.Query | exp.Placeholder | exp.Parameter
    return not any(
        isinstance(sub, dynamic) or (isinstance(sub, exp.Func) and not isinstance(sub, exp.Cast))
        for sub in node.walk()
    )


def same(a: exp.Expr, b: exp.Expr) -> bool:
    return unwrap(a) == unwrap(b)


def duplicable(node: exp.Expr) -> bool:
    """Whether evaluating ``node`` twice gives the same value (no random, subquery, window)."""
    for sub in node.walk():
        if isinstance(sub, _VOLATILE_CLASSES):
            return False
        if isinstance(sub, exp.Anonymous) and fold(sub.name) in _VOLATILE:
            return False
    return True


# --------------------------------------------------------------------------------------------
# Upper bounds of counts


def count_bound(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    """An upper bound on an integer expression, or ``None`` when the tree gives none.

    ``value`` evaluates a sub-expression's size (for ``length(x)`` and friends). Bounds may
    grow with the data (``length(title)``); negative results count as zero (``repeat`` and
    ``lpad`` build nothing for them).
    """
    node = unwrap(node)
    number = literal_int(node)
    if number is not None:
        return Size(max(number, 0))
    if isinstance(node, exp.Null):
        return Size(0)
    rule = _BOUNDS.get(type(node))
    if rule is not None:
        return rule(node, value)
    if isinstance(node, exp.Func) and _name(node) in _LENGTHS:
        args = [a for a in node.iter_expressions() if not isinstance(a, exp.Literal)] or [node]
        target = value(args[0])
        bound = target.count() if target.kind == LIST else target.size
        return bound.scale(8) if _name(node) == "bit_length" else bound
    if is_error_call(node):
        return NEVER
    if isinstance(node, exp.Column | exp.Identifier):  # a lambda parameter from range(…)
        top = value(node).top
        return None if top is None else Size(max(top, 0))
    return None


def _name(node: exp.Func) -> str:
    return fold(node.name if isinstance(node, exp.Anonymous) else node.key)


def _add(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    left, right = count_bound(node.this, value), count_bound(node.expression, value)
    return None if left is None or right is None else left + right


def _sub(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    left, right = count_bound(node.this, value), literal_int(node.expression)
    if left is None or right is None:
        return None
    return Size(max(left.const - right, 0), left.data) if right >= 0 else left + Size(-right)


def _mul(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    for known, other in ((node.this, node.expression), (node.expression, node.this)):
        factor = literal_int(known)
        if factor is not None:
            if factor <= 0:
                return Size(0) if factor == 0 else None
            bound = count_bound(other, value)
            return None if bound is None else bound.scale(factor)
    return None


def _div(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    divisor = _positive_floor(node.expression)
    bound = count_bound(node.this, value)
    return None if divisor is None or bound is None else bound.ceil_div(divisor)


def _positive_floor(node: exp.Expr) -> int | None:
    """A lower bound ≥ 1 on a divisor: a positive literal, or ``GREATEST(…, k)`` with k ≥ 1."""
    node = unwrap(node)
    number = literal_int(node)
    if number is not None:
        return number if number >= 1 else None
    if isinstance(node, exp.Greatest):
        floors = [_positive_floor(arg) for arg in (node.this, *node.expressions)]
        known = [floor for floor in floors if floor is not None]
        return max(known) if known else None
    return None


def _mod(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    divisor = literal_int(node.expression)
    return None if not divisor else Size(abs(divisor) - 1)


def _least(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    """At most any one argument (``LEAST`` skips NULLs, so a known one still bounds it)."""
    bounds = [count_bound(arg, value) for arg in (node.this, *node.expressions)]
    known = [bound for bound in bounds if bound is not None]
    constant = [bound for bound in known if not bound.grows]
    if constant:
        return min(constant, key=lambda bound: bound.const)
    return known[0] if known else None


def _join_all(nodes: list[exp.Expr], value: Callable[[exp.Expr], Val]) -> Size | None:
    result: Size | None = None
    for node in nodes:
        bound = count_bound(node, value)
        if bound is None:
            return None
        if bound is not NEVER:
            result = bound if result is None else result.join(bound)
    return result if result is not None else Size(0)


def _greatest(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    return _join_all([node.this, *node.expressions], value)


def _if(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    return _join_all([node.args["true"], node.args.get("false") or exp.null()], value)


def _case(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    """The largest branch; ``CASE WHEN n > K THEN … ELSE n END`` bounds its ``ELSE`` by K."""
    ifs = node.args.get("ifs") or []
    default = node.args.get("default") or exp.null()
    if node.this is None and len(ifs) == 1:
        guarded = _guarded_branch(ifs[0].this, ifs[0].args["true"], default, value)
        if guarded is not None:
            return guarded
    return _join_all([*(branch.args["true"] for branch in ifs), default], value)


def _guarded_branch(
    condition: exp.Expr, then: exp.Expr, default: exp.Expr, value: Callable[[exp.Expr], Val]
) -> Size | None:
    condition = unwrap(condition)
    pairs: list[tuple[exp.Expr, exp.Expr, exp.Expr, exp.Expr]] = []
    if isinstance(condition, exp.GT | exp.GTE):  # WHEN n > K THEN t ELSE n
        pairs.append((condition.this, condition.expression, default, then))
    if isinstance(condition, exp.LT | exp.LTE):  # WHEN K < n THEN t ELSE n
        pairs.append((condition.expression, condition.this, default, then))
    if isinstance(condition, exp.LTE | exp.LT):  # WHEN n <= K THEN n ELSE t
        pairs.append((condition.this, condition.expression, then, default))
    for subject, limit, kept, other in pairs:
        if same(subject, kept):
            limit_bound, other_bound = count_bound(limit, value), count_bound(other, value)
            if limit_bound is None or other_bound is None:
                continue
            return limit_bound if other_bound is NEVER else limit_bound.join(other_bound)
    return None


def _round_up(node: exp.Expr, value: Callable[[exp.Expr], Val]) -> Size | None:
    bound = count_bound(node.this, value)
    return None if bound is None else bound + Size(1)


_BOUNDS: dict[type[exp.Expr], Callable[[exp.Expr, Callable[[exp.Expr], Val]], Size | None]] = {
    exp.Add: _add,
    exp.Sub: _sub,
    exp.Mul: _mul,
    exp.IntDiv: _div,
    exp.Div: _div,
    exp.Mod: _mod,
    exp.Least: _least,
    exp.Greatest: _greatest,
    exp.Coalesce: lambda node, value: _join_all([node.this, *node.expressions], value),
    exp.If: _if,
    exp.Case: _case,
    exp.Floor: _round_up,
    exp.Ceil: _round_up,
    exp.Round: _round_up,
}


# --------------------------------------------------------------------------------------------
# Rewrites


def _operand(node: exp.Expr) -> exp.Expr:
    """A copy safe inside ``>``/``+``: sqlglot prints binary trees without adding parens."""
    copy = node.copy()
    atomic = exp.Column | exp.Literal | exp.Func | exp.Paren | exp.Cast | exp.Dot | exp.Case
    return copy if isinstance(copy, atomic | exp.Identifier | exp.Null) else exp.Paren(this=copy)


def clamp(count: exp.Expr, limit: int | exp.Expr, *, as_integer: bool = False) -> exp.Expr:
    """Replace ``count`` by ``CASE WHEN count > K THEN K ELSE count END``; return the CASE.

    ``as_integer`` compares ``CAST(count AS INTEGER)``, the number a SQLite function reads
    from its argument: SQLite orders any text above any number, so ``'5' > K`` is true.
    """
    bound = exp.Literal.number(limit) if isinstance(limit, int) else limit
    subject = _operand(count)
    if as_integer:
        subject = exp.Cast(this=subject, to=exp.DataType.build("INTEGER"))
    rewritten = exp.Case(
        ifs=[exp.If(this=exp.GT(this=subject, expression=bound), true=bound.copy())],
        default=_operand(count),
    )
    count.replace(rewritten)
    return rewritten


def check(subject: exp.Expr, limit: exp.Expr, message: str, *, larger: bool = True) -> exp.Expr:
    """Replace ``subject`` by ``CASE WHEN subject > limit THEN error(…) ELSE subject END``
    (``<`` when ``larger`` is false: a series that counts down)."""
    failure = exp.Anonymous(this="error", expressions=[exp.Literal.string(message)])
    compare = exp.GT if larger else exp.LT
    rewritten = exp.Case(
        ifs=[exp.If(this=compare(this=_operand(subject), expression=limit), true=failure)],
        default=_operand(subject),
    )
    subject.replace(rewritten)
    return rewritten


def runtime_clamp(count: exp.Expr, text: exp.Expr, limit_bytes: int) -> exp.Expr:
    """``repeat(s, n)`` with ``s`` from the data: clamp ``n`` to ``K // strlen(s)`` at run time."""
    per_copy = exp.Greatest(
        this=exp.Anonymous(this="strlen", expressions=[text.copy()]),
        expressions=[exp.Literal.number(1)],
        ignore_nulls=True,  # DuckDB's GREATEST: as parsed back, so the output is a fixed point
    )
    return clamp(count, exp.IntDiv(this=exp.Literal.number(limit_bytes), expression=per_copy))


def runtime_clamp_limit(count: exp.Expr, text: exp.Expr) -> int | None:
    """The K of a count rewritten by :func:`runtime_clamp` for this ``text``, or ``None``."""
    count = unwrap(count)
    ifs = count.args.get("ifs") if isinstance(count, exp.Case) else None
    if not ifs or len(ifs) != 1 or count.this is not None:
        return None
    condition, then, default = ifs[0].this, ifs[0].args["true"], count.args.get("default")
    if not isinstance(condition, exp.GT) or default is None:
        return None
    if not same(condition.this, default) or not same(condition.expression, then):
        return None
    limit = unwrap(then)
    if not isinstance(limit, exp.IntDiv) or not isinstance(limit.expression, exp.Greatest):
        return None
    greatest = limit.expression
    floor = [literal_int(arg) for arg in greatest.expressions]
    measured = unwrap(greatest.this)
    if floor != [1] or not isinstance(measured, exp.Anonymous) or fold(measured.name) != "strlen":
        return None
    if len(measured.expressions) != 1 or not same(measured.expressions[0], text):
        return None
    return literal_int(limit.this)
