"""The threads a connector's blocking calls use: one watchdog for every deadline, and reused
daemon workers for calls the notebook's thread must be able to interrupt.

Why not a thread per call: a 1-row query took about 1.9 ms where ``pandas.read_sql`` takes
0.8, and two new threads per query (a ``threading.Timer`` for the statement's deadline, a
worker so Ctrl-C reaches the notebook's thread while the driver blocks) were over half of the
difference: each start waits for the new thread to be scheduled and to take the GIL, and each
exit takes it again. Here a deadline is an entry in one heap that a single watchdog thread
sleeps on, and a worker that finished a call waits for the next one for a while.

- :func:`after` calls ``callback`` once ``seconds`` have passed unless the returned
  :class:`Deadline` is cancelled first. The callback runs on a thread of its own (delivering
  a cancel may block on the network; other deadlines must not wait for it). Cancelled entries
  are dropped when the watchdog reaches them, and the heap is compacted when they pile up.
- :func:`run_interruptibly` runs ``work`` on a worker and waits; a ``KeyboardInterrupt`` in
  the waiting thread calls ``on_interrupt`` (which stops the work), waits up to ``grace_s``
  for the work to end, and re-raises; with ``timeout_s`` it does the same at the deadline
  and raises the caller's timeout error. Workers are daemons: a call stuck at interpreter
  exit does not hold the exit up.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

__all__ = ["Deadline", "after", "run_interruptibly"]

_T = TypeVar("_T")


class Deadline:
    """A pending call of :func:`after`; :meth:`cancel` it when the work ends in time."""

    __slots__ = ("_callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], Any]) -> None:
        self.when = when
        self._callback: Callable[[], Any] | None = callback
        self.cancelled = False

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self._callback = None
            _watchdog.cancelled()


class _Watchdog:
    """The one thread that fires deadlines (started on first use, again after a fork)."""

    _COMPACT_AT = 1024

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._wake = threading.Condition(threading.Lock())
        self._cancelled = 0
        self._pid = 0

    def add(self, deadline: Deadline) -> None:
        with self._wake:
            if self._pid != os.getpid():  # first use, or a child after fork: no thread yet
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="relay-deadlines", daemon=True).start()
            earliest = not self._heap or deadline.when < self._heap[0][0]
            heapq.heappush(self._heap, (deadline.when, next(self._order), deadline))
            if earliest:
                self._wake.notify()

    def cancelled(self) -> None:
        with self._wake:
            self._cancelled += 1
            if self._cancelled > self._COMPACT_AT and self._cancelled * 2 > len(self._heap):
                self._heap = [entry for entry in self._heap if not entry[2].cancelled]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def _run(self) -> None:
        while True:
            with self._wake:
                due = self._due()
            if due is not None:
                try:
                    threading.Thread(target=due, name="relay-deadline", daemon=True).start()
                except RuntimeError:  # no thread to spare: fire it here rather than never
                    due()

    def reset(self) -> None:
        """After a fork: no watchdog runs in the child, and the parent's deadlines are the
        parent's (firing one here could cancel the parent's statement)."""
        self._heap = []
        self._wake = threading.Condition(threading.Lock())
        self._cancelled = 0
        self._pid = 0

    def _due(self) -> Callable[[], Any] | None:
        """Wait for the earliest live deadline and return its callback (lock held)."""
        while True:
            while self._heap and self._heap[0][2].cancelled:
                heapq.heappop(self._heap)
                self._cancelled = max(0, self._cancelled - 1)
            if not self._heap:
                self._wake.wait()
                continue
            wait = self._heap[0][0] - time.monotonic()
            if wait > 0:
                self._wake.wait(wait)
                continue
            deadline = heapq.heappop(self._heap)[2]
            callback, deadline._callback = deadline._callback, None
            deadline.cancelled = True  # fired: a late cancel() is a no-op
            return callback


_watchdog = _Watchdog()


def after(seconds: float, callback: Callable[[], Any]) -> Deadline:
    """Call ``callback`` (on a thread of its own) once ``seconds`` have passed, unless the
    returned deadline is cancelled first."""
    deadline = Deadline(time.monotonic() + seconds, callback)
    _watchdog.add(deadline)
    return deadline


# --------------------------------------------------------------------------------------------
# Workers


class _Workers:
    """Daemon threads that run one call at a time and wait ``_IDLE_S`` for the next."""

    _IDLE_S = 30.0

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        """Workers waiting for a task that no submitted task has claimed yet."""

    def submit(self, work: Callable[[], _T]) -> Future[_T]:
        """Queue ``work`` for a waiting worker, or start one first. If anything fails on the
        way (no thread could start, a Ctrl-C), the future is cancelled, so a worker that
        takes the task later skips it: no orphaned call runs after its caller gave up."""
        future: Future[_T] = Future()
        try:
            with self._lock:
                spawn = self._idle <= 0
                if not spawn:
                    self._idle -= 1
            if spawn:
                threading.Thread(target=self._serve, name="relay-worker", daemon=True).start()
            self._tasks.put((future, work))
        except BaseException:
            future.cancel()
            raise
        return future

    def reset(self) -> None:
        """After a fork: the parent's workers do not exist in the child."""
        self._tasks = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def _serve(self) -> None:
        while True:
            try:
                future, work = self._tasks.get(timeout=self._IDLE_S)
            except queue.Empty:
                with self._lock:  # leave only if no task came in meanwhile
                    if self._tasks.empty():
                        self._idle = max(0, self._idle - 1)
                        return
                continue
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(work())
                except BaseException as exc:  # handed to the waiting thread
                    future.set_exception(exc)
            del future, work
            with self._lock:
                self._idle += 1


_workers = _Workers()
os.register_at_fork(after_in_child=lambda: (_watchdog.reset(), _workers.reset()))


def run_interruptibly(
    work: Callable[[], _T],
    on_interrupt: Callable[[], Any],
    grace_s: float,
    *,
    timeout_s: float | None = None,
    timeout_error: Callable[[], BaseException] | None = None,
) -> _T:
    """``work()`` on a worker thread while this thread waits; Ctrl-C here calls
    ``on_interrupt``, gives the work ``grace_s`` to end, and re-raises.

    With ``timeout_s``, the wait ends there too: ``on_interrupt`` is called, the work gets
    ``grace_s``, and ``timeout_error()`` is raised (for engines whose cancel is a call from
    outside, such as Spark's job groups, rather than a statement timeout of their own)."""
    future = _workers.submit(work)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        while True:
            wait = 0.25 if deadline is None else min(0.25, max(0.0, deadline - time.monotonic()))
            try:
                return future.result(timeout=wait)
            except FutureTimeout:
                if deadline is None or time.monotonic() < deadline:
                    continue
            on_interrupt()
            with contextlib.suppress(FutureTimeout):
                future.exception(timeout=grace_s)
            raise (timeout_error or TimeoutError)()
    except KeyboardInterrupt:
        on_interrupt()
        with contextlib.suppress(FutureTimeout):
            future.exception(timeout=grace_s)
        raise
