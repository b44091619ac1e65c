"""Executing one step's tool calls: approval, concurrency, cancellation.

The calls of one step are independent by construction (the model issued them together), so
they run concurrently; results come back in the model's order. Calls that need approval are
put to the approver first, one at a time and in order — a person answers one question at a
time — and only the approved ones run.

Cancellation is part of the contract: when the abort signal fires mid-step the running tool
tasks are cancelled (a SQL tool cancels its statement and waits for the rollback) and every
call still gets a result, so the conversation stays a valid call/result sequence and the next
turn can go on from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.agent.approval import ApprovalRequest, Approver, ask_approver
from relay_nb.agent.events import Event, ToolAwaitingApprovalEvent, ToolStatusEvent
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.types import ToolCall
from relay_nb.tools import (
    ApprovalAsk,
    CallHooks,
    Failure,
    ModelSpend,
    Tool,
    ToolResult,
    bind_call,
)

__all__ = ["CANCELLED_RESULT", "ToolOutcome", "current_tool_call_id", "execute_calls"]

_CURRENT_CALL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "relay_nb_tool_call", default=None
)


def current_tool_call_id() -> str | None:
    """Inside a tool's handler, the id of the call it is answering (else None): what a tool
    that talks to the user (``clarify``) needs to show itself under the call's entry."""
    return _CURRENT_CALL.get()


CANCELLED_RESULT = "cancelled by the user before it finished"


class ToolOutcome(BaseModel):
    """One executed tool call: what the model saw (``content``) and what stays local."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tool_call_id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    content: str
    is_error: bool = False
    failure: Failure | None = None
    """Why it failed (refused, timeout, error, denied, cancelled); None when it did not."""
    rule: str | None = None
    """A guard's refusal: the rule it broke (``table_not_allowed``; see ``ToolResult.rule``)."""
    artifact: Any = None
    """E.g. a QueryResult with the full DataFrame; never sent to the model."""
    elapsed_ms: float = 0.0


async def execute_calls(
    calls: Sequence[ToolCall],
    tools: Mapping[str, Tool],
    *,
    approver: Approver | None,
    abort: AbortSignal | None,
    emit: Callable[[Event], None],
    spend: Callable[[], ModelSpend | None] | None = None,
) -> tuple[list[ToolOutcome], bool]:
    """Run ``calls``; returns the outcomes in call order and whether the abort signal fired.

    Each running call gets its hooks (:class:`relay_nb.tools.CallHooks`): it may still ask
    for approval (:func:`relay_nb.tools.ask_approval`, e.g. a query estimated over its cost
    threshold) — through the same approver, one question at a time — show a line in the
    trace before its result (:func:`relay_nb.tools.report_status`: a ``tool_status``
    event), and read the turn's model spend so far (``spend``)."""
    verdicts: dict[str, ToolResult] = {}
    asking = asyncio.Lock()
    loop = asyncio.get_running_loop()

    def asker(call: ToolCall) -> ApprovalAsk:
        async def ask(reason: str) -> tuple[bool, str]:
            async with asking:
                emit(
                    ToolAwaitingApprovalEvent(
                        tool_call_id=call.id, name=call.name, input=call.input, reason=reason
                    )
                )
                request = ApprovalRequest(
                    tool_call_id=call.id, name=call.name, input=call.input, reason=reason
                )
                return await ask_approver(approver, request)

        return ask

    def hooks(call: ToolCall) -> CallHooks:
        def status(line: str) -> None:
            event = ToolStatusEvent(tool_call_id=call.id, name=call.name, status=line)
            try:
                on_loop = asyncio.get_running_loop() is loop
            except RuntimeError:  # a sync tool's worker thread (its context is copied there)
                on_loop = False
            if on_loop:
                emit(event)
            else:  # queued before the thread's own result: the line still comes first
                loop.call_soon_threadsafe(emit, event)

        return CallHooks(ask=asker(call), status=status, spend=spend or _no_spend)

    for call in calls:
        tool = tools.get(call.name)
        if tool is None or not tool.requires_approval:
            continue
        emit(ToolAwaitingApprovalEvent(tool_call_id=call.id, name=call.name, input=call.input))
        request = ApprovalRequest(
            tool_call_id=call.id, name=call.name, input=call.input, description=tool.description
        )
        decision = await _until_abort(ask_approver(approver, request), abort)
        if decision is None:
            return [_cancelled(c) for c in calls], True
        approved, reason = decision
        if not approved:
            verdicts[call.id] = ToolResult(content=reason, is_error=True, failure="denied")
    tasks = [
        asyncio.ensure_future(_run_one(call, tools, hooks(call)))
        if call.id not in verdicts
        else None
        for call in calls
    ]
    running = [task for task in tasks if task is not None]
    cancelled = False
    if running:
        try:
            cancelled = await _wait_or_abort(running, abort)
        except asyncio.CancelledError:
            # the turn's own task was cancelled: stop the tools too (a statement left running
            # would hold its connection until its timeout), let them clean up, then go
            await _cancel_and_wait(running)
            raise
    outcomes = []
    for call, task in zip(calls, tasks, strict=True):
        if task is None:
            outcomes.append(_outcome(call, verdicts[call.id]))
        elif task.cancelled() or task.exception() is not None:
            outcomes.append(_cancelled(call))
        else:
            outcomes.append(task.result())
    return outcomes, cancelled


async def _wait_or_abort(
    tasks: Sequence[asyncio.Future[ToolOutcome]], abort: AbortSignal | None
) -> bool:
    """Wait for every task; if ``abort`` fires first, cancel them and wait for their cleanup."""
    if abort is None:
        await asyncio.wait(tasks)
        return False
    watcher = asyncio.ensure_future(abort.wait())
    try:
        pending: set[asyncio.Future[Any]] = set(tasks)
        while pending and not watcher.done():
            _done, pending = await asyncio.wait(
                {*pending, watcher}, return_when=asyncio.FIRST_COMPLETED
            )
            pending.discard(watcher)
        if not abort.aborted:
            return False
        await _cancel_and_wait(tasks)
        return True
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def _cancel_and_wait(tasks: Sequence[asyncio.Future[ToolOutcome]]) -> None:
    """Cancel ``tasks`` and wait until each has finished its own cleanup (a DB rollback)."""
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks)


async def _until_abort(awaitable: Any, abort: AbortSignal | None) -> Any:
    """``await awaitable``, or None when ``abort`` fires first (a pending approval dialog)."""
    if abort is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    watcher = asyncio.ensure_future(abort.wait())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        watcher.cancel()
        raise
    watcher.cancel()
    if task.done() and not abort.aborted:
        return task.result()
    task.cancel()
    with contextlib.suppress(BaseException):
        await task
    return None


def _no_spend() -> ModelSpend | None:
    return None


def some_names(names: Iterable[str], most: int = 40) -> str:
    """``"a, b, c"``, at most ``most`` of them, sorted, then how many more: a reply that
    names every tool of a server listing thousands would flood the model's context."""
    ordered = sorted(names)
    shown = ", ".join(ordered[:most]) or "none"
    return shown + (f" … and {len(ordered) - most} more" if len(ordered) > most else "")


async def _run_one(call: ToolCall, tools: Mapping[str, Tool], hooks: CallHooks) -> ToolOutcome:
    _CURRENT_CALL.set(call.id)  # this task's own context: no other call sees it
    bind_call(hooks)
    tool = tools.get(call.name)
    if tool is None:
        result = ToolResult(
            content=f"unknown tool {call.name[:80]!r}; available tools: {some_names(tools)}",
            is_error=True,
            failure="error",
        )
    else:
        try:
            result = await tool.run(call.input)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # Tool.run already catches; a custom subclass might not
            result = ToolResult(
                content=f"{call.name} failed: {type(exc).__name__}", is_error=True, failure="error"
            )
    return _outcome(call, result)


def _outcome(call: ToolCall, result: ToolResult) -> ToolOutcome:
    return ToolOutcome(
        tool_call_id=call.id,
        name=call.name,
        input=call.input,
        content=result.content,
        is_error=result.is_error,
        failure=(result.failure or "error") if result.is_error else None,
        rule=result.rule,
        artifact=result.artifact,
        elapsed_ms=result.elapsed_ms,
    )


def _cancelled(call: ToolCall) -> ToolOutcome:
    return ToolOutcome(
        tool_call_id=call.id,
        name=call.name,
        input=call.input,
        content=CANCELLED_RESULT,
        is_error=True,
        failure="cancelled",
    )
