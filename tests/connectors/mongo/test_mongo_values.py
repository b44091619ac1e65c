"""Strict JSON / Extended JSON decoding and driver types to DataFrames (no server needed)."""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid

import pandas as pd
import pytest
from bson import Binary, Code, Decimal128, Int64, ObjectId, Regex, Timestamp
from bson.dbref import DBRef

from relay_nb.connectors.mongo.values import (
    canonical_json,
    documents_frame,
    parse_json_input,
    to_plain,
)
from relay_nb.errors import UnsafeQueryError

OID = "650000020000000000000007"


def test_strict_json_text_parses_with_operators() -> None:
    assert parse_json_input('{"n": {"$gt": 1}}', "filter") == {"n": {"$gt": 1}}
    assert parse_json_input("  [1, 2.5, null, true]  ", "pipeline") == [1, 2.5, None, True]


def test_extended_json_becomes_driver_types_in_text_and_objects() -> None:
    text = (
        '{"_id": {"$oid": "' + OID + '"}, "at": {"$date": "2025-01-31T12:00:00Z"}, '
        '"price": {"$numberDecimal": "9.99"}, "big": {"$numberLong": "9007199254740993"}}'
    )
    expected = {
        "_id": ObjectId(OID),
        "at": dt.datetime(2025, 1, 31, 12, 0),
        "price": Decimal128("9.99"),
        "big": 9007199254740993,
    }
    assert parse_json_input(text, "filter") == expected
    as_object = json.loads(text)  # what a model sends as a JSON object, not a string
    assert parse_json_input(as_object, "filter") == expected


def test_python_values_with_bson_types_round_trip() -> None:
    value = {"_id": ObjectId(OID), "at": dt.datetime(2025, 1, 2, 3, 4, 5), "tags": ["a"]}
    assert parse_json_input(value, "filter") == value


@pytest.mark.parametrize(
    "text",
    ['{"x": {"$code": "function () {}"}}', '{"x": {"$code": "1", "$scope": {"a": 1}}}'],
)
def test_javascript_values_are_refused_while_decoding(text: str) -> None:
    with pytest.raises(UnsafeQueryError) as refused:
        parse_json_input(text, "filter")
    assert refused.value.rule == "javascript"
    assert refused.value.message.startswith("filter: a JavaScript value ($code)")
    # a Python Code object takes the same road
    with pytest.raises(UnsafeQueryError) as as_object:
        parse_json_input({"x": Code("function () {}")}, "filter")
    assert as_object.value.rule == "javascript"


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("{n: 1}", "double quotes"),
        ('{"_id": ObjectId("' + OID + '")}', '{"$oid": "…"}'),
        ('{"at": {"$gt": new Date()}}', '{"$date": "2025-01-31T00:00:00Z"}'),
        ('{"at": ISODate("2025-01-01")}', '{"$date"'),
        ('{"n": NumberLong(5)}', "plain JSON numbers"),
        ("function () { return db.dropDatabase() }", "JavaScript is never run"),
        ("this.total > 5", "strict JSON"),
        ("{'a': 1}", "not single quotes"),
        ('{"a": /x/i}', '{"$regex"'),
    ],
)
def test_non_json_is_refused_with_a_fix(text: str, hint: str) -> None:
    with pytest.raises(UnsafeQueryError) as refused:
        parse_json_input(text, "filter")
    assert refused.value.rule == "invalid_json"
    assert refused.value.message.startswith("filter is not strict JSON")
    assert hint in refused.value.message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"a": NaN}', "NaN is not JSON"),
        ('{"a": -Infinity}', "-Infinity is not JSON"),
        ('{"a": 1, "a": 2}', "repeats the key 'a'"),
        ('{"_id": {"$oid": "xyz"}}', '{"$oid": "<24 hex digits>"}'),
        ('{"at": {"$date": "yesterday"}}', '$date holds an invalid value; write {"$date": "20'),
    ],
)
def test_json_that_is_not_plain_data_is_refused(text: str, fragment: str) -> None:
    with pytest.raises(UnsafeQueryError, match=re.escape(fragment)) as refused:
        parse_json_input(text, "filter")
    assert refused.value.rule == "invalid_json"


def test_size_and_depth_are_bounded() -> None:
    with pytest.raises(UnsafeQueryError) as large:
        parse_json_input('{"a": "' + "x" * 100_001 + '"}', "filter")
    assert large.value.rule == "too_large"
    with pytest.raises(UnsafeQueryError) as deep:
        parse_json_input("[" * 50_000 + "]" * 50_000, "pipeline")
    assert deep.value.rule == "too_deep"


def test_python_values_that_are_not_json_are_refused() -> None:
    with pytest.raises(UnsafeQueryError, match="cannot be written as JSON") as refused:
        parse_json_input({"a": object()}, "filter")
    assert refused.value.rule == "invalid_json"


def test_canonical_json_is_compact_and_parses_back() -> None:
    command = {"find": "orders", "filter": {"_id": ObjectId(OID), "at": dt.datetime(2025, 1, 1)}}
    text = canonical_json(command)
    assert text == (
        '{"find":"orders","filter":{"_id":{"$oid":"' + OID + '"},'
        '"at":{"$date":"2025-01-01T00:00:00Z"}}}'
    )
    assert parse_json_input(text, "command") == command


def test_driver_types_become_plain_python() -> None:
    ident = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    document = {
        "_id": ObjectId(OID),
        "price": Decimal128("12.50"),
        "big": Int64(7),
        "ts": Timestamp(1735689600, 1),
        "uuid": Binary(ident.bytes, 4),
        "raw": b"\x00\x01",
        "pattern": Regex("^a", "i"),
        "ref": DBRef("customers", ObjectId(OID)),
        "nested": [{"id": ObjectId(OID)}],
    }
    plain = to_plain(document)
    assert plain == {
        "_id": OID,
        "price": 12.5,
        "big": 7,
        "ts": dt.datetime(2025, 1, 1, 0, 0),
        "uuid": str(ident),
        "raw": "AAE=",
        "pattern": "/^a/i",
        "ref": {"$ref": "customers", "$id": OID},
        "nested": [{"id": OID}],
    }
    assert type(plain["big"]) is int


def test_documents_flatten_to_the_depth_and_keep_dtypes() -> None:
    documents = [
        {
            "_id": ObjectId(OID),
            "at": dt.datetime(2025, 1, 1),
            "shipped": dt.datetime(2025, 1, 3),
            "address": {"city": "Lyon", "geo": {"lat": 45.7}},
            "tags": ["vip", "beta"],
            "price": Decimal128("3.25"),
        },
        {"_id": ObjectId(), "at": dt.datetime(2025, 1, 2), "shipped": None, "tags": []},
    ]
    frame = documents_frame(documents, max_depth=1)
    assert list(frame.columns) == [
        "_id",
        "at",
        "shipped",
        "tags",
        "price",
        "address.city",
        "address.geo",
    ]
    assert frame.loc[0, "_id"] == OID
    assert pd.api.types.is_datetime64_any_dtype(frame["at"])
    assert pd.api.types.is_datetime64_any_dtype(frame["shipped"]) and pd.isna(
        frame.loc[1, "shipped"]
    )
    assert frame.loc[0, "address.geo"] == '{"lat":45.7}'  # deeper than max_depth: one JSON cell
    assert frame.loc[0, "tags"] == '["vip","beta"]' and frame.loc[1, "tags"] == "[]"
    assert frame["price"].dtype == "float64"
    deeper = documents_frame(documents, max_depth=2)
    assert "address.geo.lat" in deeper.columns
    assert documents_frame([], max_depth=3).empty
