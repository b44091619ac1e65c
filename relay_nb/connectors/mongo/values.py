"""Strict JSON / Extended JSON in, plain Python and DataFrames out.

Everything a model (or an analyst) hands the Mongo connector goes through
:func:`parse_json_input` first: text is parsed by ``json.loads`` whose object hook reads
Extended JSON (``{"$oid": …}``, ``{"$date": …}``) in its exact shapes only
(:mod:`~relay_nb.connectors.mongo.extjson`: a DBRef with extra fields, a type marker beside
operators, JavaScript are refused there), and anything that is not JSON — ``{n: 1}``,
``ObjectId("…")``, ``new Date()``, a JavaScript function — is refused with a message saying
how to write it instead. Nothing is ever evaluated. Python objects take the same road
(serialised to Extended JSON, then parsed strictly), so the guard always checks the one
canonical tree that is sent to the server.

On the way out, driver types become plain Python (ObjectId → hex string, Decimal128 → float,
Timestamp → datetime…) and documents become a flat DataFrame.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from relay_nb.connectors.bounds import ResultBudget
from relay_nb.connectors.mongo.extjson import ExtendedJsonError, decode_object
from relay_nb.connectors.results import frame_from_records
from relay_nb.errors import UnsafeQueryError
from relay_nb.redaction import redact

__all__ = ["canonical_json", "documents_frame", "parse_json_input", "to_plain"]

_MAX_INPUT_CHARS = 100_000
_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bObjectId\s*\("), 'write ObjectId("…") as {"$oid": "…"}'),
    (
        re.compile(r"\bISODate\s*\(|\bnew\s+Date\b|\bDate\s*\("),
        ('write dates as {"$date": "2025-01-31T00:00:00Z"}'),
    ),
    (
        re.compile(r"\bNumberLong\s*\(|\bNumberInt\s*\(|\bNumberDecimal\s*\("),
        ('write numbers as plain JSON numbers or {"$numberDecimal": "1.50"}'),
    ),
    (re.compile(r"\bfunction\b|=>"), "JavaScript is never run; express it with query operators"),
    (re.compile(r"/[^/\s]+/[imxs]*\s*[,}\]]"), 'write a regex as {"$regex": "…", "$options": "i"}'),
    (re.compile(r"[{,]\s*[A-Za-z_$][\w$.]*\s*:"), "put every key in double quotes"),
    (re.compile(r"'"), "use double quotes, not single quotes"),
)


def parse_json_input(value: Any, what: str) -> Any:
    """``value`` as the tree that will run: text parsed strictly, objects re-parsed.

    ``what`` names the input in error messages ("filter", "pipeline"…).
    """
    if isinstance(value, str):
        text = value.strip()
    else:
        from bson import json_util
        from bson.binary import UuidRepresentation

        # a uuid.UUID is written as the standard binary (subtype 4) a server stores for it
        options = json_util.RELAXED_JSON_OPTIONS.with_options(
            uuid_representation=UuidRepresentation.STANDARD
        )
        try:
            text = json_util.dumps(value, json_options=options)
        except (TypeError, ValueError) as exc:
            raise UnsafeQueryError(
                "invalid_json", f"{what} cannot be written as JSON ({exc}); pass JSON values only"
            ) from None
    if len(text) > _MAX_INPUT_CHARS:
        raise UnsafeQueryError(
            "too_large", f"{what} is {len(text):,} characters; keep it under {_MAX_INPUT_CHARS:,}"
        )
    return _loads(text, what)


def _loads(text: str, what: str) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> Any:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
        return decode_object(items)

    def constant(name: str) -> Any:
        raise _NotJson(f"{name} is not JSON; use null or a finite number")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise UnsafeQueryError("invalid_json", _syntax_message(what, text, exc)) from None
    except _DuplicateKey as exc:
        raise UnsafeQueryError(
            "invalid_json", f"{what} repeats the key {exc.args[0]!r}; give each key once"
        ) from None
    except _NotJson as exc:
        raise UnsafeQueryError("invalid_json", f"{what}: {exc.args[0]}") from None
    except ExtendedJsonError as exc:
        raise UnsafeQueryError(exc.rule, f"{what}: {exc.message}") from None
    except RecursionError:
        raise UnsafeQueryError("too_deep", f"{what} is nested too deeply; simplify it") from None
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
        # the decoder validates every shape first; whatever still slips through fails closed
        raise UnsafeQueryError(
            "invalid_json", f"{what} could not be decoded ({_first_line(exc)}); send plain JSON"
        ) from None


class _DuplicateKey(Exception):
    pass


class _NotJson(Exception):
    pass


def _syntax_message(what: str, text: str, exc: json.JSONDecodeError) -> str:
    hints = [hint for pattern, hint in _HINTS if pattern.search(text)]
    message = f"{what} is not strict JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if hints:
        message += ": " + "; ".join(dict.fromkeys(hints))
    else:
        message += '; send a JSON object such as {"status": "paid", "total": {"$gt": 100}}'
    return message


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:160]


def canonical_json(value: Any) -> str:
    """Compact relaxed Extended JSON: what ran, readable, and parseable again."""
    from bson import json_util

    return json_util.dumps(
        value, json_options=json_util.RELAXED_JSON_OPTIONS, separators=(",", ":")
    )


def to_plain(value: Any) -> Any:
    """Driver types to plain Python values a DataFrame holds well, recursively."""
    from bson import Binary, Code, Decimal128, ObjectId, Regex, Timestamp
    from bson.dbref import DBRef
    from bson.int64 import Int64

    if value is None or isinstance(value, (bool, str, float, dt.datetime)):
        return value
    if isinstance(value, Int64):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, ObjectId):
        return str(value)
    if isinstance(value, Decimal128):
        return float(value.to_decimal())
    if isinstance(value, Timestamp):
        return value.as_datetime().replace(tzinfo=None)
    if isinstance(value, Binary) and value.subtype in (3, 4) and len(value) == 16:
        return str(uuid.UUID(bytes=bytes(value)))
    if isinstance(value, (bytes, Binary)):
        # redacted before encoding: base64 hides a secret from every later redaction
        return base64.b64encode(redact(bytes(value))).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Regex):
        return f"/{value.pattern}/{_regex_flags(value.flags)}"
    if isinstance(value, DBRef):
        plain = {"$ref": value.collection, "$id": to_plain(value.id)}
        return plain | ({"$db": value.database} if value.database is not None else {})
    if isinstance(value, Code):
        return str(value)
    return str(value)  # MinKey, MaxKey, DatetimeMS: rare; text beats a crash


def _regex_flags(flags: int | str) -> str:
    if isinstance(flags, str):
        return flags
    letters = (("i", re.IGNORECASE), ("m", re.MULTILINE), ("s", re.DOTALL), ("x", re.VERBOSE))
    return "".join(letter for letter, flag in letters if flags & flag)


def documents_frame(
    documents: Iterable[Mapping[str, Any]], *, max_depth: int, budget: ResultBudget | None = None
) -> pd.DataFrame:
    """Documents as one flat frame: nested fields become dotted columns (``address.city``)
    down to ``max_depth``; arrays and deeper objects stay one compact-JSON cell each.

    ``documents`` is consumed one at a time and each goes through ``budget`` as it comes
    (long values clipped, no document taken once the budget is spent), so a cursor passed
    here is read no further than the budget allows."""
    plain = (to_plain(doc) for doc in documents)
    return frame_from_records(plain, max_depth=max_depth, budget=budget)
