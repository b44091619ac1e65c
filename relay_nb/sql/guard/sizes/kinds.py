"""Kinds of functions in the size analysis: how a call's output size follows from its inputs.

A dialect family maps each function name to ``(kind, *parameters)`` (its ``size_functions``
table); :data:`KINDS` holds one small handler per kind. Handlers get the call's positional
arguments (a method call's receiver first), already sized, and return the output's
:class:`~relay_nb.sql.guard.sizes.model.Val`. The families of kinds:

- *bounded by their inputs*: ``part`` (a piece of one argument), ``widest`` (one of them),
  ``sum``, ``scale`` (a constant factor: ``hex`` x2, ``bin`` x8, ``url_encode`` x3),
  ``concat``, ``split`` (a list of pieces); printed and escaped text — ``printed``,
  ``json`` (escaping: x6), ``paths``, ``per_argument`` … — is in
  :mod:`relay_nb.sql.guard.sizes.text`;
- *sized by a number*: ``repeat``, ``pad``, ``series``, ``resize``, ``bins``, ``bits``,
  ``bytes`` — the amplifiers; their counts go through
  :mod:`relay_nb.sql.guard.sizes.counts`;
- *sized by a pattern*: ``replace``, ``regexp_replace``, ``printf``, ``fmt``, ``strftime``;
- *lambdas*: ``transform``, ``filter``, ``reduce``, ``invoke`` (the body runs per element);
- *stored*: ``data`` (an aggregate's output or the schema's text: as large as what the
  engine collected under its memory limit, counted like a stored value).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from relay_nb.sql.guard.sizes import counts
from relay_nb.sql.guard.sizes.call import Call
from relay_nb.sql.guard.sizes.model import (
    ANY,
    FIXED,
    FIXED_BYTES,
    LIST,
    TEXT,
    Lambda,
    Quadratic,
    Size,
    Val,
    as_text,
    elements_text,
    over_runs,
    per_run,
)
from relay_nb.sql.guard.sizes.patterns import (
    fmt,
    printf,
    regexp_replace,
    replace,
    strftime,
)
from relay_nb.sql.guard.sizes.series import series
from relay_nb.sql.guard.sizes.text import (
    json_escape,
    json_pretty,
    json_transform,
    markup,
    paths,
    per_argument,
    printed,
)

__all__ = ["KINDS"]


def _char_bytes(node: exp.Expr | None) -> int:
    text = counts.literal_text(node) if node is not None else " "
    if text is None:
        return 4
    return max((len(char.encode()) for char in text), default=1)


# --------------------------------------------------------------------------------------------
# Bounded by their inputs


def _fixed(call: Call) -> Val:
    return Val(Size(FIXED_BYTES), FIXED)


def _text(call: Call) -> Val:
    return Val(Size(call.param(1)), TEXT)


def _query_text(call: Call) -> Val:
    return Val(Size(call.ctx.sql_length), TEXT)


def _part(call: Call) -> Val:
    return call.val(call.param(1))


def _widest(call: Call) -> Val:
    vals = call.vals or [call.val(0)]
    size = vals[0].size
    for val in vals[1:]:
        size = size.join(val.size)
    kinds = {val.kind for val in vals}
    return Val(size, kinds.pop() if len(kinds) == 1 else ANY)


def _sum(call: Call) -> Val:
    size = Size(FIXED_BYTES)
    for val in call.vals:
        size = size + val.size
    return Val(size)


def _scale(call: Call) -> Val:
    size = Size()
    for val in call.vals if call.param(2) else call.vals[:1]:
        size = size + val.size.scale(call.param(1))
    return Val(size, TEXT)


def _data(call: Call) -> Val:
    return Val(Size.stored(call.ctx.key(call.node)))


def _top(call: Call) -> Val:
    """``max(x)`` is one input; ``max(x, n)`` is a list of n inputs the aggregate collected."""
    return _data(call) if len(call.args) > call.param(1) else call.val(0)


def _concat(call: Call) -> Val:
    if call.vals and all(val.kind == LIST for val in call.vals):
        return _concat_lists(call)
    size = Size()
    for val in call.vals:
        size = size + as_text(val, call.ctx.text_factor)
    return Val(size, TEXT)


def _concat_ws(call: Call) -> Val:
    separator = counts.payload(call.args[0], call.val(0)) if call.args else Size()
    size, pieces = Size(), Size(max(len(call.vals) - 2, 0))
    for val in call.vals[1:]:
        size = size + as_text(val, call.ctx.text_factor)
        if val.kind in (LIST, ANY):
            pieces = pieces + val.count()
    return Val(size + call.product(separator, pieces), TEXT)


def _list(call: Call) -> Val:
    size, inner, one = Size(FIXED_BYTES), Size(), Size()
    for val in call.vals:
        size, inner, one = size + val.slot(), inner + val.size, one.join(val.size)
    return Val(size, LIST, Size(len(call.vals)), Val(one), inner)


def _concat_lists(call: Call) -> Val:
    size, items, inner, one = Size(), Size(), Size(), Size()
    for val in call.vals:
        size, items = size + val.size, items + val.count()
        inner, one = inner + val.elements(), one.join(val.element().size)
    return Val(size, LIST, items, Val(one), inner)


def _zip(call: Call) -> Val:
    """Shorter lists are padded with NULLs up to the longest: at most n x all of them."""
    total = Size(FIXED_BYTES)
    for val in call.vals:
        total = total + val.size
    return Val(total.scale(max(len(call.vals), 1)), LIST)


def _split(call: Call) -> Val:
    """A list of pieces: at most one element per byte (``string_split(s, '')``), each in a
    16-byte slot."""
    text = call.val(0).size
    items = text + Size(1)
    return Val(
        items.scale(FIXED_BYTES) + text + Size(FIXED_BYTES), LIST, items, Val(text, TEXT), text
    )


def _per_item(call: Call) -> Val:
    """``json_extract(j, ['$.a', '$.b'])``: one result per path (a list of paths)."""
    source, paths = call.param(1), call.val(call.param(2), Val(Size(), TEXT))
    one = call.val(source).size if source >= 0 else Size(64)
    items = paths.count() if paths.kind in (LIST, ANY) else Size(1)
    return Val(call.product(one, items), ANY)


def _cast(call: Call) -> Val:
    size = call.val(0).size.scale(8) + Size(FIXED_BYTES)
    for val in call.vals[1:]:
        size = size + val.size
    return Val(size)


def _unnest(call: Call) -> Val:
    return call.val(0).element()


# --------------------------------------------------------------------------------------------
# Sized by a number


def _clamped(
    call: Call, index: int, unit: Size, fix: str, *, check: bool, as_integer: bool = False
) -> Size:
    """``unit x count`` for the count in argument ``index``. A count that is not a constant
    is rewritten when the bound does not fit: clamped (presentation) or checked (data);
    ``as_integer`` compares the count as the integer the function reads (SQLite, where the
    text ``'5'`` sorts above every number)."""
    count = call.args[index]
    bound = call.bound(count)
    size = None
    if bound is not None:
        try:
            size = unit.times(bound)
        except Quadratic:
            size = None
        if size is not None and call.ctx.fits(size):
            return size
    if counts.constant(count):  # known in advance: too large, or not a number at all
        if size is None:
            call.refuse("needs a whole number as its count")
        call.too_large(size, fix)
    if unit.grows:
        call.product(unit, Size.stored("\0count"))
    if not counts.duplicable(count):
        call.refuse("needs a count without random(), subqueries or window functions")
    limit = max(call.ctx.limits.clamp_bytes // max(unit.const, 1), 0)
    if check:
        message = f"value_too_large: {call.name}() would build more than {limit} elements; {fix}"
        counts.check(count, exp.Literal.number(limit), message)
    else:
        counts.clamp(count, limit, as_integer=as_integer)
    return unit.scale(limit)


def _repeat(call: Call) -> Val:
    value = call.val(0)
    if len(call.args) < 2:
        return value
    runtime = counts.runtime_clamp_limit(call.args[1], call.args[0])
    if runtime is not None:
        return Val(Size(runtime), TEXT)
    if value.size.grows and not counts.constant(call.args[1]):
        bound = call.bound(call.args[1])
        fixed_count = bound is not None and not bound.grows
        if not fixed_count or not call.ctx.fits(value.size.times(bound or Size())):
            return _repeat_at_run_time(call, value)
    unit = counts.payload(call.args[0], value)  # n copies of the bytes
    size = _clamped(call, 1, unit, "use a smaller count", check=False)
    kind = value.kind if value.kind in (TEXT, LIST) else ANY
    return Val(size, kind, None, value.elem)


def _repeat_at_run_time(call: Call, value: Val) -> Val:
    """``repeat(name, n)``: the copies are limited by the actual length of ``name``."""
    if value.kind == LIST or not counts.duplicable(call.args[0]):
        call.refuse(
            "repeats a list or a random value from the data; repeat a literal, or a string "
            "column with a literal count"
        )
    if not counts.duplicable(call.args[1]):
        call.refuse("needs a count without random(), subqueries or window functions")
    limit = call.ctx.limits.clamp_bytes
    counts.runtime_clamp(call.args[1], call.args[0], limit)
    return Val(Size(limit), TEXT)


def _pad(call: Call) -> Val:
    """``lpad(s, n, fill)``: exactly n characters (``s`` is cut when longer)."""
    fill = call.args[2] if len(call.args) > 2 else None
    per_char = max(_char_bytes(call.args[0]), _char_bytes(fill))
    return Val(_clamped(call, 1, Size(per_char), "use a smaller width", check=False), TEXT)


def _resize(call: Call) -> Val:
    fill = call.val(2, Val(Size()))
    unit = fill.slot() if len(call.args) > 2 else Size(FIXED_BYTES)
    fix = "use a smaller size"
    size = _clamped(call, 1, unit, fix, check=True) if len(call.args) > 1 else Size()
    return Val(call.val(0).size + size, LIST)


def _bins(call: Call) -> Val:
    fix = "use fewer bins"
    size = _clamped(call, 2, Size(FIXED_BYTES), fix, check=True) if len(call.args) > 2 else Size()
    return Val(size + Size(FIXED_BYTES), LIST, None, Val(Size(FIXED_BYTES), FIXED))


def _bytes(call: Call) -> Val:
    """``zeroblob(n)``, ``randomblob(n)``: n bytes (parameter 1: the count's argument). SQLite
    has no ``error()`` to fail a count with, so one that is not known in advance is clamped
    (as bars and padding are; ``replace(hex(zeroblob(n)), '00', '#')`` is SQLite's bar)."""
    index = call.param(1)
    if len(call.args) <= index:
        return Val(Size(1), TEXT)
    size = _clamped(call, index, Size(1), "use a smaller size", check=False, as_integer=True)
    return Val(size.join(Size(1)), TEXT)  # randomblob(0) is one byte


def _bits(call: Call) -> Val:
    size = _clamped(call, 1, Size(1), "use a shorter length", check=True)
    return Val(size + call.val(0).size, TEXT)


# --------------------------------------------------------------------------------------------
# Lambdas


def _lambda(call: Call, index: int) -> exp.Lambda | None:
    node = call.args[index] if index < len(call.args) else None
    return node if isinstance(node, exp.Lambda) else None


def _params(body: exp.Lambda) -> list[str]:
    return [param.name for param in body.expressions]


def _transform(call: Call) -> Val:
    items, body = call.val(0), _lambda(call, 1)
    if body is None:
        return items
    runs = items.count()
    names = _params(body)
    params = [Lambda(names[0], items.element(), runs, items.elements())]
    params += [Lambda(name, _INDEX, runs, runs.scale(FIXED_BYTES)) for name in names[1:]]
    one, keys = call.ctx.apply(body, params)
    inner = _over_runs(call, one.size, keys)
    size = runs.scale(FIXED_BYTES) + inner + Size(FIXED_BYTES)
    return Val(size, LIST, runs, Val(per_run(one.size, keys), one.kind), inner)


def _over_runs(call: Call, size: Size, keys: dict[str, Lambda]) -> Size:
    try:
        return over_runs(size, keys)
    except Quadratic:
        call.refuse(
            "adds a value from the data to every element of a list from the data, which has "
            "no size bound; unnest the list and join instead"
        )


def _filter(call: Call) -> Val:
    items, body = call.val(0), _lambda(call, 1)
    if body is not None:
        runs = items.count()
        params = [
            Lambda(name, items.element(), runs, items.elements()) for name in _params(body)[:1]
        ]
        call.ctx.apply(body, params)
    return items


def _reduce(call: Call) -> Val:
    """``list_reduce(l, lambda acc, x: …)``: the body may add to the accumulator once per
    element; using it twice (``acc || acc``) doubles it per element and is refused."""
    items, body = call.val(0), _lambda(call, 1)
    if body is None:
        return items
    runs, element = items.count(), items.element()
    start = call.val(2) if len(call.args) > 2 else element
    names = _params(body)

    def params(accumulator: Size) -> list[Lambda]:
        # DuckDB runs the body once per step over all rows: one accumulator, one element
        once = Size(1)
        acc = Lambda(names[0], Val(accumulator), once, accumulator)
        rest = [Lambda(names[1], element, once, element.size)] if len(names) > 1 else []
        rest += [Lambda(name, _INDEX, once, _INDEX.size) for name in names[2:]]
        return [acc, *rest]

    probe, keys = call.ctx.apply(body, params(start.size.join(element.size)), probe=True)
    acc_key, *others = keys
    if probe.size.coefficient(acc_key) > 1:
        call.refuse("uses its accumulator more than once, which doubles it per element")
    per_step = probe.size.without(acc_key)
    steps = {
        key: Lambda(keys[key].name, keys[key].one, runs, items.elements()) for key in others[:1]
    }
    steps |= {key: Lambda(keys[key].name, _INDEX, runs, runs.scale(16)) for key in others[1:]}
    grown = _over_runs(call, per_step, steps) if steps else call.product(per_step, runs)
    result = start.size.join(element.size) + grown
    one, _ = call.ctx.apply(body, params(result))
    return Val(result, one.kind)


_INDEX = Val(Size(FIXED_BYTES), FIXED)


def _invoke(call: Call) -> Val:
    body = _lambda(call, 0)
    if body is None:
        return Val(Size(FIXED_BYTES))
    params = [
        Lambda(name, val, Size(1), val.size)
        for name, val in zip(_params(body), call.vals[1:], strict=False)
    ]
    one, keys = call.ctx.apply(body, params)
    return Val(per_run(one.size, keys), one.kind)


def _select(call: Call) -> Val:
    items, picks = call.val(0), call.val(1, Val(Size(), LIST))
    size = call.product(items.element().slot(), picks.count())
    return Val(size + Size(FIXED_BYTES), LIST, picks.count(), items.element())


def _join(call: Call) -> Val:
    """``array_to_string(l, sep)``: the elements as text, and one separator between each."""
    items, index = call.val(0), call.param(1)
    known = 0 <= index < len(call.args)  # -1: no separator argument (a comma)
    separator = counts.payload(call.args[index], call.val(index)) if known else Size(1)
    return Val(elements_text(items) + call.product(separator, items.count()), TEXT)


def _join_aggregate(call: Call) -> Val:
    """``list_aggregate(l, 'string_agg', sep)`` joins; other aggregates return less."""
    extra = Size(1)
    for node, val in zip(call.args[2:], call.vals[2:], strict=False):
        extra = extra + counts.payload(node, val)
    return Val(elements_text(call.val(0)) + call.product(extra, call.val(0).count()))


KINDS: dict[str, Callable[[Call], Val]] = {
    "fixed": _fixed,
    "text": _text,
    "query_text": _query_text,
    "part": _part,
    "widest": _widest,
    "sum": _sum,
    "scale": _scale,
    "data": _data,
    "top": _top,
    "concat": _concat,
    "concat_ws": _concat_ws,
    "list": _list,
    "concat_lists": _concat_lists,
    "zip": _zip,
    "split": _split,
    "per_item": _per_item,
    "json": json_escape,
    "json_transform": json_transform,
    "json_pretty": json_pretty,
    "printed": printed,
    "paths": paths,
    "per_argument": per_argument,
    "markup": markup,
    "cast": _cast,
    "unnest": _unnest,
    "repeat": _repeat,
    "pad": _pad,
    "series": series,
    "resize": _resize,
    "bins": _bins,
    "bits": _bits,
    "bytes": _bytes,
    "replace": replace,
    "regexp_replace": regexp_replace,
    "printf": printf,
    "fmt": fmt,
    "strftime": strftime,
    "transform": _transform,
    "filter": _filter,
    "reduce": _reduce,
    "invoke": _invoke,
    "select": _select,
    "join": _join,
    "join_aggregate": _join_aggregate,
}
"""Every kind a family's ``size_functions`` table may name."""
