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
import time
import uuid
from collections.abc import Sequence

from relay_nb.agent.accounting import runtime_model, runtime_simulated
from relay_nb.agent.caps import Reservation
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
from relay_nb.agent.next_step import NEXT_STEP, decode_next_step, next_step_spec
from relay_nb.agent.prompt import assemble_system_prompt
from relay_nb.agent.services import TurnServices
from relay_nb.agent.settings import TurnSettings
from relay_nb.agent.tool_calls import ToolOutcome, execute_calls
from relay_nb.agent.turn_result import FinishReason, TurnResult
from relay_nb.context import ContextRequest, allocate_budget
from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.redaction import redact
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.failures import classify_exception
from relay_nb.runtime.types import (
    InvocationRequest,
    InvocationResult,
    Message,
    Simulated,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
)
from relay_nb.tools import ModelSpend, Tool

__all__ = ["FinishReason", "ToolOutcome", "TurnResult", "first_request", "run_turn"]

logger = logging.getLogger("relay_nb.agent")

MAX_RETRY_WAIT_S = 30.0
"""A provider asking for a longer pause gets a failed turn that says so, not a frozen cell."""


class _Stop(Exception):
    """Internal: ends the step loop with a finish reason (error, cancel or usage cap)."""

    def __init__(
        self,
        reason: FinishReason,
        error: InvocationError | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason: FinishReason = reason
        self.error = error
        self.detail = detail


class _Turn:
    """The mutable state of one turn; keeps ``run_turn`` itself a readable outline.

    What the turn may do is ``settings`` and what it works with is ``services``, both held
    by reference and never copied; everything else here changes as the turn runs.
    """

    def __init__(
        self,
        settings: TurnSettings,
        services: TurnServices,
        *,
        turn_id: str,
        abort: AbortSignal | None,
    ) -> None:
        self.settings = settings
        self.services = services
        self.turn_id = turn_id
        self.abort = abort
        self.started = time.perf_counter()
        runtime = services.runtime
        self.tools = _index_tools(services.tools)
        self.specs = [ToolSpec(**tool.spec()) for tool in services.tools]
        caps = runtime.capabilities()
        self.single_tool = bool(self.specs) and caps.single_forced_tool_only
        """Drive the runtime through the ``next_step`` adapter (see next_step.py)."""
        self.next_step = next_step_spec(self.specs) if self.single_tool else None
        self.streaming = caps.streaming
        self.limits = [*services.accountant.limits(settings.caps), *services.limits]
        """This turn's caps, the session's and any shared ones (a run's), with their meters
        (fed active or not)."""
        self.active_limits = [limit for limit in self.limits if limit.caps.active]
        self.approver = services.approver_for(settings.approval)
        self.events: list[Event] = []
        self.tool_calls: list[ToolCall] = []
        self.outcomes: list[ToolOutcome] = []
        self.usage: Usage | None = None
        self.warnings: list[str] = []
        self.model = ""
        self.simulated: Simulated | None = None
        self.last_text = ""
        self.streamed = False
        self.reservation: Reservation | None = None
        if self.active_limits and caps.output_token_limit_fidelity != "native":
            self.warn(
                f"{getattr(runtime, 'id', 'this runtime')} does not enforce max_output_tokens, "
                "so usage caps are checked before and after each call but one call can "
                "overshoot them"
            )

    # -- events ------------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Record first, then notify: a failing callback must not lose the event."""
        self.events.append(event)
        if self.services.on_event is not None:
            self.services.on_event(event)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    # -- model calls -------------------------------------------------------------------------

    def request(self, messages: list[Message]) -> InvocationRequest:
        """The next request, its output room already fitted to the usage caps."""
        if self.next_step is not None:
            tools, choice = [self.next_step], ToolChoice.tool(NEXT_STEP)
        else:
            tools, choice = self.specs, ToolChoice.auto() if self.specs else None
        request = InvocationRequest(
            messages=messages,
            tools=tools,
            tool_choice=choice,
            max_output_tokens=self.settings.max_output_tokens,
        )
        plan = self.services.accountant.plan(
            self.limits,
            request,
            runtime=self.services.runtime,
            model=self.model,
            batch=self.settings.batch,
        )
        if plan.stop_reason is not None:
            raise _Stop("usage_cap", detail=plan.stop_reason)
        if self.active_limits:
            self.reservation = plan.reserve(self.active_limits)
        if plan.max_output_tokens == request.max_output_tokens:
            return request
        return request.model_copy(update={"max_output_tokens": plan.max_output_tokens})

    async def invoke(self, request: InvocationRequest, step: int) -> InvocationResult:
        """Invoke with bounded exponential backoff on retryable errors.

        Every wait is announced as ``thinking(step="retrying")`` so a user watching a slow
        cell knows it is a rate limit, not a hang. Every failed attempt gets its own ledger
        row (see :meth:`_record_failure`), so the ledger shows each call that was made.
        """
        try:
            return await self._invoke_with_retries(request, step)
        finally:
            if self.reservation is not None:  # the call's real usage replaces its worst case
                self.reservation.release()
                self.reservation = None

    async def _invoke_with_retries(self, request: InvocationRequest, step: int) -> InvocationResult:
        on_text = self._on_text if self.streaming and self.next_step is None else None
        runtime, retries = self.services.runtime, self.settings.max_retries
        for attempt in range(retries + 1):
            self._check_abort()
            self.streamed = False
            started = time.perf_counter()
            try:
                return await runtime.invoke(request, abort=self.abort, on_text=on_text)
            except ConfigurationError:
                raise  # no retry fixes a configuration mistake; the caller must see it
            except asyncio.CancelledError:  # the task itself was cancelled: still a call made
                self._record_failure(None, step, started, aborted=True)
                raise
            except Exception as exc:
                # a runtime written against the protocol may raise anything; classify it
                err = exc if isinstance(exc, InvocationError) else classify_exception(exc)
                if self.abort is not None and self.abort.aborted:
                    self._record_failure(err, step, started, aborted=True)
                    raise _Stop("cancelled") from None
                # off the loop, like every other append: concurrent turns go on meanwhile
                await asyncio.to_thread(self._record_failure, err, step, started, aborted=False)
                if not err.retryable or attempt >= retries:
                    raise _Stop("error", err) from None
                hinted = err.retry_after_s
                if hinted is not None and hinted > MAX_RETRY_WAIT_S:
                    raise _Stop(
                        "error",
                        InvocationError(
                            err.code,
                            f"{err.message}; the provider asks to wait {hinted:g} s, try again "
                            "later",
                            False,
                        ),
                    ) from None
                wait = self._backoff(err, attempt)
                detail = f"waiting {wait:g} s after {err.code}"
                if self.streamed:  # consumers drop the text streamed by the failed attempt
                    detail += "; the partial answer streamed so far is discarded"
                self.emit(ThinkingEvent(step="retrying", detail=detail))
                await self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover - the loop always returns/raises

    def _on_text(self, delta: str) -> None:
        if delta:
            self.streamed = True
            self.emit(TextDeltaEvent(delta=delta))

    def _backoff(self, err: InvocationError, attempt: int) -> float:
        hinted = err.retry_after_s
        wait = hinted if hinted is not None else self.settings.retry_base_s * 2**attempt
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

    async def account(
        self, result: InvocationResult, step: int, request: InvocationRequest
    ) -> None:
        """Bill the call (the accountant prices it and feeds the caps), emit ``usage``, add
        it to the turn's total and append its ledger row."""
        accountant = self.services.accountant
        priced, warnings = accountant.charge(
            result, request, limits=self.limits, batch=self.settings.batch
        )
        for message in [*result.warnings, *warnings]:
            self.warn(message)
        if result.stop_reason == "max_tokens":
            self.warn(
                f"the model's reply was cut off at the output limit "
                f"({request.max_output_tokens or 'default'} tokens); the answer may be incomplete"
            )
        self.model = result.model
        self.simulated = self.simulated or result.simulated
        self.usage = priced if self.usage is None else self.usage + priced
        self.emit(UsageEvent(usage=priced, model=result.model, simulated=result.simulated))
        await accountant.record(result, priced, turn_id=self.turn_id, step=step)

    def _record_failure(
        self, err: InvocationError | None, step: int, started: float, *, aborted: bool
    ) -> None:
        """The ledger row of a model call that failed (see ``Accountant.record_failure``)."""
        self.services.accountant.record_failure(
            self.services.runtime,
            model=self.model,
            turn_id=self.turn_id,
            step=step,
            latency_ms=(time.perf_counter() - started) * 1000,
            code=None if err is None else err.code,
            aborted=aborted,
        )

    # -- tools -------------------------------------------------------------------------------

    def decode(
        self, result: InvocationResult
    ) -> tuple[str | None, list[ToolCall], list[ToolOutcome]]:
        """``(answer, calls to run, problems)`` from a model reply.

        With native tools: an answer when there are no calls. Through ``next_step``: the
        decoded answer or call; a malformed ``next_step`` becomes a problem reported back to
        the model as a tool error on the model's own call id.
        """
        if self.next_step is None:
            return (
                (result.output_text, [], [])
                if not result.tool_calls
                else (None, result.tool_calls, [])
            )
        names = list(self.tools)
        calls, problems = [], []
        for raw in result.tool_calls:
            decoded = decode_next_step(raw, names)
            if decoded.answer is not None and len(result.tool_calls) == 1:
                return decoded.answer, [], []
            if decoded.call is not None:
                calls.append(decoded.call)
            else:
                problem = decoded.problem or "answer through next_step alone"
                problems.append(
                    ToolOutcome(
                        tool_call_id=raw.id,
                        name=NEXT_STEP,
                        input=raw.input,
                        content=f"invalid next_step: {problem}",
                        is_error=True,
                        failure="error",
                    )
                )
        if not calls and not problems:
            return result.output_text, [], []
        return None, calls, problems

    async def run_tools(self, calls: list[ToolCall]) -> tuple[list[ToolOutcome], bool]:
        """Run one step's calls (see tool_calls.py); results come back in call order."""
        for call in calls:
            self.tool_calls.append(call)
            # the event is what the trace shows: no credential, even one the model wrote
            shown = redact(call.input)
            self.emit(ToolCallEvent(tool_call_id=call.id, name=call.name, input=shown))
        outcomes, cancelled = await execute_calls(
            calls,
            self.tools,
            approver=self.approver,
            abort=self.abort,
            emit=self.emit,
            spend=self.spend,
        )
        for outcome in outcomes:
            self.report(outcome)
        return outcomes, cancelled

    def spend(self) -> ModelSpend | None:
        """What the model has cost this turn so far — every call priced, the one whose tool
        calls run now included — for a tool that shows it beside its own cost (a query's
        preflight line); None before the first call."""
        if self.usage is None:
            return None
        return ModelSpend(
            cost_usd=self.usage.cost_usd,
            estimated=self.usage.estimated,
            simulated=self.simulated is not None,
        )

    def report(self, outcome: ToolOutcome) -> None:
        self.outcomes.append(outcome)
        self.emit(
            ToolResultEvent(
                tool_call_id=outcome.tool_call_id,
                name=outcome.name,
                output=outcome.content,
                is_error=outcome.is_error,
                artifact=outcome.artifact,
            )
        )

    # -- ending ------------------------------------------------------------------------------

    def finish(
        self, question: str, answer: str, reason: FinishReason, steps: int, messages: list[Message]
    ) -> TurnResult:
        # no model call: nothing spent, and that is known
        usage = (
            self.usage
            if self.usage is not None
            else Usage(input_tokens=0, output_tokens=0, cost_usd=0.0)
        )
        self.emit(DoneEvent(usage=usage, finish_reason=reason))
        return TurnResult(
            answer=answer,
            finish_reason=reason,
            question=question,
            turn_id=self.turn_id,
            events=self.events,
            tool_calls=self.tool_calls,
            tool_results=self.outcomes,
            usage=usage,
            steps=steps,
            model=self.model
            or runtime_model(self.services.runtime)
            or getattr(self.services.runtime, "id", ""),
            simulated=self.simulated or runtime_simulated(self.services.runtime),
            warnings=self.warnings,
            messages=messages,
            settings=self.settings,
            elapsed_ms=(time.perf_counter() - self.started) * 1000,
        )


def _index_tools(tools: Sequence[Tool]) -> dict[str, Tool]:
    """Tools by name; a duplicate would make the model's choice ambiguous, so refuse it."""
    index: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in index:
            raise ConfigurationError(f"two tools are named {tool.name!r}; tool names must differ")
        if tool.name == NEXT_STEP:
            raise ConfigurationError(f"the tool name {NEXT_STEP!r} is reserved by relay_nb")
        index[tool.name] = tool
    return index


def _in_conversation(messages: list[Message], outcomes: Sequence[ToolOutcome]) -> None:
    messages += [
        Message.tool_result(o.tool_call_id, o.content, is_error=o.is_error) for o in outcomes
    ]


async def _system_prompt(
    turn: _Turn, question: str, system_prompt: str, connector_ids: Sequence[str]
) -> str:
    """The base prompt plus the resolved context (see prompt.py), within the context budget."""
    resolver = turn.services.resolver
    if resolver is None:
        return system_prompt
    budget = allocate_budget(turn.settings.context_window)
    turn.emit(ThinkingEvent(step="resolving_context"))
    request = ContextRequest(
        question=question,
        session_id=turn.services.accountant.session_id,
        turn_id=turn.turn_id,
        connector_ids=tuple(connector_ids),
        budget=budget.context,
    )
    resolved = await resolver.resolve(request)
    for stats in resolved.stats:  # skipped, never fatal (DESIGN.md §5); but not silently
        if stats.status == "timeout":
            turn.warn(
                f"context source {stats.source!r} did not answer within its timeout and was "
                "skipped; this answer was made without it"
            )
        elif stats.status != "ok":
            turn.warn(
                f"context source {stats.source!r} failed ({stats.error or 'error'}) and was "
                "skipped; this answer was made without it"
            )
    turn.emit(
        ContextResolvedEvent(sources=resolved.sources, token_estimate=resolved.token_estimate)
    )
    return assemble_system_prompt(system_prompt, resolved.kept)


async def first_request(
    question: str,
    services: TurnServices,
    settings: TurnSettings | None = None,
    *,
    system_prompt: str = "",
    connector_ids: Sequence[str] = (),
) -> InvocationRequest:
    """The first model request :func:`run_turn` would send for ``question`` — the system
    prompt with its resolved context, the question, the tools — built without calling the
    model or checking caps: what an evaluation's cost estimate is made of."""
    turn = _Turn(settings or TurnSettings(), services, turn_id="estimate", abort=None)
    system = await _system_prompt(turn, question, system_prompt, connector_ids)
    head = [Message.system(system)] if system else []
    tools = [turn.next_step] if turn.next_step is not None else turn.specs
    return InvocationRequest(
        messages=[*head, Message.user(question)],
        tools=tools,
        max_output_tokens=turn.settings.max_output_tokens,
    )


async def run_turn(
    question: str,
    services: TurnServices,
    settings: TurnSettings | None = None,
    *,
    history: Sequence[Message] = (),
    system_prompt: str = "",
    connector_ids: Sequence[str] = (),
    abort: AbortSignal | None = None,
    turn_id: str | None = None,
) -> TurnResult:
    """Answer ``question`` with ``services.runtime``, letting it call ``services.tools`` for
    up to ``settings.max_steps`` steps.

    ``history`` is the conversation so far, ``system_prompt`` the base prompt the resolved
    context is added to (for the ``connector_ids`` the turn may use; empty: all of them).
    Always ends with exactly one ``done`` event (after an ``error`` event when a model call
    failed for good). Cancelling the task propagates ``CancelledError``; firing ``abort``
    instead ends the turn with ``finish_reason="cancelled"`` and a conversation in which every
    tool call has a result. Every ``tool_result`` event carries the tool's artifact (a
    DataFrame's ``QueryResult``) by reference, for a live view.
    """
    settings = settings if settings is not None else TurnSettings()
    turn = _Turn(settings, services, turn_id=turn_id or uuid.uuid4().hex, abort=abort)
    system = await _system_prompt(turn, question, system_prompt, connector_ids)
    head = [Message.system(system)] if system else []
    conversation = [*history, Message.user(question)]
    first_new = len(history)
    step = 0
    try:
        for step in range(1, settings.max_steps + 1):
            request = turn.request([*head, *conversation])
            turn.emit(ThinkingEvent(step="calling_model"))
            result = await turn.invoke(request, step)
            await turn.account(result, step, request)
            answer, calls, problems = turn.decode(result)
            if answer is not None:
                turn.last_text = answer
                conversation.append(Message.assistant(answer))
                return turn.finish(question, answer, "stop", step, conversation[first_new:])
            if result.output_text:
                turn.last_text = result.output_text
            conversation.append(Message.assistant(result.output_text, result.tool_calls))
            for problem in problems:
                turn.report(problem)
            outcomes, cancelled = await turn.run_tools(calls) if calls else ([], False)
            by_id = {o.tool_call_id: o for o in [*problems, *outcomes]}
            _in_conversation(conversation, [by_id[c.id] for c in result.tool_calls])
            if cancelled:
                raise _Stop("cancelled")
    except _Stop as stop:
        if stop.error is not None:
            turn.emit(ErrorEvent(message=stop.error.message, code=stop.error.code))
        if stop.detail is not None:
            turn.warn(f"stopped: {stop.detail}")
            turn.emit(ThinkingEvent(step="usage_cap", detail=stop.detail))
        return turn.finish(question, turn.last_text, stop.reason, step, conversation[first_new:])
    return turn.finish(question, turn.last_text, "max_steps", step, conversation[first_new:])
