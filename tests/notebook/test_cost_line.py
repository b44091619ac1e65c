"""The cost line in the notebook: ``%relay`` on a DuckDB connector with a preflight shows,
under the query, what the model has cost the turn so far and what the engine expects the
query to scan — in the live widgets before the query runs, in the saved trace (HTML and
text) after, and in the approval question when the scan is over the connector's threshold.
(The money threshold needs bytes, which PostgreSQL gives: tests/connectors/
test_preflight_line.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.notebook.live import LiveTurnView
from relay_nb.runtime.types import Usage
from relay_nb.testing.seed import seed_database
from relay_nb.testing.shell import TestingShell
from relay_nb.views import status_line_html

BIG = "SELECT product_id, SUM(quantity) AS sold FROM order_items GROUP BY product_id"
SMALL = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status"
ONE_CALL = {"input_tokens": 1000, "output_tokens": 200}  # $0.002 at claude-haiku-4-5's rates


@pytest.fixture(scope="module")
def lake_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"duckdb:///{tmp_path_factory.mktemp('nb_lake') / 'shop.duckdb'}"
    seed_database(url)
    return url


def query(sql: str) -> dict:
    return {"tool_calls": [{"name": "query_lake", "input": {"sql": sql}}], "usage": ONE_CALL}


def test_the_live_view_shows_the_line_before_the_query_runs_and_keeps_it(
    relay: Relay, model: ScriptedRuntime, lake_url: str
) -> None:
    lake = relay.connect("lake", lake_url, preflight=True)
    model.add(query(BIG), {"text": "sold per product", "usage": ONE_CALL})
    view = LiveTurnView("sold?", max_rows=5, session_usage=Usage(input_tokens=0, output_tokens=0))
    when_running: list[tuple[str, ...]] = []
    started = lake.aquery

    async def aquery(sql: str):
        (panel,) = view.calls.children
        when_running.append(tuple(child.value for child in panel.children[0].children))
        return await started(sql)

    lake.aquery = aquery  # type: ignore[method-assign]
    turn = relay.ask("sold?", on_event=view.on_event)
    (line,) = [e.status for e in turn.events if e.type == "tool_status"]
    rows = turn.tool_results[0].artifact.estimate.rows_scanned
    assert line == f"$0.002 model (not spent) · ≈ {rows} rows scanned"
    ((sql_html, line_html),) = when_running  # the SQL and the line, no result yet
    assert "SELECT" in sql_html and line_html == status_line_html(line)
    (panel,) = view.calls.children
    _sql, kept, _table = panel.children[0].children  # the line stays above the result
    assert kept.value == status_line_html(line)
    assert panel.get_title(0) == "[1] query_lake · 20 rows"


def test_the_magic_s_saved_trace_keeps_the_line_in_html_and_text(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime, lake_url: str
) -> None:
    from IPython.utils.capture import capture_output

    relay.connect("lake", lake_url, preflight=True)
    model.add(query(BIG), {"text": "sold per product", "usage": ONE_CALL})
    with capture_output() as captured:
        shell.ip.run_cell("%relay how much of each product sold?")
    final = captured.outputs[-1]
    text, saved = final.data["text/plain"], final.data["text/html"]
    (line,) = [e.status for e in relay.turns[-1].events if e.type == "tool_status"]
    assert line.startswith("$0.002 model (not spent) · ≈ ") and line.endswith(" rows scanned")
    assert "[1] query_lake: 20 rows\n" in text
    assert text.index(f"\n    {line}\n") > text.index("SELECT product_id")
    assert status_line_html(line) in saved


def test_the_approval_question_carries_the_line(
    shell: TestingShell,
    relay: Relay,
    model: ScriptedRuntime,
    lake_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The test shell has no kernel for buttons, so approval asks with input(): its prompt
    holds the same line; "n" keeps the query from running, "y" runs it."""
    relay.connect("lake", lake_url, approve_above_rows=500)
    prompts: list[str] = []
    answers = iter(["n", "y"])
    monkeypatch.setattr("builtins.input", lambda prompt: prompts.append(prompt) or next(answers))
    model.add(query(BIG), query(SMALL), {"text": "per status instead", "usage": ONE_CALL})
    shell.run("%relay how much of each product sold?")
    denied = relay.turns[-1]
    model.add(query(BIG), {"text": "sold per product", "usage": ONE_CALL})
    shell.run("%relay how much of each product sold, again?")
    approved = relay.turns[-1]

    first, second = [e.status for e in denied.events if e.type == "tool_status"]
    assert second.startswith("$0.004 model (not spent) · ≈ ")  # two calls by the second query
    # gated on rows, the line gives rows (DuckDB has no bytes)
    assert re.fullmatch(r"\$0\.002 model \(not spent\) · ≈ \d+ rows scanned", first)
    assert first in prompts[0] and "above the 500 rows 'lake' runs unasked" in prompts[0]
    assert "(DuckDB EXPLAIN)" in prompts[0]
    refused, ran = denied.tool_results
    assert refused.failure == "denied" and refused.artifact is None and not ran.is_error
    (again,) = [e.status for e in approved.events if e.type == "tool_status"]
    assert again in prompts[1] and not approved.tool_results[0].is_error
    assert len(prompts) == 2  # the small query ran without asking


def test_no_preflight_no_line(relay: Relay, model: ScriptedRuntime, lake_url: str) -> None:
    relay.connect("lake", lake_url)
    model.add(query(BIG), {"text": "sold per product", "usage": ONE_CALL})
    view = LiveTurnView("sold?", max_rows=5, session_usage=Usage(input_tokens=0, output_tokens=0))
    turn = relay.ask("sold?", on_event=view.on_event)
    assert not [e for e in turn.events if e.type == "tool_status"]
    (panel,) = view.calls.children
    assert len(panel.children[0].children) == 2  # the SQL and the table, nothing between


def test_the_line_s_scan_part_is_the_connector_s_estimate(tmp_path: Path) -> None:
    """Outside the magic too: ``connector.estimate`` and the turn's line agree on the scan
    part (the model part is the turn's)."""
    url = f"duckdb:///{tmp_path / 'shop.duckdb'}"
    seed_database(url)
    relay = Relay(
        ScriptedRuntime([query(BIG), {"text": "ok"}], model="claude-haiku-4-5"), ledger=False
    )
    try:
        lake = relay.connect("lake", url, preflight=True)
        estimate = lake.estimate(BIG)
        turn = relay.ask("sold?")
    finally:
        relay.close()
    (line,) = [e.status for e in turn.events if e.type == "tool_status"]
    assert estimate is not None and line.endswith(f" · {estimate.scanned()}")
