"""The guard against a real server: refused calls send nothing, allowed ones arrive as written.

Every payload of ``corpus/http_paths.yaml`` goes through the connector's own tool against the
live API; the servers' request logs prove that a refusal produced no request at all — not to
the API, not to the foreign server that stands in for an attacker's host.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from http_live_server import LiveServer

from relay_nb.connectors.http import HTTPConnector
from relay_nb.errors import QueryExecutionError, UnsafeQueryError

CORPUS = yaml.safe_load(
    (Path(__file__).parents[1] / "corpus" / "http_paths.yaml").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("entry", CORPUS["refused"], ids=[e["id"] for e in CORPUS["refused"]])
async def test_refused_payload_sends_no_request(
    entry: dict[str, Any], shop: HTTPConnector, api: LiveServer, foreign: LiveServer
) -> None:
    path = entry["path"].replace("{foreign}", foreign.hostport)
    (tool,) = shop.tools()
    result = await tool.run({"method": "GET", "path": path})
    assert result.is_error and result.rule == entry["rule"], result.content
    assert api.requests == [] and foreign.requests == []


@pytest.mark.parametrize("entry", CORPUS["allowed"], ids=[e["id"] for e in CORPUS["allowed"]])
async def test_allowed_path_arrives_exactly_as_expected(
    entry: dict[str, Any], shop: HTTPConnector, api: LiveServer
) -> None:
    with contextlib.suppress(QueryExecutionError):  # most of these paths are 404 on the API
        await shop.acall("GET", entry["path"])
    assert api.paths() == [entry["sent"]]


async def test_methods_not_enabled_never_reach_the_server(
    shop: HTTPConnector, api: LiveServer
) -> None:
    (tool,) = shop.tools()
    assert not tool.requires_approval
    for method in ("POST", "PUT", "PATCH", "DELETE", "post", "HEAD", "OPTIONS", "TRACE", ""):
        result = await tool.run({"method": method, "path": "/orders", "body": {"x": 1}})
        assert result.is_error and result.rule == "method_not_allowed", method
    with pytest.raises(UnsafeQueryError) as info:
        await shop.acall("DELETE", "/orders/1")
    assert info.value.rule == "method_not_allowed" and "GET" in info.value.message
    assert api.requests == []


async def test_get_with_a_body_is_refused_before_sending(
    shop: HTTPConnector, api: LiveServer
) -> None:
    with pytest.raises(UnsafeQueryError) as info:
        await shop.acall("GET", "/orders", body={"status": "paid"})
    assert info.value.rule == "body_not_allowed" and "query" in info.value.message
    assert api.requests == []


@pytest.mark.parametrize(
    ("query", "rule"),
    [
        ({"filter": {"status": "paid"}}, "bad_query"),
        ({"ids": [[1, 2]]}, "bad_query"),
        ({"q": "x" * 5000}, "query_too_large"),
    ],
)
async def test_bad_query_objects_are_refused(
    query: dict[str, Any], rule: str, shop: HTTPConnector, api: LiveServer
) -> None:
    with pytest.raises(UnsafeQueryError) as info:
        await shop.acall("GET", "/orders", query)
    assert info.value.rule == rule
    assert api.requests == []


async def test_query_values_are_encoded_not_interpreted(
    shop: HTTPConnector, api: LiveServer
) -> None:
    result = await shop.acall(
        "GET",
        "/orders",
        {"status": ["paid", "refunded"], "x": "a&b=c#d/../e", "flag": True, "none": None},
    )
    (sent,) = api.paths()
    assert sent == "/v1/orders?status=paid&status=refunded&x=a%26b%3Dc%23d%2F..%2Fe&flag=true"
    assert result.executed_sql == f"GET {sent}"
    assert sorted(result.df["status"].unique()) == ["paid", "refunded"]


async def test_redirect_to_a_foreign_host_is_not_followed(
    shop: HTTPConnector, api: LiveServer, foreign: LiveServer
) -> None:
    with pytest.raises(UnsafeQueryError) as info:
        await shop.acall("GET", "/redirect-foreign")
    assert info.value.rule == "redirect_outside_base"
    assert foreign.hostport not in str(info.value)
    assert api.paths() == ["/v1/redirect-foreign"] and foreign.requests == []


@pytest.mark.parametrize("path", ["/redirect-escape", "/redirect-dotdot"])
async def test_redirect_out_of_the_base_path_is_not_followed(
    path: str, shop: HTTPConnector, api: LiveServer
) -> None:
    with pytest.raises(UnsafeQueryError) as info:
        await shop.acall("GET", path)
    assert info.value.rule == "redirect_outside_base"
    assert api.paths() == [f"/v1{path}"]  # /admin was never requested


async def test_redirect_inside_the_base_is_followed(shop: HTTPConnector, api: LiveServer) -> None:
    result = await shop.acall("GET", "/redirect-local")
    assert api.paths() == ["/v1/redirect-local", "/v1/orders?status=refunded"]
    assert result.df["id"].tolist() == [2]
    assert result.executed_sql == "GET /v1/orders?status=refunded"


async def test_redirect_loops_stop(shop: HTTPConnector, api: LiveServer) -> None:
    with pytest.raises(QueryExecutionError, match="redirect that was not followed"):
        await shop.acall("GET", "/redirect-loop")
    assert len(api.requests) == 6  # the first request and five redirects, then it stops


async def test_writes_do_not_follow_redirects(api: LiveServer) -> None:
    writer = HTTPConnector("writer", api.base, methods=("GET", "PUT"))
    with pytest.raises(QueryExecutionError, match="HTTP 302, a redirect that was not followed"):
        await writer.acall("PUT", "/redirect-local", body={"a": 1})
    assert [(r.method, r.path) for r in api.requests] == [("PUT", "/v1/redirect-local")]
