"""``%relay --background QUESTION``: the question runs while the analyst runs other cells.

The cell returns at once with the run's handle (:class:`~relay_nb.facade.background.
BackgroundRun`: ``status``, ``cancel()``, ``result()``; ``h = %relay --background …`` keeps
it). Its live view stays in that cell and updates in place from relay_nb's loop thread, with
a Stop button (a click is handled whenever the kernel is not busy with a cell); when the turn
ends the static trace takes the view's place, and ``--out VAR`` is set then. The kernel's
interrupt stops the cell that is running, never a background run. In a run nobody watches
(nbclient, nbval, papermill) there is no view: the handle's ``result()`` gives the turn.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from relay_nb.notebook.approval import takes_no_input
from relay_nb.notebook.live import LiveTurnView
from relay_nb.runtime.abort import AbortSignal

if TYPE_CHECKING:
    from relay_nb.agent.turn_result import TurnResult
    from relay_nb.facade.background import BackgroundRun
    from relay_nb.facade.relay import Relay

__all__ = ["start_in_background"]

logger = logging.getLogger("relay_nb.notebook")


def start_in_background(
    relay: Relay,
    question: str,
    turn_options: dict[str, Any],
    *,
    rows: int,
    widgets: bool,
    out: str | None,
    user_ns: MutableMapping[str, Any],
) -> BackgroundRun[TurnResult]:
    """Submit ``question`` with ``turn_options`` (``relay.ask``'s keywords) and show its
    live view in this cell; return the run's handle (see the module docstring)."""
    view = None
    if widgets and not takes_no_input():
        view = LiveTurnView(question, max_rows=rows, session_usage=relay.usage)
    abort = AbortSignal()
    run = relay.submit(
        question,
        on_event=view.on_event if view is not None else None,
        abort=abort,
        **turn_options,
    )
    if view is not None:
        view.offer_stop(lambda: abort.abort("stopped"))
        view.show()

    def ended(finished: BackgroundRun[TurnResult]) -> None:
        try:
            turn = finished.result(0)
        except BaseException as exc:  # shown where the question is; the handle keeps it
            if view is not None:
                view.interrupted(f"failed: {exc}")
            return
        if out and turn.df is not None:
            user_ns[out] = turn.df
        if view is not None:
            try:
                view.finish(turn)
            except Exception:  # the output is gone (a closed notebook): the handle has it
                logger.warning("could not show the background turn's trace", exc_info=True)

    run.add_done_callback(ended)
    what = f"; {out} is set when it ends" if out else ""
    print(f"running in the background{what}; its handle: status, cancel(), result()")
    return run
