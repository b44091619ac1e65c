"""OpenAPI documents: parsed, summarised, ranked and capped in the prompt context; loaded
lazily, cached until refresh; remote ``$ref`` never fetched."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from http_live_server import SPECS, LiveServer

from relay_nb.connectors.http import HTTPConnector
from relay_nb.connectors.http.openapi import parse_document, summarise
from relay_nb.errors import ConfigurationError, QueryExecutionError

ORDERS_LINE = (
    "GET /orders — List orders (status: query string, enum paid|refunded|pending; "
    "limit: query int, default 50)"
)


def _document(name: str) -> dict[str, Any]:
    return parse_document((SPECS / name).read_bytes(), source=name)


def test_openapi_3_operations_are_summarised_with_resolved_refs() -> None:
    summary = summarise(_document("shop_openapi.json"), base_path="/v1")
    assert (summary.title, summary.version) == ("Shop API", "1.4.0")
    lines = [op.text() for op in summary.operations]
    assert lines == [
        ORDERS_LINE,
        "POST /orders — Create an order (body: Order)",
        "GET /orders/{order_id} — Get one order by id. (order_id: path int)",
        "DELETE /orders/{order_id} — Cancel an order (order_id: path int)",
        "GET /customers — List customers, a page at a time (cursor: query string; "
        "page_size: query int, required; since: query date)",
        "GET /reports/daily.csv — Daily revenue as CSV (countries: query array of string, "
        "enum DE|FR|IT)",
        "GET /legacy/stats — Old statistics [deprecated]",  # remote $ref and cookie dropped
    ]


def test_swagger_2_yaml_is_summarised() -> None:
    summary = summarise(_document("shop_swagger.yaml"), base_path="/v1")
    assert [op.text() for op in summary.operations] == [
        "GET /orders — List orders (status: query string, enum paid|refunded; "
        "limit: query int, default 50)",
        "POST /orders — Create an order (body: Order)",
        "GET /orders/{order_id} — Get one order (order_id: path int)",
        "GET /customers — List customers (tags: query array of string)",
    ]


@pytest.mark.parametrize(
    ("base_path", "first"),
    [("/v1", "GET /orders"), ("", "GET /v1/orders"), ("/api", "GET /orders")],
)
def test_paths_are_shown_relative_to_the_base_url(base_path: str, first: str) -> None:
    for name in ("shop_openapi.json", "shop_swagger.yaml"):
        summary = summarise(_document(name), base_path=base_path)
        assert summary.operations[0].label == first


def test_local_ref_cycles_and_dangling_refs_do_not_break_the_summary() -> None:
    document = {
        "openapi": "3.1.0",
        "paths": {
            "/a": {"get": {"parameters": [{"$ref": "#/components/parameters/Loop"}]}},
            "/b": {"get": {"parameters": [{"$ref": "#/components/parameters/Missing"}]}},
            "/c": {"$ref": "#/components/pathItems/C"},
        },
        "components": {
            "parameters": {"Loop": {"$ref": "#/components/parameters/Loop"}},
            "pathItems": {
                "C": {
                    "get": {
                        "summary": "From a ref",
                        "parameters": [
                            {"name": "q", "in": "query", "schema": {"type": ["string", "null"]}}
                        ],
                    }
                }
            },
        },
    }
    lines = [op.text() for op in summarise(document).operations]
    assert lines == ["GET /a", "GET /b", "GET /c — From a ref (q: query string)"]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b'{"openapi": "2.5", "paths": {}}', "not an OpenAPI 3.x or Swagger 2.0"),
        (b'{"swagger": "1.2"}', "not an OpenAPI 3.x or Swagger 2.0"),
        (b"[1, 2]", "not a JSON/YAML object"),
        (b"openapi: [unclosed", "neither valid JSON nor valid YAML"),
        (b'{"openapi": "3.0.0", "paths": []}', "'paths' that is not an object"),
    ],
)
def test_documents_that_are_not_openapi_are_refused(data: bytes, words: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_document(data, source="spec.yaml")
    assert words in str(info.value)


def test_yaml_without_pyyaml_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # as if PyYAML were not installed
    data = (SPECS / "shop_swagger.yaml").read_bytes()
    with pytest.raises(ConfigurationError, match="pip install pyyaml"):
        parse_document(data, source="shop_swagger.yaml")
    assert parse_document((SPECS / "shop_openapi.json").read_bytes(), source="x")["paths"]


def test_the_document_is_read_lazily_cached_and_refreshed(
    shop: HTTPConnector, api: LiveServer
) -> None:
    assert api.requests == []  # building the connector fetched nothing
    first = shop.prompt_context()
    assert api.paths() == ["/openapi.json"]
    assert shop.prompt_context() == first and shop.object_names()[0] == "GET /orders"
    assert api.paths() == ["/openapi.json"]  # cached
    shop.refresh()
    assert shop.prompt_context() == first
    assert api.paths() == ["/openapi.json", "/openapi.json"]


def test_prompt_context_lists_the_enabled_operations(shop: HTTPConnector) -> None:
    text = shop.prompt_context()
    lines = text.splitlines()
    assert lines[0] == f"### HTTP connector: shop — {shop.target}"
    assert "API: Shop API 1.4.0 — Orders and customers of the demo shop." in lines
    assert "  " + ORDERS_LINE in lines
    assert "POST" not in text and "DELETE" not in text and "X-Request-Id" not in text
    assert "(2 operations use methods not enabled here and are not listed)" in lines
    assert shop.object_names() == [
        "GET /orders",
        "GET /orders/{order_id}",
        "GET /customers",
        "GET /reports/daily.csv",
        "GET /legacy/stats",
    ]


def test_opted_in_methods_show_their_operations(api: LiveServer) -> None:
    writer = HTTPConnector(
        "shop", api.base, openapi=SPECS / "shop_openapi.json", methods=["get", "post", "delete"]
    )
    text = writer.prompt_context()
    assert "  POST /orders — Create an order (body: Order)" in text.splitlines()
    assert "DELETE /orders/{order_id}" in text and "not enabled" not in text
    assert api.requests == []  # a file is read from disk, not from the API


def _big_document(count: int) -> dict[str, Any]:
    resources = ["orders", "invoices", "customers", "shipments", "refunds"]
    paths: dict[str, Any] = {}
    for index in range(count):
        resource = resources[index % len(resources)]
        paths[f"/{resource}/group{index}"] = {
            "get": {
                "summary": f"List {resource} of group {index}",
                "parameters": [{"name": "page", "in": "query", "schema": {"type": "integer"}}],
            }
        }
    paths["/invoices/overdue"] = {"get": {"summary": "Overdue invoices", "tags": ["billing"]}}
    return {"openapi": "3.0.0", "info": {"title": "Big"}, "paths": paths}


def test_many_operations_are_ranked_by_the_question_and_capped(
    tmp_path: Path, api: LiveServer
) -> None:
    spec = tmp_path / "big.json"
    spec.write_text(json.dumps(_big_document(100)), encoding="utf-8")
    big = HTTPConnector("big", api.base, openapi=spec, max_operations=10)
    text = big.prompt_context(question="Which invoices are overdue?")
    shown = [line.strip() for line in text.splitlines() if line.startswith("  GET")]
    assert len(shown) == 10
    assert shown[0].startswith("GET /invoices/") and any("/invoices/overdue" in s for s in shown)
    assert all(s.startswith("GET /invoices/") for s in shown)  # the question's resource wins
    assert "(91 more operations not shown: GET /invoices/" in text
    orders = big.prompt_context(question="orders")
    assert all("/orders/" in line for line in orders.splitlines() if line.startswith("  GET"))


@pytest.mark.parametrize("max_tokens", [100, 150, 400])
def test_prompt_context_fits_the_token_budget(
    max_tokens: int, tmp_path: Path, api: LiveServer
) -> None:
    spec = tmp_path / "big.json"
    spec.write_text(json.dumps(_big_document(100)), encoding="utf-8")
    big = HTTPConnector("big", api.base, openapi=spec, max_operations=500)
    text = big.prompt_context(max_tokens=max_tokens, question="overdue invoices")
    assert len(text) <= max_tokens * 4
    assert "more operations not shown" in text
    if max_tokens >= 150:
        assert "GET /invoices/overdue" in text  # the best match survives a tight budget
    assert len(big.prompt_context()) > 100 * 40  # no budget: every operation


def test_a_budget_below_the_header_keeps_only_the_header_and_the_count(
    tmp_path: Path, api: LiveServer
) -> None:
    spec = tmp_path / "big.json"
    spec.write_text(json.dumps(_big_document(100)), encoding="utf-8")
    big = HTTPConnector("big", api.base, openapi=spec)
    text = big.prompt_context(max_tokens=20, question="overdue invoices")
    assert text.startswith("### HTTP connector: big") and "call_big" in text
    assert text.endswith("(101 more operations not shown)")
    assert "  GET" not in text


def test_without_openapi_the_model_is_told_not_to_guess(api: LiveServer) -> None:
    plain = HTTPConnector("plain", api.base, description="The shop's internal API.")
    text = plain.prompt_context()
    assert text.splitlines()[:2] == [
        f"### HTTP connector: plain — {api.base}",
        "The shop's internal API.",
    ]
    assert "do not guess endpoints" in text and plain.object_names() == []


def test_an_unreachable_document_is_reported_in_the_context_not_raised(api: LiveServer) -> None:
    broken = HTTPConnector("broken", api.base, openapi=api.url + "/no-such-spec.json")
    text = broken.prompt_context()
    assert "could not be loaded" in text and "HTTP 404" in text
    assert "call_broken" in text  # the tool is still described
    with pytest.raises(QueryExecutionError, match="HTTP 404"):
        broken.object_names()


def test_yaml_document_served_over_http(api: LiveServer) -> None:
    swagger = HTTPConnector("swagger", api.base, openapi=api.url + "/openapi.yaml")
    assert "GET /orders — List orders (status: query string, enum paid|refunded" in (
        swagger.prompt_context()
    )


@pytest.mark.parametrize(
    ("openapi", "words"),
    [
        ("ftp://example.com/openapi.json", "file path or an http(s) URL"),
        ("/no/such/openapi.json", "OpenAPI file not found"),
        ("https://user:pw@example.com/openapi.json", "user name or password"),
        (42, "file path or an http(s) URL"),
    ],
)
def test_bad_openapi_sources_fail_at_construction(
    openapi: Any, words: str, api: LiveServer
) -> None:
    with pytest.raises(ConfigurationError) as info:
        HTTPConnector("shop", api.base, openapi=openapi)
    assert words in str(info.value)
