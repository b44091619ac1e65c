"""Running a coroutine to completion from synchronous code, even inside a running loop.

``Relay.ask`` is synchronous, and in Jupyter it is called while the kernel's event loop is
running — where ``asyncio.run`` refuses to start. relay_nb does not patch asyncio to allow
re-entry (``nest_asyncio`` wedges JupyterLab kernels on ipykernel 7; its fork works but
still changes the kernel's loop for every library in it). Instead one private event loop
runs on a daemon thread for the whole process, and synchronous calls submit their coroutine
there and wait. The caller's loop is never touched, so nothing else in the kernel can break.

The caller waits on a queue that the coroutine's completion also posts to, so it wakes the
moment the result exists (a scripted turn costs what it costs through ``ask_async``, not a
polling interval). The wait is sliced only to notice a dead loop thread; Ctrl-C / "interrupt
kernel" interrupts the wait itself: the ``on_interrupt`` hook (e.g. firing the turn's
AbortSignal) runs, the coroutine is given a moment to end cleanly (cancelled statements roll
back), and the KeyboardInterrupt goes on.

Some work must happen on the *caller's* thread — in a kernel, ``input()`` (an approval
prompt) only works from the thread running the cell. Code on the loop thread hands such
work over with :func:`call_in_caller`; the waiting caller runs it between its wait slices.
A Ctrl-C during such work goes on in the caller as usual; on the loop thread the waiting
coroutine gets :class:`CallerInterrupted` — after the ``on_interrupt`` hook has run, so a
turn sees its abort first — never the KeyboardInterrupt itself, which would stop the loop.

:func:`while_waiting` gives the waiting caller something to do between its wait slices (the
notebook handles widget clicks there, so a Stop button works while the cell blocks).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, ParamSpec, TypeVar

from relay_nb.errors import Cancelled, ConfigurationError, RelayError

__all__ = [
    "CallerInterrupted",
    "LoopThread",
    "blocking",
    "call_in_caller",
    "run_sync",
    "while_waiting",
]

T = TypeVar("T")
P = ParamSpec("P")

_WAIT_SLICE_S = 0.1
_INTERRUPT_GRACE_S = 10.0

_Job = tuple[Callable[[], Any], concurrent.futures.Future[Any]]
_DONE: Any = object()
"""Posted to the caller's queue when the coroutine finishes: wakes the wait at once."""
_CALLER: contextvars.ContextVar[queue.SimpleQueue[_Job] | None] = contextvars.ContextVar(
    "relay_nb_caller_jobs", default=None
)


_IDLE = threading.local()
"""Per thread: what a waiting caller runs between its wait slices (see :func:`while_waiting`)."""


@contextlib.contextmanager
def while_waiting(idle: Callable[[], object]) -> Iterator[None]:
    """Within this block, a synchronous call waiting on this thread runs ``idle()`` every
    wait slice (0.1 s) in which no work was handed to it. ``idle`` must return quickly."""
    before = getattr(_IDLE, "hook", None)
    _IDLE.hook = idle
    try:
        yield
    finally:
        _IDLE.hook = before


class CallerInterrupted(Exception):
    """Work handed to the caller was interrupted there (Ctrl-C / "interrupt kernel")."""

    def __init__(self) -> None:
        super().__init__("interrupted in the calling thread")


async def call_in_caller(function: Callable[[], T]) -> T:
    """Run ``function`` on the thread waiting in :meth:`LoopThread.run` and return its
    result; called from anywhere else (no caller waiting), it simply runs here."""
    jobs = _CALLER.get()
    if jobs is None:
        return function()
    done: concurrent.futures.Future[T] = concurrent.futures.Future()
    jobs.put((function, done))
    return await asyncio.wrap_future(done)


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
        jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()

        async def with_caller() -> T:
            _CALLER.set(jobs)  # tasks the coroutine starts inherit it
            return await coroutine

        future = asyncio.run_coroutine_threadsafe(with_caller(), self.loop)
        future.add_done_callback(lambda _: jobs.put(_DONE))
        job: _Job | None = None
        idle = getattr(_IDLE, "hook", None)
        try:
            while not future.done():
                # no `continue` inside an `except` here: on CPython 3.11 a KeyboardInterrupt
                # delivered at that backward jump escapes the enclosing handler (seen here)
                job = _next_job(jobs)
                if job is _DONE:
                    job = None
                elif job is not None:
                    _run_job(*job)
                elif not self.thread.is_alive() and not future.done():  # the loop itself died
                    future.cancel()
                    raise RelayError(
                        "relay_nb's event loop stopped unexpectedly, so this call cannot "
                        "finish; ask again (a new loop starts)"
                    )
                elif idle is not None:
                    idle()
            return future.result()
        except KeyboardInterrupt:
            if on_interrupt is not None:
                on_interrupt()
            else:
                future.cancel()
            # then the interrupted job (and any not started) fail on the loop side
            _fail_jobs(job, jobs)
            # let the work stop cleanly (a statement's rollback) before the interrupt goes on
            concurrent.futures.wait([future], timeout=_INTERRUPT_GRACE_S)
            raise Cancelled(
                "the call was stopped and its work cancelled; the session is ready"
            ) from None


def run_sync(
    coroutine: Coroutine[Any, Any, T], *, on_interrupt: Callable[[], None] | None = None
) -> T:
    """:meth:`LoopThread.run` on the process's shared loop thread."""
    return LoopThread.get().run(coroutine, on_interrupt=on_interrupt)


def blocking(method: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The synchronous twin of an ``async`` method, with its very signature (for type
    checkers, ``help()`` and ``inspect``): it runs the coroutine with :func:`run_sync`, so it
    blocks its caller and works inside a running notebook loop too."""

    @functools.wraps(method)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(method(*args, **kwargs))

    run.__name__ = method.__name__.removesuffix("_async")
    run.__qualname__ = method.__qualname__.removesuffix("_async")
    return run


def _next_job(jobs: queue.SimpleQueue[_Job]) -> _Job | None:
    try:
        return jobs.get(timeout=_WAIT_SLICE_S)
    except queue.Empty:
        return None


def _run_job(function: Callable[[], Any], done: concurrent.futures.Future[Any]) -> None:
    if not done.set_running_or_notify_cancel():
        return
    try:
        result = function()
    except KeyboardInterrupt:  # the caller's: `run` fails the job once the abort has fired
        raise
    except BaseException as exc:
        done.set_exception(exc)
    else:
        done.set_result(result)


def _fail_jobs(current: _Job | None, jobs: queue.SimpleQueue[_Job]) -> None:
    """Fail the interrupted job and every job not yet started with CallerInterrupted."""
    pending = [current] if current is not None else []
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            break
        if job is not _DONE:
            pending.append(job)
    for _function, done in pending:
        if not done.done():
            done.set_exception(CallerInterrupted())
