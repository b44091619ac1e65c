"""The live view of a running turn (ipywidgets 8), replaced by the static trace when done.

While the turn runs, the cell shows a status line (phase and elapsed time), one collapsible
entry per tool call (its SQL, then what the tool returned — the same compact preview the
model reads), the answer as it streams, and a usage line (tokens, cost of the turn, session
total). Events arrive on relay_nb's loop thread; setting widget values from there sends comm
messages through the kernel's thread-safe IOPub socket.

A tool that needs approval gets Approve / Deny buttons under its entry (see
:mod:`relay_nb.notebook.approval` for how a click reaches a cell that is busy waiting for it);
the answer stays in the entry's title.

When the turn ends, the live display is blanked and the static bundle (HTML + text, see
:mod:`relay_nb.notebook.view`) is displayed after it. A saved notebook therefore never depends
on widget state, which JupyterLab cannot restore ("model not found"). The live display's
only other content is an empty ``text/plain``: nbval ignores display updates and widget
views, so it sees exactly the outputs a saved notebook holds — an empty one, then the trace.
"""

from __future__ import annotations

import html
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from relay_nb.agent.events import Event
from relay_nb.agent.turn_result import TurnResult
from relay_nb.facade.transcript import describe_usage
from relay_nb.notebook.render_html import sql_html
from relay_nb.notebook.view import turn_bundle
from relay_nb.runtime.types import Usage

__all__ = ["ApprovalControls", "LiveTurnView"]

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
        self._verdicts: dict[str, str] = {}  # tool_call_id -> "approved" / "denied …"
        self._approvals: dict[str, ApprovalControls] = {}
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
        for controls in list(self._approvals.values()):
            controls.answer(False, "denied: the turn ended")
        panels = list(self.calls.children)
        for panel in panels:
            for child in panel.children:
                for grandchild in getattr(child, "children", ()):
                    grandchild.close()
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
        panel = widgets.Accordion(children=[widgets.VBox([widgets.HTML(body)])])
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

    # -- approval (called on relay_nb's loop thread; clicks arrive on the cell's thread) -------

    def ask_approval(
        self,
        tool_call_id: str,
        name: str,
        on_answer: Callable[[bool, str], None],
        *,
        unanswered: str = "",
    ) -> ApprovalControls | None:
        """Show Approve / Deny under the call's entry (opened, so its input is visible);
        ``on_answer(approved, note)`` is called once, by the first answer; ``unanswered``
        says what happens without one. None when the call has no entry here."""
        entry = self._calls.get(tool_call_id)
        if entry is None:
            return None
        panel, index = entry

        def settle(approved: bool, note: str) -> None:
            verdict = note or ("approved" if approved else "denied")
            self._verdicts[tool_call_id] = verdict
            self._approvals.pop(tool_call_id, None)
            panel.set_title(0, f"[{index}] {name} · {verdict}")
            self._set_status(f"{name} {verdict}")
            on_answer(approved, note)

        controls = ApprovalControls(self._widgets, name, settle)
        self._approvals[tool_call_id] = controls
        panel.selected_index = 0
        children = list(self.calls.children)
        children.insert(children.index(panel) + 1, controls.row)
        self.calls.children = tuple(children)
        panel.set_title(0, f"[{index}] {name} · waiting for your approval")
        waiting = f"waiting for your approval of {name}: Approve or Deny below"
        self._set_status(f"{waiting} ({unanswered})" if unanswered else waiting)
        return controls

    def _on_tool_result(self, event: Any) -> None:
        entry = self._calls.get(event.tool_call_id)
        if entry is None:
            return
        panel, index = entry
        first_line = event.output.splitlines()[0][:80] if event.output else "ok"
        outcome = "error" if event.is_error else first_line
        verdict = self._verdicts.get(event.tool_call_id)
        label = f"{verdict} · {outcome}" if verdict else outcome
        panel.set_title(0, f"[{index}] {event.name} · {label}")
        (box,) = panel.children
        artifact = event.artifact  # the result itself, carried by the event
        frame, png = getattr(artifact, "df", None), getattr(artifact, "png", None)
        if event.is_error or (frame is None and png is None):
            shown = html.escape(event.output[:_MAX_PREVIEW_CHARS])
            style = ' style="color:#b00"' if event.is_error else ""
            box.children = (*box.children, self._widgets.HTML(f"<pre{style}>{shown}</pre>"))
        elif frame is not None:
            box.children = (*box.children, TablePager(self._widgets, frame, self.max_rows).box)
        else:
            image = self._widgets.Image(value=png, format="png")
            box.children = (*box.children, image)
            panel.selected_index = 0
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


class ApprovalControls:
    """Approve / Deny for one tool call. The first answer wins — a click, or the approver
    giving up (timeout, interrupt) — and disables both buttons."""

    def __init__(self, widgets: Any, name: str, settle: Callable[[bool, str], None]) -> None:
        self._settle = settle
        self._lock = threading.Lock()
        self.verdict: bool | None = None
        self.approve = widgets.Button(
            description="Approve", button_style="success", icon="check", tooltip=f"run {name}"
        )
        self.deny = widgets.Button(
            description="Deny", button_style="danger", icon="times", tooltip=f"do not run {name}"
        )
        self.note = widgets.HTML("")
        self.row = widgets.HBox([self.approve, self.deny, self.note])
        self.approve.on_click(lambda _button: self.answer(True))
        self.deny.on_click(lambda _button: self.answer(False))

    @property
    def answered(self) -> bool:
        return self.verdict is not None

    def answer(self, approved: bool, note: str = "") -> bool:
        """Record the answer unless one was given already; returns whether this one counted."""
        with self._lock:
            if self.verdict is not None:
                return False
            self.verdict = approved
        self.approve.disabled = self.deny.disabled = True
        shown = note or ("approved" if approved else "denied")
        self.note.value = f'<span style="color:#555">{html.escape(shown)}</span>'
        self._settle(approved, note)
        return True


class TablePager:
    """A result DataFrame, ``page_rows`` at a time: only the page shown is ever rendered,
    so a million-row result costs what one page does."""

    def __init__(self, widgets: Any, frame: Any, page_rows: int) -> None:
        self.frame = frame
        self.page_rows = max(1, page_rows)
        self.pages = max(1, -(-len(frame) // self.page_rows))
        self.page = 0
        self.table = widgets.HTML()
        self.label = widgets.Label()
        self.previous = widgets.Button(description="◀", layout=widgets.Layout(width="3em"))
        self.next = widgets.Button(description="▶", layout=widgets.Layout(width="3em"))
        self.previous.on_click(lambda _button: self.show(self.page - 1))
        self.next.on_click(lambda _button: self.show(self.page + 1))
        controls = [self.previous, self.label, self.next] if self.pages > 1 else [self.label]
        self.box = widgets.VBox([self.table, widgets.HBox(controls)])
        self.show(0)

    def show(self, page: int) -> None:
        from relay_nb.notebook.render_html import table_html

        self.page = min(max(page, 0), self.pages - 1)
        start = self.page * self.page_rows
        rows = self.frame.iloc[start : start + self.page_rows]
        self.table.value = table_html(rows, max_rows=self.page_rows)
        end = start + len(rows)
        self.label.value = f"rows {start + 1:,} to {end:,} of {len(self.frame):,}"
        self.previous.disabled = self.page == 0
        self.next.disabled = self.page >= self.pages - 1
