"""Fuzzing the Mongo guard (``relay_nb.connectors.mongo.guard``).

1. Random pipelines of allowed read stages with random expression trees are accepted, come
   back as they were plus one final ``$limit`` (``row_limit + 1``, or the pipeline's own
   final ``$limit`` when smaller), name every collection they read, leave the caller's list
   alone, and the same pipeline sent as JSON text gives the same result.
2. Random ``find`` filters, projections and sorts are accepted and bounded the same way.
3. The same pipelines with one forbidden thing planted anywhere — a refused stage in any
   sub-pipeline, a refused or look-alike operator as a key of any object, a JavaScript value,
   a lookup of a collection off the allowlist — are refused with the rule meant for that
   injection, as Python values and as JSON text, and through the real connector not a single
   command reaches the server.
4. Accepted pipelines run on SecantusDB through the real connector: no error, at most
   ``row_limit`` rows, exactly what the server returns for the same pipeline sent directly,
   and every document and collection of the database is the same afterwards.
5. Extended JSON values (issue 17): every exact shape, planted in a random pipeline, is
   accepted and decodes to what ``bson.json_util`` makes of it; the same value with one more
   key of any kind (a refused or allowed operator, a field, another type marker), in any
   key order, is refused while decoding and never reaches the server; and a DBRef's ``$id``
   is walked whole: a refused operator anywhere inside it is refused with its own rule.
"""

from __future__ import annotations

import base64
import collections
import copy
import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pymongo
import pytest
from bson import json_util
from fuzz_support import fuzz_settings, mongo_helpers
from hypothesis import assume, example, given, note
from hypothesis import strategies as st
from mongo_strategies import (
    ALLOWED,
    ATTACK_STRINGS,
    Poisoned,
    pipelines,
    poisoned,
    server_pipelines,
)

from relay_nb.connectors.mongo import MongoConnector
from relay_nb.connectors.mongo.guard import guard_aggregate, guard_find
from relay_nb.connectors.mongo.operators import REFUSED
from relay_nb.connectors.mongo.values import documents_frame, parse_json_input
from relay_nb.errors import UnsafeQueryError

ROW_LIMITS = st.sampled_from([1, 5, 200])
COLLECTIONS = st.sampled_from(ALLOWED)


def _read_collections(pipeline: list[dict[str, Any]]) -> set[str]:
    """Every collection a pipeline reads, found independently of the guard."""
    found: set[str] = set()
    for stage in pipeline:
        ((operator, spec),) = stage.items()
        if operator in ("$lookup", "$graphLookup"):
            found.add(spec["from"])
            found |= _read_collections(spec.get("pipeline", []))
        elif operator == "$unionWith":
            found.add(spec if isinstance(spec, str) else spec["coll"])
            found |= _read_collections([] if isinstance(spec, str) else spec.get("pipeline", []))
        elif operator == "$facet":
            for sub in spec.values():
                found |= _read_collections(sub)
    return found


def _as_text(value: Any) -> str:
    return json_util.dumps(value, json_options=json_util.RELAXED_JSON_OPTIONS)


# --------------------------------------------------------------------------------------------
# 1-2: accepted, unchanged apart from the bound


@fuzz_settings(200)
@given(pipeline=pipelines(), collection=COLLECTIONS, row_limit=ROW_LIMITS)
def test_random_read_pipelines_are_accepted_as_they_are(
    pipeline: list[dict[str, Any]], collection: str, row_limit: int
) -> None:
    original = copy.deepcopy(pipeline)
    guarded = guard_aggregate(collection, pipeline, allowed=ALLOWED, row_limit=row_limit)
    assert pipeline == original  # the caller's list is not modified

    final = original[-1] if original else {}
    if "$limit" in final:
        own = final["$limit"]
        assert guarded.pipeline == [
            *original[:-1],
            {"$limit": own if own <= row_limit else row_limit + 1},
        ]
    else:
        assert guarded.pipeline == [*original, {"$limit": row_limit + 1}]
    assert guarded.collection == collection
    assert set(guarded.collections) == {collection} | _read_collections(original)

    # the same pipeline as JSON text, decoded the way the connector decodes it (Extended
    # JSON: {"$regex": …, "$options": …} becomes a bson Regex on both sides)
    parsed = parse_json_input(_as_text(original), "pipeline")
    again = guard_aggregate(collection, parsed, allowed=ALLOWED, row_limit=row_limit)
    assert again.pipeline == parse_json_input(_as_text(guarded.pipeline), "pipeline")


_FILTER_VALUES = st.one_of(st.integers(), st.text(max_size=5), st.none(), st.booleans())


@fuzz_settings(100)
@given(
    pipeline=pipelines(),
    limit=st.one_of(st.none(), st.integers(1, 10_000)),
    sort=st.one_of(st.none(), st.dictionaries(st.sampled_from(("total", "_id", "名前")),
                                              st.sampled_from((1, -1)), max_size=2)),
    row_limit=ROW_LIMITS,
)  # fmt: skip
def test_random_finds_are_accepted_and_bounded(
    pipeline: list[dict[str, Any]], limit: int | None, sort: Any, row_limit: int
) -> None:
    # the $match filters and $project specs of a random pipeline make realistic finds
    filters = [s["$match"] for s in pipeline if "$match" in s] or [{}]
    projection = next((s["$project"] for s in pipeline if "$project" in s), None)
    for query in filters:
        found = guard_find(
            "orders", query, projection, sort, limit, allowed=ALLOWED, row_limit=row_limit
        )
        assert found.filter == query and found.projection == projection
        assert 1 <= found.limit <= row_limit + 1
        assert found.limit == (limit if limit is not None and limit <= row_limit else row_limit + 1)


# --------------------------------------------------------------------------------------------
# 3: poisoned pipelines are refused with their rule, and nothing reaches the server


def _refusal(call: Any) -> UnsafeQueryError:
    try:
        call()
    except UnsafeQueryError as error:
        return error
    pytest.fail("accepted")


@pytest.fixture(scope="module")
def watched(secantus: Any) -> Iterator[tuple[MongoConnector, Any]]:
    """A connector on SecantusDB whose client logs every command it sends."""
    _, support = mongo_helpers()
    log = support.CommandLog()
    client: pymongo.MongoClient = pymongo.MongoClient(
        secantus.base_url, event_listeners=[log], serverSelectionTimeoutMS=5000
    )
    connector = MongoConnector(
        "shop", secantus.url, collections=list(ALLOWED), timeout_s=10, row_limit=50,
        client=client,
    )  # fmt: skip
    connector.object_names()  # sample the schema now: later commands are the queries' alone
    try:
        yield connector, log
    finally:
        connector.close()
        client.close()


@fuzz_settings(200)
@given(case=poisoned(), collection=COLLECTIONS)
@example(  # found by this property: $lookup's own keys were never checked
    case=Poisoned(
        [{"$lookup": {"from": "customers", "localField": "a", "foreignField": "b", "as": "x",
                      "$where": "sleep(1000)"}}],
        "key '$where' in a lookup", "javascript",
    ),
    collection="orders",
)  # fmt: skip
@example(
    case=Poisoned(
        [{"$facet": {"a": [{"$lookup": {"from": "customers", "as": "c", "pipeline": [],
                                        "$out": "pwned"}}]}}],
        "key '$out' in a lookup", "write_stage",
    ),
    collection="orders",
)  # fmt: skip
@example(  # found by this property: as JSON text, keys beside $regex vanished (values.py)
    case=Poisoned(
        [{"$match": {"status": {"$regex": "^a.*", "$options": "i", "$where": "sleep(1000)"}}}],
        "key '$where' in a object", "javascript",
    ),
    collection="orders",
)  # fmt: skip
def test_poisoned_pipelines_are_refused_with_their_rule(
    case: Poisoned, collection: str, watched: tuple[MongoConnector, Any]
) -> None:
    note(repr(case))
    error = _refusal(
        lambda: guard_aggregate(collection, case.pipeline, allowed=ALLOWED, row_limit=50)
    )
    assert error.rule == case.rule, error.message
    assert len(error.message) < 400

    # as JSON text (JavaScript becomes {"$code": …} and back). A planted "$code" key is
    # Extended JSON there: malformed beside other keys (refused while decoding), alone a
    # JavaScript value (a stage that is no object, a code value): refused either way
    text = _as_text(case.pipeline)
    text_rules = {case.rule}
    if "'$code'" in case.injection:
        text_rules |= {"invalid_json", "javascript", "bad_stage"}
    error = _refusal(lambda: guard_aggregate(
        collection, parse_json_input(text, "pipeline"), allowed=ALLOWED, row_limit=50
    ))  # fmt: skip
    assert error.rule in text_rules, error.message

    connector, log = watched
    log.clear()
    error = _refusal(lambda: connector.aggregate(collection, text))
    assert error.rule in text_rules, error.message
    assert log.names() == [], "a refused pipeline reached the server"


# --------------------------------------------------------------------------------------------
# 5: Extended JSON values only in their exact shapes, and walked whole


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


_DOUBLES = st.floats(allow_nan=False, allow_infinity=False)
_MARKED = st.one_of(
    st.builds(lambda h: {"$oid": h}, st.text("0123456789abcdef", min_size=24, max_size=24)),
    st.builds(
        lambda d: {"$date": d.isoformat(timespec="milliseconds") + "Z"},
        st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(9999, 1, 1)),
    ),
    st.builds(lambda ms: {"$date": {"$numberLong": str(ms)}}, st.integers(-(2**40), 2**45)),
    st.builds(lambda n: {"$numberLong": str(n)}, st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda n: {"$numberInt": str(n)}, st.integers(-(2**31), 2**31 - 1)),
    st.builds(lambda x: {"$numberDouble": repr(x)}, _DOUBLES),
    st.builds(lambda n: {"$numberDecimal": str(n)}, st.decimals(-(10**6), 10**6, places=3)),
    st.builds(
        lambda b, t: {"$binary": {"base64": _b64(b), "subType": t}},
        st.binary(max_size=24), st.sampled_from(("00", "04", "05", "80")),
    ),
    st.builds(lambda b: {"$binary": _b64(b), "$type": "00"}, st.binary(max_size=24)),
    st.builds(lambda u: {"$uuid": str(u)}, st.uuids()),
    st.builds(
        lambda p, o: {"$regularExpression": {"pattern": p, "options": o}},
        st.sampled_from(("^a", "x.*y", "", "é+")), st.sampled_from(("", "i", "im")),
    ),
    st.builds(
        lambda t, i: {"$timestamp": {"t": t, "i": i}},
        st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1),
    ),
    st.just({"$minKey": 1}),
    st.just({"$maxKey": 1}),
)  # fmt: skip
"""Every value shape with a type marker (the legacy regex is an operator shape too)."""
_DBREF_IDS = st.one_of(_MARKED, st.integers(), st.text(max_size=8), st.none())
_EXACT = st.one_of(
    _MARKED,
    st.builds(
        lambda c, i, db: {"$ref": c, "$id": i, **db},
        COLLECTIONS, _DBREF_IDS, st.sampled_from(({}, {"$db": "shop"})),
    ),
)  # fmt: skip
_EXTRA_KEYS = st.sampled_from(
    (*REFUSED, "$gt", "$eq", "$in", "$expr", "$not", "$regex", "note", "x", "$oid", "$date",
     "$numberLong", "$binary", "$ref", "$id", "$undefined", "$symbol", "$code", "$scope")
)  # fmt: skip
_EXTRA_VALUES = st.one_of(
    st.sampled_from(ATTACK_STRINGS), st.integers(), st.just({"$where": "sleep(1000)"})
)


def _planted(value: Any, where: int) -> dict[str, Any]:
    """A stage holding ``value`` where a model would write a value."""
    return (
        {"$match": {"customer_id": value}},
        {"$match": {"customer_id": {"$in": [1, value]}}},
        {"$match": {"$or": [{"status": "paid"}, {"customer_id": {"$ne": value}}]}},
        {"$project": {"x": {"$literal": value}}},
        {"$addFields": {"x": {"$eq": ["$customer_id", value]}}},
        {"$facet": {"a": [{"$match": {"customer_id": value}}]}},
        {"$lookup": {"from": "customers", "as": "c", "pipeline": [{"$match": {"_id": value}}]}},
        {"$unionWith": {"coll": "orders", "pipeline": [{"$match": {"customer_id": value}}]}},
    )[where]


_PLACES = st.integers(0, 7)


@fuzz_settings(200)
@given(value=_EXACT, where=_PLACES, pipeline=pipelines())
def test_exact_extended_json_is_accepted_as_json_util_reads_it(
    value: dict[str, Any], where: int, pipeline: list[dict[str, Any]]
) -> None:
    stages = [_planted(value, where), *pipeline]
    parsed = parse_json_input(json.dumps(stages), "pipeline")
    assert parsed[0] == _planted(json_util.loads(json.dumps(value)), where)
    guard_aggregate("orders", parsed, allowed=ALLOWED, row_limit=50)


@fuzz_settings(200)
@given(value=_EXACT, key=_EXTRA_KEYS, extra=_EXTRA_VALUES, data=st.data(), where=_PLACES)
def test_a_shape_with_one_more_key_is_refused_and_never_sent(
    value: dict[str, Any],
    key: str,
    extra: Any,
    data: st.DataObject,
    where: int,
    watched: tuple[MongoConnector, Any],
) -> None:
    assume(key not in value and not (key == "$db" and "$ref" in value))
    items = list(value.items())
    items.insert(data.draw(st.integers(0, len(items)), label="position"), (key, extra))
    text = json.dumps([_planted(dict(items), where)])
    note(text)
    error = _refusal(lambda: parse_json_input(text, "pipeline"))
    assert error.rule in ("invalid_json", "javascript"), error.message
    connector, log = watched
    log.clear()
    assert _refusal(lambda: connector.aggregate("orders", text)).rule == error.rule
    assert log.names() == [], "a misshapen value reached the server"


def _nested(draw: Any, operator: str) -> Any:
    """A refused operator somewhere inside random dicts and lists."""
    value: Any = {operator: "sleep(1000)" if operator == "$where" else {"x": 1}}
    for _ in range(draw(st.integers(0, 4))):
        value = [1, value] if draw(st.booleans()) else {"k": value}
    return value


@fuzz_settings(100)
@given(operator=st.sampled_from(sorted(REFUSED)), data=st.data(), where=_PLACES)
def test_a_dbref_id_is_walked_whole(operator: str, data: st.DataObject, where: int) -> None:
    hidden = _nested(data.draw, operator)
    text = json.dumps([_planted({"$ref": "customers", "$id": hidden}, where)])
    # plain json_util keeps the operator inside the DBRef, where a dict/list walk stops
    assert isinstance(json_util.loads(text)[0], dict)
    error = _refusal(
        lambda: guard_aggregate(
            "orders", parse_json_input(text, "pipeline"), allowed=ALLOWED, row_limit=50
        )
    )
    assert error.rule == REFUSED[operator], error.message


# --------------------------------------------------------------------------------------------
# 4: accepted pipelines execute on a real server, read-only


def _database_digest(client: pymongo.MongoClient, database: str) -> dict[str, str]:
    """Every collection of the database (system ones too) with a digest of its documents.

    Not ``mongo_support.server_state``: its server-wide write counters and database list
    also move when other test sessions write to the shared server at the same time."""
    db = client[database]
    digests = {}
    for info in db.list_collections():
        name = info["name"]
        documents = [] if info.get("type") == "view" else list(db[name].find({}).sort("_id", 1))
        digests[name] = hashlib.sha256(_as_text(documents).encode()).hexdigest()
    return digests


def test_the_digest_sees_an_update(watched: tuple[MongoConnector, Any]) -> None:
    """Control: an update that changes no count still changes the digest."""
    client = watched[0].client
    scratch = f"relay_fuzz_{uuid.uuid4().hex[:8]}"
    try:
        client[scratch].docs.insert_many([{"_id": i, "n": i} for i in range(3)])
        before = _database_digest(client, scratch)
        client[scratch].docs.update_one({"_id": 1}, {"$set": {"n": 7}})
        assert _database_digest(client, scratch) != before
    finally:
        client.drop_database(scratch)


@pytest.fixture(scope="module")
def state_checked(secantus: Any, watched: tuple[MongoConnector, Any]) -> Iterator[None]:
    client = watched[0].client
    before = _database_digest(client, secantus.database)
    yield
    assert _database_digest(client, secantus.database) == before


def _rows(frame: Any) -> collections.Counter[str]:
    return collections.Counter(
        json.dumps(row, sort_keys=True, default=str) for row in frame.to_dict("records")
    )


@fuzz_settings(25)
@given(pipeline=server_pipelines())
@example(pipeline=[{"$match": {"status": "$where"}}, {"$set": {"label": {"$literal": "$out"}}}])
@example(pipeline=[{"$match": {"status": {"$regex": "^p", "$options": "i", "$ne": "paid"}}}])
def test_accepted_pipelines_execute_on_secantusdb(
    pipeline: list[dict[str, Any]],
    secantus: Any,
    watched: tuple[MongoConnector, Any],
    state_checked: None,
) -> None:
    connector, _ = watched
    result = connector.aggregate("orders", copy.deepcopy(pipeline))
    assert result.row_count <= connector.row_limit

    bounded = [*pipeline, {"$limit": connector.row_limit + 1}]
    if "$limit" in (pipeline[-1] if pipeline else {}):
        bounded = guard_aggregate("orders", pipeline, allowed=ALLOWED, row_limit=50).pipeline
    direct = list(connector.client[secantus.database]["orders"].aggregate(bounded))
    expected = documents_frame(direct[: connector.row_limit], max_depth=connector.max_depth)
    assert result.truncated == (len(direct) > connector.row_limit)
    assert _rows(result.df) == _rows(expected)
