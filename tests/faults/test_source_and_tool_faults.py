"""Faults inside the turn that are not the model's or the database's: a context source that
hangs or raises, and a custom Python tool that raises — whole turns through ``Relay`` with a
scripted model, the seeded SQLite shop and a real ledger file.

DESIGN.md §5: a failing or slow context source is logged and skipped, never fatal; the turn
notes it in its warnings. DESIGN.md §6 (the loop's failure policy): a failing tool is never
fatal — its error goes back to the model as a tool result, short, without a traceback or a
secret, and the model answers from it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.agent.loop import TurnResult
from relay_nb.context import ContextItem, ContextRequest
from relay_nb.errors import ConnectorError
from relay_nb.runtime.types import InvocationRequest, ToolResultPart

MODEL = "claude-haiku-4-5"
SOURCE_SECRET = "row 17 of payroll: alice earns 250000"
NOTE = "Revenue excludes VAT."


class Hanging:
    """Never answers (until cancelled): a stuck service behind a context source."""

    name = "hanging"
    priority = 30
    timeout_s = 0.2

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        self.started += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


class Raising:
    name = "raising"
    priority = 20

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        raise RuntimeError(f"cannot read notes: {SOURCE_SECRET}")


class Notes:
    name = "notes"
    priority = 10

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        return [ContextItem(source="notes", content=NOTE, priority=self.priority)]


def answer_from_prompt(request: InvocationRequest) -> dict[str, Any]:
    """Says which context the model was shown."""
    system = request.system_text()
    return {"text": f"notes={NOTE in system} secret={SOURCE_SECRET in system}"}


def answer_from_tool(request: InvocationRequest) -> dict[str, Any]:
    """The model's answer is the last tool result it was shown."""
    results = [p for m in request.messages for p in m.parts() if isinstance(p, ToolResultPart)]
    last = results[-1]
    return {"text": f"{'ERROR' if last.is_error else 'OK'}: {last.content}"}


@pytest.fixture
def relay(ledger_file, shop_url: str) -> Iterator[Relay]:
    session = Relay(ScriptedRuntime(model=MODEL), ledger=ledger_file.path, notebook="faults")
    session.connect("shop", shop_url)
    yield session
    session.close()


def runtime_of(relay: Relay) -> ScriptedRuntime:
    runtime = relay.settings.model  # the session's model: the runtime object it was given
    assert isinstance(runtime, ScriptedRuntime)
    return runtime


def assert_one_row_per_call(ledger_file, relay: Relay, *turns: TurnResult) -> None:
    rows = ledger_file.rows(session_id=relay.id)
    assert len(rows) == sum(t.steps for t in turns)
    for turn in turns:
        steps = [r["step"] for r in rows if r["turn_id"] == turn.turn_id]
        assert steps == list(range(1, turn.steps + 1))


# -- context sources ---------------------------------------------------------------------------


def test_a_hanging_and_a_raising_context_source_are_skipped_with_a_note(
    relay: Relay, ledger_file
) -> None:
    hanging, raising = Hanging(), Raising()
    for source in (hanging, raising, Notes()):
        relay.add_source(source)
    runtime_of(relay).add(answer_from_prompt, answer_from_prompt)

    first = relay.ask("what does revenue include?")
    second = relay.ask("and again?")

    for turn in (first, second):
        assert turn.finish_reason == "stop" and turn.answer == "notes=True secret=False"
        assert not any(e.type == "error" for e in turn.events)
        (resolved,) = [e for e in turn.events if e.type == "context_resolved"]
        assert "notes" in resolved.sources and "schema:shop" in resolved.sources
        assert not {"hanging", "raising"} & set(resolved.sources)
        notes = " ".join(turn.warnings)
        assert "context source 'hanging' did not answer within its timeout" in notes
        assert "context source 'raising' failed (RuntimeError) and was skipped" in notes
        shown = notes + json.dumps([e.model_dump(mode="json") for e in turn.events])
        assert SOURCE_SECRET not in shown  # a source's error text can quote data
    assert hanging.started == hanging.cancelled == 2  # cut off each time, nothing left running
    assert_one_row_per_call(ledger_file, relay, first, second)


# -- tools ---------------------------------------------------------------------------------------


def _deep_failure(depth: int, secret: str) -> float:
    if depth:
        return _deep_failure(depth - 1, secret)
    raise ZeroDivisionError(f"cannot divide the margin (key {secret}) " + "x" * 5000)


@pytest.mark.parametrize("kind", ["sync", "async", "relay-error"])
def test_a_raising_tool_is_a_short_tool_error_the_model_sees_and_the_session_goes_on(
    kind: str, relay: Relay, ledger_file, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "wk-live-0123456789abcdef"
    monkeypatch.setenv("WAREHOUSE_API_KEY", secret)  # a credential the process holds

    if kind == "sync":

        def margin(order_id: int) -> float:
            """Margin of one order."""
            if order_id < 0:
                return _deep_failure(20, secret)
            return 0.25

    elif kind == "async":

        async def margin(order_id: int) -> float:
            """Margin of one order."""
            await asyncio.sleep(0)
            if order_id < 0:
                return _deep_failure(20, secret)
            return 0.25

    else:

        def margin(order_id: int) -> float:
            """Margin of one order."""
            if order_id < 0:
                raise ConnectorError(f"the warehouse refused key {secret}; use a positive id")
            return 0.25

    relay.tool(margin)
    call = {"name": "margin", "input": {"order_id": -1}}
    runtime_of(relay).add({"tool_calls": [call]}, answer_from_tool)

    failed = relay.ask("what is the margin of order -1?")

    assert failed.finish_reason == "stop"
    assert not any(e.type == "error" for e in failed.events)  # a tool error, not a turn error
    (outcome,) = failed.tool_results
    assert outcome.is_error and failed.answer == f"ERROR: {outcome.content}"
    (result_event,) = [e for e in failed.events if e.type == "tool_result"]
    assert result_event.is_error and result_event.output == outcome.content
    if kind == "relay-error":  # a RelayError's message is written for the reader: as is
        assert outcome.content == "the warehouse refused key [REDACTED]; use a positive id"
    else:
        assert outcome.content.startswith("margin failed: ZeroDivisionError: cannot divide")
        assert "[REDACTED]" in outcome.content
    shown = json.dumps([e.model_dump(mode="json") for e in failed.events]) + failed.answer
    assert secret not in shown
    assert "Traceback" not in shown and 'File "' not in shown and "_deep_failure" not in shown
    assert len(outcome.content) <= 1000  # short: the 5,000-character message is clipped

    runtime_of(relay).add(
        {"tool_calls": [{"name": "margin", "input": {"order_id": 7}}]}, answer_from_tool
    )
    fixed = relay.ask("and of order 7?")
    assert fixed.finish_reason == "stop" and fixed.answer == "OK: 0.25"
    assert_one_row_per_call(ledger_file, relay, failed, fixed)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_tool_calling_sys_exit_is_a_tool_error_not_a_dead_loop(
    kind: str, relay: Relay, ledger_file
) -> None:
    """asyncio re-raises SystemExit out of the event loop, which would kill relay_nb's loop
    thread and leave ``ask`` waiting forever; the tool must turn it into an error instead."""
    import sys
    import threading

    if kind == "sync":

        def quit_now(code: int) -> str:
            """Exits."""
            sys.exit(code)

    else:

        async def quit_now(code: int) -> str:
            """Exits."""
            sys.exit(code)

    relay.tool(quit_now)
    runtime_of(relay).add(
        {"tool_calls": [{"name": "quit_now", "input": {"code": 3}}]}, answer_from_tool
    )
    outcome: list[Any] = []
    asker = threading.Thread(target=lambda: outcome.append(relay.ask("quit?")), daemon=True)
    asker.start()
    asker.join(timeout=30)
    assert not asker.is_alive(), "Relay.ask hung after a tool called sys.exit()"
    (failed,) = outcome
    assert failed.finish_reason == "stop"
    assert failed.answer.startswith("ERROR: quit_now")
    assert "sys.exit" in failed.answer

    runtime_of(relay).add({"text": "still here"})
    after = relay.ask("still there?")
    assert after.answer == "still here"
    assert_one_row_per_call(ledger_file, relay, failed, after)
