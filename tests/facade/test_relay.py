"""The Relay facade: connect, skills, tools, sync ask in scripts and inside a running loop,
Ctrl-C cancelling a turn, and the default session — scripted model, real SQLite."""

from __future__ import annotations

import _thread
import asyncio
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine

import relay_nb
from relay_nb import ConfigurationError, Relay, ScriptedRuntime, SQLConnector
from relay_nb.testing.seed import seed_database

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"


@pytest.fixture(scope="module")
def shop_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('facade') / 'shop.sqlite'}"
    seed_database(url)
    return url


def query(sql: str) -> dict:
    return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]}


def test_connect_ask_and_read_the_turn(shop_url: str) -> None:
    model = ScriptedRuntime([query("SELECT COUNT(*) AS n FROM products"), {"text": "20"}])
    relay = Relay(model, ledger=False)
    relay.connect("shop", shop_url, tables=["products"], row_limit=50)
    turn = relay.ask("how many products?")
    assert isinstance(turn, relay_nb.Turn)
    assert turn.answer == "20" and int(turn.df.iloc[0]["n"]) == 20
    assert turn.queries == ["SELECT COUNT(*) AS n FROM products LIMIT 51"]
    assert [m.role for m in relay.history] == ["user", "assistant", "tool", "assistant"]
    assert relay.usage.total_tokens == turn.usage.total_tokens
    relay.reset()
    assert relay.history == [] and relay.usage.total_tokens > 0
    relay.close()


async def test_sync_ask_works_inside_a_running_event_loop(shop_url: str) -> None:
    relay = Relay(ScriptedRuntime([{"text": "from inside a loop"}]), ledger=False)
    relay.connect("shop", shop_url)
    assert relay.ask("q").answer == "from inside a loop"  # the notebook case
    assert (await relay.ask_async("again")).finish_reason == "error"  # script exhausted
    await relay.aclose()


def test_ctrl_c_cancels_the_turn_and_its_query_then_the_session_goes_on(shop_url: str) -> None:
    model = ScriptedRuntime([query(ENDLESS)])
    relay = Relay(model, ledger=False)
    shop = relay.connect("shop", shop_url, statement_timeout_s=10)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt) as stopped:
        relay.ask("slow question")
    assert time.perf_counter() - started < 3  # not the 10 s statement timeout
    # shown by IPython as one line, not a traceback through the loop thread
    assert stopped.value._render_traceback_()[0].startswith("cancelled: the call was stopped")
    (turn,) = relay.turns
    assert turn.finish_reason == "cancelled" and shop.engine.pool.checkedout() == 0
    assert model.remaining == 0 and len(model.requests) == 1  # no model call after Ctrl-C
    model.add(query("SELECT COUNT(*) AS n FROM customers"), {"text": "50"})
    assert relay.ask("how many customers?").answer == "50"
    relay.close()


def test_connect_accepts_an_engine_or_a_connector_and_reconnecting_replaces(
    shop_url: str,
) -> None:
    relay = Relay(ScriptedRuntime(), ledger=False)
    first = relay.connect("shop", create_engine(shop_url))
    relay.skill("sales", prompt="Revenue questions.", connectors=["shop"])
    second = relay.connect("shop", SQLConnector("shop", shop_url))
    assert relay.connectors == {"shop": second} and first is not second
    assert "sales" in relay.skills  # the skill survives a reconnect
    with pytest.raises(ConfigurationError, match="id is 'other', not 'shop'"):
        relay.connect("shop", SQLConnector("other", shop_url))
    relay.disconnect("shop")
    assert relay.connectors == {} and "sales" not in relay.skills
    relay.close()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (42, "not int"),
        ({"orders": [1, 2]}, "a mapping only of table names to DataFrames"),
        ("postgresql+asyncpg://u:pw@h/db", "pip install 'relay-nb[postgres]'"),
    ],
)
def test_connect_errors_say_what_to_do(target: object, message: str) -> None:
    relay = Relay(ScriptedRuntime(), ledger=False)
    with pytest.raises(ConfigurationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        relay.connect("x", target)  # type: ignore[arg-type]
    assert relay.connectors == {}


def test_connect_names_the_options_a_connector_takes(shop_url: str) -> None:
    relay = Relay(ScriptedRuntime(), ledger=False)
    with pytest.raises(
        ConfigurationError, match="the sql connector does not take collections; it "
    ):
        relay.connect("shop", shop_url, collections=["orders"])
    assert relay.connectors == {}


def test_skills_and_tools_from_cells_can_be_redefined(shop_url: str) -> None:
    model = ScriptedRuntime(
        [{"tool_calls": [{"name": "shout", "input": {"text": "hi"}}]}, {"text": "done"}]
    )
    relay = Relay(model, ledger=False)
    relay.connect("shop", shop_url)

    @relay.tool
    def shout(text: str) -> str:
        """Upper-cases text."""
        return text.upper()

    @relay.tool  # the cell run again
    def shout(text: str) -> str:  # noqa: F811
        """Upper-cases text, twice."""
        return text.upper() * 2

    relay.skill("loud", prompt="Be loud.", connectors=["shop"], tools=["shout"], tier="fast")
    relay.skill("loud", prompt="Be louder.", connectors=["shop"], tools=["shout"], tier="fast")
    with pytest.raises(ConfigurationError, match="unknown connector 'shpo'"):
        relay.skill("typo", prompt="x", connectors=["shpo"])
    turn = relay.ask("shout hi", skill="loud")
    assert turn.tool_results[0].content == "HIHI"
    assert "Be louder." in model.requests[0].system_text()
    relay.close()


def test_the_default_relay_is_one_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    import relay_nb.facade.default as facade

    monkeypatch.setattr(facade, "_default", None)
    monkeypatch.setattr(facade, "_created_with", {})
    assert facade.existing_default_relay() is None  # asking builds nothing
    first = relay_nb.default_relay(ScriptedRuntime(), ledger=False)
    assert relay_nb.default_relay() is first and facade.existing_default_relay() is first
    assert relay_nb.default_relay(ledger=False) is first  # a re-run: test_default_relay.py
    with pytest.warns(DeprecationWarning, match="now relay_nb.default_relay"):
        assert relay_nb.session() is first  # the former name, for a release
    first.close()


def test_the_default_ledger_lives_under_the_data_dir() -> None:
    relay = Relay(ScriptedRuntime([{"text": "x"}]))
    ledger = relay._engine.accountant.ledger
    assert ledger is not None and "relay_nb_data_" in ledger.url
    relay.close()


def test_a_sync_call_from_inside_relays_loop_is_refused_with_the_fix(shop_url: str) -> None:
    relay = Relay(ScriptedRuntime([{"text": "inner"}]), ledger=False)

    async def nested() -> None:
        relay.ask("inner question")

    with pytest.raises(ConfigurationError, match="use the async form"):
        relay_nb.facade.loop_thread.run_sync(nested())


def test_relay_needs_a_model_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("RELAY_MODEL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    relay = Relay(ledger=False)
    with pytest.raises(ConfigurationError, match="no model is configured"):
        relay.ask("q")
    asyncio.run(relay.aclose())


def test_work_handed_to_the_caller_runs_on_the_waiting_thread(shop_url: str) -> None:
    from relay_nb.facade.loop_thread import call_in_caller

    seen: list[str] = []

    async def where() -> str:
        """Says which thread runs caller work."""
        name = await call_in_caller(lambda: threading.current_thread().name)
        seen.append(threading.current_thread().name)
        return name

    model = ScriptedRuntime([{"tool_calls": [{"name": "where", "input": {}}]}, {"text": "ok"}])
    relay = Relay(model, ledger=False)
    relay.tool(where)
    turn = relay.ask("which thread?")
    assert turn.tool_results[0].content == threading.main_thread().name
    assert seen == ["relay_nb-loop"]  # the tool itself ran on relay_nb's loop thread


def test_ctrl_c_in_work_handed_to_the_caller_cancels_the_turn_not_the_loop(
    shop_url: str,
) -> None:
    """An input() prompt (or an approval wait) on the caller's thread is interrupted: the
    KeyboardInterrupt goes on in the caller at once, the turn ends cancelled, and relay_nb's
    loop thread survives it (it used to die, after a 10 s wait)."""
    from relay_nb.facade.loop_thread import CallerInterrupted, LoopThread, call_in_caller

    ran: list[str] = []

    def prompt() -> str:
        raise KeyboardInterrupt  # Ctrl-C while the prompt waits

    async def approver(request) -> bool:
        try:
            return await call_in_caller(prompt)
        except CallerInterrupted:  # never the KeyboardInterrupt itself
            await asyncio.sleep(5)  # the turn's abort cancels this wait
            return False

    model = ScriptedRuntime([{"tool_calls": [{"name": "wipe", "input": {}}]}, {"text": "ok"}])
    relay = Relay(model, ledger=False, approver=approver)

    @relay.tool(requires_approval=True)
    def wipe() -> str:
        """Wipes."""
        ran.append("wipe")
        return "wiped"

    loop = LoopThread.get()
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        relay.ask("wipe it")
    assert time.perf_counter() - started < 2
    (turn,) = relay.turns
    assert turn.finish_reason == "cancelled" and ran == []
    assert LoopThread.get() is loop and loop.thread.is_alive()
    assert relay.ask("next").answer == "ok"  # the session goes on
    relay.close()


def test_kernel_exit_closes_every_live_sessions_connectors(
    shop_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import weakref

    from relay_nb.facade import default as facade

    relay = Relay(ScriptedRuntime(), ledger=False)
    assert relay in facade.open_relays
    monkeypatch.setattr(facade, "open_relays", weakref.WeakSet([relay]))  # leave others alone
    shop = relay.connect("shop", shop_url)
    shop.query("SELECT 1 AS one")  # type: ignore[attr-defined]
    assert shop.engine.pool.checkedin() == 1  # type: ignore[attr-defined]
    facade._close_all_at_exit()  # what atexit runs when the kernel shuts down
    assert shop.engine.pool.checkedin() == 0  # type: ignore[attr-defined]
    assert relay.connectors == {}


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the point
def test_a_dead_loop_thread_fails_the_waiting_call_instead_of_hanging():
    """SystemExit raised in a loop callback ends the loop thread; the caller must not wait on
    a future nobody will complete, and the next call gets a new loop."""
    import sys

    from relay_nb.errors import RelayError
    from relay_nb.facade.loop_thread import LoopThread

    doomed = LoopThread()

    async def kill_the_loop() -> None:
        asyncio.get_running_loop().call_soon(sys.exit, 1)
        await asyncio.Event().wait()

    with pytest.raises(RelayError, match="event loop stopped unexpectedly"):
        doomed.run(kill_the_loop())
    assert not doomed.thread.is_alive()

    async def answer() -> int:
        return 42

    assert LoopThread.get().run(answer()) == 42


def test_a_turn_as_a_cells_last_line_is_one_line(shop_url: str) -> None:
    from IPython.lib.pretty import pretty

    model = ScriptedRuntime([query("SELECT COUNT(*) AS n FROM products"), {"text": "20 " * 60}])
    relay = Relay(model, ledger=False)
    relay.connect("shop", shop_url, tables=["products"])
    turn = relay.ask("how many products?")
    line = repr(turn)
    assert pretty(turn) == line and "\n" not in line and len(line) < 240
    assert line.startswith("TurnResult(question='how many products?', answer='20 20")
    assert "finish_reason='stop', steps=2, queries=1" in line
    relay.close()
