"""run_turn's control paths: tool failures, approval, usage caps, cancellation, model errors,
and the next_step adapter — scripted model, real SQLite database and real tools."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.approval import ApprovalRequest
from relay_nb.agent.caps import UsageCaps
from relay_nb.agent.loop import TurnResult, run_turn
from relay_nb.agent.next_step import NEXT_STEP
from relay_nb.agent.pricing import PriceTable
from relay_nb.agent.services import TurnServices
from relay_nb.agent.settings import TurnSettings
from relay_nb.agent.tool_calls import CANCELLED_RESULT
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import INVOCATION_ERROR_CODES, ConfigurationError
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import Capabilities, ToolCallPart, ToolResultPart, Usage
from relay_nb.tools import Tool

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
# $1 per 1,000 tokens in and out: cap arithmetic stays readable
PRICES = PriceTable.load().with_prices({"scripted": {"input": 1000, "output": 1000}})


def types(result: TurnResult) -> list[str]:
    return [event.type for event in result.events]


def query(sql: str, call_id: str = "c1") -> dict:
    return {"name": "query_shop", "input": {"sql": sql}, "id": call_id}


def assert_consistent(result: TurnResult) -> None:
    """Every tool call in the conversation has exactly one result, right after it."""
    pending: list[str] = []
    for message in result.messages:
        for part in message.parts():
            if isinstance(part, ToolCallPart):
                assert not pending, "a new call before the previous results"
                pending.append(part.id)
        results = [p.tool_call_id for p in message.parts() if isinstance(p, ToolResultPart)]
        for call_id in results:
            assert call_id == pending.pop(0)
    assert not pending


# -- tool failures go back to the model ---------------------------------------------------------


async def test_database_error_is_a_tool_error_and_the_model_recovers(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime(
        [
            {"tool_calls": [query("SELECT no_such_column FROM customers")]},
            {"tool_calls": [query("SELECT COUNT(*) AS n FROM customers", "c2")]},
            {"text": "counted"},
        ]
    )
    result = await run_turn("q", TurnServices(runtime=runtime, tools=shop.tools()))
    first, second = result.tool_results
    assert first.is_error and "no_such_column" in first.content and first.artifact is None
    assert not second.is_error and result.answer == "counted"
    assert result.finish_reason == "stop" and len(result.frames) == 1
    assert result.queries == ["SELECT COUNT(*) AS n FROM customers LIMIT 201"]
    assert_consistent(result)


async def test_tool_timeout_cancels_the_statement_and_goes_back_as_an_error(
    shop_db: Path,
) -> None:
    slow = SQLConnector("shop", f"sqlite:///{shop_db}", statement_timeout_s=0.5)
    try:
        runtime = ScriptedRuntime([{"tool_calls": [query(ENDLESS)]}, {"text": "too slow"}])
        started = time.perf_counter()
        result = await run_turn("q", TurnServices(runtime=runtime, tools=slow.tools()))
        assert time.perf_counter() - started < 3
        (outcome,) = result.tool_results
        assert outcome.is_error and "longer than 0.5 s" in outcome.content
        assert result.answer == "too slow" and result.finish_reason == "stop"
        assert (await slow.aquery("SELECT COUNT(*) AS n FROM products")).row_count == 1
    finally:
        slow.close()


async def test_tool_level_timeout_of_a_custom_tool() -> None:
    async def wait_forever(seconds: float) -> str:
        """Sleeps."""
        await asyncio.sleep(seconds)
        return "woke"

    tool = Tool.from_function(wait_forever, timeout_s=0.05)
    runtime = ScriptedRuntime(
        [{"tool_calls": [{"name": "wait_forever", "input": {"seconds": 5}}]}, {"text": "ok"}]
    )
    result = await run_turn("q", TurnServices(runtime=runtime, tools=[tool]))
    assert result.tool_results[0].is_error
    assert "did not finish within 0.05 s" in result.tool_results[0].content


# -- approval -----------------------------------------------------------------------------------


def _guarded_tool(calls: list[str]) -> Tool:
    async def delete_cache(name: str) -> str:
        """Deletes a cache entry."""
        calls.append(name)
        return f"deleted {name}"

    return Tool.from_function(delete_cache, requires_approval=True)


async def test_approval_granted_runs_the_tool() -> None:
    ran: list[str] = []
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    runtime = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "delete_cache", "input": {"name": "x"}, "id": "a1"}]},
            {"text": "done"},
        ]
    )
    result = await run_turn(
        "q", TurnServices(runtime=runtime, tools=[_guarded_tool(ran)], approver=approver)
    )
    assert ran == ["x"] and result.tool_results[0].content == "deleted x"
    assert types(result)[:5] == [
        "thinking", "usage", "tool_call", "tool_awaiting_approval", "tool_result",
    ]  # fmt: skip
    waiting = result.events[3]
    assert (waiting.tool_call_id, waiting.name, waiting.input) == (
        "a1",
        "delete_cache",
        {"name": "x"},
    )
    assert asked[0].tool_call_id == "a1" and asked[0].description == "Deletes a cache entry."


@pytest.mark.parametrize("approver", [None, lambda request: False, lambda request: 1 / 0])
async def test_denied_or_no_approver_or_failing_approver_is_a_tool_error(approver) -> None:
    ran: list[str] = []
    runtime = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "delete_cache", "input": {"name": "x"}}]},
            {"text": "I could not delete it."},
        ]
    )
    result = await run_turn(
        "q", TurnServices(runtime=runtime, tools=[_guarded_tool(ran)], approver=approver)
    )
    assert ran == []
    (outcome,) = result.tool_results
    assert outcome.is_error and "delete_cache" in outcome.content
    assert "tool_awaiting_approval" in types(result) and result.finish_reason == "stop"
    assert_consistent(result)


async def test_tools_without_requires_approval_never_ask(shop: SQLConnector) -> None:
    def refuse(request: ApprovalRequest) -> bool:
        raise AssertionError("must not be asked")

    runtime = ScriptedRuntime(
        [{"tool_calls": [query("SELECT 1 AS one FROM customers LIMIT 1")]}, {"text": "ok"}]
    )
    result = await run_turn("q", TurnServices(runtime=runtime, tools=shop.tools(), approver=refuse))
    assert "tool_awaiting_approval" not in types(result)
    assert not result.tool_results[0].is_error


# -- usage caps ---------------------------------------------------------------------------------


async def test_cost_cap_stops_before_the_call_that_would_exceed_it(shop: SQLConnector) -> None:
    usage = Usage(input_tokens=100, output_tokens=10)  # $0.11 per call at the test prices
    runtime = ScriptedRuntime(
        [
            {"tool_calls": [query("SELECT COUNT(*) AS n FROM orders")], "usage": usage},
            {"tool_calls": [query("SELECT COUNT(*) AS n FROM customers", "c2")], "usage": usage},
            {"text": "never reached", "usage": usage},
        ]
    )
    result = await run_turn(
        "q",
        TurnServices(runtime=runtime, tools=shop.tools(), accountant=Accountant(prices=PRICES)),
        TurnSettings(max_cost_usd=0.5, max_output_tokens=100),
        system_prompt="x" * 200,
    )
    assert result.finish_reason == "usage_cap"
    assert result.usage.cost_usd is not None and result.usage.cost_usd <= 0.5
    assert result.usage.cost_usd == pytest.approx(0.11 * len(runtime.requests))
    assert runtime.remaining >= 1  # the call that could have crossed the cap was not made
    assert any("cap of $0.5" in w for w in result.warnings)
    stop = [e for e in result.events if e.type == "thinking" and e.step == "usage_cap"]
    assert len(stop) == 1 and result.events[-1].finish_reason == "usage_cap"
    assert_consistent(result)


async def test_output_room_is_shrunk_to_what_the_cap_can_pay_for() -> None:
    runtime = ScriptedRuntime([{"text": "short"}])
    # ~12 prompt tokens; $0.5 leaves room for about 488 output tokens at $1/1k
    await run_turn(
        "q",
        TurnServices(runtime=runtime, accountant=Accountant(prices=PRICES)),
        TurnSettings(max_cost_usd=0.5, max_output_tokens=4096),
    )
    room = runtime.requests[0].max_output_tokens
    assert room is not None and 256 <= room < 500


async def test_token_cap_and_session_limit_with_prior_spending() -> None:
    runtime = ScriptedRuntime([{"text": "unused"}])
    accountant = Accountant(caps=UsageCaps(max_tokens=1000))
    accountant.meter.tokens = 990  # what the session spent before this turn
    result = await run_turn("q", TurnServices(runtime=runtime, accountant=accountant))
    assert result.finish_reason == "usage_cap" and runtime.requests == []
    assert any("session cap of 1,000 tokens has 10 left" in w for w in result.warnings)


async def test_cost_cap_with_an_unpriced_model_stops_after_the_first_call() -> None:
    runtime = ScriptedRuntime([{"tool_calls": [{"name": "noop"}]}, {"text": "unused"}])

    async def noop() -> str:
        """Does nothing."""
        return "ok"

    result = await run_turn(
        "q",
        TurnServices(
            runtime=runtime,
            tools=[Tool.from_function(noop)],
            accountant=Accountant(prices=PriceTable.load()),
        ),
        TurnSettings(max_cost_usd=1.0),
    )
    assert result.finish_reason == "usage_cap" and len(runtime.requests) == 1
    assert any("cannot be enforced" in w for w in result.warnings)


# -- cancellation -------------------------------------------------------------------------------


async def test_cancel_mid_tool_stops_the_statement_and_the_next_turn_works(
    shop: SQLConnector,
) -> None:
    abort = AbortSignal()
    runtime = ScriptedRuntime([{"tool_calls": [query(ENDLESS)]}, {"text": "unused"}])
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, abort.abort, "user pressed stop")
    started = time.perf_counter()
    result = await run_turn("q", TurnServices(runtime=runtime, tools=shop.tools()), abort=abort)
    assert time.perf_counter() - started < 2.5  # well before the 5 s statement timeout
    assert result.finish_reason == "cancelled" and runtime.remaining == 1
    assert result.tool_results[0].content == CANCELLED_RESULT
    assert types(result)[-2:] == ["tool_result", "done"]
    assert_consistent(result)
    # the conversation goes on from the cancelled turn, and the database is usable
    follow = ScriptedRuntime(
        [{"tool_calls": [query("SELECT COUNT(*) AS n FROM products", "c9")]}, {"text": "20"}]
    )
    after = await run_turn(
        "again", TurnServices(runtime=follow, tools=shop.tools()), history=result.messages
    )
    assert after.answer == "20" and not after.tool_results[0].is_error
    assert_consistent(after)


async def test_cancel_while_waiting_for_approval() -> None:
    abort = AbortSignal()

    async def slow_human(request: ApprovalRequest) -> bool:
        await asyncio.sleep(10)
        return True

    runtime = ScriptedRuntime([{"tool_calls": [{"name": "delete_cache", "input": {"name": "x"}}]}])
    asyncio.get_running_loop().call_later(0.1, abort.abort)
    ran: list[str] = []
    result = await run_turn(
        "q",
        TurnServices(runtime=runtime, tools=[_guarded_tool(ran)], approver=slow_human),
        abort=abort,
    )
    assert result.finish_reason == "cancelled" and ran == []
    assert_consistent(result)


# -- model errors of every code -----------------------------------------------------------------


@pytest.mark.parametrize("code", INVOCATION_ERROR_CODES)
async def test_each_invocation_error_code(code: str) -> None:
    runtime = ScriptedRuntime(
        [{"error": {"code": code, "message": f"{code} happened", "retry_after_s": 0}}] * 4
        + [{"text": "recovered"}]
    )
    result = await run_turn(
        "q", TurnServices(runtime=runtime), TurnSettings(max_retries=3, retry_base_s=0)
    )
    retryable = code in ("RATE_LIMITED", "PROVIDER_UNAVAILABLE")
    if retryable:  # four failures, then the fifth attempt exceeds max_retries=3
        assert result.finish_reason == "error" and len(runtime.requests) == 4
        retries = [e for e in result.events if e.type == "thinking" and e.step == "retrying"]
        assert len(retries) == 3
    else:
        assert result.finish_reason == "error" and len(runtime.requests) == 1
    error = next(e for e in result.events if e.type == "error")
    assert error.code == code and error.message == f"{code} happened"
    assert types(result)[-2:] == ["error", "done"]


async def test_a_retryable_error_then_success_finishes_normally() -> None:
    runtime = ScriptedRuntime(
        [{"error": {"code": "PROVIDER_UNAVAILABLE", "retry_after_s": 0}}, {"text": "fine"}]
    )
    result = await run_turn("q", TurnServices(runtime=runtime), TurnSettings(retry_base_s=0))
    assert result.answer == "fine" and result.finish_reason == "stop"


# -- the next_step adapter ----------------------------------------------------------------------


class Harness(ScriptedRuntime):
    """Declares what the claude CLI declares: it can only fill one forced tool."""

    def capabilities(self) -> Capabilities:
        return super().capabilities().model_copy(update={"single_forced_tool_only": True})


def step(call_id: str, **payload: object) -> dict:
    return {"tool_calls": [{"name": NEXT_STEP, "input": payload, "id": call_id}]}


async def test_next_step_adapter_runs_the_same_turn(shop: SQLConnector) -> None:
    runtime = Harness(
        [
            step("n1", tool="query_shop", input={"sql": "SELECT COUNT(*) AS n FROM products"}),
            step("n2", answer="There are 20 products."),
        ]
    )
    result = await run_turn("how many products?", TurnServices(runtime=runtime, tools=shop.tools()))
    assert result.answer == "There are 20 products." and result.finish_reason == "stop"
    assert types(result) == [
        "thinking", "usage", "tool_call", "tool_result", "thinking", "usage", "done",
    ]  # fmt: skip
    call = result.events[2]
    assert (call.tool_call_id, call.name) == ("n1", "query_shop")
    assert int(result.df.iloc[0]["n"]) == 20
    request = runtime.requests[0]
    assert [t.name for t in request.tools] == [NEXT_STEP]
    assert request.tool_choice is not None and request.tool_choice.name == NEXT_STEP
    spec = request.tools[0]
    assert "query_shop" in spec.description and "describe_shop" in spec.description
    assert spec.input_schema["properties"]["tool"]["enum"] == ["query_shop", "describe_shop"]
    assert_consistent(result)
    assert result.messages[-1].role == "assistant" and result.messages[-1].text() == result.answer


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"tool": "query_shop", "input": {}, "answer": "x"}, "not both"),
        ({}, "set `tool`"),
        ({"tool": "drop_everything"}, "unknown tool"),
        ({"tool": "query_shop", "input": "SELECT 1"}, "must be a JSON object"),
    ],
)
async def test_malformed_next_step_goes_back_as_a_tool_error(
    shop: SQLConnector, payload: dict, problem: str
) -> None:
    runtime = Harness([step("n1", **payload), step("n2", answer="ok")])
    result = await run_turn("q", TurnServices(runtime=runtime, tools=shop.tools()))
    (outcome,) = result.tool_results
    assert outcome.is_error and outcome.tool_call_id == "n1" and problem in outcome.content
    assert result.answer == "ok"
    assert_consistent(result)


async def test_next_step_is_a_reserved_tool_name() -> None:
    async def next_step() -> str:
        """Clashes."""
        return ""

    with pytest.raises(ConfigurationError, match="reserved"):
        await run_turn(
            "q", TurnServices(runtime=ScriptedRuntime([]), tools=[Tool.from_function(next_step)])
        )


async def test_next_step_through_the_real_claude_cli_transport(
    loopback_model_requests: None, shop: SQLConnector, tmp_path: Path, claude_stub: str
) -> None:
    """The ClaudeCodeRuntime (process transport, CLI flags, JSON result parsing) drives a
    whole tool-using turn against a stand-in ``claude`` executable."""
    from relay_nb.runtime.claude_code import ClaudeCodeRuntime

    steps = tmp_path / "steps.json"
    steps.write_text(
        json.dumps(
            [
                {"tool": "query_shop", "input": {"sql": "SELECT COUNT(*) AS n FROM products"}},
                {"answer": "20 products"},
            ]
        )
    )
    runtime = ClaudeCodeRuntime(
        executable=claude_stub,
        env={"STUB_CLAUDE_SCENARIO": "steps", "STUB_CLAUDE_STEPS": str(steps)},
    )
    result = await run_turn("how many products?", TurnServices(runtime=runtime, tools=shop.tools()))
    assert result.answer == "20 products" and result.finish_reason == "stop"
    assert int(result.df.iloc[0]["n"]) == 20
    assert result.usage.cost_usd == pytest.approx(2 * 0.0042)  # the CLI's own reported cost
    assert_consistent(result)


@pytest.fixture(scope="session")
def claude_stub(tmp_path_factory: pytest.TempPathFactory) -> str:
    import shlex
    import stat
    import sys

    stub = Path(__file__).parent.parent / "runtime" / "stub_claude.py"
    wrapper = tmp_path_factory.mktemp("bin") / "claude"
    wrapper.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(stub))} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


# -- hardening: cancellation by task, estimates, truncation, odd runtimes -------------------------


async def test_cancelling_the_turn_task_cancels_its_running_statement(
    shop: SQLConnector,
) -> None:
    runtime = ScriptedRuntime([{"tool_calls": [query(ENDLESS)]}])
    task = asyncio.create_task(run_turn("q", TurnServices(runtime=runtime, tools=shop.tools())))
    await asyncio.sleep(0.3)
    assert shop.engine.pool.checkedout() == 1  # the statement is running
    started = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - started < 2  # not the 5 s statement timeout
    assert shop.engine.pool.checkedout() == 0


async def test_missing_provider_counts_are_estimated_and_count_against_caps() -> None:
    class Silent(ScriptedRuntime):
        """A runtime that reports no token counts at all."""

        async def _invoke(self, request, *, on_text):
            result = await super()._invoke(request, on_text=on_text)
            return result.model_copy(update={"usage": Usage()})

    async def noop() -> str:
        """Does nothing."""
        return "x" * 2000

    runtime = Silent([{"tool_calls": [{"name": "noop"}]}] * 5)
    result = await run_turn(
        "q",
        TurnServices(runtime=runtime, tools=[Tool.from_function(noop)]),
        TurnSettings(max_tokens=3000, max_output_tokens=300),
    )
    assert result.usage.estimated and result.usage.input_tokens > 0
    assert result.finish_reason == "usage_cap" and len(runtime.requests) < 5
    assert all(e.usage.estimated for e in result.events if e.type == "usage")


async def test_a_call_that_overshoots_a_cap_is_reported_and_ends_the_turn() -> None:
    big = Usage(input_tokens=900, output_tokens=900)  # the runtime ignored the output room

    async def noop() -> str:
        """Does nothing."""
        return "ok"

    runtime = ScriptedRuntime([{"tool_calls": [{"name": "noop"}], "usage": big}, {"text": "x"}])
    result = await run_turn(
        "q",
        TurnServices(runtime=runtime, tools=[Tool.from_function(noop)]),
        TurnSettings(max_tokens=1000),
    )
    assert result.finish_reason == "usage_cap" and len(runtime.requests) == 1
    assert any("does not enforce max_output_tokens" in w for w in result.warnings)
    assert any("cap of 1,000 tokens was exceeded (1,800 used)" in w for w in result.warnings)


async def test_an_answer_cut_off_at_the_output_limit_is_flagged() -> None:
    runtime = ScriptedRuntime([{"text": "The top customer is", "stop_reason": "max_tokens"}])
    result = await run_turn("q", TurnServices(runtime=runtime), TurnSettings(max_output_tokens=5))
    assert any("cut off at the output limit (5 tokens)" in w for w in result.warnings)


async def test_a_runtime_raising_a_plain_exception_is_classified_and_retried() -> None:
    class Flaky(ScriptedRuntime):
        fails = 1

        async def invoke(self, request, **kwargs):
            if self.fails:
                self.fails -= 1
                raise ConnectionResetError("peer reset")
            return await super().invoke(request, **kwargs)

    result = await run_turn(
        "q", TurnServices(runtime=Flaky([{"text": "fine"}])), TurnSettings(retry_base_s=0)
    )
    assert result.answer == "fine"
    retry = next(e for e in result.events if e.type == "thinking" and e.step == "retrying")
    assert "PROVIDER_UNAVAILABLE" in (retry.detail or "")

    class Broken(ScriptedRuntime):
        async def invoke(self, request, **kwargs):
            raise ValueError("bug in a custom runtime")

    broken = await run_turn("q", TurnServices(runtime=Broken()))
    assert broken.finish_reason == "error" and [e.type for e in broken.events][-2:] == [
        "error",
        "done",
    ]


async def test_a_retry_after_beyond_the_limit_fails_at_once_with_the_wait() -> None:
    runtime = ScriptedRuntime(
        [{"error": {"code": "RATE_LIMITED", "message": "slow down", "retry_after_s": 600}}]
    )
    started = time.perf_counter()
    result = await run_turn("q", TurnServices(runtime=runtime))
    assert time.perf_counter() - started < 1 and result.finish_reason == "error"
    error = next(e for e in result.events if e.type == "error")
    assert "asks to wait 600 s" in error.message


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"tool": "", "input": None, "answer": "done"}, "answer"),
        ({"tool": "describe_shop", "input": None, "answer": ""}, "call"),
    ],
)
async def test_next_step_reads_empty_fields_as_absent(
    shop: SQLConnector, payload: dict, expected: str
) -> None:
    runtime = Harness([step("n1", **payload), step("n2", answer="ok")])
    result = await run_turn("q", TurnServices(runtime=runtime, tools=shop.tools()))
    if expected == "answer":
        assert result.answer == "done" and result.tool_results == []
    else:
        (outcome,) = result.tool_results
        assert outcome.name == "describe_shop" and not outcome.is_error


async def test_exactly_one_done_event_and_it_is_last(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime(
        [{"tool_calls": [query("SELECT COUNT(*) AS n FROM orders")]}, {"text": "ok"}]
    )
    result = await run_turn("q", TurnServices(runtime=runtime, tools=shop.tools()))
    kinds = types(result)
    assert kinds.count("done") == 1 and kinds[-1] == "done"


async def test_a_retry_after_streamed_text_says_the_partial_answer_is_discarded(
    loopback_model_requests: None,
) -> None:
    from relay_nb.runtime.anthropic import AnthropicRuntime
    from relay_nb.testing.anthropic_stub import AnthropicStub, MessageReply, StreamFault

    with AnthropicStub() as stub:
        stub.enqueue(
            MessageReply(text=["The answer ", "is 42."], stream_fault=StreamFault(after_deltas=1)),
            MessageReply(text=["The answer ", "is 42."]),
        )
        runtime = AnthropicRuntime("m", api_key="sk-test", base_url=stub.base_url, timeout=5)
        result = await run_turn("q", TurnServices(runtime=runtime), TurnSettings(retry_base_s=0))
        await runtime.aclose()
    assert result.answer == "The answer is 42."
    kinds = types(result)
    retry_at = kinds.index("thinking", 1)
    retry = result.events[retry_at]
    assert retry.step == "retrying" and "partial answer streamed so far is discarded" in (
        retry.detail or ""
    )
    after = "".join(e.delta for e in result.events[retry_at:] if e.type == "text_delta")
    assert after == result.answer  # a view that resets on "retrying" shows the right text


async def test_a_tool_asking_for_approval_while_running_waits_outside_its_time_bound() -> None:
    """``ask_approval`` from a handler (a query over its cost threshold): the same approver,
    the event with the reason, and the tool's own timeout paused while the person decides."""
    from relay_nb.tools import ask_approval

    asked: list[ApprovalRequest] = []

    async def slow_yes(request: ApprovalRequest) -> bool:
        asked.append(request)
        await asyncio.sleep(0.6)  # longer than the tool's whole time bound
        return True

    async def costly(arguments) -> str:
        approved, _ = await ask_approval("estimated ≈ 4 TB scanned")
        await asyncio.sleep(0.1)
        return "ran" if approved else "not run"

    from pydantic import BaseModel

    class Empty(BaseModel):
        pass

    tool = Tool("costly", "A costly scan.", Empty, costly, timeout_s=0.4)
    runtime = ScriptedRuntime(
        [{"tool_calls": [{"name": "costly", "input": {}, "id": "k1"}]}, {"text": "done"}]
    )
    result = await run_turn("q", TurnServices(runtime=runtime, tools=[tool], approver=slow_yes))
    (outcome,) = result.tool_results
    assert outcome.content == "ran" and not outcome.is_error
    (request,) = asked
    assert (request.tool_call_id, request.reason) == ("k1", "estimated ≈ 4 TB scanned")
    waiting = [e for e in result.events if e.type == "tool_awaiting_approval"]
    assert [e.reason for e in waiting] == ["estimated ≈ 4 TB scanned"]

    stuck = Tool("costly", "A costly scan.", Empty, costly, timeout_s=0.05)  # still bounded
    runtime = ScriptedRuntime([{"tool_calls": [{"name": "costly", "input": {}}]}, {"text": "x"}])
    result = await run_turn(
        "q", TurnServices(runtime=runtime, tools=[stuck], approver=lambda r: True)
    )
    assert result.tool_results[0].failure == "timeout"


async def test_a_running_tool_s_status_line_comes_before_its_result_from_any_thread() -> None:
    """``report_status`` from a handler: a ``tool_status`` event on the call, before its
    ``tool_result`` — from the event loop (an async tool) and from a worker thread (a sync
    tool's) alike; ``model_spend`` is the turn's priced calls so far. Outside a turn the
    line goes nowhere and there is no spend."""
    from relay_nb.tools import model_spend, report_status

    report_status("nobody listens")  # outside a turn: nothing happens
    assert model_spend() is None
    seen: list[object] = []

    async def on_loop(arguments) -> str:
        seen.append(model_spend())
        report_status("from\nthe   loop")  # one line, whatever the tool wrote
        return "ok"

    def in_a_thread(name: str) -> str:
        """Reports from a worker thread."""
        report_status(f"from a thread: {name}" + "!" * 400)  # bounded
        return "ok"

    from pydantic import BaseModel

    class Empty(BaseModel):
        pass

    tools = [Tool("looped", "Reports.", Empty, on_loop), Tool.from_function(in_a_thread)]
    runtime = ScriptedRuntime(
        [
            {
                "tool_calls": [
                    {"name": "looped", "input": {}, "id": "a"},
                    {"name": "in_a_thread", "input": {"name": "x"}, "id": "b"},
                ],
                "usage": {"input_tokens": 1000, "output_tokens": 1000},
            },
            {"text": "done"},
        ]
    )
    accountant = Accountant(prices=PRICES)
    result = await run_turn("q", TurnServices(runtime=runtime, tools=tools, accountant=accountant))
    statuses = {e.tool_call_id: e.status for e in result.events if e.type == "tool_status"}
    assert statuses["a"] == "from the loop"
    assert statuses["b"].startswith("from a thread: x!") and len(statuses["b"]) == 300
    order = [(e.type, getattr(e, "tool_call_id", "")) for e in result.events]
    for call_id in ("a", "b"):
        assert order.index(("tool_status", call_id)) < order.index(("tool_result", call_id))
    (spend,) = seen  # $1 per 1,000 tokens: the call that asked for the tools cost $2
    assert spend.cost_usd == pytest.approx(2.0) and spend.simulated and not spend.estimated
