"""``AnthropicRuntime.invoke_batch``: one call is one Message Batch (``/v1/messages/batches``).

The batch is created with one ``messages.batches.create`` call whose items carry exactly the
parameters :meth:`AnthropicRuntime.invoke` would send (``custom_id`` is the position: ``r0``,
``r1``, ...). The batch is then polled with ``messages.batches.retrieve``, first after
``batch_poll_interval`` seconds and then at doubling intervals up to
``batch_poll_max_interval``, until its ``processing_status`` is ``"ended"``; the results
(JSONL, in no particular order) are read with ``messages.batches.results`` and mapped back
to positions by ``custom_id``.

Each item becomes a :class:`BatchOutcome`: a ``succeeded`` item is fulfilled with the same
:class:`InvocationResult` ``invoke`` builds (its latency is the batch's, create to end); an
``errored``, ``canceled`` or ``expired`` item, or one the results leave out, is rejected with
a content-free :class:`BatchFailure`. Only a failure of the batch as a whole (create refused,
polling failed, abort, timeout) raises; abort and timeout cancel the batch, best effort, so
an abandoned batch does not keep running (and costing) at the provider.

Like ``anthropic.py`` this module imports the SDK only for type checking; the client comes
from the runtime, which imports the SDK off the event loop on first use. The runtime is the
caller's, typed by what the batch needs of it (:class:`BatchingRuntime`): this module never
imports :mod:`relay_nb.runtime.anthropic` (which imports it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import urlsplit

from relay_nb.errors import InvocationError
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.anthropic_wire import ERROR_TYPE_STATUS
from relay_nb.runtime.base import run_guarded
from relay_nb.runtime.failures import classify_exception, classify_status
from relay_nb.runtime.switch import check_model_request
from relay_nb.runtime.types import (
    BatchFailure,
    BatchOutcome,
    InvocationRequest,
    InvocationResult,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from anthropic.types.messages import MessageBatch
    from anthropic.types.messages.batch_create_params import Request

__all__ = ["MAX_BATCH_REQUESTS", "BatchingRuntime", "custom_id", "invoke_batch", "poll_delays"]


class BatchingRuntime(Protocol):
    """What a batch call needs of its runtime (:class:`AnthropicRuntime` is the one): its
    identity and limits, its client, and the request and result mapping ``invoke`` uses, so
    a batch item is exactly the request ``invoke`` would send."""

    id: str
    provider: str
    default_timeout: float | None
    batch_poll_interval: float
    batch_poll_max_interval: float
    batch_poll_max_failures: int
    batch_cancel_timeout: float

    @property
    def base_url(self) -> str: ...

    def _check_allowed(self) -> None: ...

    async def _client(self) -> AsyncAnthropic: ...

    def _params(self, request: InvocationRequest) -> dict[str, Any]: ...

    def _result(self, message: Any, latency_ms: float) -> InvocationResult: ...


MAX_BATCH_REQUESTS = 100_000
"""The Message Batches API's limit on requests in one batch."""

# Fixed reasons for items the provider did not answer with a message or a typed error.
_CANCELED = BatchFailure(
    code="ABORTED",
    message="the batch was cancelled before this item was processed",
    retryable=False,
)
_EXPIRED = BatchFailure(
    code="PROVIDER_UNAVAILABLE",
    message="the batch expired before this item was processed; try again",
    retryable=True,
)
_MISSING = BatchFailure(
    code="RUNTIME_FAILURE",
    message="anthropic returned no result for this batch item",
    retryable=False,
)
_UNKNOWN_RESULT = BatchFailure(
    code="RUNTIME_FAILURE",
    message="anthropic returned a batch result of an unknown type for this item",
    retryable=False,
)
_UNREADABLE = BatchFailure(
    code="RUNTIME_FAILURE",
    message="anthropic returned a batch result this runtime could not read",
    retryable=False,
)
_UNKNOWN_ERROR = BatchFailure(
    code="RUNTIME_FAILURE",
    message="anthropic reported an unrecognised error for this batch item",
    retryable=False,
)


def custom_id(index: int) -> str:
    """The ``custom_id`` of the item at ``index``: its position, so results map back."""
    return f"r{index}"


def poll_delays(initial: float, cap: float) -> Iterator[float]:
    """The waits before successive status polls: ``initial``, doubling, never above ``cap``."""
    delay = min(initial, cap)
    while True:
        yield delay
        delay = min(delay * 2, cap)


async def invoke_batch(
    runtime: BatchingRuntime,
    requests: Sequence[InvocationRequest],
    *,
    timeout: float | None = None,
    abort: AbortSignal | None = None,
) -> list[BatchOutcome]:
    """One Message Batch for ``requests``; one positional outcome per request."""
    requests = list(requests)
    if not requests:
        raise InvocationError("INVALID_REQUEST", "a batch needs at least one request", False)
    if len(requests) > MAX_BATCH_REQUESTS:
        raise InvocationError(
            "INVALID_REQUEST",
            f"a batch holds at most {MAX_BATCH_REQUESTS} requests, got {len(requests)}",
            False,
        )
    runtime._check_allowed()
    return await run_guarded(
        lambda: _run(runtime, requests),
        provider=runtime.provider,
        timeout=timeout if timeout is not None else runtime.default_timeout,
        abort=abort,
    )


async def _run(runtime: BatchingRuntime, requests: list[InvocationRequest]) -> list[BatchOutcome]:
    client = await runtime._client()
    # _params gives the keyword arguments of a (non-streaming) messages.create, built as a
    # plain dict: a batch item's params are exactly those
    items: list[Request] = [
        {
            "custom_id": custom_id(index),
            "params": cast("MessageCreateParamsNonStreaming", runtime._params(request)),
        }
        for index, request in enumerate(requests)
    ]
    started = time.perf_counter()
    batch = await _create(client, items, grace=runtime.batch_cancel_timeout)
    try:
        batch = await _until_ended(runtime, client, batch)
    except BaseException:  # abort, timeout, or polling failed: do not leave it running
        await _cancel_quietly(client, batch.id, grace=runtime.batch_cancel_timeout)
        raise
    latency_ms = (time.perf_counter() - started) * 1000
    if not batch.results_url:
        raise InvocationError(
            "RUNTIME_FAILURE", "anthropic ended the batch without a results URL", False
        )
    # the SDK sends the key to whatever URL the batch names: that URL must pass the switch,
    # and it must be the server the key was meant for
    check_model_request(runtime.id, url=batch.results_url)
    if _origin(batch.results_url) != _origin(runtime.base_url):
        raise InvocationError(
            "RUNTIME_FAILURE",
            "anthropic named a batch results URL on another server than base_url; the API key "
            "is not sent there",
            False,
        )
    results = await _read_results(client, batch.id)
    return [
        _outcome(runtime, results.get(custom_id(index)), latency_ms)
        for index in range(len(requests))
    ]


async def _create(client: AsyncAnthropic, items: list[Request], *, grace: float):
    """Create the batch. Shielded: if the call is aborted while the create is in flight, the
    batch may exist already, so the create is allowed ``grace`` seconds to say which batch
    to cancel rather than being cut off and leaving an unknown batch running."""
    creating = asyncio.ensure_future(client.messages.batches.create(requests=items))
    try:
        return await asyncio.shield(creating)
    except asyncio.CancelledError:
        try:
            await asyncio.wait({creating}, timeout=grace)
        finally:
            if not creating.done():
                creating.cancel()
        if creating.done() and not creating.cancelled() and creating.exception() is None:
            await _cancel_quietly(client, creating.result().id, grace=grace)
        raise


async def _until_ended(
    runtime: BatchingRuntime, client: AsyncAnthropic, batch: MessageBatch
) -> MessageBatch:
    """Poll until the batch has ended; a few transient poll failures in a row are tolerated."""
    delays = poll_delays(runtime.batch_poll_interval, runtime.batch_poll_max_interval)
    failures = 0
    while batch.processing_status != "ended":
        await asyncio.sleep(next(delays))
        try:
            batch = await client.messages.batches.retrieve(batch.id)
        except Exception as exc:
            failures += 1
            transient = classify_exception(exc, provider=runtime.provider).retryable
            if not transient or failures >= runtime.batch_poll_max_failures:
                raise
            continue
        failures = 0
    return batch


async def _cancel_quietly(client: AsyncAnthropic, batch_id: str, *, grace: float) -> None:
    """Ask the provider to cancel the batch; any failure is ignored (the caller's error wins)."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.messages.batches.cancel(batch_id), grace)


async def _read_results(client: AsyncAnthropic, batch_id: str) -> dict[str, Any]:
    """Each ``custom_id``'s result object (the first one, should an id repeat)."""
    found: dict[str, Any] = {}
    lines = await client.messages.batches.results(batch_id)
    try:
        async for line in lines:
            key = _field(line, "custom_id")
            if isinstance(key, str):
                found.setdefault(key, _field(line, "result"))
    finally:
        await lines.close()
    return found


def _outcome(runtime: BatchingRuntime, result: Any, latency_ms: float) -> BatchOutcome:
    if result is None:
        return _rejected(_MISSING)
    kind = _field(result, "type")
    if kind == "succeeded":
        try:
            value = runtime._result(_field(result, "message"), latency_ms)
        except Exception:
            return _rejected(_UNREADABLE)
        return BatchOutcome(status="fulfilled", value=value)
    if kind == "errored":
        return _rejected(_item_error(result))
    if kind == "canceled":
        return _rejected(_CANCELED)
    if kind == "expired":
        return _rejected(_EXPIRED)
    return _rejected(_UNKNOWN_RESULT)


def _item_error(result: Any) -> BatchFailure:
    """Classify an ``errored`` item by its error type, as a single call with that error is.

    Only a type from the fixed table is named in the message; the provider's text never is.
    """
    error_type = _field(_field(_field(result, "error"), "error"), "type")
    status = ERROR_TYPE_STATUS.get(error_type) if isinstance(error_type, str) else None
    if status is None:
        return _UNKNOWN_ERROR
    code, retryable = classify_status(status)
    hint = "try again shortly" if retryable else "the message was not created"
    return BatchFailure(
        code=code,
        message=f"anthropic reported {error_type} for this batch item; {hint}",
        retryable=retryable,
    )


def _rejected(reason: BatchFailure) -> BatchOutcome:
    return BatchOutcome(status="rejected", reason=reason)


def _field(value: Any, name: str) -> Any:
    """``value.name`` or ``value[name]``: the SDK builds results without validating them, so a
    shape it does not know can arrive as a plain dict."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port
