"""End to end through the agent loop: a scripted model calls ``web_search``, the connector
asks a local provider API, and the answer cites a URL the model was actually shown."""

from __future__ import annotations

import re

import pytest
from websearch_fakes import FakeSearchAPI

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.pricing import PriceTable
from relay_nb.agent.session import Session
from relay_nb.connectors.websearch import WebSearchConnector
from relay_nb.errors import ConfigurationError
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import InvocationRequest, ToolResultPart

PRICES = PriceTable.load().with_prices({"scripted": {"input": 3, "output": 15}})
URL = re.compile(r" — (https://\S+)")


def tool_results(request: InvocationRequest) -> list[ToolResultPart]:
    return [p for m in request.messages for p in m.parts() if isinstance(p, ToolResultPart)]


def cite_first_url(request: InvocationRequest) -> dict:
    """The scripted model's answer, written from what it was shown (not hard-coded)."""
    (part,) = tool_results(request)
    first_url = URL.search(part.content).group(1)
    return {"text": f"DuckDB 1.2 added a faster CSV reader ([source]({first_url}))."}


async def test_turn_searches_the_web_and_cites_a_url(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    runtime = ScriptedRuntime(
        [
            {
                "tool_calls": [
                    {
                        "name": "web_search",
                        "input": {"query": "duckdb 1.2 release notes", "max_results": 3},
                        "id": "c1",
                    }
                ]
            },
            cite_first_url,
        ]
    )
    session = Session(runtime, connectors=[web], accountant=Accountant(prices=PRICES))

    turn = await session.ask_async("What is new in DuckDB 1.2?")

    assert turn.finish_reason == "stop"
    assert turn.answer == (
        "DuckDB 1.2 added a faster CSV reader "
        "([source](https://en.wikipedia.org/duckdb-1-2-release-notes/1))."
    )
    # the notebook's table: the hits, as a DataFrame
    assert list(turn.df.columns) == ["title", "url", "snippet"]
    assert turn.df["url"].tolist() == [
        f"https://{host}/duckdb-1-2-release-notes/{i}"
        for i, host in enumerate(["en.wikipedia.org", "www.example.com", "docs.python.org"], 1)
    ]
    assert turn.queries == ['web_search "duckdb 1.2 release notes"']
    (outcome,) = turn.tool_results
    assert outcome.name == "web_search" and not outcome.is_error
    assert outcome.content.startswith(
        f'3 results for "duckdb 1.2 release notes" from {api.provider}'
    )

    # what the model was shown: the connector's context and tool, then the numbered hits
    first, second = runtime.requests
    system = first.system_text()
    assert f"### Web search: web ({api.provider})" in system
    assert "cite the URL of every fact" in system
    assert [t.name for t in first.tools if t.name == "web_search"] == ["web_search"]
    (shown,) = tool_results(second)
    assert shown.content == outcome.content and not shown.is_error
    assert "1. duckdb 1.2 release notes - result 1 — https://en.wikipedia.org/" in shown.content

    # and what reached the provider
    assert len(api.requests) == 1 and api.asked() == ("duckdb 1.2 release notes", 3)


async def test_a_refused_key_reaches_the_model_as_a_tool_error(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    api.key = "a-different-key-0123456789"
    runtime = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "web_search", "input": {"query": "x y"}, "id": "c1"}]},
            {"text": "The web search is not configured correctly."},
        ]
    )
    session = Session(runtime, connectors=[web], accountant=Accountant(prices=PRICES))
    turn = await session.ask_async("search something")
    (outcome,) = turn.tool_results
    assert outcome.is_error and f"the {api.provider} key was refused" in outcome.content
    assert turn.df is None
    (shown,) = tool_results(runtime.requests[1])
    assert shown.is_error and shown.content == outcome.content


@pytest.mark.parametrize("provider", ["tavily"])
async def test_two_web_search_connectors_cannot_share_a_session(
    web: WebSearchConnector, api: FakeSearchAPI
) -> None:
    """Tool names are global: a second ``web_search`` is refused when it is added."""
    other = WebSearchConnector("web2", provider=api.provider, endpoint=api.endpoint)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="a tool named 'web_search' is already registered"):
        Session(ScriptedRuntime([]), connectors=[web, other], accountant=Accountant(prices=PRICES))
