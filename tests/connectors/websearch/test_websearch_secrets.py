"""The key reaches the provider, in its one header, and nothing else: not the prompt, the
tool results, the DataFrame, errors, logs, ``repr`` or the connector's attributes."""

from __future__ import annotations

import logging

import pytest
from websearch_fakes import Canned, FakeSearchAPI

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.pricing import PriceTable
from relay_nb.agent.session import Session
from relay_nb.connectors.websearch import WebSearchConnector
from relay_nb.errors import QueryExecutionError
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import InvocationRequest

PRICES = PriceTable.load().with_prices({"scripted": {"input": 3, "output": 15}})
HEADER = {"tavily": "authorization", "brave": "x-subscription-token", "serper": "x-api-key"}


def search(query: str, call_id: str) -> dict:
    return {"tool_calls": [{"name": "web_search", "input": {"query": query}, "id": call_id}]}


async def test_key_is_sent_to_the_provider_and_appears_nowhere_else(
    web: WebSearchConnector, api: FakeSearchAPI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key = api.key

    def then_fail_with_an_echo(request: InvocationRequest) -> dict:
        # the provider's next answer quotes the key back, as some error pages do
        api.canned = Canned(
            400,
            f'{{"detail": {{"error": "bad key {key}"}}, '
            f'"message": "bad key {key}", "error": {{"detail": "{key}"}}}}'.encode(),
        )
        return search("second query", "c2")

    runtime = ScriptedRuntime(
        [search("first query", "c1"), then_fail_with_an_echo, {"text": "done"}]
    )
    session = Session(runtime, connectors=[web], accountant=Accountant(prices=PRICES))
    turn = await session.ask_async("look it up twice")

    ok, failed = turn.tool_results
    assert not ok.is_error and failed.is_error and "[REDACTED]" in failed.content
    with pytest.raises(QueryExecutionError) as direct:
        await web.asearch("third query")

    # it WAS sent: every request carries it, in the provider's header and only there
    assert len(api.requests) == 3
    for rec in api.requests:
        holders = [name for name, value in rec.headers.items() if key in value]
        assert holders == [HEADER[api.provider]]
        assert key not in rec.path and key not in str(rec.query) and key not in rec.body.decode()

    # and it is NOT anywhere a person or a model can read
    outputs = {
        "answer": turn.answer,
        "tool contents": "\n".join(o.content for o in turn.tool_results),
        "dataframe": turn.df.to_csv(),
        "executed": "\n".join(turn.queries),
        "model requests": "\n".join(r.model_dump_json() for r in runtime.requests),
        "history": "\n".join(m.model_dump_json() for m in session.history.messages),
        "direct error": str(direct.value),
        "prompt context": web.prompt_context(),
        "tools": str([t.spec() for t in web.tools()]),
        "target": web.target,
        "repr": repr(web),
        "attributes": repr(vars(web)),
        "logs": caplog.text,
    }
    leaks = [where for where, text in outputs.items() if key in text]
    assert leaks == []
    assert outputs["dataframe"].count("https://") == 5  # the outputs are real, not empty
