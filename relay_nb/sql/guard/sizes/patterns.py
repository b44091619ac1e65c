"""Sizes set by a pattern: ``replace``, ``regexp_replace``, ``printf``, ``format``,
``strftime``.

Their output grows with what the pattern says — every occurrence of ``from`` becomes ``to``, a
``%1000000d`` prints a million characters, ``%B`` prints ``September`` — so each is bounded
from the literal pattern: its widths and precisions, the bytes it adds per match, the
back-references that copy a match again. A pattern that is not a literal comes from the data
and is bounded by its size, or refused when its effect has no linear bound.

``printf`` reads its format in one of two flavours (the kind's parameter): C's, as DuckDB
reads it (positional ``%1$s``; a ``*`` width is refused), and SQLite's, where ``%q``/``%Q``/
``%w`` double every quote, ``%.5c`` repeats a character five times, and a ``*`` width or
precision takes the next argument — a number from the data, which is rewritten to
``MAX(MIN(CAST(n AS INTEGER), K), -K)`` (SQLite takes a negative width as its absolute value,
left-justified) so every result within the bound is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from relay_nb.sql.guard.sizes import counts
from relay_nb.sql.guard.sizes.call import Call
from relay_nb.sql.guard.sizes.model import TEXT, Size, Val, as_text

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


Spec = tuple[int, int]
"""What one conversion prints: ``(bytes, copies)`` — bytes of its own (width, precision,
digits) and copies of the widest argument printed as text."""


def printf(call: Call) -> Val:
    """``(printf,)``: C's format, as DuckDB reads it; ``(printf, "sqlite")``: SQLite's."""
    flavour = call.params[1] if len(call.params) > 1 else "c"
    return _formatted(call, _sqlite_specs if flavour == "sqlite" else _printf_specs)


def fmt(call: Call) -> Val:
    return _formatted(call, _fmt_specs)


def _formatted(call: Call, specs: Callable[[Call, str], tuple[int, list[Spec]]]) -> Val:
    """Literal text, plus per conversion: its width, its precision digits and the widest
    argument printed as text (positional arguments may print one argument many times)."""
    pattern = counts.literal_text(call.args[0]) if call.args else None
    if pattern is None:
        call.refuse("needs a literal format string: a format from the data sets its own widths")
    literal, conversions = specs(call, pattern)
    widest = Size()
    for val in call.vals[1:]:
        widest = widest.join(as_text(val, call.ctx.text_factor))
    size = Size(literal)
    for own, copies in conversions:
        size = size + (widest.scale(copies) if copies else Size()) + Size(own)
    if not call.ctx.fits(size):
        call.too_large(size, "use smaller widths and precisions in the format")
    return Val(size, TEXT)


def _printf_specs(call: Call, pattern: str) -> tuple[int, list[Spec]]:
    conversions = []
    for match in _PRINTF.finditer(pattern):
        width, precision, conversion = match.groups()
        if "*" in (width, precision):
            call.refuse("takes a width from an argument; write the width into the format")
        if conversion != "%":
            conversions.append((int(width or 0) + int(precision or 0) + _NUMBER_TEXT, 1))
    return len(_PRINTF.sub("", pattern).encode()) + pattern.count("%%"), conversions


_SQLITE_PRINTF = re.compile(r"%([-+ #!0,]*)(\*|\d+)?(?:\.(\*|\d*))?(?:ll|l)?(.?)", re.DOTALL)
_SQLITE_NUMBERS = frozenset("diuxXopfeEgGr")
_SQLITE_NUMBER = 32
"""The longest number a conversion other than ``%f`` prints without width or precision
(``%,d`` of -2^63 is 26 characters, ``%e`` of 1e308 13, ``%r`` adds an ordinal's two)."""
_SQLITE_TEXT = {"s": 1, "z": 1, "q": 2, "w": 2, "Q": 2}
"""Text conversions and the copies of their argument they print (``%q`` doubles quotes)."""


def _sqlite_specs(call: Call, pattern: str) -> tuple[int, list[Spec]]:
    """SQLite's ``printf``/``format``: flags ``-+ #!0,``, a width and a precision (digits or
    ``*``), ``l``/``ll``, then the conversion. Arguments are taken in order: a ``*`` width,
    a ``*`` precision, then the value (``%%`` and ``%n`` take none). At a conversion it does
    not know, SQLite stops printing."""
    conversions: list[Spec] = []
    argument = 1
    for match in _SQLITE_PRINTF.finditer(pattern):
        _, width_spec, precision_spec, conversion = match.groups()
        if not conversion:  # a % at the very end prints itself
            conversions.append((1, 0))
            break
        known = conversion in _SQLITE_NUMBERS or conversion in _SQLITE_TEXT or conversion in "c%n"
        if not known:
            break
        # bytes per unit of precision: %.5c repeats a character (up to 4 bytes), %.20d pads
        # digits (with a thousands comma: 2), %.5s only cuts its text short
        value = argument + (width_spec == "*") + (precision_spec == "*")
        unit = 0 if conversion in _SQLITE_TEXT else 2
        if conversion == "c":
            unit = _first_char_bytes(call.args[value] if value < len(call.args) else None)
        width = precision = 0
        if width_spec == "*":
            width, argument = _star(call, argument, 1), argument + 1
        elif width_spec:
            width = int(width_spec)
        if precision_spec == "*":
            precision, argument = _star(call, argument, unit), argument + 1
        elif precision_spec:
            precision = int(precision_spec) * unit
        if conversion in "%n":
            conversions.append((0 if conversion == "n" else 1 + width, 0))
            continue
        argument += 1
        if conversion == "c":
            conversions.append((unit + precision + width, 0))
        elif conversion in _SQLITE_TEXT:
            quotes = 6 if conversion == "Q" else 0  # 'text', or NULL
            conversions.append((width + quotes, _SQLITE_TEXT[conversion]))
        else:  # only %f prints every digit of 1e308; an integer is at most 27 with commas
            digits = _NUMBER_TEXT if conversion == "f" else _SQLITE_NUMBER
            conversions.append((width + precision + digits, 0))
    literal = len(_SQLITE_PRINTF.sub("", pattern).encode())
    return literal, conversions


def _first_char_bytes(node: exp.Expr | None) -> int:
    """The bytes of the character ``%c`` prints: the first of its argument's text (a
    literal's, else up to 4)."""
    text = counts.literal_text(node) if node is not None else ""
    if text is None:
        return 4
    return len(text[:1].encode()) or 1


def _star(call: Call, index: int, unit: int) -> int:
    """The bytes a ``*`` width or precision taken from argument ``index`` may add: a literal
    as written (its absolute value), a clamped count as clamped; any other count is clamped
    in the tree to ``MAX(MIN(CAST(n AS INTEGER), K), -K)``."""
    if unit == 0 or index >= len(call.args):
        return 0  # a precision that only cuts text short; a missing argument reads as 0
    node = call.args[index]
    number = counts.literal_int(node)
    if number is not None:
        return abs(number) * unit
    clamped = _star_limit(node)
    if clamped is not None:
        return clamped * unit
    limit = max(call.ctx.limits.clamp_bytes // unit, 0)
    inner = exp.Least(
        this=exp.Cast(this=node.copy(), to=exp.DataType.build("INTEGER")),
        expressions=[exp.Literal.number(limit)],
        ignore_nulls=False,  # SQLite's MIN(a, b): NULL when either is, as parsed back
    )
    floor = exp.Neg(this=exp.Literal.number(limit))
    node.replace(exp.Greatest(this=inner, expressions=[floor], ignore_nulls=False))
    return limit * unit


def _star_limit(node: exp.Expr) -> int | None:
    """The K of a ``*`` argument rewritten by :func:`_star`, or ``None``."""
    node = counts.unwrap(node)
    if not isinstance(node, exp.Greatest) or len(node.expressions) != 1:
        return None
    inner, floor = counts.unwrap(node.this), counts.literal_int(node.expressions[0])
    if not isinstance(inner, exp.Least) or len(inner.expressions) != 1 or floor is None:
        return None
    ceiling = counts.literal_int(inner.expressions[0])
    if ceiling is None or ceiling < 0 or floor > 0:
        return None
    return max(ceiling, -floor)


def _fmt_specs(call: Call, pattern: str) -> tuple[int, list[Spec]]:
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
        widths.append((4 * int(width or 0) + int(precision or 0) + _NUMBER_TEXT, 1))  # 4-byte fill
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
