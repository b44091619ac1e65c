"""What the saved trace shows for a call: its SQL, or for other tools what they asked for."""

from __future__ import annotations

import pytest

from relay_nb.agent.tool_calls import ToolOutcome
from relay_nb.views import sql_of


def refused(name: str, arguments: dict) -> ToolOutcome:
    return ToolOutcome(
        tool_call_id="c1", name=name, input=arguments, content="refused", is_error=True
    )


@pytest.mark.parametrize(
    ("name", "arguments", "shown"),
    [
        ("query_shop", {"sql": "SELECT 1"}, "SELECT 1"),
        ("call_support", {"method": "GET", "path": "../admin"}, "GET ../admin"),
        ("call_support", {"path": "tickets", "query": {"status": "open"}},
         'GET tickets {"status":"open"}'),
        ("query_events", {"collection": "orders", "operation": "aggregate",
                          "pipeline": [{"$out": "x"}]},
         '{"collection":"orders","operation":"aggregate","pipeline":[{"$out":"x"}]}'),
        ("web_search", {"query": "duckdb 2.0"}, 'web_search "duckdb 2.0"'),
        ("chart", {"result": "r1", "kind": "bar"}, ""),
        ("shout", {"text": "hi"}, ""),
    ],
)  # fmt: skip
def test_a_refused_call_still_shows_what_it_asked_for(
    name: str, arguments: dict, shown: str
) -> None:
    assert sql_of(refused(name, arguments)) == shown
