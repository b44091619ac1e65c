"""Background runs (issue 37, item 16): ``relay.submit`` starts a question that goes on while
the caller does other work — the foreground asks meanwhile and never waits for it — with a
handle that gives its status, cancels it (its running query too) and returns its turn;
``submit_eval`` does the same for an evaluation run; at most four run at once. Scripted
model, real SQLite (the shop and the demo shop)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from relay_nb import ConfigurationError, Relay, ScriptedRuntime
from relay_nb.errors import Cancelled
from relay_nb.facade.background import MAX_RUNNING
from relay_nb.testing.seed import seed_database

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"


@pytest.fixture(scope="module")
def shop_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('background') / 'shop.sqlite'}"
    seed_database(url)
    return url


def query(sql: str) -> dict:
    return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]}


def until(check, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_the_foreground_goes_on_while_a_background_question_runs(shop_url: str) -> None:
    model = ScriptedRuntime([query(ENDLESS), {"text": "Hello."}])
    relay = Relay(model, ledger=False)
    relay.connect("shop", shop_url)
    try:
        started = time.monotonic()
        run = relay.submit("count forever")
        assert time.monotonic() - started < 1.0  # returned at once
        until(lambda: len(model.requests) == 1)  # its query is running now
        assert run.status == "running" and not run.done() and relay.background == [run]
        assert "running" in repr(run) and "count forever" in repr(run)

        hello = relay.ask("say hello")  # does not wait for the background question
        assert hello.answer == "Hello." and run.status == "running"
        with pytest.raises(TimeoutError):
            run.result(timeout=0.1)  # the run goes on

        run.cancel()
        turn = run.result(timeout=30)
        assert run.status == "cancelled" and turn.finish_reason == "cancelled"
        assert "cancelled by the user" in turn.tool_results[0].content
        # kept when it ended; only the foreground question extended the conversation
        assert relay.turns == [hello, turn]
        asked = [m.text() for m in relay.history if m.role == "user" and m.text()]
        assert asked == ["say hello"]
    finally:
        relay.close()


def test_a_background_question_reads_the_conversation_as_it_stood(shop_url: str) -> None:
    model = ScriptedRuntime([{"text": "Hi."}, {"text": "You said hi."}])
    relay = Relay(model, ledger=False)
    relay.connect("shop", shop_url)
    try:
        relay.ask("hi")
        turn = relay.submit("what did I say?").result(timeout=30)
        assert turn.answer == "You said hi."
        sent = [m.text() for m in model.requests[-1].messages if m.role == "user"]
        assert sent[-2:] == ["hi", "what did I say?"]
    finally:
        relay.close()


def test_nobody_can_approve_in_the_background(shop_url: str) -> None:
    model = ScriptedRuntime(
        [{"tool_calls": [{"name": "wipe", "input": {}}]}, {"text": "I could not."}]
    )
    relay = Relay(model, ledger=False)
    wiped: list[bool] = []

    @relay.tool(requires_approval=True)
    def wipe() -> str:
        """Wipes the cache."""
        wiped.append(True)
        return "wiped"

    try:
        turn = relay.submit("wipe it", approval="ask").result(timeout=30)
    finally:
        relay.close()
    assert wiped == [] and turn.tool_results[0].is_error
    assert turn.answer == "I could not."


def test_at_most_four_run_at_once_and_errors_reach_the_handle(shop_url: str) -> None:
    model = ScriptedRuntime([query(ENDLESS)] * MAX_RUNNING)
    relay = Relay(model, ledger=False)
    relay.connect("shop", shop_url)
    try:
        runs = [relay.submit(f"count {i}") for i in range(MAX_RUNNING)]
        with pytest.raises(ConfigurationError, match="at most 4"):
            relay.submit("one more")
        with pytest.raises(ConfigurationError, match="non-empty question"):
            relay.submit("  ")
        for run in runs:
            run.cancel()
        for run in runs:
            run.result(timeout=30)
        assert [run.status for run in runs] == ["cancelled"] * MAX_RUNNING
        # room again; a run whose turn fails says so, and result() raises its error
        failing = relay.submit("which model?", model="no-such-provider:x")
        until(failing.done)
        assert failing.status == "failed"
        with pytest.raises(ConfigurationError):
            failing.result()
    finally:
        relay.close()


def test_an_evaluation_run_in_the_background(tmp_path: Path) -> None:
    from relay_nb.demo.data import build_shop_database
    from relay_nb.eval import load_bank, oracle_script

    bank_path = Path(__file__).parents[2] / "examples" / "shop_questions.yaml"
    bank = load_bank(bank_path)
    bank = bank.model_copy(update={"questions": tuple(q for q in bank.questions if q.sql)[:3]})
    url = build_shop_database(tmp_path / "shop.sqlite").url
    relay = Relay(ScriptedRuntime(by_question=oracle_script(bank)["by_question"]), ledger=False)
    relay.connect("shop", url)
    try:
        run = relay.submit_eval(bank, save=False)
        report = run.result(timeout=60)
        assert run.status == "done" and run.what == f"evaluation of {bank.name}"
        assert report.accuracy == 1.0 and len(report.attempts) == 3

        cancelled = relay.submit_eval(bank, save=False)
        cancelled.cancel()
        until(cancelled.done)
        assert cancelled.status == "cancelled"  # its three questions take longer than that
        with pytest.raises(Cancelled, match="was cancelled"):
            cancelled.result(timeout=30)
    finally:
        relay.close()


def test_closing_the_relay_stops_its_background_runs(shop_url: str) -> None:
    model = ScriptedRuntime([query(ENDLESS)])
    relay = Relay(model, ledger=False)
    relay.connect("shop", shop_url)
    run = relay.submit("count forever")
    until(lambda: len(model.requests) == 1)
    started = time.monotonic()
    relay.close()
    assert time.monotonic() - started < 10 and run.status == "cancelled"
