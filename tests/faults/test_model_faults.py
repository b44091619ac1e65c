"""Model faults, whole turns: the real ``Relay`` → ``AnthropicRuntime`` → anthropic SDK → HTTP
against the local stub server, a seeded SQLite shop and a real ledger file.

For every failure the provider can produce (401, 403, 429, 500, 503, 529, a timeout, a dropped
connection, a stream broken mid-answer) each test checks the three promises of issue 8:

(a) the turn ends with one typed ``error`` event — the code DESIGN.md §3 assigns to that
    failure, a short message that says the fix, and neither the API key nor the provider's
    own text in it — or, when a retry succeeds, with the answer;
(b) the same session answers the next question (a tool call on the real database, then the
    answer);
(c) the ledger holds one row per model call made, the failed ones included (step 1,
    ``finish_reason="error:<CODE>"``, tokens and cost a known zero), none lost, none doubled.

Retry waits are configured to 10 ms (``retry_base_s``), never slept for real.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from relay_nb import AbortSignal, Relay
from relay_nb.agent.events import ErrorEvent
from relay_nb.agent.loop import TurnResult
from relay_nb.errors import INVOCATION_ERROR_CODES
from relay_nb.runtime.anthropic import AnthropicRuntime
from relay_nb.testing.anthropic_stub import (
    AnthropicStub,
    Delay,
    DropConnection,
    ErrorReply,
    MessageReply,
    Reply,
    StreamFault,
    ToolUse,
)
from relay_nb.testing.seed import expected_rows

pytestmark = pytest.mark.usefixtures("loopback_model_requests")

API_KEY = "sk-ant-faults-0123456789-SECRET-KEY"
PROVIDER_TEXT = "provider says: your prompt 'who earns most' was refused for key "
MODEL = "claude-sonnet-4-6"  # priced, so a success row has a real cost to compare with
MAX_RETRIES = 2
SHORT_TIMEOUT_S = 0.4
PRODUCTS = len(expected_rows("products"))


@dataclass(frozen=True)
class Fault:
    """One way a model call fails, and what the turn must say about it."""

    reply: Callable[[], Reply]
    code: str
    retryable: bool
    fix: str
    """Words of the message that tell the user what to do."""
    http_status: int | None = None
    timeout_s: float = 10.0


def _error(status: int) -> Callable[[], Reply]:
    return lambda: ErrorReply(status=status, message=PROVIDER_TEXT + API_KEY)


FAULTS: dict[str, Fault] = {
    "401": Fault(_error(401), "AUTHENTICATION_FAILED", False, "check the API key", 401),
    "403": Fault(_error(403), "AUTHENTICATION_FAILED", False, "check the API key", 403),
    "429": Fault(_error(429), "RATE_LIMITED", True, "wait and try again", 429),
    "500": Fault(_error(500), "PROVIDER_UNAVAILABLE", True, "try again shortly", 500),
    "503": Fault(_error(503), "PROVIDER_UNAVAILABLE", True, "try again shortly", 503),
    "529-overloaded": Fault(_error(529), "PROVIDER_UNAVAILABLE", True, "overloaded", 529),
    "timeout": Fault(
        lambda: Delay(5.0, then=MessageReply(text="too late", model=MODEL)),
        "PROVIDER_UNAVAILABLE",
        True,
        "longer timeout",
        timeout_s=SHORT_TIMEOUT_S,
    ),
    "dropped-connection": Fault(DropConnection, "PROVIDER_UNAVAILABLE", True, "check the network"),
    "stream-dropped-mid-answer": Fault(
        lambda: MessageReply(
            text=["There are ", "999 products."],
            model=MODEL,
            stream_fault=StreamFault(after_deltas=1, kind="drop"),
        ),
        "PROVIDER_UNAVAILABLE",
        True,
        "check the network",
    ),
    "stream-overloaded-mid-answer": Fault(
        lambda: MessageReply(
            text=["There are ", "999 products."],
            model=MODEL,
            stream_fault=StreamFault(after_deltas=1, kind="error"),
        ),
        "PROVIDER_UNAVAILABLE",
        True,
        "try again shortly",
    ),
}
RETRYABLE = [name for name, fault in FAULTS.items() if fault.retryable]


@pytest.fixture
def make_relay(
    stub: AnthropicStub, ledger_file, shop_url: str
) -> Iterator[Callable[[float], Relay]]:
    opened: list[Relay] = []

    def make(timeout_s: float) -> Relay:
        runtime = AnthropicRuntime(
            MODEL, api_key=API_KEY, base_url=stub.base_url, timeout=timeout_s
        )
        relay = Relay(
            runtime,
            ledger=ledger_file.path,
            notebook="faults.ipynb",
            max_retries=MAX_RETRIES,
            retry_base_s=0.01,
        )
        opened.append(relay)
        relay.connect("shop", shop_url)
        return relay

    yield make
    for relay in opened:
        relay.close()


def script_next_question(stub: AnthropicStub) -> None:
    """A normal two-call turn: the model queries the shop, then answers."""
    stub.enqueue(
        MessageReply(
            tool_uses=[
                ToolUse(name="query_shop", input={"sql": "SELECT COUNT(*) AS n FROM products"})
            ],
            model=MODEL,
        ),
        MessageReply(text=f"There are {PRODUCTS} products.", model=MODEL),
    )


def assert_next_question_works(relay: Relay, stub: AnthropicStub) -> TurnResult:
    script_next_question(stub)
    turn = relay.ask("and how many products are there?")
    assert turn.finish_reason == "stop", turn.events
    assert turn.answer == f"There are {PRODUCTS} products."
    assert int(turn.df.iloc[0]["n"]) == PRODUCTS  # the tool really ran on the database
    assert not any(isinstance(e, ErrorEvent) for e in turn.events)
    return turn


def assert_secret_free(relay: Relay, turn: TurnResult, ledger_path: Path) -> None:
    shown = json.dumps([e.model_dump(mode="json") for e in turn.events])
    shown += turn.answer + " ".join(turn.warnings) + repr(relay)
    assert API_KEY not in shown and PROVIDER_TEXT not in shown
    assert API_KEY.encode() not in ledger_path.read_bytes()


def assert_success_rows(rows: list[dict], turn: TurnResult) -> None:
    """A normal turn's calls, each once, with the provider's counts and a real cost."""
    mine = [r for r in rows if r["turn_id"] == turn.turn_id]
    assert [r["step"] for r in mine] == [1, 2]
    assert [r["finish_reason"] for r in mine] == ["tool_use", "end_turn"]
    assert all((r["input_tokens"], r["output_tokens"]) == (12, 7) for r in mine)
    assert all(r["cost_usd"] is not None and r["cost_usd"] > 0 for r in mine)
    assert sum(r["cost_usd"] for r in mine) == pytest.approx(turn.usage.cost_usd)


def assert_failed_rows(rows: list[dict], turn: TurnResult, code: str, calls: int) -> None:
    """One row per failed call of ``turn``: step 1, the error code, a known zero spent."""
    failed = [r for r in rows if r["turn_id"] == turn.turn_id and r["finish_reason"] != "end_turn"]
    assert len(failed) == calls
    for row in failed:
        assert row["step"] == 1 and row["finish_reason"] == f"error:{code}"
        assert (row["input_tokens"], row["output_tokens"], row["cost_usd"]) == (0, 0, 0.0)
        assert (row["model"], row["provider"], row["notebook"]) == (
            MODEL,
            "anthropic",
            "faults.ipynb",
        )
        assert row["latency_ms"] is not None and row["latency_ms"] >= 0


@pytest.mark.parametrize("name", list(FAULTS))
def test_a_failing_model_ends_the_turn_with_a_typed_error_and_the_session_goes_on(
    name: str, stub: AnthropicStub, make_relay, ledger_file
) -> None:
    fault = FAULTS[name]
    relay = make_relay(fault.timeout_s)
    calls = MAX_RETRIES + 1 if fault.retryable else 1
    stub.enqueue(*[fault.reply() for _ in range(calls)])

    failed = relay.ask("how many products are there?")

    # (a) a typed error event, then done; the right code, a fix, nothing secret
    assert len(stub.requests) == calls  # retried only when the failure is retryable
    assert failed.finish_reason == "error"
    errors = [e for e in failed.events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and [e.type for e in failed.events][-2:] == ["error", "done"]
    error = errors[0]
    assert error.code in INVOCATION_ERROR_CODES and error.code == fault.code
    assert fault.fix in error.message and len(error.message) < 200
    if fault.http_status is not None:
        assert f"(HTTP {fault.http_status})" in error.message
    retries = [e for e in failed.events if e.type == "thinking" and e.step == "retrying"]
    assert len(retries) == calls - 1
    assert "999 products" not in failed.answer  # text of a broken stream is not an answer
    assert_secret_free(relay, failed, ledger_file.path)

    # (b) the same session answers the next question
    answered = assert_next_question_works(relay, stub)
    assert len(stub.requests) == calls + 2

    # (c) one row per call made, the failed ones included; nothing lost or doubled
    rows = ledger_file.rows(session_id=relay.id)
    assert len(rows) == calls + 2
    assert {r["turn_id"] for r in rows} == {failed.turn_id, answered.turn_id}
    assert_failed_rows(rows, failed, fault.code, calls)
    assert_success_rows(rows, answered)
    assert relay.usage.input_tokens == sum(r["input_tokens"] for r in rows) == 24
    assert_secret_free(relay, answered, ledger_file.path)


@pytest.mark.parametrize("name", RETRYABLE)
def test_a_retry_that_succeeds_gives_the_answer_and_records_every_attempt(
    name: str, stub: AnthropicStub, make_relay, ledger_file
) -> None:
    fault = FAULTS[name]
    relay = make_relay(fault.timeout_s)
    stub.enqueue(*[fault.reply() for _ in range(MAX_RETRIES)])
    stub.enqueue(MessageReply(text=f"There are {PRODUCTS} products.", model=MODEL))

    turn = relay.ask("how many products are there?")

    assert turn.finish_reason == "stop" and turn.answer == f"There are {PRODUCTS} products."
    assert not any(isinstance(e, ErrorEvent) for e in turn.events)
    retries = [e for e in turn.events if e.type == "thinking" and e.step == "retrying"]
    assert len(retries) == MAX_RETRIES and all(fault.code in (e.detail or "") for e in retries)
    assert len(stub.requests) == MAX_RETRIES + 1
    rows = ledger_file.rows(session_id=relay.id)
    assert len(rows) == MAX_RETRIES + 1 and {r["turn_id"] for r in rows} == {turn.turn_id}
    assert_failed_rows(rows, turn, fault.code, MAX_RETRIES)
    (answered,) = [r for r in rows if r["finish_reason"] == "end_turn"]
    assert answered["step"] == 1 and (answered["input_tokens"], answered["output_tokens"]) == (
        12,
        7,
    )
    assert answered["cost_usd"] == pytest.approx(turn.usage.cost_usd)
    assert_secret_free(relay, turn, ledger_file.path)

    assert_next_question_works(relay, stub)
    assert len(ledger_file.rows(session_id=relay.id)) == MAX_RETRIES + 3


def test_a_retry_after_beyond_the_limit_fails_at_once_and_says_how_long(
    stub: AnthropicStub, make_relay, ledger_file
) -> None:
    """A provider asking for a two-minute pause gets a failed turn, not a frozen cell."""
    relay = make_relay(10.0)
    stub.enqueue(ErrorReply(status=429, message=PROVIDER_TEXT, headers={"retry-after": "120"}))

    turn = relay.ask("how many products are there?")

    assert turn.finish_reason == "error" and len(stub.requests) == 1
    (error,) = [e for e in turn.events if isinstance(e, ErrorEvent)]
    assert error.code == "RATE_LIMITED" and "asks to wait 120 s" in error.message
    assert PROVIDER_TEXT not in error.message
    assert_next_question_works(relay, stub)
    rows = ledger_file.rows(session_id=relay.id)
    assert [r["finish_reason"] for r in rows] == ["error:RATE_LIMITED", "tool_use", "end_turn"]


def test_the_retry_hint_of_the_provider_is_followed(
    stub: AnthropicStub, make_relay, ledger_file
) -> None:
    """``retry-after: 0`` makes the wait zero, whatever the backoff would have been."""
    relay = make_relay(10.0)
    relay.configure(retry_base_s=30.0)  # the backoff alone would wait 30 s
    stub.enqueue(
        ErrorReply(status=429, message=PROVIDER_TEXT, headers={"retry-after": "0"}),
        MessageReply(text="ok", model=MODEL),
    )

    turn = relay.ask("how many products are there?")

    assert turn.answer == "ok"
    (retry,) = [e for e in turn.events if e.type == "thinking" and e.step == "retrying"]
    assert retry.detail is not None and retry.detail.startswith("waiting 0 s after RATE_LIMITED")
    rows = ledger_file.rows(session_id=relay.id)
    assert [r["finish_reason"] for r in rows] == ["error:RATE_LIMITED", "end_turn"]


def test_stopping_the_turn_during_a_model_call_records_the_call_as_cancelled(
    stub: AnthropicStub, make_relay, ledger_file
) -> None:
    """The user stops the turn while the provider is still thinking: the turn ends
    ``cancelled`` at once, the abandoned call has its ledger row (its cost unknown: a call
    cut off mid-way may be billed), and the next question is answered."""
    relay = make_relay(10.0)
    stub.enqueue(Delay(10.0, then=MessageReply(text="too late", model=MODEL)))
    abort = AbortSignal()

    def stop_when_asked() -> None:
        deadline = time.monotonic() + 10
        while not stub.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        abort.abort("the user pressed stop")

    stopper = threading.Thread(target=stop_when_asked)
    stopper.start()
    try:
        stopped = relay.ask("how many products are there?", abort=abort)
    finally:
        stopper.join(15)

    assert stopped.finish_reason == "cancelled" and stopped.answer == ""
    assert not any(isinstance(e, ErrorEvent) for e in stopped.events)
    answered = assert_next_question_works(relay, stub)
    rows = ledger_file.rows(session_id=relay.id)
    assert len(rows) == 3
    (cancelled,) = [r for r in rows if r["turn_id"] == stopped.turn_id]
    assert (cancelled["step"], cancelled["finish_reason"]) == (1, "cancelled")
    assert (cancelled["input_tokens"], cancelled["output_tokens"], cancelled["cost_usd"]) == (
        None,
        None,
        None,
    )
    assert_success_rows(rows, answered)
    report = relay.usage_report(by=["finish_reason"]).set_index("finish_reason")
    assert int(report.loc["cancelled", "unknown_cost_calls"]) == 1  # not silently $0
