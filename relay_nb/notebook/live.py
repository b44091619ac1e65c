"""The live view of a running turn (ipywidgets 8), replaced by the static trace when done.

While the turn runs, the cell shows a status line (phase and elapsed time), one collapsible
entry per tool call (its SQL, then what the tool returned — the same compact preview the
model reads), the answer as it streams, and a usage line (tokens, cost of the turn, session
total). Events arrive on relay_nb's loop thread; setting widget values from there sends comm
messages through the kernel's thread-safe IOPub socket.

When the turn ends, the live display is blanked and the static bundle (HTML + text, see
:mod:`relay_nb.notebook.view`) is displayed after it. A saved notebook therefore never depends
on widget state, which JupyterLab cannot restore ("model not found"). The live display's
only other content is an empty ``text/plain``: nbval ignores display updates and widget
views, so it sees exactly the outputs a saved notebook holds — an empty one, then the trace.
"""

from __future__ import annotations

import html
import time
import uuid
from typing import Any

from relay_nb.agent.events import Event
from relay_nb.agent.loop import TurnResult
from relay_nb.facade.transcript import describe_usage
from relay_nb.notebook.render_html import sql_html
from relay_nb.notebook.view import turn_bundle
from relay_nb.runtime.types import Usage

__all__ = ["LiveTurnView"]

_PHASES = {
    "resolving_context": "resolving context",
    "calling_model": "calling the model",
    "compacting_history": "compacting the history",
}
_MAX_PREVIEW_CHARS = 4000


class LiveTurnView:
    """One turn's live widgets; feed it events with :meth:`on_event`, end with :meth:`finish`."""

    def __init__(
        self,
        question: str,
        *,
        max_rows: int,
        session_usage: Usage,
        model_label: str = "",
    ) -> None:
        import ipywidgets as widgets

        self._widgets = widgets
        self.question = question
        self.max_rows = max_rows
        self.session_before = session_usage
        self.model_label = model_label
        self.display_id = f"relay-{uuid.uuid4().hex}"
        self.started = time.monotonic()
        self.turn_usage: Usage | None = None
        self.answer_text = ""
        self._calls: dict[str, tuple[Any, int]] = {}
        self.status = widgets.HTML(self._status_html("starting"))
        self.calls = widgets.VBox([])
        self.answer = widgets.HTML("")
        self.usage = widgets.HTML("")
        header = widgets.HTML(f"<b>Q:</b> {html.escape(question)}")
        self.box = widgets.VBox([header, self.status, self.calls, self.answer, self.usage])

    # -- display ------------------------------------------------------------------------------

    def show(self) -> None:
        from IPython.display import display

        data = {
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2,
                "version_minor": 0,
                "model_id": self.box.model_id,
            },
            "text/plain": "",
        }
        display(data, raw=True, display_id=self.display_id)

    def finish(self, turn: TurnResult) -> None:
        """Blank the live widgets, show the static trace, release the widgets."""
        from IPython.display import display, update_display

        update_display({"text/plain": ""}, raw=True, display_id=self.display_id)
        data, metadata = turn_bundle(turn, max_rows=self.max_rows)
        display(data, metadata=metadata, raw=True)
        self.close()

    def interrupted(self) -> None:
        """The cell was interrupted before a result existed: say so, keep no widgets."""
        from IPython.display import display, update_display

        update_display({"text/plain": ""}, raw=True, display_id=self.display_id)
        display({"text/plain": f"Q: {self.question}\n(interrupted)"}, raw=True)
        self.close()

    def close(self) -> None:
        panels = list(self.calls.children)
        for panel in panels:
            for child in panel.children:
                child.close()
            panel.close()
        for child in self.box.children:
            child.close()
        self.box.close()

    # -- events (called on relay_nb's loop thread) -----------------------------------------------

    def on_event(self, event: Event) -> None:
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event)

    def _on_thinking(self, event: Any) -> None:
        if event.step == "retrying":
            if event.detail and "discarded" in event.detail:
                self.answer_text = ""
                self.answer.value = ""
            self._set_status(f"retrying: {event.detail or ''}")
        elif event.step == "usage_cap":
            self._set_status(f"stopped: {event.detail or 'usage cap'}")
        else:
            phase = _PHASES.get(event.step, event.step)
            if event.step == "calling_model" and self.model_label:
                phase = f"calling {self.model_label}"
            self._set_status(phase)

    def _on_context_resolved(self, event: Any) -> None:
        sources = ", ".join(event.sources) or "none"
        self._set_status(f"context from {sources} (~{event.token_estimate:,} tokens)")

    def _on_tool_call(self, event: Any) -> None:
        widgets = self._widgets
        index = len(self._calls) + 1
        sql = event.input.get("sql") if isinstance(event.input, dict) else None
        if isinstance(sql, str):
            body = sql_html(sql)
        else:
            body = f"<pre>{html.escape(str(event.input))}</pre>"
        panel = widgets.Accordion(children=[widgets.HTML(body)])
        panel.set_title(0, f"[{index}] {event.name} · running…")
        self._calls[event.tool_call_id] = (panel, index)
        self.calls.children = (*self.calls.children, panel)
        self._set_status(f"running {event.name}")

    def _on_tool_awaiting_approval(self, event: Any) -> None:
        entry = self._calls.get(event.tool_call_id)
        if entry is not None:
            panel, index = entry
            panel.set_title(0, f"[{index}] {event.name} · waiting for your approval")
        self._set_status(f"{event.name} needs your approval")

    def _on_tool_result(self, event: Any) -> None:
        entry = self._calls.get(event.tool_call_id)
        if entry is None:
            return
        panel, index = entry
        first_line = event.output.splitlines()[0][:80] if event.output else "ok"
        outcome = "error" if event.is_error else first_line
        panel.set_title(0, f"[{index}] {event.name} · {outcome}")
        shown = html.escape(event.output[:_MAX_PREVIEW_CHARS])
        style = ' style="color:#b00"' if event.is_error else ""
        (body,) = panel.children
        body.value += f"<pre{style}>{shown}</pre>"
        if event.is_error:
            panel.selected_index = 0

    def _on_text_delta(self, event: Any) -> None:
        self.answer_text += event.delta
        escaped = html.escape(self.answer_text)
        self.answer.value = f'<div style="white-space:pre-wrap">{escaped}</div>'

    def _on_usage(self, event: Any) -> None:
        usage = event.usage
        self.turn_usage = usage if self.turn_usage is None else self.turn_usage + usage
        self.model_label = event.model
        total = self.session_before + self.turn_usage
        turn_line = describe_usage(self.turn_usage, event.model)
        session_cost = "unknown" if total.cost_usd is None else f"${total.cost_usd:.4f}"
        self.usage.value = (
            f'<span style="color:#666">this turn: {html.escape(turn_line)} · '
            f"session: {session_cost}</span>"
        )

    def _on_done(self, event: Any) -> None:
        self._set_status(f"done ({event.finish_reason})")

    def _on_error(self, event: Any) -> None:
        self._set_status(f"error: {event.message}")

    def _set_status(self, text: str) -> None:
        self.status.value = self._status_html(text)

    def _status_html(self, text: str) -> str:
        elapsed = time.monotonic() - self.started
        return f'<span style="color:#555">{html.escape(text)} · {elapsed:.1f} s</span>'
