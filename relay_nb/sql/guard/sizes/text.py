"""Kinds of functions whose output is their input printed, escaped or marked up as text.

These grow by a constant factor of what they are given, so each is bounded from its
arguments' bounds (no count to clamp):

- ``printed``: the argument printed as text, times a factor, plus a few bytes — ``hex`` (x2),
  SQLite's ``quote`` (x2 + ``X''``), ``upper``/``lower`` (x3 when an ICU build folds
  ``ß`` to ``SS``). Printing goes through the family's ``size_text_factor``: a SQLite number
  prints as at most 64 characters and a blob as its own bytes, a DuckDB ``BIT`` as 8
  characters per byte;
- ``json``: every argument escaped into JSON (``\\u0001`` is 6 bytes for 1), plus
  ``json_transform`` (structures) and ``json_pretty`` (indentation per nesting level);
- ``paths``: SQLite's ``json_extract(j, p1, p2, …)`` returns one piece of ``j`` per path (an
  array of them when there are several);
- ``per_argument``: a fixed number of bytes per argument (``char(…)``: one code point each, at
  most 4 bytes; the argument count is bounded by the query's length);
- ``markup``: SQLite's FTS ``highlight``/``snippet`` put markers around every matched token
  of a stored document, ``offsets`` four numbers per match (at most one match per byte).

The kinds are registered in :data:`relay_nb.sql.guard.sizes.kinds.KINDS`.
"""

from __future__ import annotations

from relay_nb.sql.guard.sizes import counts
from relay_nb.sql.guard.sizes.call import Call
from relay_nb.sql.guard.sizes.model import FIXED_BYTES, TEXT, Size, Val, as_text

__all__ = [
    "json_escape",
    "json_pretty",
    "json_transform",
    "markup",
    "paths",
    "per_argument",
    "printed",
]

_JSON_ESCAPE = 6
"""The longest JSON escape of one byte: ``\\u0001``."""


def printed(call: Call) -> Val:
    """``(printed, factor, extra)``: the first argument printed as text, ``factor`` times,
    plus ``extra`` bytes (quotes, ``X''``)."""
    text = as_text(call.val(0), call.ctx.text_factor)
    return Val(text.scale(call.param(1, 1)) + Size(call.param(2)), TEXT)


def json_escape(call: Call) -> Val:
    """Every argument escaped into one JSON text (keys, values, the document itself)."""
    size = Size(64)
    for val in call.vals:
        size = size + val.size.scale(_JSON_ESCAPE)
    return Val(size, TEXT)


def json_transform(call: Call) -> Val:
    """``from_json(j, structure)``: extracted values are pieces of ``j``; each object may
    also get one NULL field per key of the structure."""
    structure = counts.literal_text(call.args[1]) if len(call.args) > 1 else None
    if structure is None:
        return Val(call.product(call.val(0).size, call.val(1).size.scale(8)))
    fields = structure.count(":") + structure.count(",") + 1
    return Val(call.val(0).size.scale(FIXED_BYTES + 8 * fields) + Size(len(structure)))


def json_pretty(call: Call) -> Val:
    """Every value on a line of its own, indented once per level it is nested in: only a
    literal document has a known depth. The indentation is four spaces, or SQLite's second
    argument (``json_pretty(j, '  ')``), which must be a literal too."""
    text = counts.literal_text(call.args[0]) if call.args else None
    indent = counts.literal_text(call.args[1]) if len(call.args) > 1 else " " * 4
    if text is None or indent is None:
        call.refuse(
            "can grow with the square of the JSON's nesting depth; select the JSON as it is, "
            "or json_extract the parts you need"
        )
    depth = deepest = 0
    for char in text:
        depth += char in "[{"
        depth -= char in "]}"
        deepest = max(deepest, depth)
    values = text.count(",") + text.count(":") + text.count("[") + text.count("{") + 1
    width = len(indent.encode())
    return Val(Size(len(text) + values * (width * deepest + 2) + FIXED_BYTES), TEXT)


def paths(call: Call) -> Val:
    """``(paths, source, factor)``: one piece of argument ``source`` per path after it, each
    at most ``factor`` times the source (a JSON5 document comes out as canonical JSON: an
    unquoted key gains its quotes)."""
    source = call.param(1)
    count = max(len(call.args) - source - 1, 1)
    piece = call.val(source).size.scale(call.param(2, 1))
    return Val(piece.scale(count) + Size(64), TEXT)


def per_argument(call: Call) -> Val:
    """``(per_argument, bytes)``: ``bytes`` per argument (``char(65, 66)``: 4 per code point)."""
    return Val(Size(call.param(1) * max(len(call.args), 1)), TEXT)


def markup(call: Call) -> Val:
    """``(markup, first, per_match)``: a stored document (the FTS table's column, not an
    argument) with the marker arguments from ``first`` on, plus ``per_match`` bytes, around
    each match: at most one match per byte."""
    document = Size.stored(call.ctx.key(call.node))
    markers = Size(call.param(2))
    for node, val in zip(call.args[call.param(1) :], call.vals[call.param(1) :], strict=False):
        markers = markers + counts.payload(node, val)
    return Val(document + call.product(markers, document), TEXT)
