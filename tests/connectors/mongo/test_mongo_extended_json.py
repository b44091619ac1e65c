"""Extended JSON in exact shapes only, and a guard that walks every decoded value whole
(issue 17, class 7).

``bson.json_util`` alone turns ``{"$ref": …, "$id": …, "$where": …}`` into a DBRef that
carries the ``$where`` to the server out of sight of a dict/list walk, drops keys beside
``$undefined`` and ``$binary``, and lets some malformed shapes escape as ``KeyError`` or
``AttributeError``. These tests show each of those first, then that the connector's
decoder (``relay_nb.connectors.mongo.extjson``) refuses them with a rule, that every exact
shape still decodes to what json_util makes of it, and that the guard refuses any value type
off its allowlist. The corpora (``corpus/mongo_refused.yaml``, ``mongo_benign.yaml``) run the
same classes through the real tool against SecantusDB.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from typing import Any

import bson
import pytest
from bson import (
    Binary,
    Code,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Timestamp,
    json_util,
)
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.raw_bson import RawBSONDocument
from mongo_support import Watched
from seed_mongo import oid

from relay_nb.connectors.mongo.extjson import MARKERS, SHAPES
from relay_nb.connectors.mongo.guard import guard_aggregate, guard_find
from relay_nb.connectors.mongo.values import parse_json_input
from relay_nb.errors import UnsafeQueryError

OID = "650000020000000000000007"
ALLOWED = frozenset({"orders", "customers", "tickets"})
WHERE = {"$where": "sleep(10000) || true"}
TRACE = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def _refusal(text_or_value: Any) -> UnsafeQueryError:
    with pytest.raises(UnsafeQueryError) as refused:
        parse_json_input(text_or_value, "filter")
    return refused.value


# -- what json_util alone does ------------------------------------------------------------------


def test_json_util_alone_hides_operators_in_a_dbref() -> None:
    """The harm, shown without the connector: the DBRef is no dict, so a dict/list walk never
    meets its ``$where``, and the BSON sent to the server holds it."""
    decoded = json_util.loads(json.dumps({"customer_id": {"$ref": "c", "$id": 1, **WHERE}}))
    ref = decoded["customer_id"]
    assert isinstance(ref, DBRef) and not isinstance(ref, dict)
    assert ref.as_doc()["$where"] == WHERE["$where"]
    assert b"$where" in bson.encode(decoded)
    hidden_id = json_util.loads('{"x": {"$ref": "c", "$id": {"$where": "1"}}}')["x"]
    assert hidden_id.id == {"$where": "1"}  # the $id is no dict a walk of the filter reaches


@pytest.mark.parametrize(
    ("text", "lost"),
    [
        ('{"$undefined": true, "$where": "sleep(1)"}', "$where"),
        ('{"$gt": 100, "$undefined": true}', "$gt"),
        ('{"$binary": "AA==", "$type": "00", "$where": "1"}', "$where"),
        ('{"$binary": {"base64": "AA==", "subType": "04"}, "$where": "1"}', "$where"),
    ],
)
def test_json_util_alone_drops_keys_beside_some_markers(text: str, lost: str) -> None:
    decoded = json_util.loads('{"x": ' + text + "}")
    assert lost.encode() not in bson.encode(decoded)  # silently gone: not what was written
    assert _refusal(text).rule == "invalid_json"


@pytest.mark.parametrize(
    ("text", "escapes"),
    [
        ('{"$binary": {"base64": "AA==", "subType": "00"}, "$type": "00"}', AttributeError),
        ('{"$binary": {"subType": "00"}}', KeyError),
    ],
)
def test_json_util_alone_lets_errors_escape_that_are_no_refusal(text: str, escapes: type) -> None:
    with pytest.raises(escapes):
        json_util.loads(text)
    assert _refusal(text).rule == "invalid_json"


@pytest.mark.parametrize(
    "text", ['{"$date": true}', '{"$date": 1.7}', '{"$timestamp": {"t": true, "i": 1}}']
)
def test_json_util_alone_bends_values_the_decoder_refuses(text: str) -> None:
    json_util.loads(text)  # accepted there: true is a millisecond, or a second
    refused = _refusal('{"x": ' + text + "}")
    assert refused.rule == "invalid_json" and "holds a value it does not take; write" in str(
        refused
    )


# -- the strict decoder -------------------------------------------------------------------------

EXACT = [
    ('{"$oid": "' + OID + '"}', ObjectId(OID)),
    ('{"$date": "2025-01-31T12:00:00Z"}', dt.datetime(2025, 1, 31, 12)),
    ('{"$date": "2025-01-31T14:00:00+02:00"}', dt.datetime(2025, 1, 31, 12)),
    ('{"$date": {"$numberLong": "1735948800000"}}', dt.datetime(2025, 1, 4)),
    ('{"$date": 1735948800000}', dt.datetime(2025, 1, 4)),
    ('{"$numberLong": "9007199254740993"}', Int64(9007199254740993)),
    ('{"$numberInt": "-7"}', -7),
    ('{"$numberDouble": "1.5"}', 1.5),
    ('{"$numberDecimal": "9.99"}', Decimal128("9.99")),
    ('{"$binary": {"base64": "AAE=", "subType": "00"}}', b"\x00\x01"),
    ('{"$binary": "AAE=", "$type": "00"}', b"\x00\x01"),
    ('{"$binary": "AAE=", "$type": "80"}', Binary(b"\x00\x01", 0x80)),
    ('{"$uuid": "' + str(TRACE) + '"}', Binary.from_uuid(TRACE)),
    ('{"$regularExpression": {"pattern": "^a", "options": "i"}}', Regex("^a", "i")),
    ('{"$regex": "^a", "$options": "i"}', Regex("^a", re.IGNORECASE)),
    ('{"$regex": "^a"}', Regex("^a")),
    ('{"$timestamp": {"t": 1735689600, "i": 1}}', Timestamp(1735689600, 1)),
    ('{"$minKey": 1}', MinKey()),
    ('{"$maxKey": 1}', MaxKey()),
    ('{"$ref": "customers", "$id": {"$oid": "' + OID + '"}}', DBRef("customers", ObjectId(OID))),
    ('{"$ref": "customers", "$id": 7, "$db": "shop"}', DBRef("customers", 7, "shop")),
]  # fmt: skip


@pytest.mark.parametrize(("text", "value"), EXACT, ids=[t[:40] for t, _ in EXACT])
def test_exact_shapes_decode_as_json_util_decodes_them(text: str, value: Any) -> None:
    parsed = parse_json_input('{"x": ' + text + "}", "filter")["x"]
    assert parsed == value and type(parsed) is type(value)
    assert parsed == json_util.loads(text)  # the same value json_util builds
    if isinstance(parsed, DBRef):
        assert set(parsed.as_doc()) <= {"$ref", "$id", "$db"}


def test_every_shape_is_exercised() -> None:
    exercised = {frozenset(json.loads(text)) for text, _ in EXACT}
    assert {shape.keys for shape in SHAPES} <= exercised
    assert {"$ref", "$id", "$db", "$code", "$undefined"} <= MARKERS
    assert not {"$regex", "$options", "$type", "$gt"} & MARKERS  # operators too


@pytest.mark.parametrize(
    "text",
    [
        '{"$gt": 1}',
        '{"$type": "double"}',
        '{"$regex": "^a", "$ne": "x"}',
        '{"$regex": {"$literal": "a"}}',
        '{"$regex": "^a", "$options": 5}',
        '{"$elemMatch": {"sku": "x"}}',
    ],
)
def test_objects_without_a_marker_stay_dicts_for_the_guard(text: str) -> None:
    assert parse_json_input('{"x": ' + text + "}", "filter") == {"x": json.loads(text)}


@pytest.mark.parametrize(
    ("shape", "fragment"),
    [
        ({"$ref": "c", "$id": 1, **WHERE}, "it also has $where"),
        ({"$ref": "c", "$id": 1, "$db": "d", "note": 1}, "it also has note"),
        ({"$ref": "c", "$id": 1, "$db": 5}, "$ref holds a value it does not take"),
        ({"$ref": 5, "$id": 1}, "$ref holds a value it does not take"),
        ({"$ref": "c"}, "it lacks $id"),
        ({"$id": 1}, "it lacks $ref"),
        ({"$oid": OID, "$gt": 1}, "it also has $gt"),
        ({"$date": "2025-01-01T00:00:00Z", **WHERE}, "it also has $where"),
        ({"$numberDecimal": "1", "$lt": 2}, "it also has $lt"),
        ({"$uuid": "00112233-4455-6677-8899-aabbccddeeff", **WHERE}, "it also has $where"),
        ({"$timestamp": {"t": 1, "i": 1}, **WHERE}, "it also has $where"),
        ({"$minKey": 1, **WHERE}, "it also has $where"),
        ({"$regularExpression": {"pattern": "a", "options": ""}, **WHERE}, "also has $where"),
        ({"$binary": "AA==", "$type": "00", **WHERE}, "it also has $where"),
        ({"$numberLong": "99999999999999999999"}, '{"$numberLong": "<digits>"}'),
        ({"$numberInt": "2147483648"}, '{"$numberInt": "<digits>"}'),
        ({"$date": "yesterday"}, '$date holds an invalid value; write {"$date": "20'),
        ({"$symbol": "paid"}, "deprecated BSON type the connector does not send; write a plain"),
        ({"$undefined": True}, "write null"),
        ({"$dbPointer": {"$ref": "c", "$id": {"$oid": OID}}}, 'write a DBRef, {"$ref"'),
    ],
)
def test_misshapen_values_are_refused_with_the_shape_to_write(
    shape: dict[str, Any], fragment: str
) -> None:
    for form in (json.dumps({"x": shape}), {"x": shape}):  # text, and a JSON object
        refused = _refusal(form)
        assert refused.rule == "invalid_json", refused
        assert fragment in refused.message, refused.message
        assert len(str(refused)) < 400


def test_javascript_is_refused_while_decoding_with_its_rule() -> None:
    for shape in ({"$code": "1"}, {"$code": "1", "$scope": WHERE}, {"$scope": {}}):
        assert _refusal({"x": shape}).rule == "javascript"


# -- the guard walks every value whole ----------------------------------------------------------


def _find(value: Any) -> Any:
    return guard_find("orders", {"x": value}, None, None, None, allowed=ALLOWED, row_limit=200)


@pytest.mark.parametrize(
    "value",
    [
        ObjectId(OID), Decimal128("1.5"), Int64(5), Binary(b"\x01", 0x80), b"\x00", True, None,
        uuid.UUID(int=5), Regex("^a", "i"), Timestamp(1, 1), MinKey(), MaxKey(), 1.5, "text",
        dt.datetime(2025, 1, 1), DBRef("customers", ObjectId(OID), "shop"),
        DBRef("customers", {"nested": [1, {"a": ObjectId(OID)}]}),
    ],
)  # fmt: skip
def test_json_and_bson_scalars_pass(value: Any) -> None:
    assert _find(value).filter == {"x": value}


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (DBRef("customers", 1, **WHERE), "value_not_allowed"),
        (DBRef("customers", 1, "shop", note={"$out": "x"}), "value_not_allowed"),
        (DBRef("customers", WHERE), "javascript"),
        (DBRef("customers", [{"$out": "pwned"}]), "write_stage"),
        (DBRef("customers", {"$bogus": 1}), "operator_not_allowed"),
        (DBRef("customers", DBRef("orders", 1, **WHERE)), "value_not_allowed"),
        (Code("function () { return 1 }"), "javascript"),
        (RawBSONDocument(bson.encode(WHERE)), "value_not_allowed"),
        (DatetimeMS(5), "value_not_allowed"),
        ((1, WHERE), "value_not_allowed"),
        ({1, 2}, "value_not_allowed"),
        (re.compile("^a"), "value_not_allowed"),
        (object(), "value_not_allowed"),
        (float("nan"), "invalid_json"),
    ],
    ids=lambda v: type(v).__name__,
)
def test_every_other_value_fails_closed(value: Any, rule: str) -> None:
    with pytest.raises(UnsafeQueryError) as refused:
        _find(value)
    assert refused.value.rule == rule, refused.value
    with pytest.raises(UnsafeQueryError) as in_pipeline:
        guard_aggregate(
            "orders", [{"$match": {"$or": [{"x": [value]}]}}], allowed=ALLOWED, row_limit=200
        )
    assert in_pipeline.value.rule == rule


# -- Python objects passed to the connector take the same road ------------------------------------

HIDDEN = DBRef("customers", oid(1, 0), **WHERE)


@pytest.mark.parametrize(
    ("call", "rule"),
    [
        (lambda c: c.find("orders", {"customer_id": HIDDEN}), "invalid_json"),
        (lambda c: c.find("orders", {"customer_id": {"$in": [1, HIDDEN]}}), "invalid_json"),
        (lambda c: c.find("orders", projection={"x": HIDDEN}), "invalid_json"),
        (lambda c: c.find("orders", sort={"total": HIDDEN}), "invalid_json"),
        (lambda c: c.find("orders", {"customer_id": DBRef("customers", WHERE)}), "javascript"),
        (lambda c: c.find("orders", {"x": Code("1", {"a": 1})}), "javascript"),
        (lambda c: c.find("orders", {"x": RawBSONDocument(bson.encode(WHERE))}), "javascript"),
        (lambda c: c.find("orders", {"x": DBRef("c", 1, **{"$out": "pwned"})}), "invalid_json"),
        (lambda c: c.aggregate("orders", [{"$match": {"customer_id": HIDDEN}}]), "invalid_json"),
        (
            lambda c: c.aggregate(
                "orders",
                [{"$lookup": {"from": "customers", "as": "c", "pipeline": [
                    {"$match": {"_id": DBRef("customers", 1, **{"$function": {"body": "f"}})}},
                ]}}],
            ),
            "invalid_json",
        ),
        (
            lambda c: c.aggregate(
                "orders", [{"$facet": {"a": [{"$addFields": {"r": DBRef("c", WHERE)}}]}}]
            ),
            "javascript",
        ),
    ],
)  # fmt: skip
def test_python_objects_with_hidden_operators_never_reach_the_server(
    call: Any, rule: str, watch: Watched
) -> None:
    with pytest.raises(UnsafeQueryError) as refused:
        call(watch.connector)
    assert refused.value.rule == rule, refused.value
    assert watch.log.names() == []


def test_python_dbrefs_and_uuids_query_for_real(watch: Watched) -> None:
    with_db = watch.connector.find(
        "tickets", {"customer": DBRef("customers", oid(1, 0), "shop")}, sort={"_id": 1}
    )
    assert with_db.row_count == 3
    assert set(with_db.df["customer.$db"]) == {"shop"}
    assert set(with_db.df["customer.$id"]) == {str(oid(1, 0))}
    by_uuid = watch.connector.find("tickets", {"trace": uuid.UUID(int=0x1003)})
    assert by_uuid.row_count == 1
    assert by_uuid.df.loc[0, "trace"] == str(uuid.UUID(int=0x1003))
    assert watch.log.names() == ["find", "find"]
