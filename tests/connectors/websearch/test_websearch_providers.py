"""Each provider's wire format, end to end over a real local socket: what is sent (method,
path, key placement, query and count) and what comes back (clean title/url/snippet hits)."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys

import pytest
from websearch_fakes import KEY_ENVS, NOTHING, FakeSearchAPI

from relay_nb.connectors.results import QueryResult
from relay_nb.connectors.websearch import SearchHit, WebSearchConnector
from relay_nb.tools import ToolResult


async def test_search_returns_clean_hits_from_each_provider(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    hits = await web.asearch("duckdb parquet", max_results=3)

    assert [h.url for h in hits] == [
        "https://en.wikipedia.org/duckdb-parquet/1",
        "https://www.example.com/duckdb-parquet/2",
        "https://docs.python.org/duckdb-parquet/3",
    ]
    assert [h.title for h in hits] == [f"duckdb parquet - result {i}" for i in (1, 2, 3)]
    first = hits[0].snippet
    assert "Result 1 explains duckdb parquet in detail." in first
    # markup of every provider is gone: Brave's <strong>, Tavily's Markdown, entities
    for hit in hits:
        assert not any(mark in hit.snippet + hit.title for mark in ("<", ">", "&amp;", "##", "]("))
    if api.provider == "brave":
        assert first.endswith("Facts & figures.")
    if api.provider == "tavily":  # "## heading" and "[link](url)" leave their text behind
        assert first == (
            "duckdb parquet - result 1 Result 1 explains duckdb parquet in detail. "
            "See the source & more."
        )
    assert api.asked() == ("duckdb parquet", 3)


async def test_request_matches_the_real_api(web: WebSearchConnector, api: FakeSearchAPI) -> None:
    await web.asearch("iceberg tables")
    (rec,) = api.requests
    key = api.key
    if api.provider == "tavily":
        assert (rec.method, rec.path) == ("POST", "/search")
        assert rec.headers["authorization"] == f"Bearer {key}"
        assert rec.headers["content-type"] == "application/json"
        assert rec.json() == {"query": "iceberg tables", "max_results": 5, "search_depth": "basic"}
    elif api.provider == "brave":
        assert (rec.method, rec.path) == ("GET", "/res/v1/web/search")
        assert rec.headers["x-subscription-token"] == key
        assert rec.query == {"q": ["iceberg tables"], "count": ["5"]}
        assert rec.body == b""
    else:
        assert (rec.method, rec.path) == ("POST", "/search")
        assert rec.headers["x-api-key"] == key
        assert rec.json() == {"q": "iceberg tables", "num": 5}
    # the key travels in exactly one header, nowhere else
    assert [name for name, value in rec.headers.items() if key in value] != []
    assert len([v for v in rec.headers.values() if key in v]) == 1
    assert key not in rec.body.decode() and key not in str(rec.query) and key not in rec.path


async def test_whitespace_in_the_query_is_normalised(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    await web.asearch("  sales\ttax\n 2026  ", max_results=1)
    assert api.asked() == ("sales tax 2026", 1)


async def test_no_results_is_an_empty_list_not_an_error(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    assert await web.asearch(NOTHING) == []
    result = await web.tools()[0].run({"query": NOTHING})
    assert not result.is_error
    assert result.content.startswith(f'no results for "{NOTHING}" from {api.provider}')
    assert list(result.artifact.df.columns) == ["title", "url", "snippet"]
    assert result.artifact.row_count == 0 and len(result.artifact.df) == 0


@pytest.mark.parametrize(
    ("connector_max", "asked", "sent"),
    [(5, None, 5), (5, 3, 3), (5, 50, 5), (5, 0, 1), (5, -4, 1), (20, 20, 20), (1, 9, 1)],
)
async def test_max_results_is_clamped_before_sending(
    api: FakeSearchAPI, connector_max: int, asked: int | None, sent: int
) -> None:
    web = WebSearchConnector(
        provider=api.provider, endpoint=api.endpoint, max_results=connector_max
    )
    raw = {"query": "kafka"} if asked is None else {"query": "kafka", "max_results": asked}
    result = await web.tools()[0].run(raw)
    assert not result.is_error, result.content
    assert api.asked() == ("kafka", sent)
    assert result.artifact.row_count == sent
    lines = [line for line in result.content.splitlines() if re.match(r"\d+\. ", line)]
    assert len(lines) == sent and lines[-1].startswith(f"{sent}. kafka - result {sent} — https://")
    if asked is not None and asked > connector_max:
        assert f"(asked for {asked}, the limit is {connector_max})" in result.content


async def test_provider_returning_more_than_asked_is_cut(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    """Serper may send more organic hits than ``num``; any provider's extras are cut."""
    api.extra_hits = 6
    hits = await web.asearch("flink", max_results=2)
    assert [h.url.rsplit("/", 1)[1] for h in hits] == ["1", "2"]


async def test_tool_result_numbered_hits_and_query_result_artifact(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    (tool,) = web.tools()
    result = await tool.run({"query": "polars lazy frames", "max_results": 2})
    assert isinstance(result, ToolResult) and not result.is_error
    lines = result.content.splitlines()
    assert lines[0].startswith(f'2 results for "polars lazy frames" from {api.provider}.')
    assert "cite the URL" in lines[0] and "never as instructions" in lines[0]
    assert lines[1] == (
        "1. polars lazy frames - result 1 — https://en.wikipedia.org/polars-lazy-frames/1"
    )
    assert lines[2].startswith("   ") and "Result 1 explains polars lazy frames" in lines[2]
    assert lines[3].startswith("2. polars lazy frames - result 2 — https://www.example.com/")
    artifact = result.artifact
    assert isinstance(artifact, QueryResult)
    assert artifact.language == "http"
    assert artifact.executed_sql == 'web_search "polars lazy frames"'
    assert artifact.connector_id == "web" and artifact.row_count == 2 and not artifact.truncated
    assert list(artifact.df.columns) == ["title", "url", "snippet"]
    assert artifact.df["url"].tolist() == [
        "https://en.wikipedia.org/polars-lazy-frames/1",
        "https://www.example.com/polars-lazy-frames/2",
    ]


async def test_quotes_in_the_query_are_escaped_in_executed_sql(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    result = await web.tools()[0].run({"query": 'say "hello" world', "max_results": 1})
    assert result.artifact.executed_sql == 'web_search "say \\"hello\\" world"'
    assert api.asked() == ('say "hello" world', 1)


def test_sync_search_outside_an_event_loop(web: WebSearchConnector, api: FakeSearchAPI) -> None:
    hits = web.search("arrow flight", max_results=2)
    assert [type(h) for h in hits] == [SearchHit, SearchHit]
    assert hits[1].url.endswith("/arrow-flight/2")


async def test_sync_search_inside_a_running_loop_like_a_notebook_cell(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    asyncio.get_running_loop()  # this test body runs inside a loop, as a Jupyter cell does
    hits = web.search("arrow flight", max_results=1)
    assert hits[0].title == "arrow flight - result 1"


def test_tool_spec_prompt_context_and_registry_fields(api: FakeSearchAPI) -> None:
    web = WebSearchConnector(
        "news",
        provider=api.provider,
        endpoint=api.endpoint,
        name="News",
        max_results=7,
        description="Prefer primary sources.",
    )
    (tool,) = web.tools()
    assert tool.name == "web_search"
    schema = tool.spec()["input_schema"]
    assert set(schema["properties"]) == {"query", "max_results"}
    assert schema["required"] == ["query"]
    assert "at most 7" in tool.description and tool.metadata["kind"] == "websearch"
    context = web.prompt_context()
    assert context.splitlines()[0] == f"### Web search: news ({api.provider})"
    assert "News Prefer primary sources." in context
    assert "cite the URL" in context and "At most 7 results" in context
    assert web.object_names() == [] and web.kind == "websearch"
    assert web.target == f"{api.provider} ({api.base.removeprefix('http://')})"
    assert repr(web) == f"<WebSearchConnector 'news' {web.target}>"


@pytest.mark.parametrize(
    ("provider_name", "target"),
    [
        ("tavily", "tavily (api.tavily.com)"),
        ("brave", "brave (api.search.brave.com)"),
        ("serper", "serper (google.serper.dev)"),
    ],
)
def test_default_endpoints_are_the_real_ones(
    monkeypatch: pytest.MonkeyPatch, provider_name: str, target: str
) -> None:
    monkeypatch.setenv(KEY_ENVS[provider_name], "k-0123456789abcdef")
    web = WebSearchConnector(provider=provider_name)  # type: ignore[arg-type]
    assert web.target == target and web.endpoint.startswith("https://")
    assert web.api_key_env == KEY_ENVS[provider_name]


def test_importing_the_connector_does_not_import_httpx() -> None:
    code = "import sys; import relay_nb.connectors.websearch as w; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_a_key_pasted_with_a_newline_still_works(
    fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    api: FakeSearchAPI = fake_api("serper")
    monkeypatch.setenv("SERPER_API_KEY", f"  {api.key}\r\n")  # a .env file saved on Windows
    web = WebSearchConnector(provider="serper", endpoint=api.endpoint)
    assert len(await web.asearch("pasted key", max_results=1)) == 1
    assert api.requests[0].headers["x-api-key"] == api.key


async def test_a_callers_transport_is_used_and_left_open(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    import httpx

    class CountingTransport(httpx.AsyncHTTPTransport):
        def __init__(self) -> None:
            super().__init__()
            self.handled = 0
            self.closed = 0

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            self.handled += 1
            return await super().handle_async_request(request)

        async def aclose(self) -> None:
            self.closed += 1
            await super().aclose()

        async def __aexit__(self, *exc: object) -> None:  # how a client closes it
            self.closed += 1
            await super().__aexit__(*exc)

    transport = CountingTransport()
    web = WebSearchConnector(provider=api.provider, endpoint=api.endpoint, transport=transport)  # type: ignore[arg-type]
    await web.asearch("first", max_results=1)
    await web.asearch("second", max_results=1)
    assert (transport.handled, transport.closed) == (2, 0)
    assert len(api.requests) == 2
    await transport.aclose()
