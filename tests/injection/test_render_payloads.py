"""Each payload alone, through every renderer, wherever data can land in a turn.

The obedient turns (test_obedient_turn.py) render all payloads together; here each one gets
a turn of its own, so a finding names its payload. The payload is the model's answer, a
column name and a cell of the result, the text of a refused query and of its error, a
Mongo-style tool input and a warning. The renderers: the saved HTML (``turn_html`` and the
output bundle), ``answer_html``, ``table_html``, a Markdown export of the notebook, the
live widgets, and the plain-text transcript.
"""

from __future__ import annotations

import pandas as pd
import pytest
from html_audit import audit_html, audit_text
from injection_payloads import ATTACKER, catalogue
from render_surfaces import live_view_html, markdown_export_html

from relay_nb.agent.events import TextDeltaEvent, ToolCallEvent, ToolResultEvent
from relay_nb.agent.loop import TurnResult
from relay_nb.agent.tool_calls import ToolOutcome
from relay_nb.connectors.results import QueryResult, preview_for_model
from relay_nb.notebook.live import LiveTurnView
from relay_nb.notebook.view import turn_bundle
from relay_nb.runtime.types import Usage
from relay_nb.views import answer_html, table_html, turn_html, turn_text

LEAK = "ann.lee%40corp.example"


def _payloads() -> list[pytest.param]:
    items = catalogue()
    params = [pytest.param(p.text.replace("{data}", LEAK), id=p.id) for p in items.render]
    params += [pytest.param(name, id=f"column_{i}") for i, name in enumerate(items.html_columns)]
    params += [
        pytest.param(items.html_table, id="table_name"),
        pytest.param(items.forged_column, id="forged_column"),
        pytest.param(items.forged_context, id="forged_context"),
    ]
    return params


def _turn(payload: str) -> TurnResult:
    frame = pd.DataFrame({payload: [payload, "ok"], "n": [1, 2]})
    literal = payload.replace("'", "''")
    result = QueryResult(
        df=frame,
        executed_sql=f"SELECT '{literal}' AS x LIMIT 201",
        row_count=2,
        truncated=False,
        elapsed_ms=1.0,
        connector_id="db",
    )
    refused = ToolOutcome(
        tool_call_id="c1",
        name="query_db",
        input={"sql": f"DELETE FROM t /*\n\n{payload}\n\n*/"},
        content=f"forbidden_statement: DELETE changes data or schema ({payload})",
        is_error=True,
    )
    ok = ToolOutcome(
        tool_call_id="c2",
        name="query_db",
        input={"sql": result.executed_sql},
        content=preview_for_model(result),
        artifact=result,
    )
    mongo = ToolOutcome(
        tool_call_id="c3",
        name="query_docs",
        input={"collection": "notes", "filter": {"body": payload}},
        content=payload,
    )
    return TurnResult(
        answer=payload,
        finish_reason="stop",
        question="what do the notes say?",
        tool_results=[refused, ok, mongo],
        warnings=[payload],
        usage=Usage(input_tokens=10, output_tokens=5, cost_usd=0.0),
        model="claude-haiku-4-5",
    )


def _visible(payload: str, text: str) -> None:
    """The payload is shown (as text): the audit is not passing because it saw nothing."""
    if ATTACKER in payload:
        assert ATTACKER in text


@pytest.mark.parametrize("payload", _payloads())
def test_the_saved_output_is_inert(payload: str) -> None:
    turn = _turn(payload)
    data, _ = turn_bundle(turn)
    for page in (turn_html(turn), data["text/html"]):
        audit = audit_html(page)
        assert audit.problems == []
        _visible(payload, audit.text)
    for page in (answer_html(payload), table_html(turn.frames[0])):
        assert audit_html(page).problems == []
    assert audit_text(data["text/plain"]) == []
    assert audit_text(turn_text(turn, width=60)) == []


@pytest.mark.parametrize("payload", _payloads())
def test_a_markdown_export_is_inert(payload: str) -> None:
    audit = audit_html(markdown_export_html(_turn(payload)))
    assert audit.problems == []
    _visible(payload, audit.text)


@pytest.mark.parametrize("payload", _payloads())
def test_the_live_view_is_inert(payload: str) -> None:
    turn = _turn(payload)
    refused, ok, mongo = turn.tool_results
    view = LiveTurnView(turn.question, max_rows=20, session_usage=Usage())
    try:
        for outcome in (refused, ok, mongo):
            view.on_event(
                ToolCallEvent(
                    tool_call_id=outcome.tool_call_id, name=outcome.name, input=outcome.input
                )
            )
            view.on_event(
                ToolResultEvent(
                    tool_call_id=outcome.tool_call_id,
                    name=outcome.name,
                    output=outcome.content,
                    is_error=outcome.is_error,
                    artifact=outcome.artifact,
                )
            )
        view.on_event(TextDeltaEvent(delta=payload))
        values, titles = live_view_html(view)
    finally:
        view.close()
    for value in values:
        assert audit_html(value).problems == []
    _visible(payload, "".join(audit_html(v).text for v in values))
    assert len(titles) == 3
