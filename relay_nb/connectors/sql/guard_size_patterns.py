"""Sizes set by a pattern: ``replace``, ``regexp_replace``, ``printf``, ``format``,
``strftime``.

Their output grows with what the pattern says — every occurrence of ``from`` becomes ``to``, a
``%1000000d`` prints a million characters, ``%B`` prints ``September`` — so each is bounded
from the literal pattern: its widths and precisions, the bytes it adds per match, the
back-references that copy a match again. A pattern that is not a literal comes from the data
and is bounded by its size, or refused when its effect has no linear bound.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from relay_nb.connectors.sql import guard_size_counts as counts
from relay_nb.connectors.sql.guard_size_model import TEXT, Size, Val, as_text

if TYPE_CHECKING:
    from relay_nb.connectors.sql.guard_size_kinds import Call

__all__ = ["fmt", "printf", "regexp_replace", "replace", "strftime"]


def replace(call: Call) -> Val:
    """Each occurrence of a non-empty ``from`` becomes ``to``: at most one per byte of ``s``
    (per ``len(from)`` bytes when ``from`` is a literal)."""
    text = call.val(0).size
    source = counts.literal_text(call.args[1]) if len(call.args) > 1 else ""
    width = len(source.encode()) if source else 1
    target = counts.payload(call.args[2], call.val(2)) if len(call.args) > 2 else Size()
    return Val(text + call.product(target, text.ceil_div(width)), TEXT)


_BACKREF = re.compile(r"\\[0-9]")


def regexp_replace(call: Call) -> Val:
    """Matches may be empty (one per byte plus one) and ``\\0``-``\\9`` copy them again."""
    text = call.val(0).size
    options = counts.literal_text(call.args[3]) if len(call.args) > 3 else ""
    every = options is None or "g" in options
    matches = text + Size(1) if every else Size(1)
    replacement = counts.literal_text(call.args[2]) if len(call.args) > 2 else ""
    if replacement is None:
        target = call.val(2).size
        references = target.ceil_div(2)
    else:
        references = Size(len(_BACKREF.findall(replacement)))
        target = Size(len(_BACKREF.sub("", replacement).encode()))
    copies = call.product(text, references)
    return Val(text + call.product(target, matches) + copies, TEXT)


_PRINTF = re.compile(r"%(?:\d+\$)?[-+ #0']*(\*|\d+)?(?:\.(\*|\d*))?(?:hh|h|ll|l|L|q|j|z|t)?(.)")
_FMT_SPEC = re.compile(r"^(?:.?[<>^=])?[-+ ]?#?0?(\d*)(?:\.(\d+))?L?[a-zA-Z%]?$")
_NUMBER_TEXT = 400
"""The longest number a conversion prints without width or precision (``%f`` of 1e308)."""


def printf(call: Call) -> Val:
    return _formatted(call, _printf_specs)


def fmt(call: Call) -> Val:
    return _formatted(call, _fmt_specs)


def _formatted(call: Call, specs: Callable[[Call, str], tuple[int, list[int]]]) -> Val:
    """Literal text, plus per conversion: its width, its precision digits and the widest
    argument printed as text (positional arguments may print one argument many times)."""
    pattern = counts.literal_text(call.args[0]) if call.args else None
    if pattern is None:
        call.refuse("needs a literal format string: a format from the data sets its own widths")
    literal, widths = specs(call, pattern)
    widest = Size()
    for val in call.vals[1:]:
        widest = widest.join(as_text(val))
    size = Size(literal)
    for width in widths:
        size = size + widest + Size(width + _NUMBER_TEXT)
    if not call.ctx.fits(size):
        call.too_large(size, "use smaller widths and precisions in the format")
    return Val(size, TEXT)


def _printf_specs(call: Call, pattern: str) -> tuple[int, list[int]]:
    widths = []
    for match in _PRINTF.finditer(pattern):
        width, precision, conversion = match.groups()
        if "*" in (width, precision):
            call.refuse("takes a width from an argument; write the width into the format")
        if conversion != "%":
            widths.append(int(width or 0) + int(precision or 0))
    return len(_PRINTF.sub("", pattern).encode()) + pattern.count("%%"), widths


def _fmt_specs(call: Call, pattern: str) -> tuple[int, list[int]]:
    """``{}``, ``{0}``, ``{:>10}``, ``{:.2f}``; ``{{``/``}}`` are braces. A width taken from
    an argument (``{:>{}}``) is refused: it is a number from the data."""
    literal, widths, index = 0, [], 0
    while index < len(pattern):
        pair = pattern[index : index + 2]
        if pair in ("{{", "}}"):
            literal, index = literal + 1, index + 2
            continue
        if pattern[index] != "{":
            literal, index = literal + len(pattern[index].encode()), index + 1
            continue
        end = pattern.find("}", index)
        field = pattern[index + 1 : end] if end >= 0 else "{"
        if "{" in field:
            call.refuse("takes a width from an argument; write the width into the format")
        parsed = _FMT_SPEC.match(field.partition(":")[2])
        if parsed is None:
            call.refuse("uses a format spec the guard cannot read; use {} or {:>10}-style specs")
        width, precision = parsed.groups()
        widths.append(4 * int(width or 0) + int(precision or 0))  # a fill may be 4 bytes
        index = end + 1
    return literal, widths


def strftime(call: Call) -> Val:
    """Each ``%x`` prints at most 32 bytes (a time zone name): 16x the format's length."""
    formats = [counts.literal_text(arg) for arg in call.args]
    known = [len(text.encode()) for text in formats if text is not None]
    if known:
        return Val(Size(16 * max(known) + 64), TEXT)
    size = Size(64)
    for val in call.vals:
        size = size + val.size.scale(16)
    return Val(size, TEXT)
