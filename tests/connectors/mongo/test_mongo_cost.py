"""Expressions whose cost no time limit stops (issue 38; ``relay_nb/connectors/mongo/cost.py``).

First shown harmful on the real server through raw pymongo, at sizes that stay short here: a
regular expression with a nested repeat takes exponentially longer per character of a value
that almost matches, and a ``$reduce`` that uses ``$$value`` twice doubles its string each
step. Through the connector both are refused before anything is sent; benign regular
expressions and reductions still run."""

from __future__ import annotations

import time

import pymongo
import pytest
from mongo_support import Watched

from relay_nb.connectors.mongo.cost import check_pattern

pytestmark = pytest.mark.timeout(120)

SLOW = {"$regex": "^(a+)+$"}


def seconds(collection, query: dict) -> float:
    started = time.perf_counter()
    list(collection.find(query, max_time_ms=30_000))
    return time.perf_counter() - started


async def test_a_regex_with_a_nested_repeat_grows_exponentially_and_is_refused(
    watch: Watched,
) -> None:
    client: pymongo.MongoClient = watch.client
    scratch = client[watch.server.database]["redos_probe"]
    try:
        scratch.insert_one({"name": "a" * 14 + "!"})
        at_14 = seconds(scratch, {"name": SLOW})
        scratch.delete_many({})
        scratch.insert_one({"name": "a" * 19 + "!"})
        at_19 = seconds(scratch, {"name": SLOW})
        assert at_19 > 8 * at_14  # 5 more characters: ~32x the time (harmful)
    finally:
        scratch.drop()
    watch.log.clear()
    result = await watch.connector.tools()[0].run(
        {"collection": "customers", "filter": {"name": SLOW}}
    )
    assert result.rule == "unbounded_cost" and "(a+)+" in result.content
    assert watch.log.names() == []  # nothing reached the server


async def test_a_reduce_that_doubles_its_accumulator_is_refused(watch: Watched) -> None:
    doubling = {
        "$reduce": {
            "input": {"$range": [0, 20]},
            "initialValue": "x",
            "in": {"$concat": ["$$value", "$$value"]},
        }
    }
    raw = watch.client[watch.server.database]["orders"]
    (row,) = raw.aggregate([{"$limit": 1}, {"$project": {"n": {"$strLenCP": doubling}}}])
    assert row["n"] == 2**20  # 20 steps of a few bytes of query: a megabyte (harmful)
    watch.log.clear()
    pipeline = [{"$project": {"n": {"$strLenCP": doubling}}}]
    query = {"collection": "orders", "operation": "aggregate", "pipeline": pipeline}
    result = await watch.connector.tools()[0].run(query)
    assert result.rule == "unbounded_cost" and watch.log.names() == []


async def test_benign_patterns_and_reductions_still_run(watch: Watched) -> None:
    for pattern in ("^A", "(?i)^paid$", "^[A-Z]{2}\\d+$", "(\\d{3}-)+\\d{4}", "foo|bar"):
        check_pattern(pattern, "pattern")
    run = watch.connector.tools()[0].run
    found = await run(
        {"collection": "customers", "filter": {"name": {"$regex": "^[A-Z]", "$options": "i"}}}
    )
    assert not found.is_error and found.artifact is not None and found.artifact.row_count > 0
    total = await run(
        {
            "collection": "orders",
            "operation": "aggregate",
            "pipeline": [
                {"$limit": 1},
                {"$project": {"s": {"$reduce": {"input": {"$range": [0, 10]}, "initialValue": 0,
                                                "in": {"$add": ["$$value", "$$this"]}}}}},
            ],
        }
    )  # fmt: skip
    assert total.artifact is not None and total.artifact.df.iloc[0]["s"] == 45
