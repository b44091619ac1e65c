"""Extended JSON objects become BSON values only in their exact shapes.

``bson.json_util`` turns an object into a BSON value as soon as *one* of its keys is a type
marker, and each of its parsers treats the other keys its own way:

* a DBRef (``$ref`` + ``$id``) keeps them as extra fields: ``{"$ref": "c", "$id": 1,
  "$where": "sleep(5000)"}`` becomes a ``DBRef`` that is sent to the server with its
  ``$where``, yet is no dict or list for a guard to walk (nor is its ``$id``);
* ``$undefined`` (any other key present) and ``$binary`` (legacy and canonical) silently
  drop them, so what runs is not what was written;
* ``$code`` hides its ``$scope`` object inside a ``Code``;
* ``$date`` reads ``true`` or ``1.7`` as a millisecond after 1970, ``$timestamp`` takes
  ``true`` as a number, and a few malformed shapes escape as ``KeyError`` or
  ``AttributeError`` instead of a parse error.

A guard cannot check what it cannot see, so the connector decodes strictly
(:func:`decode_object` is its ``object_pairs_hook``):

* an object with no type marker among its keys stays a plain dict: query operators such as
  ``{"$gt": 1}`` are the guard's to judge;
* an object with a marker becomes a value only when its keys are exactly one shape of
  :data:`SHAPES` and its values have the JSON types that shape takes; ``json_util`` then
  builds the value, which must come out as the type the shape promises (a later bson that
  builds something else is refused, not passed on);
* anything else is refused with one line saying how to write it: a marker beside other
  keys (a DBRef with extra fields included), a deprecated type (``$symbol``,
  ``$dbPointer``, ``$undefined``), and JavaScript (``$code``, with or without ``$scope``)
  with the rule the guard uses for JavaScript anywhere.

``$regex``/``$options`` and ``$type`` are markers *and* query operators: ``{"$regex": "^a",
"$options": "i"}`` (string values, nothing else) is a regex value, while ``{"$regex": "^a",
"$ne": "x"}`` and ``{"$type": "double"}`` stay operators; ``$type`` is a marker only beside
a string ``$binary``.
"""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MARKERS", "SHAPES", "ExtendedJsonError", "decode_object"]


class ExtendedJsonError(Exception):
    """An object the decoder refuses; ``rule`` and ``message`` become an UnsafeQueryError
    once the caller knows which input it was in."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _whole(value: Any, low: int, high: int) -> bool:
    """A JSON integer (never a bool) in ``[low, high)``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < high


def _digits(value: Any, bits: int) -> bool:
    """A string holding a signed integer that fits ``bits`` bits."""
    if not isinstance(value, str):
        return False
    try:
        number = int(value.strip())
    except ValueError:
        return False
    return -(1 << (bits - 1)) <= number < 1 << (bits - 1)


def _pair(value: Any, first: str, second: str, check: Callable[[Any], bool]) -> bool:
    """An object of exactly the keys ``first`` and ``second``, each value passing ``check``."""
    return (
        isinstance(value, dict)
        and set(value) == {first, second}
        and check(value[first])
        and check(value[second])
    )


def _date(value: Any) -> bool:
    # relaxed: an ISO 8601 string; canonical: {"$numberLong": "<ms>"} (decoded by then);
    # legacy: a whole number of milliseconds
    return isinstance(value, str) or _whole(value, -(1 << 63), 1 << 63)


def _hex_subtype(value: Any) -> bool:
    if isinstance(value, str):
        try:
            int(value, 16)
        except ValueError:
            return False
        return 1 <= len(value) <= 2 or (len(value) == 8 and value.lower().startswith("ffffff"))
    return _whole(value, 0, 256)


_BUILTIN_TYPES: dict[str, type] = {
    "bytes": bytes,
    "UUID": uuid.UUID,
    "datetime": dt.datetime,
    "int": int,
    "float": float,
}


def _bson_types(names: str) -> Callable[[], tuple[type, ...]]:
    """The classes a shape produces, looked up when first needed (bson loads lazily)."""

    @functools.cache
    def types() -> tuple[type, ...]:
        import bson

        return tuple(_BUILTIN_TYPES.get(name) or getattr(bson, name) for name in names.split())

    return types


@dataclass(frozen=True)
class Shape:
    """One Extended JSON value: its exact keys, how it is written, the JSON types of its
    values, and what ``json_util`` must build from it."""

    name: str
    """The marker that names it (``$ref`` for a DBRef)."""
    keys: frozenset[str]
    example: str
    check: Callable[[dict[str, Any]], bool]
    produces: Callable[[], tuple[type, ...]]


def _shape(
    keys: str, example: str, check: Callable[[dict[str, Any]], bool], produces: str
) -> Shape:
    return Shape(keys.split()[0], frozenset(keys.split()), example, check, _bson_types(produces))


_UINT32 = 1 << 32
SHAPES: tuple[Shape, ...] = (
    _shape("$oid", '{"$oid": "<24 hex digits>"}', lambda d: _text(d["$oid"]), "ObjectId"),
    _shape(
        "$date",
        '{"$date": "2025-01-31T00:00:00Z"}',
        lambda d: _date(d["$date"]),
        "datetime",
    ),
    _shape(
        "$numberLong",
        '{"$numberLong": "<digits>"}',
        lambda d: _digits(d["$numberLong"], 64),
        "Int64",
    ),
    _shape(
        "$numberInt", '{"$numberInt": "<digits>"}', lambda d: _digits(d["$numberInt"], 32), "int"
    ),
    _shape(
        "$numberDouble",
        '{"$numberDouble": "1.5"} (or a plain JSON number)',
        lambda d: _text(d["$numberDouble"]),
        "float",
    ),
    _shape(
        "$numberDecimal",
        '{"$numberDecimal": "1.50"}',
        lambda d: _text(d["$numberDecimal"]),
        "Decimal128",
    ),
    _shape(
        "$binary",
        '{"$binary": {"base64": "<base64>", "subType": "00"}}',
        lambda d: (
            _pair(d["$binary"], "base64", "subType", _text)
            and _hex_subtype(d["$binary"]["subType"])
        ),
        "Binary bytes UUID",
    ),
    _shape(
        "$binary $type",
        '{"$binary": "<base64>", "$type": "00"}',
        lambda d: _text(d["$binary"]) and _hex_subtype(d["$type"]),
        "Binary bytes UUID",
    ),
    _shape(
        "$uuid",
        '{"$uuid": "00112233-4455-6677-8899-aabbccddeeff"}',
        lambda d: _text(d["$uuid"]),
        "Binary UUID",
    ),
    _shape(
        "$regularExpression",
        '{"$regularExpression": {"pattern": "^a", "options": "i"}}',
        lambda d: _pair(d["$regularExpression"], "pattern", "options", _text),
        "Regex",
    ),
    _shape(
        "$timestamp",
        '{"$timestamp": {"t": <seconds>, "i": <increment>}}',
        lambda d: _pair(d["$timestamp"], "t", "i", lambda v: _whole(v, 0, _UINT32)),
        "Timestamp",
    ),
    _shape("$minKey", '{"$minKey": 1}', lambda d: _whole(d["$minKey"], 1, 2), "MinKey"),
    _shape("$maxKey", '{"$maxKey": 1}', lambda d: _whole(d["$maxKey"], 1, 2), "MaxKey"),
    _shape(
        "$ref $id",
        '{"$ref": "<collection>", "$id": <value>} (optionally with "$db": "<database>")',
        lambda d: _text(d["$ref"]),
        "DBRef",
    ),
    _shape(
        "$ref $id $db",
        '{"$ref": "<collection>", "$id": <value>, "$db": "<database>"}',
        lambda d: _text(d["$ref"]) and _text(d["$db"]),
        "DBRef",
    ),
    _shape(
        "$regex $options",
        '{"$regex": "^a", "$options": "i"}',
        lambda d: _text(d["$regex"]) and _text(d["$options"]),
        "Regex",
    ),
    _shape("$regex", '{"$regex": "^a"}', lambda d: _text(d["$regex"]), "Regex"),
)
"""Every Extended JSON value the connector accepts, by its exact set of keys."""
_BY_KEYS = {shape.keys: shape for shape in SHAPES}

_DEPRECATED = {
    "$symbol": "write a plain string",
    "$dbPointer": 'write a DBRef, {"$ref": "<collection>", "$id": <value>}',
    "$undefined": "write null",
}
_JAVASCRIPT = frozenset({"$code", "$scope"})
MARKERS: frozenset[str] = frozenset(
    {key for shape in SHAPES for key in shape.keys} - {"$regex", "$options", "$type"}
    | set(_DEPRECATED)
    | _JAVASCRIPT
)
"""Keys that make an object an Extended JSON value (``$regex``, ``$options`` and ``$type``
are operators too, and do so only in their exact shapes)."""
_HEADS = ("$ref", "$id", "$db", "$binary", "$date", "$oid")
"""Which marker names the value meant when an object has several (a DBRef's keys first)."""
_LEGACY_REGEX = (frozenset({"$regex"}), frozenset({"$regex", "$options"}))


def decode_object(items: list[tuple[str, Any]]) -> Any:
    """One decoded JSON object (its ``(key, value)`` pairs, values already decoded): a
    plain dict, a BSON value of an exact shape, or :class:`ExtendedJsonError`."""
    keys = frozenset(key for key, _ in items)
    markers = keys & MARKERS
    if not markers:
        if keys in _LEGACY_REGEX and _BY_KEYS[keys].check(dict(items)):
            return _build(_BY_KEYS[keys], dict(items))
        return dict(items)  # operators and fields: the guard judges them
    document = dict(items)
    if markers & _JAVASCRIPT:
        raise ExtendedJsonError(
            "javascript",
            "a JavaScript value ($code) runs JavaScript on the server, which is never "
            "allowed; use query and aggregation operators ($expr, $cond, $regexMatch…) instead",
        )
    for marker, fix in _DEPRECATED.items():
        if marker in markers:
            raise ExtendedJsonError(
                "invalid_json",
                f"{marker} is a deprecated BSON type the connector does not send; {fix}",
            )
    shape = _BY_KEYS.get(keys)
    if shape is None:
        return _misshapen(keys, markers)
    if not shape.check(document):
        raise ExtendedJsonError(
            "invalid_json", f"{shape.name} holds a value it does not take; write {shape.example}"
        )
    return _build(shape, document)


def _misshapen(keys: frozenset[str], markers: frozenset[str]) -> Any:
    head = next((key for key in _HEADS if key in markers), min(markers))
    candidates = [shape for shape in SHAPES if head in shape.keys]
    inside = [shape for shape in candidates if shape.keys <= keys]
    meant = max(inside, key=lambda shape: len(shape.keys)) if inside else candidates[0]
    extra = ", ".join(sorted(keys - meant.keys)) or "none"
    missing = ", ".join(sorted(meant.keys - keys))
    detail = f"it lacks {missing}" if missing and extra == "none" else f"it also has {extra}"
    raise ExtendedJsonError(
        "invalid_json",
        f"{head} makes an Extended JSON value, written exactly {meant.example}; {detail}. "
        'Operators go beside a field ({"field": {"$gt": …}}), never inside a value',
    )


def _build(shape: Shape, document: dict[str, Any]) -> Any:
    """``json_util``'s own value for an exact shape, checked to be what the shape promises."""
    from bson import json_util
    from bson.dbref import DBRef
    from bson.errors import BSONError

    try:
        value = json_util.object_hook(document, json_util.RELAXED_JSON_OPTIONS)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError, BSONError):
        raise ExtendedJsonError(
            "invalid_json", f"{shape.name} holds an invalid value; write {shape.example}"
        ) from None
    valid = isinstance(value, shape.produces()) and not isinstance(value, bool)
    if valid and isinstance(value, DBRef):
        valid = set(value.as_doc()) <= {"$ref", "$id", "$db"}
    if not valid:
        raise ExtendedJsonError(
            "invalid_json",
            f"{shape.name} did not decode to a {shape.produces()[0].__name__}; write "
            f"{shape.example}",
        )
    return value
