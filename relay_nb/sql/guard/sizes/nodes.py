"""The size analysis for SQL's own constructs: literals, columns, operators, ``CASE``, casts,
list and struct literals, subqueries, lambdas. Functions go to the family's table
(:mod:`kinds`); everything here holds for every dialect.

One handler per node class, looked up along the class's MRO, so a sqlglot upgrade that adds
a subclass inherits its parent's rule; a class nobody handles is bounded by the sum of its
children (a node that combines its inputs, never one that multiplies them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import cache
from typing import Protocol, TypeVar

from sqlglot import exp

from relay_nb.sql.guard.sizes import counts
from relay_nb.sql.guard.sizes.call import Context
from relay_nb.sql.guard.sizes.model import (
    ANY,
    FIXED,
    FIXED_BYTES,
    LIST,
    TEXT,
    Lambda,
    Size,
    SizeRule,
    TooLarge,
    Val,
    as_text,
    join_vals,
    over_runs,
    per_run,
)
from relay_nb.sql.guard.sizes.scope import Rel, Scope
from relay_nb.sql.guard.text import fold

__all__ = ["Analysis", "handler"]

_T = TypeVar("_T")


class Analysis(Context, Protocol):
    """What a node handler may ask of the analysis of its tree (``sizer.Sizer`` is the one
    implementation): the function handlers' :class:`~.call.Context`, plus the walk itself."""

    cache: dict[tuple[int, int], Val]
    frames: list[dict[str, Lambda]]
    names: list[dict[str, str]]
    context: int
    """The lambda context being sized (0 outside every lambda)."""

    def value(self, node: exp.Expr, scope: Scope | None = None) -> Val: ...

    def query(self, node: exp.Expr, scope: Scope) -> Rel: ...

    def elements(self, node: exp.Expr, scope: Scope) -> Val: ...

    def call(self, node: exp.Func, scope: Scope, receiver: exp.Expr | None = None) -> Val: ...

    def in_context(self, run: Callable[[], _T], *, probe: bool = False) -> _T: ...

    def record(self, node: exp.Expr, val: Val) -> None: ...

    def mark(self, node: exp.Expr) -> None: ...

    def rule(self, node: exp.Func) -> SizeRule | None: ...

    def apply(
        self,
        body: exp.Expr,
        params: Sequence[Lambda],
        *,
        probe: bool = False,
        extra: Iterable[exp.Expr] = (),
        scope: Scope | None = None,
    ) -> tuple[Val, dict[str, Lambda]]: ...


Handler = Callable[[Analysis, exp.Expr, Scope], Val]

_FIXED = Val(Size(FIXED_BYTES), FIXED)


def _children(sizer: Analysis, node: exp.Expr, scope: Scope, skip: tuple[str, ...] = ()) -> Size:
    total = Size()
    for key, value in node.args.items():
        if key in skip:
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, exp.Query):
                total = total + sizer.query(child, scope).all().size
            elif isinstance(child, exp.Expr):
                total = total + sizer.value(child, scope).size
    return total


def _fixed(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    _children(sizer, node, scope)
    return _FIXED


def _default(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    return Val(_children(sizer, node, scope) + Size(FIXED_BYTES))


def _literal(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    if isinstance(node, exp.Literal) and not node.is_string:
        return _FIXED
    return Val(Size(len(str(node.this).encode())), TEXT)


def _column(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
        return scope.everything()
    parts = [fold(part.name) for part in node.parts] if isinstance(node, exp.Column) else []
    parts = parts or [fold(node.name)]
    for names, frame in zip(reversed(sizer.names), reversed(sizer.frames), strict=True):
        key = names.get(parts[0])  # a lambda parameter, or a field of one
        if key is not None:
            return replace(frame[key].one, size=Size.stored(key))
    return scope.column(parts)


def _dot(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    """``x.f(args)`` is DuckDB's method call ``f(x, args)``, or ``f(args)`` in schema ``x``
    when ``x`` is a bare name (``main.repeat('x', 3)``): a bare name gets both readings, and
    one that needs a rewrite is refused (the other reading would not see it); ``s.field`` is
    part of ``s``."""
    target = node.expression
    if not isinstance(target, exp.Func):
        return sizer.value(node.this, scope)
    sizer.mark(target)
    if not _bare_name(node.this):
        return sizer.call(target, scope, receiver=node.this)
    before = node.sql()
    readings = [
        sizer.in_context(lambda: sizer.call(target, scope)),
        sizer.in_context(lambda: sizer.call(target, scope, receiver=node.this)),
    ]
    if node.sql() != before:
        raise TooLarge(
            f"{before[:30]} reads both as a method call and as a schema-qualified call, and "
            "its size is not known in advance; write f(x, …) with literal counts"
        )
    return join_vals(readings)


def _bare_name(node: exp.Expr) -> bool:
    if isinstance(node, exp.Dot):
        return _bare_name(node.this) and _bare_name(node.expression)
    return isinstance(node, exp.Identifier) or (isinstance(node, exp.Column) and not node.table)


def _this(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    """Parentheses, aliases, ``ORDER BY`` items: the value of ``this``."""
    _children(sizer, node, scope, skip=("this", "alias"))
    inner = node.this
    if isinstance(inner, exp.Query):
        return sizer.query(inner, scope).all()
    return sizer.value(inner, scope) if isinstance(inner, exp.Expr) else _FIXED


def _property(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    return sizer.value(node.expression, scope)


def _branches(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    """``CASE``, ``IF``, ``COALESCE``, ``GREATEST``: the result is one of the branches."""
    results: list[exp.Expr]
    if isinstance(node, exp.Case):
        if node.this is not None:
            sizer.value(node.this, scope)
        results = []
        for branch in node.args.get("ifs") or []:
            sizer.mark(branch)
            sizer.value(branch.this, scope)
            results.append(branch.args["true"])
        results.append(node.args.get("default") or exp.null())
    elif isinstance(node, exp.If):
        sizer.value(node.this, scope)
        results = [node.args["true"], node.args.get("false") or exp.null()]
    elif isinstance(node, exp.Nullif):
        sizer.value(node.expression, scope)
        results = [node.this]
    else:
        results = [node.this, *node.expressions]
    return join_vals([sizer.value(result, scope) for result in results])


_BITWISE = (
    exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor, exp.BitwiseLeftShift, exp.BitwiseRightShift
)  # fmt: skip
"""On ``BIT`` strings these keep the longer operand's length."""


def _binary(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    """Operators. A long chain (``a + b + … + z``, ``x || y || …``) nests as deep as it is
    long, so it is sized in a loop down its left side rather than by recursion."""
    chain = [node]
    while _chained(sizer, chain[-1].this):
        chain.append(chain[-1].this)
    left = sizer.value(chain[-1].this, scope)
    for link in reversed(chain):
        if isinstance(link, exp.Func) and sizer.rule(link) is not None:  # ->, ->>: functions
            left = sizer.call(link, scope)
        else:
            left = _operator(link, left, sizer.value(link.expression, scope), sizer.text_factor)
        if link is not node:
            sizer.record(link, left)
    return left


def _chained(sizer: Analysis, node: exp.Expr) -> bool:
    return (
        isinstance(node, exp.Binary)
        and handler(type(node)) is _binary
        and (id(node), sizer.context) not in sizer.cache
    )


def _operator(node: exp.Expr, left: Val, right: Val, text_factor: int) -> Val:
    if isinstance(node, exp.DPipe):
        if left.kind == LIST and right.kind == LIST:
            return Val(left.size + right.size, LIST, left.count() + right.count())
        return Val(as_text(left, text_factor) + as_text(right, text_factor), TEXT)
    if isinstance(node, exp.Add | exp.Sub):  # numbers, dates; lists and BIGNUMs add up
        if FIXED in (left.kind, right.kind):
            return _FIXED
        return Val(left.size + right.size, left.kind if left.kind == right.kind else ANY)
    if isinstance(node, (*_BITWISE, exp.Collate, exp.Escape)):
        return Val(left.size.join(right.size), left.kind)
    return _FIXED


def _cast(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    _children(sizer, node, scope, skip=("this", "to"))
    val = sizer.value(node.this, scope)
    to = node.args.get("to")
    if not isinstance(to, exp.DataType):
        return Val(val.size.scale(8) + Size(64))
    fixed = Size(_type_bytes(to))
    if fixed.const > sizer.limits.value_bytes:
        raise TooLarge(
            f"casting to {to.sql()[:40]} builds {fixed.describe()} per value; use a list type "
            "(INTEGER[]) instead of a fixed-size array"
        )
    if to.this in _TEXT_TYPES:
        return Val(as_text(val, sizer.text_factor), TEXT)
    if to.this in _NESTED_TYPES:
        return Val(val.size.scale(8) + fixed, LIST if to.is_type("array", "list") else ANY)
    if to.this in _BYTE_TYPES:
        return Val(as_text(val, sizer.text_factor), TEXT)
    if to.this in _OPAQUE_TYPES:
        return Val(val.size.scale(8) + Size(64))
    return _FIXED


_TEXT_TYPES = exp.DataType.TEXT_TYPES | {
    exp.DataType.Type.BPCHAR,
    exp.DataType.Type.JSON,
    exp.DataType.Type.JSONB,
}
_BYTE_TYPES = exp.DataType.BINARY_TYPES | {exp.DataType.Type.BIT}
_NESTED_TYPES = exp.DataType.NESTED_TYPES
_OPAQUE_TYPES = frozenset(
    {
        exp.DataType.Type.USERDEFINED,
        exp.DataType.Type.UNKNOWN,
        exp.DataType.Type.VARIANT,
        exp.DataType.Type.ENUM,
        exp.DataType.Type.ENUM8,
        exp.DataType.Type.ENUM16,
        exp.DataType.Type.BIGNUM,
    }
)
"""Types whose values are as large as what is cast into them (and more, printed)."""


def _type_bytes(to: exp.DataType) -> int:
    """Bytes a value of this type takes however small its input: fixed-size arrays
    (``INTEGER[1000][1000]``, allowed up to 100 000 per dimension) multiply."""
    if to.this == exp.DataType.Type.STRUCT:
        total = FIXED_BYTES
        for field in to.expressions:
            kind = field.args.get("kind") if isinstance(field, exp.ColumnDef) else field
            total += _type_bytes(kind) if isinstance(kind, exp.DataType) else FIXED_BYTES
        return min(total, 1 << 62)
    inner = [e for e in to.expressions if isinstance(e, exp.DataType)]
    element = _type_bytes(inner[0]) if inner else FIXED_BYTES
    if to.this == exp.DataType.Type.ARRAY and to.args.get("values"):
        count = 1
        for dimension in to.args["values"]:
            count *= max(int(dimension.name) if dimension.name.isdigit() else 1, 1)
        return min(count * element, 1 << 62)
    return FIXED_BYTES if not inner else min(element, 1 << 62)


def _array(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    size, inner, one, items = Size(FIXED_BYTES), Size(), Size(), 0
    for element in node.expressions:
        if isinstance(element, exp.Comprehension):
            return _comprehension(sizer, element, scope)
        if isinstance(element, exp.Query):  # ARRAY(SELECT …): the rows, collected
            sizer.query(element, scope)
            return Val(Size.stored(sizer.key(node)), LIST)
        val = sizer.value(element, scope)
        size, inner, one, items = size + val.slot(), inner + val.size, one.join(val.size), items + 1
    numbers = [counts.literal_int(element) for element in node.expressions]
    known = [number for number in numbers if number is not None]
    top = max(known) if known and len(known) == len(numbers) else None
    element = Val(one, FIXED if top is not None else ANY, top=top)
    return Val(size, LIST, Size(items), element, inner)


def _comprehension(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    """``[body FOR x IN list IF cond]``: the body once per element."""
    sizer.mark(node)
    items = sizer.value(node.args["iterator"], scope)
    runs = items.count()
    params = [Lambda(node.expression.name, items.element(), runs, items.elements())]
    if node.args.get("position") is not None:
        params.append(Lambda(node.args["position"].name, _FIXED, runs, runs.scale(16)))
    condition = [node.args["condition"]] if node.args.get("condition") is not None else []
    one, keys = sizer.apply(node.this, params, extra=condition, scope=scope)
    inner = over_runs(one.size, keys)
    size = runs.scale(FIXED_BYTES) + inner + Size(FIXED_BYTES)
    return Val(size, LIST, runs, Val(per_run(one.size, keys), one.kind), inner)


def _struct(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    size = Size(FIXED_BYTES)
    for field in node.expressions:
        if isinstance(field, exp.PropertyEQ | exp.Alias):
            key = field.this if isinstance(field, exp.PropertyEQ) else field.args.get("alias")
            size = size + Size(len(key.name.encode()) if isinstance(key, exp.Expr) else 0)
        size = size + sizer.value(field, scope).size
    return Val(size)


def _bracket(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    """``x[i]`` is one element, ``x[a:b]`` a piece: never more than ``x``."""
    _children(sizer, node, scope, skip=("this",))
    val = sizer.value(node.this, scope)
    indexes = node.expressions
    if len(indexes) == 1 and not isinstance(indexes[0], exp.Slice) and val.kind == LIST:
        return val.element()
    return val


def _query_value(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    return sizer.query(node, scope).all()


def _exists(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    _children(sizer, node, scope)
    return _FIXED


def _window(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    _children(sizer, node, scope, skip=("this",))
    return sizer.value(node.this, scope)


def _lambda(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    params = [Lambda(p.name, Val(Size()), Size(1), Size()) for p in node.expressions]
    one, _ = sizer.apply(node, params, scope=scope)
    return one


def _unnest(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    return sizer.elements(node, scope)


def _func(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    assert isinstance(node, exp.Func)
    return sizer.call(node, scope)


def _columns(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    _children(sizer, node, scope)
    return scope.everything()


def _json_path(sizer: Analysis, node: exp.Expr, scope: Scope) -> Val:
    return Val(Size(len(node.sql())), TEXT)


_HANDLERS: dict[type[exp.Expr], Handler] = {
    exp.Literal: _literal,
    exp.RawString: _literal,
    exp.ByteString: _literal,
    exp.HexString: _literal,
    exp.BitString: _literal,
    exp.National: _literal,
    exp.UnicodeString: _literal,
    exp.Null: _fixed,
    exp.Boolean: _fixed,
    exp.Placeholder: _fixed,
    exp.Parameter: _fixed,
    exp.SessionParameter: _fixed,
    exp.Var: _fixed,
    exp.Interval: _fixed,
    exp.Column: _column,
    exp.Identifier: _column,
    exp.Dot: _dot,
    exp.Star: _columns,
    exp.Columns: _columns,
    exp.PositionalColumn: _columns,
    exp.Paren: _this,
    exp.Alias: _this,
    exp.Ordered: _this,
    exp.Distinct: _default,
    exp.PropertyEQ: _property,
    exp.Case: _branches,
    exp.If: _branches,
    exp.Coalesce: _branches,
    exp.Nullif: _branches,
    exp.Greatest: _branches,
    exp.Least: _branches,
    exp.Binary: _binary,
    exp.Predicate: _fixed,
    exp.Neg: _fixed,
    exp.Not: _fixed,
    exp.BitwiseNot: _this,
    exp.Cast: _cast,
    exp.TryCast: _cast,
    exp.Array: _array,
    exp.Comprehension: _comprehension,
    exp.Struct: _struct,
    exp.Tuple: _default,
    exp.Bracket: _bracket,
    exp.Query: _query_value,
    exp.Subquery: _query_value,
    exp.Exists: _exists,
    exp.Window: _window,
    exp.Lambda: _lambda,
    exp.Unnest: _unnest,
    exp.Explode: _unnest,
    exp.JSONPath: _json_path,
    exp.Func: _func,
}


@cache
def handler(cls: type[exp.Expr]) -> Handler:
    """The handler for a node class: the nearest class on its MRO that has one."""
    for base in cls.__mro__:
        found = _HANDLERS.get(base)
        if found is not None:
            return found
    return _default
