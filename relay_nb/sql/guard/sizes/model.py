"""The numbers behind the size analysis: what a bound on a value's size is, and the limits.

A bound is ``A + Σ m_c·|c|``: ``A`` bytes built from constants, plus ``m_c`` copies of each
stored value ``c`` the expression reads (a column, keyed by its name; an aggregate's output,
keyed by its SQL). Counting copies *per stored value* rather than against one "largest
value" keeps ``a || ' ' || b`` at one copy of the row it came from, while ``a || a`` is two
copies of ``a``: the multiple measures amplification, not how many columns a query reads.

Sizes are bytes in DuckDB's terms (SQLite has no lists, and its text and blobs are their
bytes too): a string is its bytes, a fixed-width value (numbers, dates, booleans, UUIDs) 16
bytes, and a list 16 bytes plus a 16-byte slot per element (DuckDB's ``string_t``) plus the
elements' bytes — ``string_split(s, '')`` is 17x ``s``. So a built list has at most one
element per 16 bytes of its size, a stored one at most one per byte.

:mod:`relay_nb.sql.guard.sizes.sizer` runs the analysis; the kinds of functions are in
:mod:`relay_nb.sql.guard.sizes.kinds`; a dialect family lists its functions and
limits as class data (``DuckDBPolicy.size_functions``, ``size_limits``;
``SQLitePolicy.size_text_factor`` too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

__all__ = [
    "ANY",
    "FIXED",
    "FIXED_BYTES",
    "Lambda",
    "LIST",
    "TEXT",
    "TEXT_FACTOR",
    "Quadratic",
    "Size",
    "SizeLimits",
    "SizeRule",
    "TooLarge",
    "Val",
    "as_text",
    "elements_text",
    "join_vals",
    "human",
    "over_runs",
    "per_run",
    "size_table",
]

CAP: Final = 1 << 62
"""Bounds saturate here: past every limit, and keeps nested products cheap to compute."""

FIXED_BYTES: Final = 16
"""A fixed-width value, or the slot of one list element (DuckDB's ``string_t``)."""

_NO_DATA: Mapping[str, int] = MappingProxyType({})


def _cap(value: int) -> int:
    return min(max(value, 0), CAP)


class Quadratic(Exception):
    """A product of two sizes that both grow with the stored data (no linear bound)."""


class TooLarge(Exception):
    """The analysis refuses: ``message`` tells the model what to write instead."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Size:
    """An upper bound ``const + Σ data[c]·|c|`` on a value's bytes (see the module docstring)."""

    const: int = 0
    data: Mapping[str, int] = field(default_factory=lambda: _NO_DATA)

    @classmethod
    def stored(cls, key: str, copies: int = 1) -> Size:
        return cls(0, MappingProxyType({key: copies}))

    @property
    def multiple(self) -> int:
        """The most copies of any one stored value."""
        return max(self.data.values(), default=0)

    @property
    def grows(self) -> bool:
        return bool(self.data)

    def __add__(self, other: Size) -> Size:
        data = dict(self.data)
        for key, copies in other.data.items():
            data[key] = _cap(data.get(key, 0) + copies)
        return Size(_cap(self.const + other.const), MappingProxyType(data))

    def join(self, other: Size) -> Size:
        """The least bound above both (a value that is one or the other)."""
        data = dict(self.data)
        for key, copies in other.data.items():
            data[key] = max(data.get(key, 0), copies)
        return Size(max(self.const, other.const), MappingProxyType(data))

    def scale(self, factor: int) -> Size:
        factor = _cap(factor)
        data = {key: _cap(copies * factor) for key, copies in self.data.items()}
        return Size(_cap(self.const * factor), MappingProxyType(data))

    def times(self, count: Size) -> Size:
        """``count`` copies of a value of this size; refuses data x data (no linear bound)."""
        if self.grows and count.grows:
            raise Quadratic
        if not count.grows:
            return self.scale(count.const)
        return count.scale(self.const)

    def ceil_div(self, divisor: int) -> Size:
        """This bound over ``divisor``, rounded up (a stored part never drops to zero)."""
        divisor = max(divisor, 1)
        data = {key: -(-copies // divisor) for key, copies in self.data.items()}
        return Size(-(-self.const // divisor), MappingProxyType(data))

    def coefficient(self, key: str) -> int:
        return self.data.get(key, 0)

    def without(self, *keys: str) -> Size:
        data = {key: copies for key, copies in self.data.items() if key not in keys}
        return Size(self.const, MappingProxyType(data))

    def substitute(self, key: str, value: Size) -> Size:
        """This bound with the symbol ``key`` (a lambda variable) replaced by ``value``."""
        copies = self.coefficient(key)
        return self.without(key) + value.scale(copies) if copies else self

    def exceeds(self, const_limit: int, multiple_limit: int) -> bool:
        return self.const > const_limit or self.multiple > multiple_limit

    def describe(self) -> str:
        parts = [human(self.const)] if self.const or not self.data else []
        if self.data:
            parts.append(f"{self.multiple}x a stored value")
        return " + ".join(parts)


TEXT: Final = "text"
LIST: Final = "list"
FIXED: Final = "fixed"
ANY: Final = "any"


@dataclass(frozen=True, slots=True)
class Val:
    """What the analysis knows about one expression's value."""

    size: Size
    kind: str = ANY
    """``text`` (a string), ``list``, ``fixed`` (a fixed-width scalar) or ``any``."""
    items: Size | None = None
    """For lists: a bound on the element count, when tighter than the size allows."""
    elem: Val | None = None
    """For lists: a bound on one element."""
    inner: Size | None = None
    """For lists: a bound on the sum of the elements' sizes (without their slots)."""
    top: int | None = None
    """For integers: a bound on the number itself (elements of ``range(1, 6)`` or of
    ``[1, 2, 3]``), so ``list_transform(range(1, 6), lambda i: repeat('*', i))`` is small."""

    def count(self) -> Size:
        """A bound on the element count (built elements cost at least 16 bytes each)."""
        if self.items is not None:
            return self.items
        return Size(-(-self.size.const // FIXED_BYTES), self.size.data)

    def element(self) -> Val:
        return self.elem if self.elem is not None else Val(self.size)

    def elements(self) -> Size:
        """A bound on the sum of the elements' sizes."""
        return self.inner if self.inner is not None else self.size

    def slot(self) -> Size:
        """What this value costs as a list element: its bytes plus a 16-byte slot."""
        return self.size if self.kind == FIXED else self.size + Size(FIXED_BYTES)


@dataclass(frozen=True, slots=True)
class Lambda:
    """One lambda parameter: a bound on one value, how often the body runs, and the sum of
    the parameter over all runs (for a list's elements: the list's size)."""

    name: str
    one: Val
    runs: Size
    total: Size


def per_run(size: Size, params: Mapping[str, Lambda]) -> Size:
    """A body's bound for one run: each parameter's symbol replaced by one value's bound."""
    for key, param in params.items():
        size = size.substitute(key, param.one.size)
    return size


def over_runs(size: Size, params: Mapping[str, Lambda]) -> Size:
    """A body's bound summed over all runs: ``runs x (what does not depend on the
    parameters) + Σ copies x (the parameter summed over the runs)``.

    Linear when the list's length is a constant or the body adds only constants; a body that
    adds a stored value to every element of a list from the data raises :class:`Quadratic`.
    """
    if not params:
        return size
    runs = next(iter(params.values())).runs
    total = size.without(*params).times(runs)
    for key, param in params.items():
        total = total + param.total.scale(size.coefficient(key))
    return total


@dataclass(frozen=True, slots=True)
class SizeLimits:
    """The bounds a query's values must stay within (see :mod:`sizer` for why)."""

    value_bytes: int = 64 * 1024
    """One value built from constants. DuckDB evaluates 2048-row vectors and keeps every
    intermediate vector of a chunk alive: 64 KiB per row is 128 MiB per thread."""
    value_multiple: int = 64
    """One value may hold up to 64 copies of any stored value it reads."""
    query_bytes: int = 256 * 1024
    """All values one row builds, summed over the query's expressions."""
    query_multiple: int = 1024
    """Copies of any one stored value, summed over the query's expressions."""
    clamp_bytes: int = 16 * 1024
    """A count that is not a literal is clamped (or checked) so its value stays within this:
    sixteen clamped values fit in ``query_bytes``."""
    bounded_recursion: bool = False
    """Whether a recursive CTE that adds to a value per step must bound its steps in the query
    (:mod:`~relay_nb.sql.guard.sizes.steps`): not for DuckDB, whose working tables
    count against its memory limit; yes for SQLite, which has none."""


SizeRule = tuple[str | int, ...]
"""``(kind, *parameters)``: how one function's output size follows from its arguments; the
kinds are the handlers in :data:`relay_nb.sql.guard.sizes.kinds.KINDS`."""


def join_vals(vals: list[Val]) -> Val:
    """A bound on a value that is one of ``vals`` (``CASE``, ``COALESCE``, ``UNION``)."""
    if not vals:
        return Val(Size())
    size, kinds = vals[0].size, {val.kind for val in vals}
    for val in vals[1:]:
        size = size.join(val.size)
    if kinds != {LIST}:
        return Val(size, kinds.pop() if len(kinds) == 1 else ANY)
    items, inner, one = vals[0].count(), vals[0].elements(), vals[0].element()
    for val in vals[1:]:
        items, inner = items.join(val.count()), inner.join(val.elements())
        one = join_vals([one, val.element()])
    return Val(size, LIST, items, one, inner)


def elements_text(val: Val) -> Size:
    """A bound on a list's elements printed as text, one after the other."""
    one, items = val.element(), val.count()
    if one.kind == TEXT:
        return val.elements()
    if one.kind == FIXED:
        return items.scale(64)
    return val.elements().scale(8) + items.scale(64)


TEXT_FACTOR: Final = 8
"""Bytes a value of unknown type may print as, per byte it holds (``CAST(x AS TEXT)``,
``x || ''``), by default: DuckDB prints a ``BIT`` string as 8 characters per byte and a
``BLOB`` as ``\\xNN`` escapes. A family whose engine prints every value as its own bytes
says so with ``size_text_factor = 1`` (SQLite: text and blobs as they are, numbers as at most
64 characters)."""


def as_text(val: Val, factor: int = TEXT_FACTOR) -> Size:
    """A bound on ``val`` cast to text: a list prints its elements, a ``BIT`` or ``BOOLEAN``
    list prints up to 8 characters per stored byte; a value of unknown type ``factor``
    characters per byte, plus 64 for a number."""
    if val.kind == TEXT:
        return val.size
    if val.kind == FIXED:
        return Size(64)
    if val.kind == LIST:
        one, items = val.element(), val.count()
        if one.kind == TEXT:
            body = val.size.scale(2)
        elif one.kind == FIXED:
            body = items.scale(64)
        else:
            body = val.size.scale(8)
        return body + items.scale(4) + Size(2)
    return val.size.scale(factor) + Size(64)


def size_table(groups: Mapping[SizeRule, str]) -> Mapping[str, SizeRule]:
    """``{rule: "name name …"}`` → ``{name: rule}``; a name listed twice is a table bug."""
    table: dict[str, SizeRule] = {}
    for rule, names in groups.items():
        for name in names.split():
            if name in table:
                raise ValueError(f"{name!r} has two size rules")
            table[name] = rule
    return MappingProxyType(table)


def human(size: int) -> str:
    """``65536`` → ``64 KiB``: sizes in messages the model reads."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value >= 10 else f"{value:.1f} {unit}"
    return f"{size} bytes"
