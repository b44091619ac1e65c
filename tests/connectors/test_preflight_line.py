"""One line with both costs before a query runs — the model's spend so far in the turn and
the engine's estimate of the scan, priced at the connector's ``price_per_tb`` — and
``approve_above`` in dollars of scan. The real agent loop with a scripted model on real
PostgreSQL (bytes, so dollars) and DuckDB (rows only); the live view's widgets, the saved
HTML and the text transcript of the same turns. No timings are asserted."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from relay_nb.agent.approval import ApprovalRequest
from relay_nb.agent.loop import TurnResult, run_turn
from relay_nb.agent.services import TurnServices
from relay_nb.connectors.bounds import describe_bytes
from relay_nb.connectors.preflight import (
    Estimate,
    Preflight,
    cost_line,
    money,
    parse_dollars,
)
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import ConfigurationError
from relay_nb.markup import keep_dollars
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.tools import ModelSpend
from relay_nb.views import status_line_html, turn_html, turn_text

BIG = "SELECT product_id, SUM(quantity) AS sold FROM order_items GROUP BY product_id"
SMALL = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status"
PRICED_AS = "claude-haiku-4-5"  # $1 in / $5 out per million tokens in the packaged table
ONE_CALL = {"input_tokens": 1000, "output_tokens": 200}  # provider-reported: $0.002


def script(*queries: str) -> ScriptedRuntime:
    """A model that writes each query in turn (each call reporting ``ONE_CALL``), then
    answers."""
    steps: list[dict] = [
        {"tool_calls": [{"name": "query_shop", "input": {"sql": q}}], "usage": ONE_CALL}
        for q in queries
    ]
    return ScriptedRuntime([*steps, {"text": "done", "usage": ONE_CALL}], model=PRICED_AS)


def run_logged(
    connector: SQLConnector, runtime: ScriptedRuntime, log: list[str], approver=None
) -> TurnResult:
    """The turn, with ``log`` getting each event's type as it is emitted and ``"ran"`` the
    moment the connector starts a query: one sequence, in the order things happened."""
    started = connector.aquery

    async def aquery(sql: str):
        log.append("ran")
        return await started(sql)

    connector.aquery = aquery  # type: ignore[method-assign]
    services = TurnServices(
        runtime=runtime,
        tools=connector.tools(),
        approver=approver,
        on_event=lambda event: log.append(event.type),
    )
    return asyncio.run(run_turn("how much sold?", services))


def status_lines(result: TurnResult) -> list[str]:
    return [e.status for e in result.events if e.type == "tool_status"]


def spent_before_tools(result: TurnResult) -> float:
    """What the priced model calls before the first tool ran cost, from the turn's events."""
    total = 0.0
    for event in result.events:
        if event.type == "tool_call":
            return total
        if event.type == "usage":
            assert event.usage.cost_usd is not None
            total += event.usage.cost_usd
    return total


# -- the line and the money threshold, as written -------------------------------------------


@pytest.mark.parametrize(
    ("amount", "shown"),
    [(0.004, "$0.004"), (0.0075, "$0.0075"), (0.00001234, "$0.000012"), (0.5, "$0.50"),
     (0.0149, "$0.015"), (1.2, "$1.20"), (1200, "$1,200.00"), (0.0, "$0.00")],
)  # fmt: skip
def test_amounts_read_as_money(amount: float, shown: str) -> None:
    assert money(amount) == shown


def test_the_line_says_both_costs_and_only_what_is_known() -> None:
    gb = Estimate(rows_scanned=2_000_000, bytes_scanned=1_200_000_000, dollars=0.0075)
    estimated = ModelSpend(cost_usd=0.004, estimated=True)
    assert cost_line(gb, estimated) == "≈ $0.004 model · ≈ 1.2 GB scanned (≈ $0.0075 at your price)"
    reported = ModelSpend(cost_usd=0.004)  # provider counts: no ≈ on the model's part
    assert cost_line(gb, reported).startswith("$0.004 model · ≈ 1.2 GB scanned")
    rows_only = Estimate(rows_scanned=2_000_000, source="DuckDB EXPLAIN")
    assert cost_line(rows_only, reported) == "$0.004 model · ≈ 2M rows scanned"
    gated_on_rows = cost_line(gb.model_copy(update={"dollars": None}), reported, rows=True)
    assert gated_on_rows == "$0.004 model · ≈ 2M rows, 1.2 GB scanned"
    scripted = ModelSpend(cost_usd=1.2, simulated=True)
    assert cost_line(rows_only, scripted) == "$1.20 model (not spent) · ≈ 2M rows scanned"
    unpriced = ModelSpend(cost_usd=None)
    assert cost_line(rows_only, unpriced) == "model cost unknown · ≈ 2M rows scanned"
    assert cost_line(rows_only, None) == "≈ 2M rows scanned"  # outside a turn
    # no estimate, or one without a figure: no line at all, never a made-up one
    assert cost_line(None, reported) == ""
    assert cost_line(Estimate(source="Spark's optimized plan"), reported) == ""


@pytest.mark.parametrize(
    ("written", "dollars"),
    [("$0.50", 0.5), ("0.50 USD", 0.5), ("$1,200", 1200.0), ("USD 2", 2.0), ("$ 3", 3.0),
     ("0.25usd", 0.25), ("$.05", 0.05)],
)  # fmt: skip
def test_a_money_threshold_is_written_as_people_write_it(written: str, dollars: float) -> None:
    assert parse_dollars(written) == dollars
    settings = Preflight.from_options(None, written, None, 6.25)
    assert settings.approve_above_usd == dollars and settings.approve_above_bytes is None
    assert settings.enabled and settings.needs == {"bytes"}  # dollars come from bytes


@pytest.mark.parametrize("bad", ["$abc", "$1,20", "$-1", "$0", "0 USD", "$1.2.3", "$"])
def test_a_bad_amount_says_how_to_write_one_in_one_line(bad: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        Preflight.from_options(None, bad, None, 6.25)
    message = str(raised.value)
    assert message.startswith("approve_above") and "\n" not in message
    assert "'$0.50'" in message or "positive amount" in message


def test_a_money_threshold_needs_your_price() -> None:
    with pytest.raises(ConfigurationError) as raised:
        Preflight.from_options(None, "$0.50", None, None)
    assert str(raised.value) == (
        "approve_above='$0.50' is dollars of scan and needs your price: add price_per_tb "
        "(e.g. 6.25), or write a size such as '10GB'"
    )
    with pytest.raises(ConfigurationError, match=r"or dollars of scan: '\$0.50'"):
        Preflight.from_options(None, "ten GB", None, None)  # a bad size names both forms


def test_the_money_threshold_compares_the_scan_s_dollars() -> None:
    settings = Preflight.from_options(None, "$0.50", None, 6.25)
    over = settings.priced(Estimate(bytes_scanned=10**12))  # 1 TB at $6.25
    assert settings.over(over) == "$0.50 at your price"
    assert settings.over(settings.priced(Estimate(bytes_scanned=10**10))) is None  # $0.0625


def test_duckdb_refuses_a_money_threshold_it_could_never_check(duckdb_shop: Path) -> None:
    with pytest.raises(ConfigurationError, match="gives rows, not bytes: use approve_above_rows"):
        SQLConnector("shop", f"duckdb:///{duckdb_shop}", approve_above="$0.50", price_per_tb=6.25)


# -- PostgreSQL: bytes, priced ----------------------------------------------------------------


def test_postgres_shows_the_line_before_the_query_runs(pg_urls) -> None:
    connector = SQLConnector("shop", pg_urls.ro, price_per_tb=6.25)
    log: list[str] = []
    try:
        result = run_logged(connector, script(BIG), log)
    finally:
        connector.close()
    (outcome,) = result.tool_results
    assert not outcome.is_error
    # the line came after the model's call was priced and before the query started
    assert log[log.index("tool_call") :][:4] == ["tool_call", "tool_status", "ran", "tool_result"]
    assert log.index("usage") < log.index("tool_status")
    estimate = outcome.artifact.estimate
    assert estimate.bytes_scanned and estimate.dollars is not None
    spent = spent_before_tools(result)
    assert spent == pytest.approx(0.002)  # 1,000 in + 200 out tokens of claude-haiku-4-5
    scanned = describe_bytes(estimate.bytes_scanned, decimal=True)
    line = (
        f"{money(spent)} model (not spent) · ≈ {scanned} scanned "
        f"(≈ {money(estimate.dollars)} at your price)"
    )
    assert status_lines(result) == [line]
    print(line)

    # the text transcript (the CLI's and a notebook's text/plain): under the query's SQL,
    # and the title no longer repeats the estimate
    text = turn_text(result)
    sql_at = text.index("SELECT product_id")
    assert text.index(f"\n    {line}\n") > sql_at
    assert "[1] query_shop: 20 rows\n" in text and "estimated ≈" not in text

    # the saved HTML: amounts are elements of their own, the line is kept from MathJax, and
    # no run of text between two tags holds two dollar signs (a typesetter would make one
    # formula of them)
    saved = turn_html(result)
    assert 'class="relay-status mathjax_ignore tex2jax_ignore"' in saved
    assert f"{keep_dollars(money(spent))} model (not spent)" in saved
    assert all(run.count("$") < 2 for run in re.split(r"<[^>]*>", saved))


def test_postgres_money_threshold_asks_with_the_same_line_and_deny_keeps_it_from_running(
    pg_urls,
) -> None:
    big = SQLConnector("shop", pg_urls.ro, price_per_tb=1_000_000)  # $1 per MB: the shop is tiny
    try:
        dear, cheap = big.estimate(BIG), big.estimate(SMALL)
    finally:
        big.close()
    assert dear and cheap and dear.dollars and cheap.dollars and cheap.dollars < dear.dollars
    threshold = (dear.dollars + cheap.dollars) / 2
    written = f"${threshold:.6f}"
    limit = money(parse_dollars(written), exact=True)
    connector = SQLConnector("shop", pg_urls.ro, approve_above=written, price_per_tb=1_000_000)
    asked: list[ApprovalRequest] = []

    def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    log: list[str] = []
    try:
        result = run_logged(connector, script(BIG, SMALL), log, approver=deny)
    finally:
        connector.close()
    refused, ran = result.tool_results
    # the costly one: its line shown, then the question, and it never ran
    assert refused.failure == "denied" and refused.artifact is None
    assert "the analyst did not approve it" in refused.content
    assert f"above the {limit} at your price 'shop'" in refused.content
    (request,) = asked  # the cheap one ran without asking
    first_line, second_line = status_lines(result)
    assert request.reason == (
        f"{first_line}: above the {limit} at your price 'shop' runs unasked (PostgreSQL EXPLAIN)"
    )
    assert first_line.startswith("$0.002 model (not spent) · ≈ ")
    assert f"(≈ {money(dear.dollars)} at your price)" in first_line
    waiting = [e for e in result.events if e.type == "tool_awaiting_approval"]
    assert [e.reason for e in waiting] == [request.reason]
    assert log.count("ran") == 1  # only the cheap query started
    first_call = log.index("tool_call")
    assert log[first_call : first_call + 3] == [
        "tool_call",
        "tool_status",
        "tool_awaiting_approval",
    ]
    # the cheap query: the model has spent two calls by then, and it ran under the threshold
    assert not ran.is_error and ran.artifact.estimate.dollars == pytest.approx(cheap.dollars)
    assert second_line.startswith("$0.004 model (not spent) · ≈ ")
    text = turn_text(result)
    assert f"    {first_line}\n" in text and f"    {second_line}\n" in text


def test_postgres_money_threshold_approved_runs_after_the_line_and_the_question(pg_urls) -> None:
    # $1 per MB, so the shop's 49 KB table costs about $0.05: above a cent
    connector = SQLConnector("shop", pg_urls.ro, approve_above="$0.01", price_per_tb=1_000_000)
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    log: list[str] = []
    try:
        result = run_logged(connector, script(BIG), log, approver=approve)
    finally:
        connector.close()
    (outcome,) = result.tool_results
    assert not outcome.is_error and outcome.artifact.row_count == 20
    (line,) = status_lines(result)
    (request,) = asked
    assert (
        request.reason
        == f"{line}: above the $0.01 at your price 'shop' runs unasked (PostgreSQL EXPLAIN)"
    )
    first_call = log.index("tool_call")
    assert log[first_call:][:5] == [
        "tool_call",
        "tool_status",
        "tool_awaiting_approval",
        "ran",
        "tool_result",
    ]
    assert f"\n    {line}\n" in turn_text(result)


def test_the_live_view_shows_the_line_before_the_query_runs(pg_urls) -> None:
    """The notebook's widgets, fed the turn's events: at the moment the query starts, its
    entry already holds the line under the SQL; when it ends the line stays above the
    table."""
    from relay_nb.notebook.live import LiveTurnView
    from relay_nb.runtime.types import Usage

    connector = SQLConnector("shop", pg_urls.ro, price_per_tb=6.25)
    view = LiveTurnView(
        "how much sold?", max_rows=5, session_usage=Usage(input_tokens=0, output_tokens=0)
    )
    seen_when_running: list[list[str]] = []
    started = connector.aquery

    async def aquery(sql: str):
        (panel,) = view.calls.children
        seen_when_running.append([child.value for child in panel.children[0].children])
        return await started(sql)

    connector.aquery = aquery  # type: ignore[method-assign]
    services = TurnServices(runtime=script(BIG), tools=connector.tools(), on_event=view.on_event)
    try:
        result = asyncio.run(run_turn("how much sold?", services))
    finally:
        connector.close()
        view.close()
    (line,) = status_lines(result)
    ((query_html, line_html),) = seen_when_running  # the SQL, then the line: no result yet
    assert "SELECT" in query_html
    assert line_html == status_line_html(line)
    assert 'class="relay-status mathjax_ignore tex2jax_ignore"' in line_html
    assert re.sub(r"<[^>]*>", "", line_html) == line  # the same words, amounts wrapped
    (panel,) = view.calls.children
    query, shown, _table = panel.children[0].children
    assert shown.value == line_html and "SELECT" in query.value
    assert panel.get_title(0) == "[1] query_shop · 20 rows"  # the estimate is in the line


# -- DuckDB: rows only ------------------------------------------------------------------------


def test_duckdb_shows_rows_and_no_price_and_nothing_without_a_preflight(duckdb_shop: Path) -> None:
    url = f"duckdb:///{duckdb_shop}"
    connector = SQLConnector("shop", url, price_per_tb=6.25)  # a price, but DuckDB has no bytes
    log: list[str] = []
    try:
        result = run_logged(connector, script(BIG), log)
    finally:
        connector.close()
    (line,) = status_lines(result)
    rows = result.tool_results[0].artifact.estimate.rows_scanned
    assert rows and line == f"$0.002 model (not spent) · ≈ {rows} rows scanned"
    assert log.index("tool_status") < log.index("ran") < log.index("tool_result")

    plain = SQLConnector("shop", url)  # no preflight: no estimate, so no line
    log = []
    try:
        result = run_logged(plain, script(BIG), log)
    finally:
        plain.close()
    assert "tool_status" not in log and "ran" in log
    assert "model ·" not in turn_text(result) and "relay-status" not in turn_html(result)
