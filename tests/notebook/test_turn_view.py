"""One turn view-model drives the live widgets, the static HTML and the text transcript: each
shows the same calls with the same status and query, the same answer and usage line."""

from __future__ import annotations

import html
import re

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.markup import keep_dollars
from relay_nb.notebook.live import LiveTurnView
from relay_nb.runtime.types import Usage
from relay_nb.testing.shell import TestingShell
from relay_nb.views import TurnView, one_line, sql_html, turn_html, turn_text

MONTHLY = (
    "SELECT strftime('%Y-%m', ordered_at) AS month, SUM(total) AS revenue FROM orders "
    "GROUP BY month ORDER BY month"
)
CHART = {"result": "q2", "kind": "bar", "x": "month", "y": ["revenue"]}


@pytest.fixture
def turn_and_events(shop_url: str):
    model = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "query_shop", "input": {"sql": "DELETE FROM orders"}}]},
            {"tool_calls": [{"name": "query_shop", "input": {"sql": MONTHLY}, "id": "q2"}]},
            {"tool_calls": [{"name": "chart", "input": CHART}]},
            {"text": "Revenue **rose** every month."},
        ],
        model="claude-haiku-4-5",
    )
    relay = Relay(model, ledger=False)
    relay.connect("shop", shop_url)
    events = []
    turn = relay.ask("monthly revenue, as a chart", on_event=events.append)
    yield turn, events
    relay.close()


def test_events_and_the_finished_result_give_the_same_view(turn_and_events) -> None:
    turn, events = turn_and_events
    live = TurnView(question=turn.question)
    for event in events:
        live.apply(event)
    finished = TurnView.of(turn)
    shape = [
        (c.index, c.name, c.status, c.query, c.is_error, finished.opened(c)) for c in finished.calls
    ]
    assert shape == [
        (c.index, c.name, c.status, c.query, c.is_error, live.opened(c)) for c in live.calls
    ]
    statuses = [status for _, _, status, *_ in shape]
    assert statuses[0] == "error" and statuses[1].endswith(" rows") and statuses[2] == "ok"
    assert live.answer == finished.answer and live.usage_line() == finished.usage_line()
    assert live.finish_reason == finished.finish_reason == "stop"


def test_the_three_renderers_show_the_same_calls_answer_and_usage(
    turn_and_events, shell: TestingShell
) -> None:
    turn, events = turn_and_events
    view = TurnView.of(turn)
    titles = [call.title for call in view.calls]

    page = turn_html(turn)
    summaries = [
        html.unescape(re.sub(r" · \d+ ms$", "", s))
        for s in re.findall(r"<summary>(.*?)</summary>", page)
    ]
    text = turn_text(turn)
    lines = [
        line.replace(": ", " · ", 1) for line in text.splitlines() if re.match(r"\[\d+\] ", line)
    ]
    live = LiveTurnView(turn.question, max_rows=5, session_usage=Usage())
    for event in events:
        live.on_event(event)
    shown = [panel.get_title(0) for panel in live.calls.children]
    live_queries = [panel.children[0].children[0].value for panel in live.calls.children]
    live.close()

    assert titles == summaries == lines == shown
    for call, live_query in zip(view.calls, live_queries, strict=True):
        if call.query:  # every view shows the call's query, the same way
            assert live_query == sql_html(call.readable_query()) and one_line(live_query) in page
            assert all(line.strip() in text for line in call.readable_query(pretty=False).split())
    assert view.usage_line() in text and keep_dollars(html.escape(view.usage_line())) in page
    assert "Revenue **rose** every month." in text and "<strong>rose</strong>" in page
    assert live.view.answer == view.answer


def test_the_last_query_is_open_laid_out_and_shows_the_row_limit(
    turn_and_events, shop_url: str
) -> None:
    """Item 6 of issue 18: the saved trace unfolds the last query (its SQL over lines, its
    rows) and the chart; the refused first step is folded; the SQL is shown as the model
    wrote it (issue 37, item 15), never with the fetch size (201) nobody wrote."""
    turn, _events = turn_and_events
    page = turn_html(turn)
    details = re.findall(r"<details( open)?><summary>(.*?)</summary>", page)
    assert [(bool(opened), title.split(" · ")[0]) for opened, title in details] == [
        (False, "[1] query_shop"),
        (True, "[2] query_shop"),
        (True, "[3] chart"),
    ]
    executed = turn.tool_results[1].artifact.executed_sql
    assert executed.endswith("LIMIT 201")  # what ran fetches one row more than it shows
    view = TurnView.of(turn)
    laid_out = view.calls[1].readable_query()
    assert laid_out.splitlines() == [
        "SELECT strftime('%Y-%m', ordered_at) AS month, SUM(total) AS revenue",
        "FROM orders",
        "GROUP BY month",
        "ORDER BY month",
    ]
    assert "LIMIT" not in html.unescape(re.sub(r"<[^>]+>", "", page))
    assert MONTHLY in turn_text(turn) and "LIMIT" not in turn_text(turn)
    # a limit the query wrote itself is shown as written
    model = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "query_shop", "input": {"sql": MONTHLY + " LIMIT 3"}}]},
            {"text": "three"},
        ]
    )
    relay = Relay(model, ledger=False)
    relay.connect("shop", shop_url)
    try:
        own = relay.ask("three months")
    finally:
        relay.close()
    assert TurnView.of(own).calls[0].readable_query().endswith("LIMIT 3")


def test_the_row_limit_is_shown_only_where_the_guard_set_the_fetch_size(shop_url: str) -> None:
    from relay_nb import SQLConnector
    from relay_nb.views.sql_layout import readable_sql

    shop = SQLConnector("shop", shop_url, row_limit=200)
    try:
        injected = shop.query("SELECT id FROM customers")
        clamped = shop.query("SELECT id FROM customers LIMIT 5000")
        own = shop.query("SELECT id FROM customers LIMIT 201")  # written so, kept so
    finally:
        shop.close()
    assert injected.row_limit == clamped.row_limit == 200 and own.row_limit is None
    assert readable_sql(own.executed_sql, dialect="sqlite", row_limit=own.row_limit).endswith(
        "LIMIT 201"
    )
    # a parenthesised query carries its LIMIT inside; a function sqlglot does not know keeps
    # its spelling (it may be case-sensitive)
    shown = readable_sql(
        "(SELECT my_Udf(x) AS y FROM t LIMIT 201)", dialect="sqlite", row_limit=200
    )
    assert "LIMIT 200" in shown and "my_Udf(x)" in shown
    assert readable_sql("not sql at all ((", dialect="sqlite") == "not sql at all (("
    assert readable_sql('{"find": "x"}') == '{"find": "x"}'  # no dialect: not SQL
