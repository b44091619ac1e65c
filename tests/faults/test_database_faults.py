"""Database faults, whole turns: ``Relay`` with a scripted model, a SQL connector on the
suite's private PostgreSQL cluster (see conftest.py), and a real ledger file.

The cluster is really stopped (``pg_ctl stop -m immediate``: every backend killed, as in a
crash) while a query runs, really down while one is asked for, and its pool really held. In
each case the tool fails with an error the model sees and can pass on — naming the problem
(connection lost / cannot connect / no free connection) and the fix — and never with the
password of the URL; the turn itself finishes, the same session answers the next question
once the database is back, and the ledger has every model call of both turns.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from relay_nb import Relay, ScriptedRuntime
from relay_nb.agent.loop import TurnResult
from relay_nb.errors import ConnectorError
from relay_nb.runtime.types import InvocationRequest, ToolResultPart
from relay_nb.testing.seed import expected_rows

MODEL = "claude-haiku-4-5"
ENDLESS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) AS n FROM c"
)
COUNT = "SELECT COUNT(*) AS n FROM products"
PRODUCTS = len(expected_rows("products"))


def query(sql: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]}


def relay_what_the_tool_said(request: InvocationRequest) -> dict[str, Any]:
    """The model's answer is the last tool result it was shown: proves what it saw."""
    results = [p for m in request.messages for p in m.parts() if isinstance(p, ToolResultPart)]
    last = results[-1]
    return {"text": f"{'ERROR' if last.is_error else 'OK'}: {last.content}"}


@pytest.fixture
def make_relay(ledger_file) -> Iterator[Callable[..., tuple[Relay, ScriptedRuntime]]]:
    opened: list[Relay] = []

    def make(target: str | sa.Engine, **connect: Any) -> tuple[Relay, ScriptedRuntime]:
        runtime = ScriptedRuntime(model=MODEL)
        relay = Relay(runtime, ledger=ledger_file.path, notebook="faults.ipynb")
        opened.append(relay)
        relay.connect("shop", target, **connect)
        return relay, runtime

    yield make
    for relay in opened:
        relay.close()


def ask_count(relay: Relay, runtime: ScriptedRuntime, question: str) -> TurnResult:
    """A normal question: one query, the answer; it must work."""
    runtime.add(query(COUNT), relay_what_the_tool_said)
    turn = relay.ask(question)
    assert turn.finish_reason == "stop" and not turn.tool_results[0].is_error, turn.events
    assert int(turn.df.iloc[0]["n"]) == PRODUCTS
    return turn


def assert_tool_error_seen(turn: TurnResult, *phrases: str, password: str) -> str:
    """The turn went on after the failed tool: the model saw the error and answered."""
    assert turn.finish_reason == "stop", turn.events
    (outcome,) = turn.tool_results
    assert outcome.is_error and outcome.artifact is None
    for phrase in phrases:
        assert phrase in outcome.content, outcome.content
    assert turn.answer == f"ERROR: {outcome.content}"
    shown = json.dumps([e.model_dump(mode="json") for e in turn.events]) + turn.answer
    assert password not in shown
    assert not any(e.type == "error" for e in turn.events)  # a tool error, not a turn error
    return outcome.content


def assert_ledger(ledger_file, relay: Relay, *turns: TurnResult) -> None:
    """Two model calls per turn (query, answer), each recorded once."""
    rows = ledger_file.rows(session_id=relay.id)
    assert len(rows) == 2 * len(turns)
    for turn in turns:
        mine = [(r["step"], r["finish_reason"]) for r in rows if r["turn_id"] == turn.turn_id]
        assert mine == [(1, "tool_use"), (2, "end_turn")]
    assert all(r["cost_usd"] is not None and r["model"] == MODEL for r in rows)


def test_database_stopped_mid_query_is_a_tool_error_and_the_pool_recovers(
    pg, make_relay, ledger_file
) -> None:
    relay, runtime = make_relay(pg.url, statement_timeout_s=20)
    before = ask_count(relay, runtime, "how many products?")  # warm: schema and pool
    engine = relay.connectors["shop"].engine
    idle = [engine.connect() for _ in range(3)]  # so the crash leaves dead ones in the pool
    for connection in idle:
        connection.close()
    assert engine.pool.checkedin() >= 3

    def pull_the_plug() -> None:
        pg.wait_for_query("RECURSIVE")
        pg.stop("immediate")

    runtime.add(query(ENDLESS), relay_what_the_tool_said)
    stopper = threading.Thread(target=pull_the_plug)
    stopper.start()
    try:
        lost = relay.ask("count to infinity")
    finally:
        stopper.join(30)
    assert_tool_error_seen(
        lost, "connection to 'shop' was lost", "Check that the database is up", password=pg.password
    )
    assert not pg.running()

    pg.start()
    after = ask_count(relay, runtime, "how many products now?")  # stale ones are replaced
    runtime.add(*[query(COUNT)] * 3, *[relay_what_the_tool_said] * 3)
    again = relay.ask_many(["one", "two", "three"], concurrency=3)
    assert [t.answer.startswith("OK:") for t in again] == [True] * 3, [t.answer for t in again]
    assert len(relay.turns) == 3
    assert_ledger(ledger_file, relay, before, lost, after, *again)


@pytest.mark.parametrize("schema_cached", [True, False])
def test_a_query_while_the_database_is_down_says_it_cannot_connect(
    schema_cached: bool, pg, make_relay, ledger_file
) -> None:
    """Down after a first answer (schema cached), or down from the start (connecting fails
    with the cause; connected anyway with check=False, nothing read yet): either way a clear
    "cannot connect", at once, not a hang."""
    turns = []
    if schema_cached:
        relay, runtime = make_relay(pg.url, statement_timeout_s=20)
        turns.append(ask_count(relay, runtime, "how many products?"))
        pg.stop("fast")
    else:
        pg.stop("fast")
        with pytest.raises(ConnectorError, match="cannot connect to 'shop'"):
            make_relay(pg.url, statement_timeout_s=20)  # connecting checks, and says why
        relay, runtime = make_relay(pg.url, statement_timeout_s=20, check=False)

    runtime.add(query(COUNT), relay_what_the_tool_said)
    down = relay.ask("how many products are there?")
    message = assert_tool_error_seen(
        down,
        "cannot connect to 'shop'",
        "Connection refused",
        "Check that the database server is running",
        password=pg.password,
    )
    assert f"127.0.0.1:{pg.port}/shop" in message  # which server: the URL, password masked
    schema_skipped = "context source 'schema:shop' failed" in " ".join(down.warnings)
    assert schema_skipped is not schema_cached  # no schema to show the model: said so

    pg.start()
    turns += [down, ask_count(relay, runtime, "and now?")]
    assert_ledger(ledger_file, relay, *turns)


def test_a_held_pool_fails_the_tool_within_the_pool_timeout(pg, make_relay, ledger_file) -> None:
    """Every connection of a one-connection pool is taken: the tool says so instead of
    waiting, and works again once the connection is back."""
    engine = sa.create_engine(
        pg.url, pool_size=1, max_overflow=0, pool_timeout=0.5, pool_pre_ping=True
    )
    try:
        relay, runtime = make_relay(engine, statement_timeout_s=20)
        before = ask_count(relay, runtime, "how many products?")
        held = engine.connect()  # e.g. another part of the notebook using the same engine
        try:
            runtime.add(query(COUNT), relay_what_the_tool_said)
            starved = relay.ask("how many products are there?")
        finally:
            held.close()
        assert_tool_error_seen(
            starved,
            "no free connection to 'shop'",
            "pool_size=1",
            "larger pool_size",
            password=pg.password,
        )
        after = ask_count(relay, runtime, "and now?")
        assert_ledger(ledger_file, relay, before, starved, after)
    finally:
        engine.dispose()


def test_concurrent_questions_on_a_small_pool_fail_clearly_not_hang(
    pg, make_relay, ledger_file
) -> None:
    """ask_many with two long queries and one connection: one query runs (and meets its
    statement timeout), the other gets no connection and says so; both turns finish."""
    engine = sa.create_engine(
        pg.url, pool_size=1, max_overflow=0, pool_timeout=0.5, pool_pre_ping=True
    )
    try:
        relay, runtime = make_relay(engine, statement_timeout_s=2)
        warm = ask_count(relay, runtime, "warm up")
        runtime.add(
            query(ENDLESS), query(ENDLESS), relay_what_the_tool_said, relay_what_the_tool_said
        )

        turns = relay.ask_many(["count to infinity", "count to infinity, again"], concurrency=2)

        assert all(t.finish_reason == "stop" for t in turns)
        outcomes = sorted(
            "no connection" if a.startswith("ERROR: no free connection to 'shop'")
            else "timed out" if a.startswith("ERROR: the query ran longer than 2 s")
            else a
            for a in (t.answer for t in turns)
        )  # fmt: skip
        assert outcomes == ["no connection", "timed out"]
        assert engine.pool.checkedout() == 0  # both connections handed back
        after = ask_count(relay, runtime, "and now?")
        assert_ledger(ledger_file, relay, warm, *turns, after)
    finally:
        engine.dispose()
