"""run_turn against a ScriptedRuntime and a real, seeded SQLite database.

The model is scripted; the tools, the guard, the database, pricing and the ledger are real,
so these tests check the loop's wiring, not stand-ins for it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.events import EventAdapter, ThinkingEvent, ToolResultEvent
from relay_nb.agent.ledger import UsageLedger
from relay_nb.agent.loop import TurnResult, run_turn
from relay_nb.agent.services import TurnServices
from relay_nb.agent.settings import TurnSettings
from relay_nb.connectors.results import QueryResult
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.context import ContextItem, ContextRequest, ContextResolver
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import ToolResultPart
from relay_nb.testing.seed import expected_rows
from relay_nb.tools import Tool

N_CUSTOMERS = len(expected_rows("customers"))
COUNT_SQL = "SELECT COUNT(*) AS n FROM customers"


def types(result: TurnResult) -> list[str]:
    return [event.type for event in result.events]


def query(sql: str, call_id: str | None = None) -> dict:
    call: dict = {"name": "query_shop", "input": {"sql": sql}}
    if call_id:
        call["id"] = call_id
    return call


async def test_direct_answer_events_in_order_and_to_callback() -> None:
    runtime = ScriptedRuntime([{"text": "Hello, there are no tools needed."}], stream_chunk_chars=8)
    seen = []
    result = await run_turn("hi", TurnServices(runtime=runtime, on_event=seen.append))
    assert result.answer == "Hello, there are no tools needed."
    assert result.finish_reason == "stop" and result.steps == 1
    assert types(result) == ["thinking", *["text_delta"] * 5, "usage", "done"]
    assert result.events[0] == ThinkingEvent(step="calling_model")
    assert "".join(e.delta for e in result.events if e.type == "text_delta") == result.answer
    assert seen == result.events
    done = result.events[-1]
    assert done.finish_reason == "stop" and done.usage == result.usage
    # the events round-trip through the discriminated union
    assert [EventAdapter.validate_python(e.model_dump()) for e in result.events] == result.events
    assert runtime.requests[0].tools == [] and runtime.requests[0].tool_choice is None


async def test_one_sql_call_keeps_the_dataframe_and_feeds_the_preview_back(
    shop: SQLConnector,
) -> None:
    runtime = ScriptedRuntime(
        [{"tool_calls": [query(COUNT_SQL, "toolu_1")]}, {"text": f"{N_CUSTOMERS} customers"}]
    )
    result = await run_turn(
        "how many customers?", TurnServices(runtime=runtime, tools=shop.tools())
    )
    assert types(result) == [
        "thinking", "usage", "tool_call", "tool_result",
        "thinking", "text_delta", "usage", "done",
    ]  # fmt: skip
    call, tool_result = result.events[2], result.events[3]
    assert call.tool_call_id == "toolu_1" and call.input == {"sql": COUNT_SQL}
    assert tool_result.tool_call_id == "toolu_1" and not tool_result.is_error
    assert "1 row" in tool_result.output and str(N_CUSTOMERS) in tool_result.output
    artifact = result.tool_results[0].artifact
    assert isinstance(artifact, QueryResult) and int(artifact.df.iloc[0]["n"]) == N_CUSTOMERS
    assert result.artifacts == [artifact]
    # the model saw its own call and the preview, tied by its call id
    second = runtime.requests[1]
    assert {t.name for t in second.tools} == {"query_shop", "describe_shop"}
    assert second.tool_choice is not None and second.tool_choice.type == "auto"
    parts = [p for m in second.messages for p in m.parts() if isinstance(p, ToolResultPart)]
    assert [(p.tool_call_id, p.content) for p in parts] == [("toolu_1", tool_result.output)]


async def test_three_chained_calls(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "describe_shop", "input": {"tables": ["customers"]}}]},
            {"tool_calls": [query(COUNT_SQL)]},
            {"tool_calls": [query("SELECT MAX(id) AS top FROM customers")]},
            {"text": "done"},
        ]
    )
    result = await run_turn("chain", TurnServices(runtime=runtime, tools=shop.tools()))
    assert result.finish_reason == "stop" and result.steps == 4 and result.answer == "done"
    assert [c.name for c in result.tool_calls] == ["describe_shop", "query_shop", "query_shop"]
    assert [r.is_error for r in result.tool_results] == [False, False, False]
    assert types(result).count("usage") == 4
    assert len(runtime.requests[3].messages) == 1 + 3 * 2  # user + (call, result) per step


async def test_parallel_calls_in_one_step(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime(
        [
            {"tool_calls": [query(COUNT_SQL, "a"), query("SELECT 1 AS one", "b")]},
            {"text": "both"},
        ]
    )
    result = await run_turn("two", TurnServices(runtime=runtime, tools=shop.tools()))
    assert types(result)[:6] == [
        "thinking", "usage", "tool_call", "tool_call", "tool_result", "tool_result",
    ]  # fmt: skip
    assert [e.tool_call_id for e in result.events if isinstance(e, ToolResultEvent)] == ["a", "b"]
    assert all(isinstance(r.artifact, QueryResult) for r in result.tool_results)


async def test_calls_of_one_step_really_run_concurrently() -> None:
    """Each tool waits for the other: run one after the other, the first would time out."""
    arrived = {"x": asyncio.Event(), "y": asyncio.Event()}

    class Empty(BaseModel):
        pass

    def waiter(me: str, other: str) -> Tool:
        async def handler(_args: Empty) -> str:
            arrived[me].set()
            await arrived[other].wait()
            return f"{me} ok"

        return Tool(name=me, description="", input_model=Empty, handler=handler, timeout_s=1.0)

    runtime = ScriptedRuntime([{"tool_calls": [{"name": "x"}, {"name": "y"}]}, {"text": "fine"}])
    result = await run_turn(
        "q", TurnServices(runtime=runtime, tools=[waiter("x", "y"), waiter("y", "x")])
    )
    assert [(r.content, r.is_error) for r in result.tool_results] == [
        ("x ok", False),
        ("y ok", False),
    ]


async def test_guard_rejection_goes_back_as_tool_error_and_model_corrects(
    shop: SQLConnector,
) -> None:
    runtime = ScriptedRuntime(
        [
            {"tool_calls": [query("DELETE FROM customers", "bad")]},
            {"tool_calls": [query(COUNT_SQL, "good")]},
            {"text": "corrected"},
        ]
    )
    result = await run_turn("delete?", TurnServices(runtime=runtime, tools=shop.tools()))
    assert result.finish_reason == "stop" and result.answer == "corrected"
    rejected, fixed = result.tool_results
    assert rejected.is_error and rejected.artifact is None and not fixed.is_error
    assert rejected.content.startswith("forbidden_statement:")
    parts = [p for m in runtime.requests[1].messages for p in m.parts()]
    errors = [p for p in parts if isinstance(p, ToolResultPart) and p.is_error]
    assert [(p.tool_call_id, p.content) for p in errors] == [("bad", rejected.content)]
    assert int((await shop.aquery(COUNT_SQL)).df.iloc[0]["n"]) == N_CUSTOMERS


async def test_unknown_tool_is_a_tool_error_not_an_exception(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime(
        [{"tool_calls": [{"name": "drop_everything", "id": "x1"}]}, {"text": "sorry"}]
    )
    result = await run_turn("q", TurnServices(runtime=runtime, tools=shop.tools()))
    assert result.finish_reason == "stop"
    outcome = result.tool_results[0]
    assert outcome.is_error and "unknown tool 'drop_everything'" in outcome.content
    assert "query_shop" in outcome.content


async def test_max_steps_returns_the_partial_answer(shop: SQLConnector) -> None:
    step = {"text": "still looking", "tool_calls": [query(COUNT_SQL)]}
    runtime = ScriptedRuntime([step, step, {"text": "never reached"}])
    result = await run_turn(
        "q", TurnServices(runtime=runtime, tools=shop.tools()), TurnSettings(max_steps=2)
    )
    assert result.finish_reason == "max_steps" and result.steps == 2
    assert result.answer == "still looking"
    assert runtime.remaining == 1 and len(result.tool_results) == 2
    assert result.events[-1].type == "done" and result.events[-1].finish_reason == "max_steps"


async def test_retryable_error_is_retried_visibly() -> None:
    runtime = ScriptedRuntime([{"error": {"code": "RATE_LIMITED"}}, {"text": "ok"}])
    result = await run_turn("q", TurnServices(runtime=runtime), TurnSettings(retry_base_s=0.001))
    assert result.finish_reason == "stop" and result.answer == "ok"
    retries = [e for e in result.events if e.type == "thinking" and e.step == "retrying"]
    assert [e.detail for e in retries] == ["waiting 0.001 s after RATE_LIMITED"]
    assert types(result) == ["thinking", "thinking", "text_delta", "usage", "done"]


async def test_retry_honours_retry_after_and_gives_up_after_max_retries() -> None:
    error = {"error": {"code": "PROVIDER_UNAVAILABLE", "retry_after_s": 0.002}}
    runtime = ScriptedRuntime([error, error, error, {"text": "too late"}])
    result = await run_turn(
        "q", TurnServices(runtime=runtime), TurnSettings(max_retries=2, retry_base_s=5)
    )
    details = [e.detail for e in result.events if e.type == "thinking" and e.step == "retrying"]
    assert details == ["waiting 0.002 s after PROVIDER_UNAVAILABLE"] * 2
    assert result.finish_reason == "error" and runtime.remaining == 1
    assert types(result)[-2:] == ["error", "done"]


async def test_non_retryable_error_ends_the_turn_cleanly() -> None:
    runtime = ScriptedRuntime(
        [{"error": {"code": "AUTHENTICATION_FAILED", "message": "check the API key"}}]
    )
    result = await run_turn("q", TurnServices(runtime=runtime))
    assert result.finish_reason == "error" and result.answer == ""
    assert types(result) == ["thinking", "error", "done"]
    error = result.events[1]
    assert error.code == "AUTHENTICATION_FAILED" and error.message == "check the API key"
    assert len(runtime.requests) == 1


async def test_usage_is_summed_and_priced(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime(
        [
            {
                "tool_calls": [query(COUNT_SQL)],
                "usage": {"input_tokens": 1000, "output_tokens": 100},
            },
            {
                "text": "n",
                "usage": {"input_tokens": 2000, "output_tokens": 50, "cache_read_tokens": 1000},
            },
        ],
        model="claude-sonnet-4-6",
    )
    result = await run_turn("q", TurnServices(runtime=runtime, tools=shop.tools()))
    per_call = [e.usage.cost_usd for e in result.events if e.type == "usage"]
    # $3/MTok in, $15/MTok out, $0.30/MTok cache read
    assert per_call == [pytest.approx(0.0045, abs=1e-12), pytest.approx(0.00705, abs=1e-12)]
    assert result.usage.cost_usd == pytest.approx(0.01155, abs=1e-12)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3000, 150)
    assert result.usage.cache_read_tokens == 1000 and not result.usage.estimated
    assert result.model == "claude-sonnet-4-6" and result.warnings == []


async def test_unknown_model_has_no_cost_and_a_warning() -> None:
    runtime = ScriptedRuntime([{"text": "x"}], model="no-such-model")
    result = await run_turn("q", TurnServices(runtime=runtime))
    assert result.usage.cost_usd is None and result.usage.estimated
    assert len(result.warnings) == 1 and "no-such-model" in result.warnings[0]


async def test_ledger_rows_are_appended(shop: SQLConnector, tmp_path: Path) -> None:
    runtime = ScriptedRuntime(
        [
            {"tool_calls": [query(COUNT_SQL)], "usage": {"input_tokens": 10, "output_tokens": 2}},
            {"text": "n", "usage": {"input_tokens": 20, "output_tokens": 3}},
        ],
        model="claude-sonnet-4-6",
    )
    with UsageLedger(tmp_path / "ledger.sqlite") as ledger:
        await run_turn(
            "q",
            TurnServices(
                runtime=runtime,
                tools=shop.tools(),
                accountant=Accountant(ledger=ledger, session_id="s1"),
            ),
            turn_id="t9",
        )
        rows = ledger.rows(session_id="s1")
    assert list(rows["step"]) == [1, 2] and set(rows["turn_id"]) == {"t9"}
    assert list(rows["input_tokens"]) == [10, 20]
    assert list(rows["finish_reason"]) == ["tool_use", "end_turn"]
    assert rows["cost_usd"].tolist() == pytest.approx(
        [10 * 3e-6 + 2 * 15e-6, 20 * 3e-6 + 3 * 15e-6]
    )


class _Notes:
    name = "notes"
    priority = 1

    def __init__(self) -> None:
        self.requests: list[ContextRequest] = []

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        self.requests.append(request)
        return [ContextItem(source="notes", content="Revenue excludes VAT.", priority=1)]


async def test_resolved_context_reaches_the_system_prompt() -> None:
    notes = _Notes()
    runtime = ScriptedRuntime([{"text": "ok"}])
    result = await run_turn(
        "revenue?",
        TurnServices(
            runtime=runtime,
            resolver=ContextResolver([notes]),
            accountant=Accountant(session_id="s"),
        ),
        TurnSettings(context_window=10_000),
        system_prompt="You are an analyst.",
        turn_id="t",
    )
    assert types(result)[:3] == ["thinking", "context_resolved", "thinking"]
    assert result.events[0] == ThinkingEvent(step="resolving_context")
    resolved = result.events[1]
    assert resolved.sources == ["notes"] and resolved.token_estimate > 0
    system = runtime.requests[0].system_text()
    assert system.startswith("You are an analyst.\n\n# Context")
    assert "Revenue excludes VAT." in system
    (request,) = notes.requests
    assert (request.question, request.session_id, request.turn_id) == ("revenue?", "s", "t")
    assert request.budget is not None and 0 < request.budget < 10_000


async def test_abort_before_start_cancels_without_calling_the_model() -> None:
    abort = AbortSignal()
    abort.abort("user pressed stop")
    runtime = ScriptedRuntime([{"text": "unused"}])
    result = await run_turn("q", TurnServices(runtime=runtime), abort=abort)
    assert result.finish_reason == "cancelled" and runtime.requests == []
    assert types(result) == ["thinking", "done"]
