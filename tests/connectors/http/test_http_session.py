"""End to end through the agent loop: a scripted model calls ``call_shop`` on the real API."""

from __future__ import annotations

from typing import Any

from http_live_server import ORDERS, LiveServer

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.approval import approve_all
from relay_nb.agent.pricing import PriceTable
from relay_nb.agent.session import Session
from relay_nb.connectors.http import HTTPConnector
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import ToolResultPart

PRICES = PriceTable.load().with_prices({"scripted": {"input": 3, "output": 15}})


def call(tool: str, call_id: str = "c1", **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "input": arguments, "id": call_id}]}


def session(runtime: ScriptedRuntime, connector: HTTPConnector, **options: Any) -> Session:
    return Session(runtime, connectors=[connector], **options, accountant=Accountant(prices=PRICES))


async def test_a_scripted_get_returns_the_records_frame(
    shop: HTTPConnector, api: LiveServer
) -> None:
    runtime = ScriptedRuntime(
        [
            call("call_shop", path="/orders", query={"status": "paid"}),
            {"text": "3 paid orders"},
        ]
    )
    turn = await session(runtime, shop).ask_async("Which orders are paid?")
    assert turn.answer == "3 paid orders"
    paid = [o for o in ORDERS if o["status"] == "paid"]
    assert turn.df["id"].tolist() == [o["id"] for o in paid]
    assert turn.df["customer.name"].tolist() == ["Ada", "Cy", "Ed"]
    (outcome,) = turn.tool_results
    assert not outcome.is_error and outcome.artifact.executed_sql == "GET /v1/orders?status=paid"
    assert api.paths() == ["/openapi.json", "/v1/orders?status=paid"]

    first = runtime.requests[0]
    system = first.system_text()
    assert f"### HTTP connector: shop — {shop.target}" in system
    assert "GET /orders — List orders (status: query string, enum paid|refunded|pending" in system
    assert "call_shop" in [tool.name for tool in first.tools]
    (result_part,) = [
        part
        for message in runtime.requests[1].messages
        for part in message.parts()
        if isinstance(part, ToolResultPart)
    ]
    assert result_part.content.startswith("GET /v1/orders?status=paid → HTTP 200")
    assert "1,paid,120.5,Ada,DE" in result_part.content


async def test_the_model_corrects_a_refused_path(shop: HTTPConnector, api: LiveServer) -> None:
    runtime = ScriptedRuntime(
        [
            call("call_shop", path="http://169.254.169.254/latest/meta-data"),
            call("call_shop", "c2", path="/orders/4"),
            {"text": "order 4 is pending"},
        ]
    )
    turn = await session(runtime, shop).ask_async("What is the status of order 4?")
    refused, fetched = turn.tool_results
    assert refused.is_error and refused.content.startswith("scheme:")
    assert not fetched.is_error and turn.df.loc[0, "status"] == "pending"
    assert api.paths() == ["/openapi.json", "/v1/orders/4"]  # nothing for the refused call


async def test_a_write_without_an_approver_is_denied_and_never_sent(api: LiveServer) -> None:
    writer = HTTPConnector("shop", api.base, methods=("GET", "POST"))
    runtime = ScriptedRuntime(
        [
            call("call_shop", method="POST", path="/orders", body={"customer": "Eve"}),
            {"text": "I could not create it"},
        ]
    )
    turn = await session(runtime, writer).ask_async("Create an order for Eve")
    (outcome,) = turn.tool_results
    assert outcome.is_error and "did not approve call_shop" in outcome.content
    assert turn.df is None
    assert api.paths("POST") == [] and api.requests == []


async def test_an_approved_write_reaches_the_server(api: LiveServer) -> None:
    writer = HTTPConnector("shop", api.base, methods=("GET", "POST"))
    runtime = ScriptedRuntime(
        [
            call("call_shop", method="POST", path="/orders", body={"customer": "Eve"}),
            {"text": "created order 100"},
        ]
    )
    turn = await session(runtime, writer, approver=approve_all).ask_async("Create an order")
    (outcome,) = turn.tool_results
    assert not outcome.is_error and turn.df.loc[0, "id"] == 100
    (request,) = api.requests
    assert (request.method, request.path, request.body) == (
        "POST",
        "/v1/orders",
        b'{"customer":"Eve"}',
    )
