"""The Mongo connector end to end: a Session with a scripted model against the real server.

What is asserted is what a user gets (the answer, the turn's DataFrame, the tool results) and
what the model was shown (the schema in the system prompt, the tool, the result previews and
refusal messages), plus — for a refused write — the server's own view that nothing changed.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from mongo_support import Watched, server_state
from seed_mongo import oid

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.pricing import PriceTable
from relay_nb.agent.session import Session
from relay_nb.connectors.mongo import MongoConnector
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import ToolResultPart

PRICES = PriceTable.load().with_prices({"scripted": {"input": 3, "output": 15}})


def call(call_id: str = "c1", **tool_input: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "query_shop", "input": tool_input, "id": call_id}]}


def session(runtime: ScriptedRuntime, connector: MongoConnector) -> Session:
    return Session(runtime, connectors=[connector], accountant=Accountant(prices=PRICES))


def tool_results(runtime: ScriptedRuntime, index: int) -> list[ToolResultPart]:
    return [
        part
        for message in runtime.requests[index].messages
        for part in message.parts()
        if isinstance(part, ToolResultPart)
    ]


async def test_an_aggregate_question_end_to_end(shop: MongoConnector) -> None:
    pipeline = [
        {"$match": {"status": {"$in": ["paid", "shipped", "delivered"]}}},
        {"$group": {"_id": "$status", "orders": {"$sum": 1}, "revenue": {"$sum": "$total"}}},
        {"$sort": {"_id": 1}},
    ]
    runtime = ScriptedRuntime(
        [
            call(collection="orders", operation="aggregate", pipeline=pipeline),
            {"text": "Delivered, paid and shipped: 48 orders each."},
        ]
    )
    result = await session(runtime, shop).ask_async("revenue by order status?")

    assert result.answer == "Delivered, paid and shipped: 48 orders each."
    (outcome,) = result.tool_results
    assert not outcome.is_error and outcome.name == "query_shop"
    assert outcome.artifact.language == "mongo" and outcome.artifact.tables == ("orders",)
    frame = result.df
    assert list(frame.columns) == ["_id", "orders", "revenue"]
    assert list(frame["_id"]) == ["delivered", "paid", "shipped"]
    assert list(frame["orders"]) == [48, 48, 48]
    raw = shop.client["shop"].orders.aggregate(pipeline)
    assert list(frame["revenue"]) == [doc["revenue"] for doc in raw]

    first = runtime.requests[0]
    system = first.system_text()
    assert "### Mongo connector: shop — database shop, read-only" in system
    assert "orders (~240 docs) { _id: objectid, customer_id: objectid" in system
    assert "internal_notes" not in system and "system.js" not in system
    assert "query_shop" in [tool.name for tool in first.tools]
    (shown,) = tool_results(runtime, 1)
    assert shown.content.startswith("3 rows\ncolumns: _id str, orders int64, revenue float64")
    assert "delivered,48," in shown.content


async def test_a_refused_write_is_corrected_and_nothing_was_written(watch: Watched) -> None:
    before = server_state(watch.client, watch.server.database)
    watch.log.clear()  # server_state reads through the same client
    runtime = ScriptedRuntime(
        [
            call(
                collection="orders",
                operation="aggregate",
                pipeline=[{"$match": {"status": "paid"}}, {"$out": "paid_copy"}],
            ),
            call(
                "c2",
                collection="orders",
                operation="aggregate",
                pipeline='[{"$match": {"status": "paid"}}, {"$count": "n"}]',
            ),
            {"text": "48 paid orders."},
        ]
    )
    result = await session(runtime, watch.connector).ask_async("copy the paid orders")

    refused, counted = result.tool_results
    assert refused.is_error and refused.artifact is None
    assert refused.content.startswith("write_stage: pipeline[1]: $out writes to the database")
    (seen,) = tool_results(runtime, 1)
    assert seen.is_error and seen.content == refused.content  # the model read the refusal
    assert not counted.is_error and result.df.to_dict("records") == [{"n": 48}]
    assert result.answer == "48 paid orders."
    queries = [
        body["pipeline"]
        for name, body in watch.log.commands
        if name in ("aggregate", "find") and "$sample" not in body.get("pipeline", [{}])[0]
    ]  # the session may re-sample the schema (its TTL); those are $sample reads
    assert queries == [[{"$match": {"status": "paid"}}, {"$count": "n"}, {"$limit": 201}]]
    assert server_state(watch.client, watch.server.database) == before
    assert "paid_copy" not in watch.client[watch.server.database].list_collection_names()


async def test_find_with_extended_json_strings_through_the_loop(shop: MongoConnector) -> None:
    runtime = ScriptedRuntime(
        [
            call(
                collection="orders",
                filter='{"customer_id": {"$oid": "' + str(oid(1, 7)) + '"}, "ordered_at": '
                '{"$lt": {"$date": "2025-03-01T00:00:00Z"}}}',
                projection={"status": 1, "total": 1, "ordered_at": 1},
                sort='{"ordered_at": 1}',
            ),
            {"text": "Three orders."},
        ]
    )
    result = await session(runtime, shop).ask_async("orders of customer 7 before March?")
    frame = result.df
    assert list(frame.columns) == ["_id", "status", "total", "ordered_at"]
    assert list(frame["_id"]) == [str(oid(2, i)) for i in (7, 47, 87)]  # every 40th order
    assert pd.api.types.is_datetime64_any_dtype(frame["ordered_at"])
    executed = json.loads(result.tool_results[0].artifact.executed_sql)
    assert executed["filter"]["customer_id"] == {"$oid": str(oid(1, 7))}
    assert executed["limit"] == 201 and executed["maxTimeMS"] == 10_000


async def test_shell_syntax_is_refused_and_the_model_is_told_how_to_fix_it(
    shop: MongoConnector,
) -> None:
    runtime = ScriptedRuntime(
        [
            call(collection="orders", filter='{"_id": ObjectId("' + str(oid(2, 3)) + '")}'),
            call("c2", collection="orders", filter={"_id": {"$oid": str(oid(2, 3))}}),
            {"text": "Found it."},
        ]
    )
    result = await session(runtime, shop).ask_async("order 3?")
    first, second = result.tool_results
    assert first.is_error and 'write ObjectId("…") as {"$oid": "…"}' in first.content
    assert not second.is_error and result.df.loc[0, "_id"] == str(oid(2, 3))
    assert tool_results(runtime, 1)[0].content == first.content
