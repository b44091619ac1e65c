"""Provider failures become one short ``QueryExecutionError`` the model (or analyst) can act
on: refused keys, limits, server errors, non-JSON, wrong shapes, timeouts, dead endpoints.
The canned answers come from ``corpus/websearch_errors.yaml``."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from websearch_fakes import KEY_ENVS, PROVIDER_NAMES, Canned, FakeSearchAPI

from relay_nb.connectors.websearch import WebSearchConnector
from relay_nb.errors import QueryExecutionError, UnsafeQueryError

CORPUS = yaml.safe_load(
    (Path(__file__).parent / "corpus" / "websearch_errors.yaml").read_text(encoding="utf-8")
)
CASES = [
    pytest.param(entry, name, id=f"{entry['id']}-{name}")
    for entry in CORPUS
    for name in (PROVIDER_NAMES if entry["providers"] == "all" else entry["providers"])
]


def _canned(entry: dict[str, Any], key: str) -> Canned:
    body = entry["body"]
    if isinstance(body, str):
        text = body.replace("{key}", key)
        data = text.encode("latin-1") if entry.get("latin1") else text.encode()
    else:
        data = json.dumps(body).encode()
    headers = {"Content-Type": entry.get("content_type", "application/json")}
    headers.update(entry.get("headers", {}))
    return Canned(entry["status"], data, headers)


@pytest.mark.parametrize(("entry", "provider_name"), CASES)
async def test_corpus_failure_messages(fake_api, entry: dict[str, Any], provider_name: str) -> None:
    api: FakeSearchAPI = fake_api(provider_name)
    api.canned = _canned(entry, api.key)
    web = WebSearchConnector(provider=provider_name, endpoint=api.endpoint, timeout_s=5)  # type: ignore[arg-type]

    with pytest.raises(QueryExecutionError) as caught:
        await web.asearch("anything at all")
    message = str(caught.value)
    for fragment in entry["expect"]:
        assert fragment.replace("{env}", KEY_ENVS[provider_name]) in message, message
    for fragment in entry.get("reject", []):
        assert fragment not in message, message
    assert api.key not in message
    assert len(message) < 400
    assert len(api.requests) == 1  # no retries, no redirects followed

    # through the tool, the same text reaches the model as a correctable error
    result = await web.tools()[0].run({"query": "anything at all"})
    assert result.is_error and result.content == message and result.artifact is None


async def test_wrong_key_gets_the_providers_real_refusal(fake_api, provider: str) -> None:
    api: FakeSearchAPI = fake_api(provider)
    web = WebSearchConnector(provider=provider, endpoint=api.endpoint)  # type: ignore[arg-type]
    api.key = api.key + "-rotated"  # the server now expects another key
    with pytest.raises(QueryExecutionError) as caught:
        await web.asearch("rust async")
    assert str(caught.value) == (
        f"the {provider} key was refused (HTTP {dict(tavily=401, brave=422, serper=403)[provider]})"
        f": check {KEY_ENVS[provider]} holds a valid {provider} API key"
    )


async def test_slow_provider_times_out_quickly(fake_api, provider: str) -> None:
    api: FakeSearchAPI = fake_api(provider)
    api.delay_s = 5
    web = WebSearchConnector(provider=provider, endpoint=api.endpoint, timeout_s=0.3)  # type: ignore[arg-type]
    started = time.perf_counter()
    result = await web.tools()[0].run({"query": "slow"})
    assert time.perf_counter() - started < 2
    assert result.is_error
    assert result.content == (
        f"{provider} did not answer within 0.3 s; try again, or raise timeout_s if the service "
        "is slow today"
    )


async def test_a_slow_trickle_is_cut_by_the_total_deadline(fake_api) -> None:
    """A per-read timeout never fires on a server that sends a byte now and then; the whole
    exchange has one deadline."""
    api: FakeSearchAPI = fake_api("tavily")
    api.trickle_s = 0.1  # one byte every 0.1 s for a 2 KB body: 200 s without a deadline
    web = WebSearchConnector(endpoint=api.endpoint, timeout_s=0.5)
    started = time.perf_counter()
    with pytest.raises(QueryExecutionError, match=r"did not answer within 0\.5 s"):
        await web.asearch("trickle")
    assert time.perf_counter() - started < 2


async def test_unreachable_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("BRAVE_API_KEY", "BSA-0123456789abcdef")
    web = WebSearchConnector(
        provider="brave", endpoint=f"http://127.0.0.1:{port}/res/v1/web/search"
    )
    with pytest.raises(QueryExecutionError, match=rf"could not reach brave at 127.0.0.1:{port}: "):
        await web.asearch("anything")


async def test_redirect_is_not_followed_so_the_key_stays_home(fake_api) -> None:
    api: FakeSearchAPI = fake_api("serper")
    elsewhere: FakeSearchAPI = fake_api("serper")
    api.canned = Canned(307, b"", {"Location": elsewhere.endpoint})
    web = WebSearchConnector(provider="serper", endpoint=api.endpoint)
    with pytest.raises(QueryExecutionError, match=r"serper refused the search \(HTTP 307\)"):
        await web.asearch("redirect me")
    assert len(api.requests) == 1 and elsewhere.requests == []


async def test_oversized_answer_is_refused(fake_api) -> None:
    api: FakeSearchAPI = fake_api("tavily")
    api.canned = Canned(200, b'{"results": [' + b" " * 4_500_000 + b"]}")
    web = WebSearchConnector(endpoint=api.endpoint)
    with pytest.raises(QueryExecutionError, match="sent more than 4 MB for one search"):
        await web.asearch("huge")


@pytest.mark.parametrize(
    ("query", "rule", "fragment"),
    [
        ("", "empty_query", "the search query is empty"),
        ("   \n\t ", "empty_query", "the search query is empty"),
        ("x" * 401, "query_too_long", "has 401 characters, the limit is 400"),
    ],
)
async def test_bad_queries_are_refused_before_anything_is_sent(
    web: WebSearchConnector, api: FakeSearchAPI, query: str, rule: str, fragment: str
) -> None:
    with pytest.raises(UnsafeQueryError) as caught:
        await web.asearch(query)
    assert caught.value.rule == rule and fragment in str(caught.value)
    result = await web.tools()[0].run({"query": query})
    assert result.is_error and fragment in result.content
    assert api.requests == []


async def test_brave_word_limit(fake_api) -> None:
    api: FakeSearchAPI = fake_api("brave")
    web = WebSearchConnector(provider="brave", endpoint=api.endpoint)
    with pytest.raises(UnsafeQueryError, match="brave accepts at most 50 words"):
        await web.asearch(" ".join(["w"] * 51))
    assert api.requests == []
    assert len(await web.asearch(" ".join(["w"] * 50), max_results=1)) == 1


async def test_model_input_errors_are_tool_errors(web: WebSearchConnector) -> None:
    (tool,) = web.tools()
    missing = await tool.run({})
    assert missing.is_error and "query: Field required" in missing.content
    extra = await tool.run({"query": "x", "site": "example.com"})
    assert extra.is_error and "site: Extra inputs are not permitted" in extra.content
