"""The Mongo guard: check a decoded ``find`` or ``aggregate`` and return exactly what runs.

Input is the tree :func:`relay_nb.connectors.mongo.values.parse_json_input` produced, so
nothing here parses text and nothing is evaluated. The checks, in the order they fire:

* the collection, and every ``from``/``coll`` of ``$lookup``/``$graphLookup``/``$unionWith``,
  must be on the connector's allowlist; ``system.*`` collections never are;
* every pipeline stage must be on the stage allowlist (:data:`~.operators.STAGES`);
  sub-pipelines (``$lookup``, ``$unionWith``, ``$facet``) are walked the same way, to
  :data:`MAX_PIPELINE_NESTING` levels;
* every ``$``-key anywhere must be a known operator (:data:`~.operators.OPERATORS`), and the
  refused ones (``$where``, ``$function``, ``$out``, ``$merge``…) are refused wherever they
  appear, as is any JavaScript value (``{"$code": …}``);
* every value is walked whole and must be plain JSON (dict, list, text, number, bool, null)
  or a BSON scalar on :func:`_scalar_types`; a DBRef's ``$id`` is walked like any value and
  a DBRef with extra fields is refused. Anything else — a type the decoder should never
  have produced, a ``Code``, an object that could carry content no walk sees — is refused
  (``value_not_allowed``), so a surprise in decoding fails closed;
* expressions whose cost no time limit stops are refused (:mod:`.cost`: a regular
  expression that backtracks exponentially, a ``$reduce`` that doubles its accumulator, a
  huge constant ``$range``);
* the result is bounded: ``find`` gets ``limit`` clamped to ``row_limit + 1``, ``aggregate``
  gets a final ``$limit`` appended or clamped (the extra row tells "exactly row_limit" from
  "truncated", as in the SQL guard).

Refusals are :class:`~relay_nb.errors.UnsafeQueryError` with a stable ``rule``.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from relay_nb.connectors.mongo.cost import check_expression, check_pattern
from relay_nb.connectors.mongo.operators import OPERATORS, REFUSED, STAGES
from relay_nb.errors import UnsafeQueryError

__all__ = [
    "MAX_DEPTH",
    "MAX_PIPELINE_NESTING",
    "GuardedAggregate",
    "GuardedFind",
    "check_collection",
    "guard_aggregate",
    "guard_find",
]

MAX_DEPTH = 64
"""Nesting of objects/arrays in one query; real queries stay far below it."""
MAX_PIPELINE_NESTING = 4
"""Sub-pipelines inside sub-pipelines ($facet in $lookup in $unionWith…)."""
_MAX_STAGES = 100

_RULE_MESSAGES = {
    "javascript": "runs JavaScript on the server, which is never allowed; use query and "
    "aggregation operators ($expr, $cond, $regexMatch…) instead",
    "write_stage": "writes to the database; only reads are allowed, the result comes back "
    "to you as a table",
    "admin_stage": "reads server internals, not data; query the collections listed in the "
    "schema instead",
}


@dataclass(frozen=True)
class GuardedFind:
    """A checked ``find``: pass these to ``Collection.find`` as they are."""

    collection: str
    filter: dict[str, Any]
    projection: dict[str, Any] | None
    sort: list[tuple[str, Any]] | None
    limit: int


@dataclass(frozen=True)
class GuardedAggregate:
    """A checked pipeline (with its final ``$limit``) and every collection it reads."""

    collection: str
    pipeline: list[dict[str, Any]]
    collections: tuple[str, ...]


def check_collection(name: Any, allowed: Collection[str], *, where: str = "collection") -> str:
    """``name`` if the model may read it; otherwise a refusal naming what it may read."""
    if not isinstance(name, str) or not name:
        raise UnsafeQueryError(
            "collection_not_allowed", f"{where} must be a collection name (a string)"
        )
    if name.startswith("system.") or ".system." in name:
        raise UnsafeQueryError(
            "system_collection", f"{where} {name!r} is a system collection and never queryable"
        )
    if name not in allowed:
        listing = ", ".join(sorted(allowed)) or "(none)"
        raise UnsafeQueryError(
            "collection_not_allowed",
            f"{where} {name!r} is not available; use one of: {listing}",
        )
    return name


def guard_find(
    collection: Any,
    filter: Any,
    projection: Any,
    sort: Any,
    limit: Any,
    *,
    allowed: Collection[str],
    row_limit: int,
) -> GuardedFind:
    """Check a find; ``limit`` ends at most ``row_limit + 1`` (None means that)."""
    name = check_collection(collection, allowed)
    query = {} if filter is None else filter
    if not isinstance(query, dict):
        raise UnsafeQueryError(
            "bad_request", 'filter must be a JSON object, e.g. {"status": "paid"}'
        )
    _check_tree(query, "filter", 0)
    if projection is not None:
        if not isinstance(projection, dict):
            raise UnsafeQueryError(
                "bad_request", 'projection must be a JSON object, e.g. {"name": 1, "_id": 0}'
            )
        _check_tree(projection, "projection", 0)
    fetch = row_limit + 1
    if limit is not None:
        requested = _positive_int(limit, "limit", row_limit)
        fetch = requested if requested <= row_limit else fetch
    return GuardedFind(
        collection=name,
        filter=query,
        projection=projection,
        sort=_sort(sort),
        limit=fetch,
    )


def guard_aggregate(
    collection: Any,
    pipeline: Any,
    *,
    allowed: Collection[str],
    row_limit: int,
) -> GuardedAggregate:
    """Check a pipeline and bound its output with a final ``$limit`` of ``row_limit + 1``."""
    name = check_collection(collection, allowed)
    if not isinstance(pipeline, list):
        raise UnsafeQueryError(
            "bad_request",
            'pipeline must be a JSON array of stages, e.g. [{"$match": {…}}, {"$group": {…}}]',
        )
    read: dict[str, None] = {name: None}
    _check_pipeline(pipeline, "pipeline", allowed, read, nesting=0, depth=0)
    return GuardedAggregate(
        collection=name, pipeline=_bounded(pipeline, row_limit), collections=tuple(read)
    )


# -- pipelines ----------------------------------------------------------------------------------


def _check_pipeline(
    pipeline: Any,
    where: str,
    allowed: Collection[str],
    read: dict[str, None],
    *,
    nesting: int,
    depth: int,
) -> None:
    if not isinstance(pipeline, list):
        raise UnsafeQueryError("bad_request", f"{where} must be a JSON array of stages")
    if nesting > MAX_PIPELINE_NESTING:
        raise UnsafeQueryError(
            "too_deep",
            f"{where}: sub-pipelines nest more than {MAX_PIPELINE_NESTING} levels; flatten it",
        )
    if len(pipeline) > _MAX_STAGES:
        raise UnsafeQueryError("too_large", f"{where} has over {_MAX_STAGES} stages; shorten it")
    for index, stage in enumerate(pipeline):
        at = f"{where}[{index}]"
        if not isinstance(stage, dict) or len(stage) != 1:
            raise UnsafeQueryError(
                "bad_stage",
                f'{at}: each stage is an object with exactly one key, e.g. {{"$match": {{…}}}}',
            )
        ((operator, spec),) = stage.items()
        _check_stage_name(operator, at)
        at = f"{at}.{operator}"
        if operator == "$lookup":
            _lookup(spec, at, allowed, read, nesting=nesting, depth=depth)
        elif operator == "$graphLookup":
            _graph_lookup(spec, at, allowed, read, depth=depth)
        elif operator == "$unionWith":
            _union_with(spec, at, allowed, read, nesting=nesting, depth=depth)
        elif operator == "$facet":
            _facet(spec, at, allowed, read, nesting=nesting, depth=depth)
        else:
            _check_tree(spec, at, depth + 2)


def _check_stage_name(operator: Any, where: str) -> None:
    if not isinstance(operator, str) or not operator.startswith("$"):
        raise UnsafeQueryError(
            "bad_stage", f"{where}: a stage name starts with '$', e.g. $match; got {operator!r}"
        )
    if operator in REFUSED:
        rule = REFUSED[operator]
        raise UnsafeQueryError(rule, f"{where}: {operator} {_RULE_MESSAGES[rule]}")
    if operator not in STAGES:
        raise UnsafeQueryError(
            "stage_not_allowed",
            f"{where}: stage {operator} is not allowed; use {', '.join(sorted(STAGES))}",
        )


def _lookup(
    spec: Any,
    where: str,
    allowed: Collection[str],
    read: dict[str, None],
    *,
    nesting: int,
    depth: int,
) -> None:
    if not isinstance(spec, dict):
        raise UnsafeQueryError("bad_stage", f"{where} takes an object with from, as, …")
    if "from" not in spec:
        raise UnsafeQueryError("bad_stage", f"{where} needs a 'from' collection")
    read[check_collection(spec["from"], allowed, where=f"{where}.from")] = None
    for key, value in spec.items():
        if not isinstance(key, str):
            raise UnsafeQueryError("bad_request", f"{where}: keys must be strings")
        if key.startswith("$"):  # the spec's own keys are judged like any other object's
            _check_operator(key, f"{where}.{key}")
        if key == "pipeline":
            _check_pipeline(
                value, f"{where}.pipeline", allowed, read, nesting=nesting + 1, depth=depth + 2
            )
        elif key != "from":
            _check_tree(value, f"{where}.{key}", depth + 2)


def _graph_lookup(
    spec: Any, where: str, allowed: Collection[str], read: dict[str, None], *, depth: int
) -> None:
    if not isinstance(spec, dict) or "from" not in spec:
        raise UnsafeQueryError("bad_stage", f"{where} takes an object with a 'from' collection")
    read[check_collection(spec["from"], allowed, where=f"{where}.from")] = None
    _check_tree({k: v for k, v in spec.items() if k != "from"}, where, depth + 1)


def _union_with(
    spec: Any,
    where: str,
    allowed: Collection[str],
    read: dict[str, None],
    *,
    nesting: int,
    depth: int,
) -> None:
    if isinstance(spec, str):
        read[check_collection(spec, allowed, where=where)] = None
        return
    if not isinstance(spec, dict) or "coll" not in spec:
        raise UnsafeQueryError(
            "bad_stage", f'{where} takes a collection name or {{"coll": …, "pipeline": […]}}'
        )
    unknown = set(spec) - {"coll", "pipeline"}
    if unknown:
        raise UnsafeQueryError("bad_stage", f"{where} takes only coll and pipeline")
    read[check_collection(spec["coll"], allowed, where=f"{where}.coll")] = None
    if "pipeline" in spec:
        _check_pipeline(
            spec["pipeline"],
            f"{where}.pipeline",
            allowed,
            read,
            nesting=nesting + 1,
            depth=depth + 2,
        )


def _facet(
    spec: Any,
    where: str,
    allowed: Collection[str],
    read: dict[str, None],
    *,
    nesting: int,
    depth: int,
) -> None:
    if not isinstance(spec, dict) or not spec:
        raise UnsafeQueryError("bad_stage", f'{where} takes {{"name": [stages…], …}}')
    for name, sub in spec.items():
        if name.startswith("$"):
            _check_operator(name, f"{where}.{name}")
        _check_pipeline(sub, f"{where}.{name}", allowed, read, nesting=nesting + 1, depth=depth + 2)


def _bounded(pipeline: list[dict[str, Any]], row_limit: int) -> list[dict[str, Any]]:
    """The pipeline with a final ``$limit`` of at most ``row_limit + 1``."""
    fetch = row_limit + 1
    if pipeline and "$limit" in pipeline[-1]:
        requested = _positive_int(pipeline[-1]["$limit"], "$limit", row_limit)
        return [*pipeline[:-1], {"$limit": requested if requested <= row_limit else fetch}]
    return [*pipeline, {"$limit": fetch}]


# -- expressions --------------------------------------------------------------------------------


def _check_tree(value: Any, where: str, depth: int) -> None:
    """Every ``$``-key known and not refused, no JavaScript, bounded depth."""
    if depth > MAX_DEPTH:
        raise UnsafeQueryError("too_deep", f"{where} is nested too deeply; simplify it")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise UnsafeQueryError("bad_request", f"{where}: keys must be strings")
            if key.startswith("$"):
                _check_operator(key, f"{where}.{key}")
            check_expression(key, item, f"{where}.{key}")
            _check_tree(item, f"{where}.{key}", depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_tree(item, f"{where}[{index}]", depth + 1)
    else:
        _check_value(value, where, depth)


def _check_value(value: Any, where: str, depth: int) -> None:
    """A value that is no dict or list: a plain JSON scalar, a BSON scalar, or a DBRef whose
    ``$id`` is checked like any value; anything else is refused."""
    from bson.code import Code
    from bson.dbref import DBRef

    if isinstance(value, float) and not math.isfinite(value):
        raise UnsafeQueryError("invalid_json", f"{where}: NaN/Infinity are not JSON numbers")
    if isinstance(value, Code):  # before the scalars: Code is a str
        raise UnsafeQueryError(
            "javascript", f"{where}: a JavaScript value {_RULE_MESSAGES['javascript']}"
        )
    if isinstance(value, DBRef):
        fields = set(value.as_doc())
        if (
            fields - {"$ref", "$id", "$db"}
            or not isinstance(value.collection, str)
            or not isinstance(value.database, str | None)
        ):
            raise UnsafeQueryError(
                "value_not_allowed",
                f"{where}: a DBRef holds only $ref, $id and $db, this one also "
                f"{', '.join(sorted(fields - {'$ref', '$id', '$db'})) or 'has odd types'}; "
                'write {"$ref": "<collection>", "$id": <value>}',
            )
        _check_tree(value.id, f"{where}.$id", depth + 1)
        return
    from bson import Regex

    if isinstance(value, Regex) and isinstance(value.pattern, str):
        check_pattern(value.pattern, where)
    if not isinstance(value, _scalar_types()):
        raise UnsafeQueryError(
            "value_not_allowed",
            f"{where}: a {type(value).__name__} value cannot be sent; use plain JSON values "
            'or Extended JSON ({"$oid": …}, {"$date": …}, {"$numberDecimal": …})',
        )


@functools.cache
def _scalar_types() -> tuple[type, ...]:
    """Every value besides dicts, lists and DBRefs the guard lets through: JSON's, and the
    BSON scalars Extended JSON decodes to (bson loads lazily, hence a function)."""
    from bson import Binary, Decimal128, MaxKey, MinKey, ObjectId, Regex, Timestamp

    return (
        str, int, float, type(None), dt.datetime, ObjectId, Decimal128, Binary, bytes,
        uuid.UUID, Regex, Timestamp, MinKey, MaxKey,
    )  # fmt: skip


def _check_operator(key: str, where: str) -> None:
    if key in REFUSED:
        rule = REFUSED[key]
        raise UnsafeQueryError(rule, f"{where}: {key} {_RULE_MESSAGES[rule]}")
    if key not in OPERATORS:
        hint = " (stages go in an aggregate pipeline)" if key in STAGES else ""
        raise UnsafeQueryError(
            "operator_not_allowed",
            f"{where}: {key} is not a known query or aggregation operator{hint}; check the "
            "spelling, or write it with standard operators",
        )


def _positive_int(value: Any, what: str, row_limit: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UnsafeQueryError(
            "bad_limit",
            f"{what} must be a positive whole number (at most {row_limit} rows come back "
            f"anyway); got {value!r}",
        )
    return value


def _sort(sort: Any) -> list[tuple[str, Any]] | None:
    """``{"total": -1}`` or ``[["total", -1]]`` as pymongo's list of pairs."""
    if sort is None:
        return None
    pairs = list(sort.items()) if isinstance(sort, dict) else sort
    example = 'sort must be like {"total": -1, "name": 1}'
    if not isinstance(pairs, list):
        raise UnsafeQueryError("bad_request", example)
    checked: list[tuple[str, Any]] = []
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], str):
            raise UnsafeQueryError("bad_request", example)
        field, direction = pair
        if field.startswith("$") and field != "$natural":
            _check_operator(field, f"sort.{field}")
        if isinstance(direction, dict):
            _check_tree(direction, f"sort.{field}", 1)
        elif isinstance(direction, bool) or direction not in (1, -1):
            raise UnsafeQueryError(
                "bad_request", f"sort.{field}: direction is 1 (ascending) or -1 (descending)"
            )
        checked.append((field, direction))
    return checked
