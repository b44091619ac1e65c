"""``AnthropicRuntime``: one invocation is one Messages API request through the official SDK.

This module, :mod:`relay_nb.runtime.anthropic_batch` (``invoke_batch``: one call, one Message
Batch) and :mod:`relay_nb.runtime.anthropic_wire` (the request and response mapping both use)
are the only places in the library that import ``anthropic``, and they do so inside functions
or for type checking: the SDK (and httpx2 under it) costs a noticeable import time that a
notebook using a scripted or CLI runtime should never pay. Any Anthropic-compatible server
works through ``base_url``.

The runtime stays thin on purpose. It maps the portable request onto the wire format and the
response back, and lets SDK exceptions escape: :meth:`BaseRuntime.invoke` turns them into
content-free :class:`InvocationError`s with the same table every HTTP runtime uses. The SDK's
own retries are off by default (``max_retries=0``), because retrying belongs to the caller,
who knows the budget and the alternatives.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.redaction import Secret, register_secret
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.anthropic_batch import MAX_BATCH_REQUESTS, invoke_batch
from relay_nb.runtime.anthropic_wire import (
    api_messages,
    mid_stream_error,
    system_param,
    tool_choice_param,
    tools_param,
    usage_from,
)
from relay_nb.runtime.base import BaseRuntime, TextCallback, run_guarded
from relay_nb.runtime.client_slot import ClientSlot
from relay_nb.runtime.switch import check_model_request
from relay_nb.runtime.types import (
    BatchOutcome,
    Capabilities,
    InvocationRequest,
    InvocationResult,
    ToolCall,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.lib.streaming import AsyncMessageStream
    from anthropic.types import Message as ApiMessage

__all__ = ["DEFAULT_BASE_URL", "MAX_BATCH_REQUESTS", "AnthropicRuntime"]

DEFAULT_BASE_URL = "https://api.anthropic.com"

_CAPABILITIES = Capabilities(
    structured_tools=True,
    streaming=True,
    abort=True,
    usage=True,
    structured_tools_fidelity="native",
    output_token_limit_fidelity="native",
    physical_batch=True,  # invoke_batch: one call is one Message Batch
    max_batch_size=MAX_BATCH_REQUESTS,
    token_counting=True,
)


async def _import_sdk() -> None:
    """Import ``anthropic`` in a worker thread the first time.

    The import takes about two seconds; on the event loop it would freeze a notebook's
    widgets and keep ``invoke(timeout=...)`` and abort from firing during the first call.
    """
    global _sdk_imported
    if not _sdk_imported:
        await asyncio.to_thread(importlib.import_module, "anthropic")
        _sdk_imported = True


_sdk_imported = False


class AnthropicRuntime(BaseRuntime):
    """The Anthropic Messages API (or a compatible server) as a :class:`ModelRuntime`.

    ``timeout`` is the SDK's HTTP timeout (connect, and each read and write); a wall-clock
    limit for a whole invocation is ``invoke(timeout=...)``. The key comes from ``api_key``
    or, at invoke time, ``ANTHROPIC_API_KEY``; it is always handed to the SDK explicitly so
    the SDK never goes looking in profile files or federation settings.
    """

    provider = "anthropic"

    # Message Batches polling (see relay_nb.runtime.anthropic_batch); tests set them small.
    batch_poll_interval: float = 0.5
    """Seconds before the first status poll; each later wait doubles, up to the cap."""
    batch_poll_max_interval: float = 30.0
    """The longest wait between two status polls."""
    batch_poll_max_failures: int = 5
    """Consecutive transient poll failures tolerated before the batch call gives up."""
    batch_cancel_timeout: float = 10.0
    """How long an aborted or timed-out batch call spends cancelling the batch (best effort)."""

    def __init__(
        self,
        model: str = "claude-sonnet-4-6",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 0,
        default_max_output_tokens: int = 4096,
        prompt_caching: bool | Literal["5m", "1h"] = False,
    ) -> None:
        self.model = model
        self.id = f"anthropic:{model}"
        self._api_key = Secret(api_key) if api_key else None
        if api_key:
            register_secret(api_key)  # so recordings and messages scrub it like env keys
        self._base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.default_max_output_tokens = default_max_output_tokens
        if prompt_caching not in (False, True, "5m", "1h"):
            raise ConfigurationError(
                f"prompt_caching is True, False, '5m' or '1h', not {prompt_caching!r}"
            )
        self.prompt_caching = prompt_caching
        """False; True or ``"5m"``: 5-minute cache entries; ``"1h"``: 1-hour ones (written
        at 2x input instead of 1.25x, read as cheaply)."""
        self._slot: ClientSlot[AsyncAnthropic] | None = None

    # -- ModelRuntime ----------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        return _CAPABILITIES.model_copy(update={"prompt_cache_ttl": self._cache_ttl})

    @property
    def _cache_ttl(self) -> Literal["5m", "1h"] | None:
        if self.prompt_caching is False:
            return None
        return "1h" if self.prompt_caching == "1h" else "5m"

    @property
    def base_url(self) -> str:
        """Where requests go: the constructor's URL, else ``ANTHROPIC_BASE_URL``, else the API."""
        return self._base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL

    def _check_allowed(self) -> None:
        check_model_request(self.id, url=self.base_url)

    async def _invoke(
        self, request: InvocationRequest, *, on_text: TextCallback | None
    ) -> InvocationResult:
        client = await self._client()
        params = self._params(request)
        started = time.perf_counter()
        if on_text is None:
            message = await client.messages.create(**params)
        else:
            message = await _stream(client, params, on_text)
        latency_ms = (time.perf_counter() - started) * 1000
        return self._result(message, latency_ms)

    async def invoke_batch(
        self,
        requests: Sequence[InvocationRequest],
        *,
        timeout: float | None = None,
        abort: AbortSignal | None = None,
    ) -> list[BatchOutcome]:
        """Send ``requests`` as one Message Batch; one positional outcome per request.

        The call returns when the batch has ended (which can take up to 24 hours), and raises
        only when the batch as a whole failed. See :mod:`relay_nb.runtime.anthropic_batch`.
        """
        return await invoke_batch(self, requests, timeout=timeout, abort=abort)

    async def count_tokens(
        self, request: InvocationRequest, *, timeout: float | None = None
    ) -> int:
        """The provider's own count of the request's input tokens (no message is created).

        The context layer uses it when a caller asks for exact budgets instead of chars/4.
        Failures are classified like ``invoke``'s.
        """
        self._check_allowed()

        async def count() -> int:
            client = await self._client()
            params = self._params(request)
            params.pop("max_tokens", None)
            return int((await client.messages.count_tokens(**params)).input_tokens)

        return await run_guarded(count, provider=self.provider, timeout=timeout, abort=None)

    async def aclose(self) -> None:
        """Close the HTTP client; the next invoke opens a new one. Safe to call twice."""
        slot, self._slot = self._slot, None
        if slot is not None:
            await slot.close()

    # -- request mapping -------------------------------------------------------------------

    def _params(self, request: InvocationRequest) -> dict[str, Any]:
        """The keyword arguments for ``messages.create`` and ``messages.stream``.

        ``request.metadata`` is deliberately absent: it is the caller's correlation data,
        not something to hand to a provider.
        """
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_output_tokens or self.default_max_output_tokens,
            "messages": api_messages(request.messages),
        }
        system = request.system_text()
        if system:
            params["system"] = system_param(system, ttl=self._cache_ttl)
        if request.tools:
            params["tools"] = tools_param(request, ttl=self._cache_ttl)
        if request.tool_choice is not None:
            params["tool_choice"] = tool_choice_param(request.tool_choice)
        return params

    # -- response mapping ------------------------------------------------------------------

    def _result(self, message: ApiMessage, latency_ms: float) -> InvocationResult:
        served = getattr(message, "model", None)
        content = list(getattr(message, "content", None) or [])
        return InvocationResult(
            provider=self.provider,
            model=served or self.model,
            model_source="provider-reported" if served else "configured",
            output_text="".join(block.text for block in content if block.type == "text"),
            tool_calls=[
                ToolCall(id=block.id, name=block.name, input=dict(block.input))
                for block in content
                if block.type == "tool_use"
            ],
            usage=usage_from(message, ttl=self._cache_ttl),
            latency_ms=latency_ms,
            stop_reason=getattr(message, "stop_reason", None),
        )

    # -- client per event loop -------------------------------------------------------------

    async def _client(self) -> AsyncAnthropic:
        """The client for the running loop, key and base URL; rebuilt when one changed."""
        key = self._resolve_key()
        await _import_sdk()
        self._slot = await ClientSlot.current(
            self._slot, self.id, key, self.base_url, self._new_client
        )
        return self._slot.client

    def _resolve_key(self) -> Secret:
        if self._api_key is not None:
            return self._api_key
        from_env = os.environ.get("ANTHROPIC_API_KEY")
        if not from_env:
            raise InvocationError(
                "AUTHENTICATION_FAILED",
                f"no Anthropic API key for {self.id}; set ANTHROPIC_API_KEY or pass api_key=",
                False,
            )
        return Secret(from_env)

    def _new_client(self, key: Secret, base_url: str) -> AsyncAnthropic:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(
            api_key=key.reveal(),
            base_url=base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            open_telemetry=False,  # prompts and outputs must not leak into trace exporters
        )


async def _stream(
    client: AsyncAnthropic, params: dict[str, Any], on_text: TextCallback
) -> ApiMessage:
    """Run the request as an SSE stream, feeding text deltas to ``on_text`` as they arrive."""
    from anthropic import APIStatusError

    try:
        async with client.messages.stream(**params) as stream:
            return await _drain(stream, on_text)
    except APIStatusError as exc:
        translated = mid_stream_error(exc)
        if translated is None:
            raise
        raise translated from None


async def _drain(stream: AsyncMessageStream[Any], on_text: TextCallback) -> ApiMessage:
    """Consume every event; a stream that ends without ``message_stop`` is incomplete."""
    completed = False
    async for event in stream:
        if event.type == "text":
            on_text(event.text)
        elif event.type == "message_stop":
            completed = True
    if not completed:
        raise InvocationError(
            "PROVIDER_UNAVAILABLE",
            "the anthropic response stream ended before the message was complete",
            True,
        )
    return await stream.get_final_message()
