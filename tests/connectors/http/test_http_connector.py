"""Calls against the real API: records become DataFrames, other bodies previews, errors the
API's own message; timeouts and the size cap hold; the sync form works inside a loop."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pandas as pd
import pytest
from http_live_server import BIG, CUSTOMERS, ORDERS, LiveServer

from relay_nb.connectors.base import Connector
from relay_nb.connectors.http import HTTPConnector
from relay_nb.errors import ConfigurationError, QueryExecutionError


async def _tool(connector: HTTPConnector, **arguments: Any) -> tuple[Any, str, bool]:
    (tool,) = connector.tools()
    result = await tool.run(arguments)
    return result.artifact, result.content, result.is_error


async def test_a_list_of_records_becomes_a_flat_frame(shop: HTTPConnector) -> None:
    result, preview, error = await _tool(shop, path="/orders", query={"status": "paid"})
    assert not error
    paid = [o for o in ORDERS if o["status"] == "paid"]
    assert result.df["id"].tolist() == [o["id"] for o in paid]
    assert result.df["customer.name"].tolist() == [o["customer"]["name"] for o in paid]
    assert result.df["total"].dtype == "float64"
    assert (result.row_count, result.truncated, result.language) == (len(paid), False, "http")
    assert result.executed_sql == "GET /v1/orders?status=paid"
    assert result.submitted_sql == 'GET /orders query={"status":"paid"}'
    assert result.connector_id == "shop" and result.tables == ("/orders",)
    assert preview.splitlines()[:2] == [
        "GET /v1/orders?status=paid → HTTP 200 (application/json)",
        f"{len(paid)} rows",
    ]
    assert "1,paid,120.5,Ada,DE" in preview


async def test_an_envelope_yields_its_records_and_shows_the_paging_fields(
    shop: HTTPConnector,
) -> None:
    result, preview, _ = await _tool(shop, path="/customers", query={"page_size": 3, "cursor": 3})
    assert result.df["id"].tolist() == [c["id"] for c in CUSTOMERS[3:6]]
    assert result.df.loc[0, "tags"] == '["a","b"]'  # lists stay one JSON cell
    assert "records from field 'data'" in preview
    assert 'other fields: {"has_more":true,"next_cursor":"6"}' in preview
    assert 'link: </v1/customers?cursor=6>; rel="next"' in preview


async def test_objects_scalars_and_empty_bodies(shop: HTTPConnector) -> None:
    stats = await shop.acall("GET", "/stats")
    assert stats.df.to_dict("records") == [{"orders": len(ORDERS), "revenue": 247.74}]
    scalars = await shop.acall("GET", "/scalars")
    assert scalars.df["value"].tolist() == [3, 1, 2]
    one = await shop.acall("GET", "/orders/3")
    assert one.df.loc[0, "customer.country"] == "DE" and len(one.df) == 1
    _, preview, error = await _tool(shop, path="/empty")
    assert not error and "HTTP 204" in preview and "empty response body" in preview


async def test_records_past_the_row_limit_are_cut_and_the_model_is_told(
    shop: HTTPConnector,
) -> None:
    result, preview, _ = await _tool(shop, path="/many")
    assert len(result.df) == shop.row_limit == result.row_count
    assert result.truncated and result.df["n"].tolist() == list(range(shop.row_limit))
    assert "the response held 500 records; the first 50 were kept" in preview
    assert len(preview) <= 4000


async def test_text_csv_and_binary_bodies(shop: HTTPConnector) -> None:
    text, preview, _ = await _tool(shop, path="/text")
    assert text.df.loc[0, "text"] == "plain words from the API"
    assert "HTTP 200 (text/plain)" in preview and "plain words from the API" in preview
    csv = await shop.acall("GET", "/reports/daily.csv")
    assert csv.df.to_dict("list") == {"day": ["2026-01-01", "2026-01-02"], "revenue": [10.5, 7.0]}
    image, preview, _ = await _tool(shop, path="/image")
    assert image.df.empty and "binary content, 17 bytes, not shown" in preview


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/orders/99", 'HTTP 404 Not Found: {"error": "order 99 not found; list orders'),
        ("/bad-request", 'HTTP 400 Bad Request: {"error": "unknown parameter \'colour\''),
        ("/boom", "HTTP 500 Internal Server Error: Internal Server Error — the API failed"),
        ("/no/such/route", "check the path against the API summary"),
    ],
)
async def test_http_errors_reach_the_model_with_the_api_message(
    path: str, words: str, shop: HTTPConnector
) -> None:
    _, content, error = await _tool(shop, path=path)
    assert error and f"GET /v1{path} failed" in content and words in content
    with pytest.raises(QueryExecutionError):
        await shop.acall("GET", path)


@pytest.mark.parametrize("query", [{}, {"chunked": 1}, {"gzip": 1}])
async def test_the_size_cap_stops_reading(
    query: dict[str, Any], shop: HTTPConnector, api: LiveServer
) -> None:
    assert len(str(BIG)) > 3 * shop.max_response_bytes
    _, content, error = await _tool(shop, path="/big", query=query)
    assert error and "larger than 20,000 bytes" in content and "max_response_bytes" in content
    assert len(api.requests) == 1


async def test_a_large_enough_cap_reads_the_same_body(api: LiveServer) -> None:
    roomy = HTTPConnector("roomy", api.base, max_response_bytes=1_000_000, row_limit=1000)
    for query in ({}, {"chunked": 1}, {"gzip": 1}):
        result = await roomy.acall("GET", "/big", query)
        assert len(result.df) == len(BIG) and result.df.loc[599, "id"] == 599


@pytest.mark.parametrize("path", ["/slow", "/drip"])
async def test_slow_answers_time_out(path: str, api: LiveServer) -> None:
    quick = HTTPConnector("quick", api.base, timeout_s=0.4)
    (tool,) = quick.tools()
    started = time.perf_counter()
    result = await tool.run({"path": path})
    assert time.perf_counter() - started < 1.5  # the drip never lets a single read time out
    assert result.is_error and "did not answer within 0.4 s" in result.content
    assert tool.timeout_s == pytest.approx(5.4)  # the connector's own deadline fires first


async def test_an_unreachable_api_is_a_clear_error() -> None:
    gone = HTTPConnector("gone", "http://127.0.0.1:9/v1", timeout_s=2)
    with pytest.raises(QueryExecutionError, match=r"request to the gone API failed.*reachable"):
        await gone.acall("GET", "/orders")


def test_sync_call_outside_and_inside_a_running_loop(shop: HTTPConnector) -> None:
    assert shop.call("GET", "/orders/1").df.loc[0, "id"] == 1

    async def from_a_notebook_cell() -> pd.DataFrame:
        return shop.call("GET", "orders", {"status": "refunded"}).df  # a loop runs here

    assert asyncio.run(from_a_notebook_cell())["id"].tolist() == [2]


async def test_a_custom_transport_is_used_and_not_closed(api: LiveServer) -> None:
    seen: list[str] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json=[{"via": "transport"}])

    transport = httpx.MockTransport(handler)
    routed = HTTPConnector("routed", "https://api.example.com/v2", transport=transport)
    for _ in range(2):  # a closed transport would fail the second call
        assert (await routed.acall("GET", "/things")).df.loc[0, "via"] == "transport"
    assert seen == ["https://api.example.com/v2/things"] * 2
    assert api.requests == []


def test_connector_contract(shop: HTTPConnector, api: LiveServer) -> None:
    assert isinstance(shop, Connector) and shop.kind == "http" and shop.name == "shop"
    assert shop.target == api.base and shop.methods == ("GET",)
    assert repr(shop) == f"<HTTPConnector 'shop' {api.base} methods=GET>"
    (tool,) = shop.tools()
    assert tool.name == "call_shop" and not tool.requires_approval
    schema = tool.spec()["input_schema"]
    assert schema["properties"]["method"]["enum"] == ["GET"]
    assert schema["required"] == ["path"] and schema["additionalProperties"] is False
    shop.close()
    assert api.requests == []


def test_opting_into_writes_needs_approval(api: LiveServer) -> None:
    writer = HTTPConnector("writer", api.base, methods=("get", "POST", "post"), name="Shop")
    (tool,) = writer.tools()
    assert writer.methods == ("GET", "POST") and tool.requires_approval
    assert tool.spec()["input_schema"]["properties"]["method"]["enum"] == ["GET", "POST"]
    assert "needs the user's approval" in tool.description
    assert writer.prompt_context().startswith(f"### HTTP connector: writer (Shop) — {api.base}")


async def test_an_approved_write_sends_its_json_body(api: LiveServer) -> None:
    writer = HTTPConnector("writer", api.base, methods=("GET", "POST"))
    result = await writer.acall("POST", "/orders", body={"customer": "Ada", "total": 5})
    (request,) = api.requests
    assert (request.method, request.path) == ("POST", "/v1/orders")
    assert request.headers["content-type"] == "application/json"
    assert result.df.loc[0, "created.customer"] == "Ada"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"id": "Shop API"}, "snake_case"),
        ({"base_url": "ftp://x/v1"}, "http:// or https://"),
        ({"methods": ()}, "non-empty list"),
        ({"methods": "GET"}, "non-empty list"),
        ({"methods": ("GET", "CONNECT")}, "unsupported method 'CONNECT'"),
        ({"timeout_s": 0}, "timeout_s must be a positive number"),
        ({"max_response_bytes": -1}, "max_response_bytes must be a positive"),
        ({"row_limit": 2.5}, "row_limit must be a positive integer"),
        ({"max_operations": True}, "max_operations must be a positive"),
    ],
)
def test_bad_options_say_how_to_fix_them(options: dict[str, Any], words: str) -> None:
    arguments: dict[str, Any] = {"id": "shop", "base_url": "http://127.0.0.1:9/v1", **options}
    with pytest.raises(ConfigurationError) as info:
        HTTPConnector(arguments.pop("id"), arguments.pop("base_url"), **arguments)
    assert words in str(info.value)
