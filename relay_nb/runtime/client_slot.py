"""The SDK client a runtime keeps for one event loop, key and base URL.

httpx clients (under both the ``anthropic`` and the ``openai`` SDK) are bound to the loop
that opened them, so a runtime used from successive loops (``asyncio.run`` calls, pytest)
needs one client per loop and must close each on its own loop. Shared by the Anthropic and
the OpenAI-compatible runtimes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from relay_nb.redaction import Secret
from relay_nb.runtime.switch import check_model_request

__all__ = ["ClientSlot"]


class _Closable(Protocol):
    async def close(self) -> Any: ...


ClientT = TypeVar("ClientT", bound=_Closable)
KeyT = TypeVar("KeyT", bound=Secret | None)


@dataclass
class ClientSlot(Generic[ClientT]):
    """The SDK client for one event loop, key and base URL.

    ``closer`` is a parked async generator whose ``finally`` closes the client. The loop it
    was started on closes it in ``shutdown_asyncgens()``, which ``asyncio.run`` and
    pytest-asyncio call before closing the loop, so a runtime used from successive
    ``asyncio.run`` calls does not leak a pooled connection per loop even without its
    ``aclose()``.
    """

    client: ClientT
    loop: asyncio.AbstractEventLoop
    api_key: Secret | None
    base_url: str
    closer: AsyncGenerator[None, None]

    @classmethod
    async def open(
        cls, client: ClientT, api_key: Secret | None, base_url: str
    ) -> ClientSlot[ClientT]:
        closer = _close_at_loop_shutdown(client)
        await anext(closer)  # runs to the yield at once; registers with the running loop
        return cls(client, asyncio.get_running_loop(), api_key, base_url, closer)

    @classmethod
    async def current(
        cls,
        slot: ClientSlot[ClientT] | None,
        runtime_id: str,
        api_key: KeyT,
        base_url: str,
        new_client: Callable[[KeyT, str], ClientT],
    ) -> ClientSlot[ClientT]:
        """``slot`` if it serves the running loop, key and base URL; else a slot for
        ``new_client(api_key, base_url)``, the old one closed. The process's switch is asked
        first whether ``runtime_id`` may reach ``base_url`` (the URL used is the URL checked)."""
        check_model_request(runtime_id, url=base_url)
        if slot is not None and slot.serves(asyncio.get_running_loop(), api_key, base_url):
            return slot
        fresh = await cls.open(new_client(api_key, base_url), api_key, base_url)
        if slot is not None:
            await slot.close()
        return fresh

    def serves(
        self, loop: asyncio.AbstractEventLoop, api_key: Secret | None, base_url: str
    ) -> bool:
        if self.loop is not loop or self.base_url != base_url:
            return False
        if self.api_key is None or api_key is None:
            return self.api_key is api_key  # both without a key
        return self.api_key.reveal() == api_key.reveal()

    async def close(self) -> None:
        """Close on the client's own loop; a closed loop has already run the closer."""
        if self.loop is asyncio.get_running_loop():
            await self.closer.aclose()
        elif self.loop.is_running():
            asyncio.run_coroutine_threadsafe(_aclose(self.closer), self.loop)


async def _close_at_loop_shutdown(client: _Closable) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.close()


async def _aclose(generator: AsyncGenerator[None, None]) -> None:
    await generator.aclose()
