"""Answering the model's ``clarify`` question from a notebook: a button per option, or a
numbered ``input()`` prompt.

The same mechanism as approval (:mod:`relay_nb.notebook.approval`): the turn runs on
relay_nb's loop thread, so the wait for a click is handed to the cell's thread, which handles
the kernel's widget messages until a button is clicked, the time is up (no answer: the model
is told to choose the likeliest reading and say so) or the cell is interrupted (the turn is
cancelled). Where buttons cannot work, :func:`choose_with_input` asks in the cell's input
box; where nobody can answer at all (nbclient, nbval, papermill) the magic offers no
``clarify`` tool (:func:`clarifier_for`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from relay_nb.agent.clarify import Clarifier, ClarifyRequest
from relay_nb.facade.loop_thread import CallerInterrupted, call_in_caller
from relay_nb.notebook.approval import (
    ButtonAsker,
    after_interrupt,
    buttons_unavailable_reason,
    duration,
    takes_no_input,
    wait_in_cell,
)

if TYPE_CHECKING:
    from relay_nb.notebook.live import LiveTurnView

__all__ = ["ButtonClarifier", "choose_with_input", "clarifier_for"]


class ButtonClarifier(ButtonAsker):
    """One button per option in ``view``; no click within ``timeout_s`` is no answer."""

    async def __call__(self, request: ClarifyRequest) -> str | None:
        answered = threading.Event()
        controls = self.view.ask_choice(
            request.tool_call_id,
            request.question,
            request.options,
            lambda _choice, _note: answered.set(),
            unanswered=f"no answer after {duration(self.timeout_s)}",
        )
        if controls is None:  # not shown in this view: ask the plain way
            return await choose_with_input(request)
        waited = f"no answer within {duration(self.timeout_s)}"
        answered_in_time = await wait_in_cell(
            self.events,
            answered,
            self.timeout_s,
            give_up=lambda note: controls.answer(None, note),
            notes=(waited, "not answered: the turn was stopped", "not answered: interrupted"),
        )
        if not answered_in_time:
            return None
        return controls.choice


async def choose_with_input(request: ClarifyRequest) -> str | None:
    """The fallback: the options numbered, answered by number (or in the user's own words)
    on the cell's own thread; an empty answer is no answer."""
    listed = "  ".join(f"[{i}] {option}" for i, option in enumerate(request.options, 1))
    prompt = f"relay_nb asks: {request.question}\n{listed}\nyour choice: "
    try:
        answer = (await call_in_caller(lambda: input(prompt))).strip()
    except CallerInterrupted:
        return await after_interrupt(None)
    if answer.isdigit() and 1 <= int(answer) <= len(request.options):
        return request.options[int(answer) - 1]
    return answer or None


def clarifier_for(view: LiveTurnView | None, *, timeout_s: float) -> Clarifier | None:
    """Who answers the model's questions in this cell: buttons in the live view, else the
    input box; None where nobody can (then the model is not offered ``clarify``)."""
    if takes_no_input():  # nbclient, nbval, papermill
        return None
    if view is not None and buttons_unavailable_reason() is None:
        return ButtonClarifier(view, timeout_s=timeout_s)
    return choose_with_input
