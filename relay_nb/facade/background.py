"""Questions and evaluation runs that go on while the analyst runs other cells.

``relay.submit(question)`` starts a turn on relay_nb's loop thread and returns at once with a
:class:`BackgroundRun`: its ``status`` (running, done, failed, cancelled), ``cancel()``, and
``result()`` (waits; a cell's interrupt stops the wait, not the run). ``relay.submit_eval(bank)``
does the same for :meth:`~relay_nb.facade.evaluation.Evaluates.evaluate`. The kernel's
interrupt does not reach them: they run on the loop thread, not the cell's.

A background question reads the conversation as it stands when it starts and does not extend
it (:meth:`~relay_nb.agent.session.Session.ask_beside`): questions asked meanwhile go on and
never wait for it; its turn joins ``relay.turns`` when it ends. Nobody is waiting in a cell to
click, so it cannot ask back (no ``clarify``), and a tool that needs approval is denied with a
line saying to ask in the foreground. At most :data:`MAX_RUNNING` run at once per relay (a
fifth is refused with a line that says so); every model call still goes through the session's
caps and ledger, so the session's cost cap bounds them all together.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, Unpack

from relay_nb.agent.approval import ApprovalRequest
from relay_nb.agent.settings import AskOptions
from relay_nb.errors import Cancelled, ConfigurationError
from relay_nb.facade.call_options import call_layer, takes_options
from relay_nb.facade.evaluation import Evaluates
from relay_nb.facade.loop_thread import LoopThread
from relay_nb.runtime.abort import AbortSignal

if TYPE_CHECKING:
    from relay_nb.agent.services import EventSink
    from relay_nb.agent.session import Session
    from relay_nb.agent.turn_result import TurnResult
    from relay_nb.eval.report import EvalReport

__all__ = ["MAX_RUNNING", "BackgroundRun", "Submits"]

T = TypeVar("T")

MAX_RUNNING = 4
"""Background runs one relay keeps going at once."""

_KEPT = 50
"""Runs :attr:`Submits.background` lists, newest kept."""

Status = Literal["running", "done", "failed", "cancelled"]


class BackgroundRun(Generic[T]):
    """One question (or evaluation run) going on in the background (see the module doc)."""

    def __init__(
        self,
        what: str,
        coroutine: Coroutine[Any, Any, T],
        *,
        abort: AbortSignal | None = None,
    ) -> None:
        self.what = what
        """The question, or ``evaluation of BANK``."""
        self.started = time.monotonic()
        self.ended: float | None = None
        self._abort = abort
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[BackgroundRun[T]], None]] = []
        self._settled = threading.Event()
        """Set once the end callbacks ran: ``result()`` returns after them."""
        loop = LoopThread.get().loop
        self._future: concurrent.futures.Future[T] = _submit(coroutine, loop)
        self._future.add_done_callback(self._ended)

    # -- state ---------------------------------------------------------------------------------

    @property
    def status(self) -> Status:
        """``running``, ``done``, ``failed`` (an error; :meth:`result` raises it) or
        ``cancelled`` (by :meth:`cancel` or a Stop click)."""
        future = self._future
        if not future.done():
            return "running"
        if future.cancelled():
            return "cancelled"
        if future.exception() is not None:
            return "failed"
        if getattr(future.result(), "finish_reason", None) == "cancelled":
            return "cancelled"
        return "done"

    def done(self) -> bool:
        return self._future.done()

    @property
    def elapsed_s(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def result(self, timeout: float | None = None) -> T:
        """The finished turn (or report); waits for it up to ``timeout`` seconds. Raises
        the run's error, :class:`~relay_nb.errors.Cancelled` when it was cancelled before it
        had a result, and ``TimeoutError`` when ``timeout`` passed (the run goes on)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            result = self._future.result(timeout)
        except concurrent.futures.CancelledError:
            raise Cancelled(f"the background run {self.what!r} was cancelled") from None
        finally:  # what its end set (a notebook variable, the trace) is there on return
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            self._settled.wait(left)
        return result

    def cancel(self) -> None:
        """Stop it: a question's running query is cancelled and its trace so far kept (as a
        Stop click); an evaluation run stops its attempts. Does nothing once it ended."""
        if self._abort is not None:
            self._abort.abort("cancelled")
        else:
            self._future.cancel()

    def add_done_callback(self, callback: Callable[[BackgroundRun[T]], None]) -> None:
        """Call ``callback(run)`` when it ends (at once if it has), on relay_nb's loop thread."""
        with self._lock:
            if not self._future.done():
                self._callbacks.append(callback)
                return
        callback(self)

    def _ended(self, _future: concurrent.futures.Future[T]) -> None:
        self.ended = time.monotonic()
        with self._lock:
            callbacks, self._callbacks = self._callbacks, []
        try:
            for callback in callbacks:
                callback(self)
        finally:
            self._settled.set()

    def __repr__(self) -> str:
        what = self.what if len(self.what) <= 60 else self.what[:59] + "…"
        return f"<BackgroundRun {what!r}: {self.status}, {self.elapsed_s:.0f} s>"


def _submit(coroutine: Coroutine[Any, Any, T], loop: Any) -> concurrent.futures.Future[T]:
    import asyncio

    return asyncio.run_coroutine_threadsafe(coroutine, loop)


async def _deny_in_background(request: ApprovalRequest) -> bool:
    """Nobody waits in a cell to click: a call that needs approval is denied, and says so."""
    return False


class Submits(Evaluates):
    """``submit`` and ``submit_eval`` for :class:`~relay_nb.facade.relay.Relay` (over
    :class:`~relay_nb.facade.evaluation.Evaluates`, whose run ``submit_eval`` starts)."""

    _engine: Session
    _background: list[BackgroundRun[Any]]

    @property
    def background(self) -> list[BackgroundRun[Any]]:
        """This relay's background runs, oldest first (ended ones included)."""
        return list(self._background)

    @takes_options(AskOptions)
    def submit(
        self,
        question: str,
        *,
        on_event: EventSink | None = None,
        abort: AbortSignal | None = None,
        **options: Unpack[AskOptions],
    ) -> BackgroundRun[TurnResult]:
        """Start ``question`` in the background and return its :class:`BackgroundRun`
        at once (options as for :meth:`~relay_nb.facade.relay.Relay.ask`; with ``approval``
        "ask", what needs approval is denied, since nobody waits to click)."""
        call = call_layer(options, accepted=AskOptions, method="Relay.submit")
        if not isinstance(question, str) or not question.strip():
            raise ConfigurationError("submit needs a non-empty question")
        self._check_room()
        abort = abort or AbortSignal()
        coroutine = self._engine.ask_beside(
            question, call, on_event=on_event, abort=abort, approver=_deny_in_background
        )
        return self._started(BackgroundRun(question, coroutine, abort=abort))

    def submit_eval(self, bank: Any, **evaluate: Any) -> BackgroundRun[EvalReport]:
        """Start ``relay.evaluate(bank, **evaluate)`` in the background and return its
        :class:`BackgroundRun` at once; ``cancel()`` stops its attempts."""
        self._check_room()
        coroutine = self.evaluate_async(bank, **evaluate)
        name = getattr(bank, "name", None) or str(bank)
        return self._started(BackgroundRun(f"evaluation of {name}", coroutine))

    def stop_background(self, timeout_s: float = 10.0) -> None:
        """Cancel every background run still going and wait up to ``timeout_s`` for them
        to end (their statements rolled back): what closing the relay does first."""
        running = [run for run in self._background if not run.done()]
        for run in running:
            run.cancel()
        deadline = time.monotonic() + timeout_s
        for run in running:
            with contextlib.suppress(BaseException):
                run.result(max(deadline - time.monotonic(), 0.0))

    def _check_room(self) -> None:
        running = sum(1 for run in self._background if not run.done())
        if running >= MAX_RUNNING:
            raise ConfigurationError(
                f"{running} background runs are going already (at most {MAX_RUNNING}); wait "
                "for one, or cancel one: relay.background[i].cancel()"
            )

    def _started(self, run: BackgroundRun[T]) -> BackgroundRun[T]:
        self._background.append(run)
        del self._background[:-_KEPT]  # at most MAX_RUNNING of them run: those stay
        return run
