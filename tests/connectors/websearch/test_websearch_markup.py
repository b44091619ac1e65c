"""Messy and hostile results, sent by each provider in its own format, come out as plain
text with safe links (``corpus/websearch_markup.yaml``); long snippets are clipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from websearch_fakes import PROVIDER_NAMES, Canned, FakeSearchAPI

from relay_nb.connectors.websearch import WebSearchConnector

CORPUS = yaml.safe_load(
    (Path(__file__).parent / "corpus" / "websearch_markup.yaml").read_text(encoding="utf-8")
)


def provider_body(provider: str, hits: list[dict[str, Any]]) -> bytes:
    """The hits in the provider's own answer format."""
    if provider == "tavily":
        results = [{"title": h["title"], "url": h["url"], "content": h["snippet"]} for h in hits]
        body: dict[str, Any] = {"query": "q", "results": results, "response_time": 0.2}
    elif provider == "brave":
        results = [
            {"title": h["title"], "url": h["url"], "description": h["snippet"]} for h in hits
        ]
        body = {"type": "search", "web": {"type": "search", "results": results}}
    else:
        organic = [{"title": h["title"], "link": h["url"], "snippet": h["snippet"]} for h in hits]
        body = {"searchParameters": {"q": "q"}, "organic": organic}
    return json.dumps(body).encode()


@pytest.mark.parametrize("provider_name", PROVIDER_NAMES)
@pytest.mark.parametrize("entry", CORPUS, ids=[e["id"] for e in CORPUS])
async def test_markup_corpus(fake_api, provider_name: str, entry: dict[str, Any]) -> None:
    api: FakeSearchAPI = fake_api(provider_name)
    api.canned = Canned(200, provider_body(provider_name, entry["hits"]))
    web = WebSearchConnector(provider=provider_name, endpoint=api.endpoint, max_results=20)  # type: ignore[arg-type]

    hits = await web.asearch("q")
    assert [h.model_dump() for h in hits] == entry["expect"]

    result = await web.tools()[0].run({"query": "q"})
    assert result.artifact.df.to_dict("records") == entry["expect"]
    for number, want in enumerate(entry["expect"], 1):
        assert f"{number}. {want['title']} — {want['url']}" in result.content


async def test_long_snippets_are_clipped_for_the_model_and_kept_longer_locally(fake_api) -> None:
    api: FakeSearchAPI = fake_api("tavily")
    words = " ".join(f"word{i}" for i in range(400))  # ~3,500 characters
    api.canned = Canned(
        200,
        provider_body(
            "tavily", [{"title": "t " * 200, "url": "https://a.example/", "snippet": words}]
        ),
    )
    web = WebSearchConnector(endpoint=api.endpoint)
    result = await web.tools()[0].run({"query": "q"})
    (hit,) = result.artifact.df.to_dict("records")
    assert len(hit["snippet"]) <= 1000 and hit["snippet"].endswith("…")
    assert len(hit["title"]) <= 200 and hit["title"].endswith("…")
    snippet_line = result.content.splitlines()[2]
    assert snippet_line.startswith("   word0 word1") and snippet_line.endswith("…")
    assert len(snippet_line) <= 3 + 300
    assert not snippet_line.rstrip("…").endswith(" ")  # cut at a word boundary
    assert hit["snippet"].startswith(snippet_line.strip().rstrip("…"))
