"""Approving tool calls from a notebook: Approve / Deny buttons, or an ``input()`` prompt.

A tool marked ``requires_approval`` runs only after someone says yes
(:mod:`relay_nb.agent.approval`). In a notebook the question is asked where the turn is
shown: :class:`ButtonApprover` puts Approve / Deny buttons under the call's entry in the live
view and waits for a click.

The turn runs on relay_nb's loop thread while the cell's thread waits in ``Relay.ask``
(:mod:`relay_nb.facade.loop_thread`), and a click is a kernel message that the kernel handles
only on the cell's thread. So the approver hands the waiting to the cell's thread
(``call_in_caller``), where a short loop handles pending widget messages
(:class:`~relay_nb.notebook.ui_events.UIEvents`) and sleeps briefly, until a button is
clicked, the time is up (denied, and the entry says so) or the cell is interrupted (the
turn is cancelled, as Ctrl-C does at any other moment).

:func:`ask_with_input` is the fallback where buttons cannot work: no live view
(``%config RelayMagics.widgets = False``), no Jupyter kernel (a terminal IPython, a test
shell), a kernel whose messages relay_nb cannot handle while a cell waits (ipykernel 6),
or a run with nobody to click (nbclient, nbval, papermill: they refuse input, so the call is
refused at once instead of waiting for a timeout).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from relay_nb.agent.approval import ApprovalRequest
from relay_nb.facade.loop_thread import CallerInterrupted, call_in_caller

if TYPE_CHECKING:
    from relay_nb.notebook.live import LiveTurnView

__all__ = [
    "ButtonApprover",
    "ButtonAsker",
    "after_interrupt",
    "ask_with_input",
    "buttons_unavailable_reason",
    "duration",
    "handle_clicks",
    "kernel_events",
    "no_events",
    "takes_no_input",
    "wait_for_click",
    "wait_in_cell",
]

_T = TypeVar("_T")
_POLL_S = 0.05  # between two looks at the kernel's messages: a click feels immediate
_INTERRUPT_SETTLE_S = 5.0


class _NoEvents:
    """Where no kernel messages need handling (clicks come from elsewhere, e.g. a test)."""

    def __enter__(self) -> _NoEvents:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def process(self) -> int:
        return 0


def kernel_events() -> Any:
    """What handles clicks while the cell's thread waits: the kernel's pending messages."""
    from relay_nb.notebook.ui_events import UIEvents

    return UIEvents()


def handle_clicks() -> None:
    """Handle the widget messages waiting now (a Stop click), on the cell's thread; what
    runs between the slices of a blocked cell's wait (``while_waiting``)."""
    with kernel_events() as handler:
        handler.process()


def no_events() -> _NoEvents:
    """For ``ButtonApprover(events=...)`` where clicks arrive on another thread (tests)."""
    return _NoEvents()


def buttons_unavailable_reason() -> str | None:
    """None when Approve / Deny clicks can reach this cell while it waits; else why not.
    Call it on the cell's thread."""
    from relay_nb.notebook.ui_events import unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        return reason
    if takes_no_input():
        return "this run takes no input from anyone (nbclient, nbval, papermill)"
    return None


def takes_no_input() -> bool:
    """Whether nobody can answer in this run: a kernel that refuses input (nbclient, nbval,
    papermill). Call it on the cell's thread."""
    from relay_nb.notebook.ui_events import current_kernel

    return not getattr(current_kernel(), "_allow_stdin", True)


class ButtonAsker:
    """Asks the person with buttons in ``view`` and waits at most ``timeout_s`` for a click;
    ``events`` opens what handles clicks while the cell's thread waits (the kernel's pending
    widget messages by default)."""

    def __init__(
        self,
        view: LiveTurnView,
        *,
        timeout_s: float,
        events: Callable[[], AbstractContextManager[Any]] = kernel_events,
    ) -> None:
        self.view = view
        self.timeout_s = timeout_s
        self.events = events


class ButtonApprover(ButtonAsker):
    """Approve / Deny buttons in ``view``; a call nobody answers within ``timeout_s`` is
    denied."""

    async def __call__(self, request: ApprovalRequest) -> bool:
        answered = threading.Event()
        controls = self.view.ask_approval(
            request.tool_call_id,
            request.name,
            lambda _approved, _note: answered.set(),
            unanswered=f"denied if not answered within {duration(self.timeout_s)}",
            reason=request.reason,
        )
        if controls is None:  # not shown in this view: ask the plain way
            return await ask_with_input(request)
        answered_in_time = await wait_in_cell(
            self.events,
            answered,
            self.timeout_s,
            give_up=lambda note: controls.answer(False, note),
            notes=(
                f"denied: no answer within {duration(self.timeout_s)}",
                "not answered: the turn was stopped",
                "not answered: interrupted",
            ),
        )
        if not answered_in_time:
            return False
        return controls.verdict is True


async def wait_in_cell(
    events: Callable[[], AbstractContextManager[Any]],
    answered: threading.Event,
    timeout_s: float,
    *,
    give_up: Callable[[str], Any],
    notes: tuple[str, str, str],
) -> bool:
    """Wait on the cell's thread for a click (see the module docstring). ``give_up(note)``
    closes the question with ``notes``' (time up, turn stopped, interrupted) line; returns
    False when the cell was interrupted (after the turn's abort had its moment)."""
    timed_out, stopped, interrupted = notes
    try:
        await call_in_caller(
            lambda: wait_for_click(events, answered, timeout_s, lambda: give_up(timed_out))
        )
    except asyncio.CancelledError:  # the turn was stopped while we waited
        give_up(stopped)
        raise
    except CallerInterrupted:
        give_up(interrupted)
        await after_interrupt(None)
        return False
    return True


def wait_for_click(
    events: Callable[[], AbstractContextManager[Any]],
    answered: threading.Event,
    timeout_s: float,
    give_up: Callable[[], None],
) -> None:
    """On the cell's thread: handle the kernel's widget messages (clicks) until ``answered``
    is set or ``timeout_s`` passes (then ``give_up()``)."""
    deadline = time.monotonic() + timeout_s
    with events() as handler:
        while not answered.is_set():
            handler.process()
            left = deadline - time.monotonic()
            if left <= 0:
                give_up()
                break
            answered.wait(min(_POLL_S, left))


async def ask_with_input(request: ApprovalRequest) -> bool:
    """The fallback approver: a prompt on the cell's own thread (``input()``)."""
    shown = ", ".join(f"{k}={v!r}" for k, v in request.input.items())
    why = f" ({request.reason})" if request.reason else ""
    prompt = f"relay_nb: allow {request.name}({shown}){why}? [y/N] "
    try:
        answer = await call_in_caller(lambda: input(prompt))
    except CallerInterrupted:
        return bool(await after_interrupt(False))
    return answer.strip().lower() in ("y", "yes")


async def after_interrupt(answer: _T) -> _T:
    """The cell was interrupted while asked: the turn's abort follows at once and cancels
    this wait; should it not come, ``answer`` (no, or no choice) is the answer."""
    await asyncio.sleep(_INTERRUPT_SETTLE_S)
    return answer


def duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} min"
    return f"{seconds:g} s"
