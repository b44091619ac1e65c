"""Read a JSON body keeping only the records a result can use, under the call's deadline.

``json.loads`` builds every value of the document before anyone can look at it: 200,000
records become 200,000 dicts (tens of MB of Python objects for an 11 MB body) so that the
first 200 can be kept, and the kernel cannot be interrupted while it runs. APIs put their
records in a list at the top (``[{…}, …]``) or one level down, in an envelope
(``{"data": […], "next_cursor": …}``), so this scanner walks those two levels itself and
parses each element with the C decoder (``raw_decode``): every element is counted and checked
(is it an object?), only the first ``keep`` are kept, and ``check`` — the call's deadline —
runs every :data:`CHECK_EVERY` elements. Anything deeper is parsed whole, as ``json.loads``
would.

Time is linear in the body (which the response cap bounds); memory is the body's text plus
the kept elements, not the whole tree. The result is what ``json.loads`` would give, except
that top-level arrays (and arrays that are a top-level object's fields) come back as
:class:`ListHead`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

__all__ = ["CHECK_EVERY", "ListHead", "scan_json", "whole"]

CHECK_EVERY = 1024
"""Elements (or fields) between two calls of the deadline check."""

_WS = re.compile(r"[ \t\n\r]*")
_NAME = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*')
"""A field name without escapes (nearly all of them) and its colon, in one match."""
_COLON = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")
_AFTER_ITEM = re.compile(r"[ \t\n\r]*([,\]])[ \t\n\r]*")
_AFTER_FIELD = re.compile(r"[ \t\n\r]*([,}])[ \t\n\r]*")


class _Decoder(Protocol):
    """A JSONDecoder as it is at run time: its ``__init__`` sets ``scan_once``, which
    typeshed's stub leaves out."""

    scan_once: Callable[[str, int], tuple[Any, int]]


class _DecoderModule(Protocol):
    """``json.decoder`` as it is at run time: it exports ``scanstring`` (the C one when
    there is one), which typeshed's stub leaves out."""

    def scanstring(self, s: str, end: int, strict: bool = True, /) -> tuple[str, int]: ...


_DECODER = json.JSONDecoder()
# the casts only name what the stubs leave out (above); the objects are the same ones
# the C scanner behind raw_decode, without its wrapper
_SCAN = cast(_Decoder, _DECODER).scan_once
# C: the string whose opening quote is before pos
_string = cast(_DecoderModule, json.decoder).scanstring


@dataclass
class ListHead:
    """A JSON array that was read to its end but kept only in part.

    ``items`` are its first elements (at most ``keep``), ``total`` how many it has,
    ``all_dicts`` whether every one of them is an object, ``start`` where it begins in the
    text (for :func:`whole`).
    """

    items: list[Any]
    total: int
    all_dicts: bool
    start: int

    @property
    def complete(self) -> bool:
        return len(self.items) == self.total


def scan_json(text: str, *, keep: int, check: Callable[[], None]) -> Any:
    """The document in ``text``, its top-level arrays (also those one level down, in an
    object's fields) as :class:`ListHead`; raises ``ValueError`` when it is not JSON and
    ``RecursionError`` when it nests deeper than the C decoder goes."""
    pos = _skip(text, 0)
    if text.startswith("[", pos):
        value, end = _scan_list(text, pos, keep, check)
    elif text.startswith("{", pos):
        value, end = _scan_object(text, pos, keep, check)
    else:
        value, end = _value(text, pos)
    if _skip(text, end) != len(text):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


def whole(text: str, head: ListHead) -> list[Any]:
    """Every element of an array that :func:`scan_json` kept only in part."""
    if head.complete:
        return head.items
    value, _ = _DECODER.raw_decode(text, head.start)
    return value


def _scan_list(text: str, pos: int, keep: int, check: Callable[[], None]) -> tuple[ListHead, int]:
    """The array at ``pos``; the loop runs once per element, so it calls the C scanner
    directly, and what follows an element (``,`` or ``]`` with any whitespace) is one
    regex match."""
    start = pos
    items: list[Any] = []
    total, all_dicts = 0, True
    pos = _skip(text, pos + 1)
    if text.startswith("]", pos):
        return ListHead(items, 0, True, start), pos + 1
    while True:
        try:
            value, pos = _SCAN(text, pos)
        except StopIteration as stop:
            raise json.JSONDecodeError("Expecting value", text, stop.value) from None
        total += 1
        if all_dicts and type(value) is not dict:
            all_dicts = False
        if total <= keep:
            items.append(value)
        if not total % CHECK_EVERY:
            check()
        after = _AFTER_ITEM.match(text, pos)
        if after is None:
            raise ValueError(f"expected ',' or ']' at character {pos}")
        pos = after.end()
        if after.group(1) == "]":
            return ListHead(items, total, all_dicts, start), pos


def _scan_object(
    text: str, pos: int, keep: int, check: Callable[[], None]
) -> tuple[dict[str, Any], int]:
    """The object at ``pos``, its array fields as :class:`ListHead`. A record can have
    50,000 fields, so a plain name and its colon are one regex match, and what follows a
    value (``,`` or ``}`` with any whitespace) another."""
    fields: dict[str, Any] = {}
    seen = 0  # not len(fields): a repeated name does not grow it
    pos = _skip(text, pos + 1)
    if text.startswith("}", pos):
        return fields, pos + 1
    while True:
        name = _NAME.match(text, pos)
        if name is not None:
            key, pos = name.group(1), name.end()
        else:  # escapes in the name, or not a name at all
            if text[pos : pos + 1] != '"':
                raise ValueError(f"expected a field name at character {pos}")
            key, pos = _string(text, pos + 1)
            colon = _COLON.match(text, pos)
            if colon is None:
                raise ValueError(f"expected ':' at character {pos}")
            pos = colon.end()
        if text[pos : pos + 1] == "[":
            fields[key], pos = _scan_list(text, pos, keep, check)
        else:
            try:
                fields[key], pos = _SCAN(text, pos)
            except StopIteration as stop:
                raise json.JSONDecodeError("Expecting value", text, stop.value) from None
        seen += 1
        if not seen % CHECK_EVERY:
            check()
        after = _AFTER_FIELD.match(text, pos)
        if after is None:
            raise ValueError(f"expected ',' or '}}' at character {pos}")
        pos = after.end()
        if after.group(1) == "}":
            return fields, pos


def _value(text: str, pos: int) -> tuple[Any, int]:
    """The JSON value starting exactly at ``pos`` and where it ends."""
    try:
        return _SCAN(text, pos)
    except StopIteration as stop:
        raise json.JSONDecodeError("Expecting value", text, stop.value) from None


def _skip(text: str, pos: int) -> int:
    match = _WS.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()
