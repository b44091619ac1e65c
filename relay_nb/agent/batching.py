"""Running many independent turns through a runtime's physical batch (Message Batches).

Each turn of :meth:`Session.ask_many` is an ordinary ``run_turn``; what changes is the runtime
it talks to. :class:`BatchGate` looks like a runtime, but ``invoke`` only parks the request.
When every turn still running is waiting on the model, the gate sends all parked requests as
one ``invoke_batch`` (split at the runtime's ``max_batch_size``) and hands each turn its own
outcome. So a 200-question evaluation with up to 8 steps each costs at most 8 batch rounds
(plus retries), at the batch discount, with the loop, tools and events unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.base import TextCallback
from relay_nb.runtime.types import BatchOutcome, Capabilities, InvocationRequest, InvocationResult

__all__ = ["BatchGate"]


class BatchGate:
    """A runtime facade that gathers the next request of every active turn into one batch."""

    def __init__(
        self,
        runtime: object,
        *,
        active: int,
        timeout: float | None = None,
        abort: AbortSignal | None = None,
    ) -> None:
        caps = runtime.capabilities()  # type: ignore[attr-defined]
        if not caps.physical_batch or not hasattr(runtime, "invoke_batch"):
            raise ConfigurationError(
                f"runtime {getattr(runtime, 'id', runtime)!r} has no physical batch; "
                "call ask_many without batch=True"
            )
        self.runtime = runtime
        self.id = getattr(runtime, "id", "batch")
        self.model = getattr(runtime, "model", "")
        self._caps = caps.model_copy(update={"streaming": False})
        self._max = caps.max_batch_size or 10_000
        self._active = active
        self._timeout = timeout
        self.abort = abort or AbortSignal()
        """Fired when the run is cancelled: a submitted batch is cancelled, not left billing."""
        self._parked: list[tuple[InvocationRequest, asyncio.Future[InvocationResult]]] = []
        self._sending: set[asyncio.Future[None]] = set()
        self.batches = 0
        """How many ``invoke_batch`` calls were made (one per physical batch)."""

    async def cancel(self) -> None:
        """Abort the batches in flight (the runtime cancels them) and wait until they end."""
        self.abort.abort("ask_many was cancelled")
        if self._sending:
            await asyncio.wait(set(self._sending))

    def capabilities(self) -> Capabilities:
        return self._caps

    async def invoke(
        self,
        request: InvocationRequest,
        *,
        timeout: float | None = None,
        abort: AbortSignal | None = None,
        on_text: TextCallback | None = None,
    ) -> InvocationResult:
        future: asyncio.Future[InvocationResult] = asyncio.get_running_loop().create_future()
        self._parked.append((request, future))
        self._maybe_flush()
        return await future

    def leave(self) -> None:
        """A turn finished: the others no longer wait for its request."""
        self._active -= 1
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if self._parked and len(self._parked) >= self._active:
            parked, self._parked = self._parked, []
            for start in range(0, len(parked), self._max):
                task = asyncio.ensure_future(self._send(parked[start : start + self._max]))
                self._sending.add(task)  # a task nobody references can be collected mid-flight
                task.add_done_callback(self._sending.discard)

    async def _send(
        self, parked: Sequence[tuple[InvocationRequest, asyncio.Future[InvocationResult]]]
    ) -> None:
        self.batches += 1
        try:
            outcomes: list[BatchOutcome] = await self.runtime.invoke_batch(  # type: ignore[attr-defined]
                [request for request, _ in parked], timeout=self._timeout, abort=self.abort
            )
            if len(outcomes) != len(parked):
                raise InvocationError(
                    "RUNTIME_FAILURE",
                    f"the batch returned {len(outcomes)} outcomes for {len(parked)} requests",
                    False,
                )
        except Exception as exc:
            error = (
                exc
                if isinstance(exc, InvocationError)
                else InvocationError(
                    "RUNTIME_FAILURE", f"the batch failed ({type(exc).__name__})", False
                )
            )
            for _, future in parked:
                if not future.done():
                    future.set_exception(error)
            return
        for (_, future), outcome in zip(parked, outcomes, strict=True):
            if future.done():
                continue
            if outcome.value is not None:
                future.set_result(outcome.value)
            else:
                reason = outcome.reason
                assert reason is not None
                future.set_exception(InvocationError(reason.code, reason.message, reason.retryable))
