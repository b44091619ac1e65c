"""Running a coroutine to completion from synchronous code, even inside a running loop.

``Relay.ask`` is synchronous, and in Jupyter it is called while the kernel's event loop is
running — where ``asyncio.run`` refuses to start. relay_nb does not patch asyncio to allow
re-entry (``nest_asyncio`` wedges JupyterLab kernels on ipykernel 7; its fork works but
still changes the kernel's loop for every library in it). Instead one private event loop
runs on a daemon thread for the whole process, and synchronous calls submit their coroutine
there and wait. The caller's loop is never touched, so nothing else in the kernel can break.

Waiting is done in short slices, so Ctrl-C / "interrupt kernel" reaches the caller: the
``on_interrupt`` hook (e.g. firing the turn's AbortSignal) runs, the coroutine is given a
moment to end cleanly (cancelled statements roll back), and the KeyboardInterrupt goes on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from relay_nb.errors import ConfigurationError

__all__ = ["LoopThread", "run_sync"]

T = TypeVar("T")

_WAIT_SLICE_S = 0.1
_INTERRUPT_GRACE_S = 10.0


class LoopThread:
    """One event loop on one daemon thread; created on first use, shared by the process."""

    _instance: LoopThread | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, name="relay_nb-loop", daemon=True)
        self.thread.start()

    @classmethod
    def get(cls) -> LoopThread:
        with cls._guard:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = cls()
            return cls._instance

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(
        self,
        coroutine: Coroutine[Any, Any, T],
        *,
        on_interrupt: Callable[[], None] | None = None,
    ) -> T:
        """Run ``coroutine`` on the loop thread and return its result (or raise its error)."""
        if threading.current_thread() is self.thread:
            coroutine.close()
            raise ConfigurationError(
                "a synchronous relay_nb call was made from inside relay_nb's own loop (e.g. "
                "from a tool); use the async form (ask_async) there"
            )
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            while True:
                try:
                    return future.result(timeout=_WAIT_SLICE_S)
                except concurrent.futures.TimeoutError:
                    continue
        except KeyboardInterrupt:
            if on_interrupt is not None:
                on_interrupt()
            else:
                future.cancel()
            # let the work stop cleanly (a statement's rollback) before the interrupt goes on
            concurrent.futures.wait([future], timeout=_INTERRUPT_GRACE_S)
            raise


def run_sync(
    coroutine: Coroutine[Any, Any, T], *, on_interrupt: Callable[[], None] | None = None
) -> T:
    """:meth:`LoopThread.run` on the process's shared loop thread."""
    return LoopThread.get().run(coroutine, on_interrupt=on_interrupt)
