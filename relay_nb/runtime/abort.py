"""A thread-safe abort signal, the Python counterpart of the Relay concepts' AbortSignal.

Cancelling the asyncio task also aborts an invocation, but a notebook stop button runs on
the kernel's thread while the turn may run on another loop; ``AbortSignal.abort()`` can be
called from any thread and wakes every waiter on its own loop.
"""

from __future__ import annotations

import asyncio
import threading

__all__ = ["AbortSignal"]


class AbortSignal:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._aborted = False
        self.reason: str | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self, reason: str | None = None) -> None:
        """Abort every invocation watching this signal. Idempotent, callable from any thread."""
        with self._lock:
            if self._aborted:
                return
            self._aborted = True
            self.reason = reason
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, future)

    async def wait(self) -> None:
        """Return once the signal is aborted (immediately if it already is)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._aborted:
                return
            self._waiters.append((loop, future))
        try:
            await future
        finally:
            with self._lock:
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
