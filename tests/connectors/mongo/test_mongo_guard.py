"""The Mongo guard's rewriting and structure checks, without a server.

The refusal and benign corpora (``test_mongo_corpus.py``) cover what is refused and what
passes against a real server; these pin down how limits are clamped, which collections a
pipeline reads, and the bounds on nesting.
"""

from __future__ import annotations

import copy

import pytest

from relay_nb.connectors.mongo.guard import (
    MAX_DEPTH,
    MAX_PIPELINE_NESTING,
    check_collection,
    guard_aggregate,
    guard_find,
)
from relay_nb.connectors.mongo.operators import OPERATORS, REFUSED, STAGES
from relay_nb.errors import UnsafeQueryError

ALLOWED = frozenset({"orders", "customers", "products"})


def find(**options):
    spec = {"filter": None, "projection": None, "sort": None, "limit": None, **options}
    return guard_find("orders", **spec, allowed=ALLOWED, row_limit=200)


def aggregate(pipeline, collection="orders"):
    return guard_aggregate(collection, pipeline, allowed=ALLOWED, row_limit=200)


@pytest.mark.parametrize(
    ("requested", "fetched"), [(None, 201), (1, 1), (200, 200), (201, 201), (10_000, 201), (5.0, 5)]
)
def test_find_limit_is_kept_or_clamped_to_one_past_the_row_limit(requested, fetched) -> None:
    assert find(limit=requested).limit == fetched


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "10"])
def test_find_limit_must_be_a_positive_whole_number(bad) -> None:
    with pytest.raises(UnsafeQueryError) as refused:
        find(limit=bad)
    assert refused.value.rule == "bad_limit" and "at most 200 rows" in refused.value.message


def test_aggregate_appends_a_limit_and_reads_every_looked_up_collection() -> None:
    pipeline = [
        {"$match": {"status": "paid"}},
        {"$lookup": {"from": "customers", "localField": "c", "foreignField": "_id", "as": "c"}},
        {"$unionWith": {"coll": "products", "pipeline": [{"$limit": 3}]}},
    ]
    original = copy.deepcopy(pipeline)
    guarded = aggregate(pipeline)
    assert guarded.pipeline == [*original, {"$limit": 201}]
    assert guarded.collections == ("orders", "customers", "products")
    assert pipeline == original  # the caller's list is not modified


@pytest.mark.parametrize(("last", "kept"), [(5, 5), (200, 200), (201, 201), (1000, 201), (7.0, 7)])
def test_a_final_limit_is_kept_or_clamped(last, kept) -> None:
    guarded = aggregate([{"$sort": {"_id": 1}}, {"$limit": last}])
    assert guarded.pipeline == [{"$sort": {"_id": 1}}, {"$limit": kept}]


def test_an_inner_limit_stays_and_the_final_one_is_added() -> None:
    guarded = aggregate([{"$limit": 5000}, {"$group": {"_id": "$status"}}])
    assert guarded.pipeline[0] == {"$limit": 5000}
    assert guarded.pipeline[-1] == {"$limit": 201}


def test_sort_accepts_objects_and_pairs() -> None:
    assert find(sort={"total": -1, "_id": 1}).sort == [("total", -1), ("_id", 1)]
    assert find(sort=[["total", -1]]).sort == [("total", -1)]
    assert find(sort={"$natural": -1}).sort == [("$natural", -1)]
    assert find(sort={"score": {"$meta": "textScore"}}).sort == [("score", {"$meta": "textScore"})]


@pytest.mark.parametrize("bad", [{"total": 2}, {"total": "desc"}, [["total"]], "total", [[1, 1]]])
def test_bad_sorts_say_how_to_write_one(bad) -> None:
    with pytest.raises(UnsafeQueryError) as refused:
        find(sort=bad)
    assert refused.value.rule == "bad_request" and "1" in refused.value.message


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"filter": [1]}, "filter must be a JSON object"),
        ({"projection": "name"}, "projection must be a JSON object"),
    ],
)
def test_find_shapes_are_checked(options, fragment) -> None:
    with pytest.raises(UnsafeQueryError, match=fragment):
        find(**options)


@pytest.mark.parametrize(
    ("pipeline", "rule"),
    [
        ({"$match": {}}, "bad_request"),
        ([["$match", {}]], "bad_stage"),
        ([{}], "bad_stage"),
        ([{"match": {}}], "bad_stage"),
        ([{"$unionWith": {"coll": "orders", "into": "x"}}], "bad_stage"),
        ([{"$unionWith": 5}], "bad_stage"),
        ([{"$facet": {}}], "bad_stage"),
        ([{"$facet": {"a": {"$match": {}}}}], "bad_request"),
        ([{"$graphLookup": {"startWith": "$a"}}], "bad_stage"),
        ([{"$match": {}}] * 101, "too_large"),
    ],
)
def test_malformed_pipelines_are_refused(pipeline, rule) -> None:
    with pytest.raises(UnsafeQueryError) as refused:
        aggregate(pipeline)
    assert refused.value.rule == rule


def test_sub_pipelines_nest_to_a_bound() -> None:
    def nested(levels: int) -> list:
        pipeline: list = [{"$match": {}}]
        for _ in range(levels):
            pipeline = [{"$facet": {"x": pipeline}}]
        return pipeline

    aggregate(nested(MAX_PIPELINE_NESTING))
    with pytest.raises(UnsafeQueryError) as refused:
        aggregate(nested(MAX_PIPELINE_NESTING + 1))
    assert refused.value.rule == "too_deep"


def test_documents_nest_to_a_bound() -> None:
    def nested(levels: int) -> dict:
        value: dict = {"a": 1}
        for _ in range(levels):
            value = {"$and": [value]}
        return value

    find(filter=nested(MAX_DEPTH // 2 - 1))
    with pytest.raises(UnsafeQueryError) as refused:
        find(filter=nested(MAX_DEPTH))
    assert refused.value.rule == "too_deep"


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("system.js", "system_collection"),
        ("system.views", "system_collection"),
        ("other.system.profile", "system_collection"),
        ("internal_notes", "collection_not_allowed"),
        ("", "collection_not_allowed"),
        (None, "collection_not_allowed"),
        (["orders"], "collection_not_allowed"),
    ],
)
def test_collections_off_the_allowlist_are_refused(name, rule) -> None:
    with pytest.raises(UnsafeQueryError) as refused:
        check_collection(name, ALLOWED)
    assert refused.value.rule == rule


def test_the_refusal_lists_what_may_be_read() -> None:
    with pytest.raises(UnsafeQueryError, match="use one of: customers, orders, products"):
        check_collection("secrets", ALLOWED)


def test_a_stage_written_as_an_operator_gets_a_hint() -> None:
    with pytest.raises(UnsafeQueryError, match="stages go in an aggregate pipeline"):
        find(filter={"$group": {"_id": 1}})


def test_the_allowlists_do_not_overlap_the_refusals() -> None:
    assert not (STAGES | OPERATORS) & set(REFUSED)
    assert {"$match", "$lookup", "$facet", "$unionWith", "$graphLookup"} <= STAGES
    assert set(REFUSED.values()) == {"javascript", "write_stage", "admin_stage"}
