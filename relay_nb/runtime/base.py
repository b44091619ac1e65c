"""The ``ModelRuntime`` contract and a base class that handles what every runtime shares.

A runtime implements one required method, ``_invoke``. ``BaseRuntime.invoke`` wraps it with
the things that must be identical everywhere: the model-request switch, the caller's
timeout and abort signal, latency measurement, and classification of stray exceptions into
content-free :class:`InvocationError`s. Third-party runtimes may also implement the
:class:`ModelRuntime` protocol directly.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from relay_nb.errors import InvocationError
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.failures import classify_exception
from relay_nb.runtime.types import (
    BatchOutcome,
    Capabilities,
    InvocationRequest,
    InvocationResult,
    ToolSpec,
)

__all__ = [
    "BaseRuntime",
    "BatchModelRuntime",
    "ModelRuntime",
    "TextCallback",
    "run_guarded",
    "single_forced_tool",
]

TextCallback = Callable[[str], None]
"""Receives each streamed text delta, in order, while an invocation runs."""


@runtime_checkable
class ModelRuntime(Protocol):
    """Anything that carries one model invocation. Products depend on this, not on a runtime."""

    id: str

    def capabilities(self) -> Capabilities: ...

    async def invoke(
        self,
        request: InvocationRequest,
        *,
        timeout: float | None = None,
        abort: AbortSignal | None = None,
        on_text: TextCallback | None = None,
    ) -> InvocationResult: ...


@runtime_checkable
class BatchModelRuntime(ModelRuntime, Protocol):
    """A runtime whose one ``invoke_batch`` call is one physical provider operation."""

    async def invoke_batch(
        self,
        requests: Sequence[InvocationRequest],
        *,
        timeout: float | None = None,
        abort: AbortSignal | None = None,
    ) -> list[BatchOutcome]: ...


async def run_guarded(
    work: Callable[[], object],
    *,
    provider: str,
    timeout: float | None,
    abort: AbortSignal | None,
):
    """Await ``work()`` under a timeout and abort signal; classify whatever escapes.

    Abort and timeout cancel the inner task (so an HTTP request is closed, a child process
    killed by its own cleanup) before the typed error is raised. Cancelling the caller's task
    propagates ``CancelledError`` unchanged, as asyncio expects.
    """
    if abort is not None and abort.aborted:
        raise InvocationError("ABORTED", "the invocation was aborted before it started", False)
    task = asyncio.ensure_future(work())  # type: ignore[arg-type]
    waiters: set[asyncio.Future] = {task}
    abort_task = asyncio.ensure_future(abort.wait()) if abort is not None else None
    if abort_task is not None:
        waiters.add(abort_task)
    try:
        done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        await _cancel(task)
        raise
    finally:
        if abort_task is not None and not abort_task.done():
            abort_task.cancel()
    if task in done:
        error: InvocationError
        try:
            return task.result()
        except InvocationError as err:  # typed by the runtime, maybe while handling SDK errors
            error = err
        except asyncio.CancelledError:  # cancelled from inside: treat as abort
            error = InvocationError("ABORTED", "the invocation was cancelled", False)
        except Exception as exc:
            error = classify_exception(exc, provider=provider)
        # raised outside the handler with the chain cut, so the provider's exception (whose
        # text may echo the prompt or a key) is not even reachable as __cause__/__context__
        error.__cause__ = error.__context__ = None
        raise error
    await _cancel(task)
    if abort_task is not None and abort_task in done:
        raise InvocationError("ABORTED", "the invocation was aborted", False)
    raise InvocationError(
        "PROVIDER_UNAVAILABLE", f"no answer from {provider} within {timeout:g} s", True
    )


async def _cancel(task: asyncio.Future) -> None:
    """Cancel ``task`` and wait for its cleanup (killing a child, closing a socket).

    If the caller is itself cancelled meanwhile, the cleanup still finishes first and the
    caller's ``CancelledError`` is re-raised, never swallowed.
    """
    task.cancel()
    caller_cancelled = False
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            caller_cancelled = True
    if not task.cancelled():
        task.exception()  # retrieved: the task's own outcome no longer matters
    if caller_cancelled:
        raise asyncio.CancelledError


class BaseRuntime(ABC):
    """Shared invoke wrapper; subclasses implement ``_invoke`` and ``capabilities``."""

    id: str
    provider: str = "runtime"
    default_timeout: float | None = None

    @abstractmethod
    def capabilities(self) -> Capabilities: ...

    @abstractmethod
    async def _invoke(
        self, request: InvocationRequest, *, on_text: TextCallback | None
    ) -> InvocationResult:
        """Do one exchange. May raise anything; the wrapper classifies it."""

    def _check_allowed(self) -> None:  # noqa: B027 - a hook: local runtimes need no check
        """Refuse before any I/O when the process disallows this runtime's target."""

    async def invoke(
        self,
        request: InvocationRequest,
        *,
        timeout: float | None = None,
        abort: AbortSignal | None = None,
        on_text: TextCallback | None = None,
    ) -> InvocationResult:
        self._check_allowed()
        started = time.perf_counter()
        result = await run_guarded(
            lambda: self._invoke(request, on_text=on_text),
            provider=self.provider,
            timeout=timeout if timeout is not None else self.default_timeout,
            abort=abort,
        )
        if not result.latency_ms:
            result = result.model_copy(
                update={"latency_ms": (time.perf_counter() - started) * 1000}
            )
        return result

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}>"


def single_forced_tool(
    request: InvocationRequest, *, label: str, reason: str = ""
) -> ToolSpec | None:
    """The one tool a runtime without a tool menu must fill, or None for a text request.

    Such a runtime (the ``claude`` CLI, a model without function calling) takes one schema
    as an output constraint, so "auto" and "required among several" cannot be honoured and
    are refused rather than approximated; the agent loop sees ``single_forced_tool_only``
    and forces its ``next_step`` tool instead. ``reason`` (e.g. " runs without native
    tools") says why, after ``label``, in the refusal.
    """
    if not request.tools:
        return None
    choice = request.tool_choice
    if choice is None or choice.type == "auto":
        raise InvocationError(
            "INVALID_REQUEST",
            f"{label}{reason + ', so it' if reason else ''} cannot let the model choose among "
            "tools; force one with ToolChoice.tool(name)",
            False,
        )
    if choice.type == "required":
        if len(request.tools) != 1:
            raise InvocationError(
                "INVALID_REQUEST",
                f"{label}{reason + ' and' if reason else ''} can force only one tool; "
                "'required' needs exactly one declared tool, or use ToolChoice.tool(name)",
                False,
            )
        return request.tools[0]
    return next(t for t in request.tools if t.name == choice.name)
