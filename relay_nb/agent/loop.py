"""``run_turn``: one question → model ↔ tools loop → answer, with every step observable.

The loop is deliberately plain: invoke the runtime, run whatever tools the model asked for
(concurrently within a step), feed the results back, repeat until the model answers or the
step limit is hit. Everything that happens is emitted as an :mod:`~relay_nb.agent.events`
event — to ``on_event`` as it happens and into ``TurnResult.events`` — so a notebook view, a
log and a test all see the same sequence.

Failure policy: a failing *tool* is never fatal (its error goes back to the model as a tool
result it can correct itself from); a failing *model call* is retried when the runtime says
it is retryable, and otherwise ends the turn cleanly with an ``error`` event and
``finish_reason="error"`` — ``run_turn`` returns, it does not raise. Only configuration
mistakes (which no retry can fix) and task cancellation propagate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.agent.events import (
    ContextResolvedEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    TextDeltaEvent,
    ThinkingEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from relay_nb.agent.ledger import LedgerRow, UsageLedger
from relay_nb.agent.pricing import PriceTable, price_usage
from relay_nb.context import ContextRequest, ContextResolver, allocate_budget, render_context
from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.base import ModelRuntime
from relay_nb.runtime.types import (
    InvocationRequest,
    InvocationResult,
    Message,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
)
from relay_nb.tools import Tool, ToolResult

__all__ = ["FinishReason", "ToolOutcome", "TurnResult", "run_turn"]

logger = logging.getLogger("relay_nb.agent")

FinishReason = Literal["stop", "max_steps", "error", "cancelled", "usage_cap"]
MAX_RETRY_WAIT_S = 30.0
"""A provider asking for a longer pause is better answered by failing than by a frozen cell."""


class ToolOutcome(BaseModel):
    """One executed tool call: what the model saw (``content``) and what stays local."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tool_call_id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    content: str
    is_error: bool = False
    artifact: Any = None
    """E.g. a QueryResult with the full DataFrame; never sent to the model."""
    elapsed_ms: float = 0.0


class TurnResult(BaseModel):
    """Everything a turn produced; ``usage`` is the priced sum over all model calls."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    answer: str
    finish_reason: FinishReason
    events: list[Event] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[ToolOutcome] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    steps: int = 0
    model: str = ""
    warnings: list[str] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    """The conversation after the turn (system prompt excluded), so a session can keep it."""

    @property
    def artifacts(self) -> list[Any]:
        """The non-empty tool artifacts, in call order (e.g. result DataFrames)."""
        return [r.artifact for r in self.tool_results if r.artifact is not None]


class _Stop(Exception):
    """Internal: ends the step loop with a finish reason (error or cancel)."""

    def __init__(self, reason: FinishReason, error: InvocationError | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error


class _Turn:
    """The mutable state of one turn; keeps ``run_turn`` itself a readable outline."""

    def __init__(
        self,
        *,
        runtime: ModelRuntime,
        tools: Sequence[Tool],
        prices: PriceTable | None,
        ledger: UsageLedger | None,
        session_id: str,
        turn_id: str,
        on_event: Callable[[Event], None] | None,
        max_retries: int,
        retry_base_s: float,
        max_output_tokens: int,
        abort: AbortSignal | None,
    ) -> None:
        self.runtime = runtime
        self.tools = _index_tools(tools)
        self.specs = [ToolSpec(**tool.spec()) for tool in tools]
        self.prices = prices
        self.ledger = ledger
        self.session_id = session_id
        self.turn_id = turn_id
        self.on_event = on_event
        self.max_retries = max_retries
        self.retry_base_s = retry_base_s
        self.max_output_tokens = max_output_tokens
        self.abort = abort
        self.streaming = runtime.capabilities().streaming
        self.events: list[Event] = []
        self.tool_calls: list[ToolCall] = []
        self.outcomes: list[ToolOutcome] = []
        self.usage: Usage | None = None
        self.warnings: list[str] = []
        self.model = ""
        self.last_text = ""

    # -- events ------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Record first, then notify: a failing callback must not lose the event."""
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    # -- model calls -------------------------------------------------------------------------

    def request(self, messages: list[Message]) -> InvocationRequest:
        return InvocationRequest(
            messages=messages,
            tools=self.specs,
            tool_choice=ToolChoice.auto() if self.specs else None,
            max_output_tokens=self.max_output_tokens,
        )

    async def invoke(self, request: InvocationRequest) -> InvocationResult:
        """Invoke with bounded exponential backoff on retryable errors.

        Every wait is announced as ``thinking(step="retrying")`` so a user watching a slow
        cell knows it is a rate limit, not a hang.
        """
        on_text = self._on_text if self.streaming else None
        for attempt in range(self.max_retries + 1):
            self._check_abort()
            try:
                return await self.runtime.invoke(request, abort=self.abort, on_text=on_text)
            except InvocationError as err:
                if self.abort is not None and self.abort.aborted:
                    raise _Stop("cancelled") from None
                if not err.retryable or attempt >= self.max_retries:
                    raise _Stop("error", err) from None
                wait = self._backoff(err, attempt)
                self.emit(
                    ThinkingEvent(step="retrying", detail=f"waiting {wait:g} s after {err.code}")
                )
                await self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover - the loop always returns/raises

    def _on_text(self, delta: str) -> None:
        if delta:
            self.emit(TextDeltaEvent(delta=delta))

    def _backoff(self, err: InvocationError, attempt: int) -> float:
        hinted = err.retry_after_s
        wait = hinted if hinted is not None else self.retry_base_s * 2**attempt
        return min(max(wait, 0.0), MAX_RETRY_WAIT_S)

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake at once when the abort signal fires."""
        if self.abort is None:
            await asyncio.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.abort.wait(), seconds)
        self._check_abort()

    def _check_abort(self) -> None:
        if self.abort is not None and self.abort.aborted:
            raise _Stop("cancelled")

    # -- accounting --------------------------------------------------------------------------

    def account(self, result: InvocationResult, step: int) -> None:
        """Price the call, emit ``usage``, add it to the turn total and the ledger."""
        if self.prices is None:
            self.prices = PriceTable.load()
        priced, warnings = price_usage(result.usage, result.model, self.prices)
        for message in [*result.warnings, *warnings]:
            self.warn(message)
        self.model = result.model
        self.usage = priced if self.usage is None else self.usage + priced
        self.emit(UsageEvent(usage=priced, model=result.model))
        self._record(result, priced, step)

    def _record(self, result: InvocationResult, priced: Usage, step: int) -> None:
        """Append a ledger row; accounting problems never cost the user their answer."""
        if self.ledger is None:
            return
        try:
            row = LedgerRow.from_result(
                result, session_id=self.session_id, turn_id=self.turn_id, step=step, usage=priced
            )
            self.ledger.append(row)
        except Exception as exc:
            logger.warning("could not record turn %s step %d: %r", self.turn_id, step, exc)

    # -- tools -------------------------------------------------------------------------------

    async def run_tools(self, calls: list[ToolCall]) -> list[ToolOutcome]:
        """Run one step's calls concurrently; results come back in the model's call order."""
        for call in calls:
            self.tool_calls.append(call)
            self.emit(ToolCallEvent(tool_call_id=call.id, name=call.name, input=call.input))
        outcomes = await asyncio.gather(*(self._run_one(call) for call in calls))
        for outcome in outcomes:
            self.outcomes.append(outcome)
            self.emit(
                ToolResultEvent(
                    tool_call_id=outcome.tool_call_id,
                    name=outcome.name,
                    output=outcome.content,
                    is_error=outcome.is_error,
                )
            )
        return list(outcomes)

    async def _run_one(self, call: ToolCall) -> ToolOutcome:
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            result = ToolResult(
                content=f"unknown tool {call.name!r}; available tools: {known}", is_error=True
            )
        else:
            try:
                result = await tool.run(call.input)
            except Exception as exc:  # Tool.run already catches; a custom tool might not
                result = ToolResult(
                    content=f"{call.name} failed: {type(exc).__name__}", is_error=True
                )
        return ToolOutcome(
            tool_call_id=call.id,
            name=call.name,
            input=call.input,
            content=result.content,
            is_error=result.is_error,
            artifact=result.artifact,
            elapsed_ms=result.elapsed_ms,
        )

    # -- ending ------------------------------------------------------------------------------

    def finish(
        self, answer: str, reason: FinishReason, steps: int, messages: list[Message]
    ) -> TurnResult:
        usage = self.usage if self.usage is not None else Usage()
        self.emit(DoneEvent(usage=usage, finish_reason=reason))
        return TurnResult(
            answer=answer,
            finish_reason=reason,
            events=self.events,
            tool_calls=self.tool_calls,
            tool_results=self.outcomes,
            usage=usage,
            steps=steps,
            model=self.model or getattr(self.runtime, "id", ""),
            warnings=self.warnings,
            messages=messages,
        )


def _index_tools(tools: Sequence[Tool]) -> dict[str, Tool]:
    """Tools by name; a duplicate would make the model's choice ambiguous, so refuse it."""
    index: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in index:
            raise ConfigurationError(f"two tools are named {tool.name!r}; tool names must differ")
        index[tool.name] = tool
    return index


def _check_runtime(runtime: ModelRuntime, tools: Sequence[Tool]) -> None:
    if tools and runtime.capabilities().single_forced_tool_only:
        raise ConfigurationError(
            f"this runtime ({getattr(runtime, 'id', runtime)!r}) cannot choose tools; the "
            "agent loop's next_step adapter arrives with issue 5"
        )


async def _system_prompt(
    turn: _Turn,
    question: str,
    system_prompt: str,
    resolver: ContextResolver | None,
    context_window: int,
) -> str:
    """The base prompt plus the resolved ``# Context`` section, within the context budget."""
    budget = allocate_budget(context_window)
    if resolver is None:
        return system_prompt
    turn.emit(ThinkingEvent(step="resolving_context"))
    request = ContextRequest(
        question=question,
        session_id=turn.session_id,
        turn_id=turn.turn_id,
        budget=budget.context,
    )
    resolved = await resolver.resolve(request)
    turn.emit(
        ContextResolvedEvent(sources=resolved.sources, token_estimate=resolved.token_estimate)
    )
    rendered = render_context(resolved.kept)
    if not rendered:
        return system_prompt
    return f"{system_prompt}\n\n{rendered}" if system_prompt else rendered


async def run_turn(
    question: str,
    *,
    runtime: ModelRuntime,
    tools: Sequence[Tool] = (),
    system_prompt: str = "",
    history: Sequence[Message] = (),
    resolver: ContextResolver | None = None,
    context_window: int = 200_000,
    max_steps: int = 8,
    prices: PriceTable | None = None,
    ledger: UsageLedger | None = None,
    session_id: str = "",
    turn_id: str | None = None,
    on_event: Callable[[Event], None] | None = None,
    max_retries: int = 3,
    retry_base_s: float = 0.5,
    max_output_tokens: int = 4096,
    abort: AbortSignal | None = None,
) -> TurnResult:
    """Answer ``question`` with ``runtime``, letting it call ``tools`` for up to ``max_steps``.

    Always ends with exactly one ``done`` event (after an ``error`` event when a model call
    failed for good). Cancelling the task propagates ``CancelledError``; firing ``abort``
    instead ends the turn with ``finish_reason="cancelled"``.
    """
    if max_steps < 1:
        raise ConfigurationError(f"max_steps must be at least 1, got {max_steps}")
    _check_runtime(runtime, tools)
    turn = _Turn(
        runtime=runtime,
        tools=tools,
        prices=prices,
        ledger=ledger,
        session_id=session_id,
        turn_id=turn_id or uuid.uuid4().hex,
        on_event=on_event,
        max_retries=max_retries,
        retry_base_s=retry_base_s,
        max_output_tokens=max_output_tokens,
        abort=abort,
    )
    system = await _system_prompt(turn, question, system_prompt, resolver, context_window)
    head = [Message.system(system)] if system else []
    conversation = [*history, Message.user(question)]
    step = 0
    try:
        for step in range(1, max_steps + 1):
            turn.emit(ThinkingEvent(step="calling_model"))
            result = await turn.invoke(turn.request([*head, *conversation]))
            turn.account(result, step)
            if result.output_text:
                turn.last_text = result.output_text
            conversation.append(Message.assistant(result.output_text, result.tool_calls))
            if not result.tool_calls:
                return turn.finish(result.output_text, "stop", step, conversation)
            outcomes = await turn.run_tools(result.tool_calls)
            conversation += [
                Message.tool_result(o.tool_call_id, o.content, is_error=o.is_error)
                for o in outcomes
            ]
    except _Stop as stop:
        if stop.error is not None:
            turn.emit(ErrorEvent(message=stop.error.message, code=stop.error.code))
        return turn.finish(turn.last_text, stop.reason, step, conversation)
    return turn.finish(turn.last_text, "max_steps", step, conversation)
