"""How much of a result may enter the kernel: bytes per value and per result, columns per record.

A row limit bounds what a result costs the model; it does not bound what it costs the
kernel: five rows of 100 MB strings are five rows. Every connector therefore fetches through
a :class:`ResultBudget`, which sees each row (or document, or record) *as it arrives* and

* refuses the row that would take the bytes read past ``max_result_bytes``: the fetch loop
  then stops reading and cancels the statement, and the result is marked truncated;
* clips a value longer than ``max_value_bytes`` in the rows it keeps (text keeps its head and
  says it was cut, binary keeps its head, JSON-like values become their clipped JSON text).

What it kept and why is said in :meth:`ResultBudget.notes`, which reach the model (in the
preview) and the analyst (in the trace) through :attr:`QueryResult.notes`.

Sizes are what the value costs once decoded — UTF-8 bytes of text, bytes of binary, a small
constant for numbers, dates and NULLs, the walk of a nested value (stopped as soon as it is
over the limit) — plus a constant per value for the Python object that holds it, so a
million empty cells are not free. The budget bounds what is *kept*; what a driver may hold
before handing a row over is bounded where it is read (the SQL wire reader, Mongo's batch
size, the HTTP body cap).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import sys
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from relay_nb.errors import ConfigurationError
from relay_nb.redaction import secret_patterns

__all__ = [
    "DEFAULT_MAX_COLUMNS",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_MAX_VALUE_BYTES",
    "CLIP_MARK",
    "ResultBudget",
    "check_byte_limits",
    "clip_value",
    "describe_bytes",
    "json_head",
    "value_size",
]

DEFAULT_MAX_VALUE_BYTES = 1 << 20
"""1 MiB: a long document or JSON value fits; a dumped file or blob is cut."""
DEFAULT_MAX_RESULT_BYTES = 16 << 20
"""16 MiB: hundreds of ordinary rows use a few hundred KB; this is a ceiling, not a target."""
DEFAULT_MAX_COLUMNS = 500
"""Columns a record-shaped result (JSON, documents) may spread into; wider ones are clipped."""

CLIP_MARK = "…[clipped]"
"""Ends a text value that was cut, so neither the analyst nor the model mistakes it for data."""

_VALUE_OVERHEAD = 16
"""Bytes charged per value on top of its payload: the pointer and object that hold it."""
_SMALL = 8
_LIMIT_CEILING = 1 << 40


def check_byte_limits(max_value_bytes: Any, max_result_bytes: Any) -> tuple[int, int]:
    """Validate a connector's two byte options (one line naming the fix when wrong)."""
    for name, value in (
        ("max_value_bytes", max_value_bytes),
        ("max_result_bytes", max_result_bytes),
    ):
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 1 <= value <= _LIMIT_CEILING
        ):
            raise ConfigurationError(
                f"{name} must be a positive whole number of bytes, not {value!r}"
            )
    if max_value_bytes > max_result_bytes:
        raise ConfigurationError(
            f"max_value_bytes ({max_value_bytes:,}) cannot exceed max_result_bytes "
            f"({max_result_bytes:,}); lower it or raise max_result_bytes"
        )
    return max_value_bytes, max_result_bytes


def describe_bytes(size: int, *, decimal: bool = False) -> str:
    """``16 MiB``, ``1.5 KiB``, ``300 bytes``: sizes as people read them; ``decimal`` in the
    units warehouses bill scans in (``1.4 GB``)."""
    step = 1000 if decimal else 1024
    if size < step:
        return f"{size:,} bytes"
    amount = size / step
    units = ["KB", "MB", "GB", "TB", "PB"] if decimal else ["KiB", "MiB", "GiB", "TiB"]
    while amount >= step and len(units) > 1:
        amount /= step
        units.pop(0)
    return f"{amount:.1f}".removesuffix(".0") + f" {units[0]}"


def value_size(value: Any, limit: int = _LIMIT_CEILING) -> int:
    """What ``value`` costs once decoded, in bytes; the walk of a nested value stops as soon
    as it passes ``limit`` (the answer is then some number above it)."""
    fixed = _FIXED_SIZES.get(type(value))
    if fixed is not None:
        return fixed
    if isinstance(value, _SMALL_TYPES):
        return _SMALL
    if isinstance(value, str):
        return _text_size(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, int):
        return max(_SMALL, (value.bit_length() + 7) // 8)
    if isinstance(value, _SIXTEEN_BYTE_TYPES):
        return 16
    if isinstance(value, decimal.Decimal):
        return _SMALL + len(value.as_tuple().digits)
    if isinstance(value, Mapping | list | tuple):
        return _nested_size(value, limit)
    return sys.getsizeof(value)


_SMALL_TYPES = (type(None), bool, float)
_SIXTEEN_BYTE_TYPES = (dt.date, dt.time, dt.timedelta, uuid.UUID)
_FIXED_SIZES: dict[type, int] = {
    **dict.fromkeys(_SMALL_TYPES, _SMALL),
    **dict.fromkeys((*_SIXTEEN_BYTE_TYPES, dt.datetime), 16),
}
"""The price of these exact types, whatever the value (their subclasses are matched by
``isinstance`` in :func:`value_size`, at the same prices)."""
_INT64 = 1 << 63
"""An int within 64 bits costs :data:`_SMALL`, as :func:`value_size` prices it."""


def _text_size(text: str) -> int:
    if text.isascii():  # O(1) in CPython: one byte per character
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _nested_size(value: Mapping[Any, Any] | Sequence[Any], limit: int) -> int:
    total = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            total += 2
            for key, inner in item.items():
                total += _text_size(str(key)) + 2
                stack.append(inner)
        elif isinstance(item, list | tuple):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += value_size(item, limit)
        if total > limit:
            break
    return total


def clip_value(value: Any, limit: int) -> Any:
    """``value`` cut to at most ``limit`` bytes: text keeps its head and ends with
    :data:`CLIP_MARK`, binary keeps its head, anything else becomes its clipped text.

    Secrets are redacted in the head *before* it is cut (with room for the longest one past
    the cut), so a cut through a secret cannot leave its first half for the redaction of
    the cell to miss.
    """
    patterns = secret_patterns()
    margin = patterns.longest * 6 if patterns is not None else 0  # "\uXXXX": 6 per char
    if isinstance(value, bytes | bytearray | memoryview):
        head = bytes(value[: limit + margin])
        return (patterns.redact(head) if patterns is not None else head)[:limit]
    if isinstance(value, str):
        text = value[: limit + margin]
    elif isinstance(value, Mapping | list | tuple):
        text = json_head(value, limit + margin)
    else:
        text = str(value)[: limit + margin]
    if patterns is not None:
        text = patterns.redact(text)
    room = max(0, limit - len(CLIP_MARK.encode()))  # the mark counts in bytes, as the limit
    if text.isascii():
        head = text[:room]
    else:
        head = text[:room].encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    return head + CLIP_MARK


def json_head(value: Any, limit: int, *, separators: tuple[str, str] | None = (",", ":")) -> str:
    """The start of ``value``'s JSON text, a little past ``limit`` characters, produced piece
    by piece so a huge value is never serialised whole just to be cut (``separators=None``
    is ``json.dumps``' default spacing)."""
    encoder = json.JSONEncoder(default=str, ensure_ascii=False, separators=separators)
    pieces: list[str] = []
    size = 0
    for piece in encoder.iterencode(value):
        pieces.append(piece)
        size += len(piece)
        if size > limit:
            break
    return "".join(pieces)


@dataclass
class ResultBudget:
    """The byte budget of one result, spent row by row while it is fetched.

    ``admit(row)`` returns the row to keep (oversized values clipped) or ``None`` when keeping
    it would pass ``max_result_bytes``; from then on :attr:`full` is true and the caller stops
    reading. ``unit`` names rows in the notes ("rows", "documents", "records").
    """

    max_value_bytes: int
    max_result_bytes: int
    unit: str = "rows"
    narrow: str = "select fewer or shorter columns, or aggregate"
    """How to ask for less, in the words of the connector's query language."""
    shorten: str = "select a part (a substring) or the length instead"
    """How to ask for a part of a long value."""
    used: int = 0
    kept: int = 0
    clipped: int = 0
    full: bool = False
    extra_notes: list[str] = field(default_factory=list)

    def admit(self, row: Sequence[Any]) -> tuple[Any, ...] | None:
        """Charge the row as it was read (before clipping: the bytes it brought in).

        Every value of every row passes here, so the common types are priced inline (text
        by its length, the fixed-size scalars from :data:`_FIXED_SIZES`) and only the rest
        call :func:`value_size`; the prices are the same."""
        if self.full:
            return None
        values = tuple(row)
        size = _VALUE_OVERHEAD * len(values)
        oversized: list[int] | None = None
        for index, value in enumerate(values):
            kind = type(value)
            if kind is str:
                cost = len(value) if value.isascii() else _text_size(value)
            elif kind is int and -_INT64 <= value < _INT64:
                cost = _SMALL
            else:
                cost = _FIXED_SIZES.get(kind)
                if cost is None:
                    cost = value_size(value, self.max_result_bytes)
            if cost > self.max_value_bytes:
                oversized = [*(oversized or ()), index]
            size += cost
        if self.used + size > self.max_result_bytes:
            self.full = True
            return None
        self.used += size
        self.kept += 1
        if not oversized:
            return values
        clipped = list(values)
        for index in oversized:
            clipped[index] = clip_value(values[index], self.max_value_bytes)
        self.clipped += len(oversized)
        return tuple(clipped)

    def reset(self) -> None:
        """Forget what was charged (the rows are read again from the start)."""
        self.used = self.kept = self.clipped = 0
        self.full = False

    def admit_all(self, rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
        """Admit rows until the budget is full; the kept ones."""
        kept: list[tuple[Any, ...]] = []
        for row in rows:
            admitted = self.admit(row)
            if admitted is None:
                break
            kept.append(admitted)
        return kept

    def notes(self) -> tuple[str, ...]:
        """What the budget did, in sentences for the model and the analyst."""
        notes = list(self.extra_notes)
        if self.full:
            notes.append(
                f"stopped reading after {self.kept:,} {self.unit}: the next one would pass the "
                f"{describe_bytes(self.max_result_bytes)} result limit (max_result_bytes); "
                f"{self.narrow}"
            )
        if self.clipped:
            plural = "s" if self.clipped != 1 else ""
            notes.append(
                f"{self.clipped:,} value{plural} longer than "
                f"{describe_bytes(self.max_value_bytes)} (max_value_bytes) cut, text ending "
                f"{CLIP_MARK!r}; {self.shorten}"
            )
        return tuple(notes)
