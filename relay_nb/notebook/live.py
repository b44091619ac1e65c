"""The live view of a running turn (ipywidgets 8), replaced by the static trace when done.

While the turn runs, the cell shows a status line (phase and elapsed time), one collapsible
entry per tool call (its SQL; the line the tool sends while it runs — a query's cost, before
it runs; then its result: a table to page through, a chart, or what the tool returned), the
answer as it streams, and a usage line (tokens, cost of the turn, session total). What to
show comes from the turn view-model (:class:`relay_nb.views.TurnView`), fed each event; this
module only maps its fields to widgets, as the static HTML and the text transcript map them
to markup and lines. Events arrive on relay_nb's loop thread; setting widget values from
there sends comm messages through the kernel's thread-safe IOPub socket.

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
import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from relay_nb.agent.events import Event
from relay_nb.agent.turn_result import TurnResult
from relay_nb.markup import NO_MATH_CLASSES, keep_dollars
from relay_nb.notebook.view import turn_bundle
from relay_nb.runtime.types import Usage
from relay_nb.views import (
    CallView,
    TurnView,
    describe_usage,
    sql_html,
    status_line_html,
    table_html,
)
from relay_nb.views.html import CHART_STYLE, ERROR_COLOR, MUTED_COLOR, chart_html

__all__ = ["ApprovalControls", "LiveTurnView", "close_tree"]

_MAX_PREVIEW_CHARS = 4000
TICK_S = 1.0
"""How often the live status line's elapsed time advances."""


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
        self.view = TurnView(question=question, model=model_label)
        """What the turn shows so far: every event goes into it first."""
        self.max_rows = max_rows
        self.session_before = session_usage
        self.display_id = f"relay-{uuid.uuid4().hex}"
        self.started = time.monotonic()
        self._stopped = threading.Event()
        self._status_text = "starting"
        self._closed = False
        self._closing = threading.Lock()
        self._ticker = threading.Thread(target=self._tick, name="relay_nb-elapsed", daemon=True)
        self._calls: dict[str, tuple[Any, int]] = {}
        self._lines: dict[str, Any] = {}
        """Each call's own line (a query's cost, shown before it runs), by tool call."""
        self._verdicts: dict[str, str] = {}  # tool_call_id -> "approved" / "denied …"
        self._asking: dict[str, ApprovalControls | ChoiceControls] = {}
        """Open questions to the user, by tool call: answered "no" when the view closes."""
        self.status = widgets.HTML(self._status_html("starting"))
        self.calls = widgets.VBox([])
        self.answer = widgets.HTML("")
        self.usage = widgets.HTML("")
        self.header = widgets.HTML(keep_dollars(f"<b>Q:</b> {html.escape(question)}"))
        self.stop_button: Any = None
        """The Stop button, once :meth:`offer_stop` added it."""
        self.box = widgets.VBox([self.header, self.status, self.calls, self.answer, self.usage])

    def offer_stop(self, stop: Callable[[], None]) -> None:
        """A Stop button beside the question: a click calls ``stop()`` once (the turn's
        abort: the running query is cancelled, the trace so far kept, as an interrupt does)
        and the button says it is stopping. Only where clicks reach the cell while it runs
        (:func:`~relay_nb.notebook.approval.buttons_unavailable_reason`)."""
        button = self._widgets.Button(
            description="Stop",
            icon="stop",
            tooltip="Stop this question: its running query is cancelled, its trace kept",
            layout=self._widgets.Layout(width="auto"),
        )

        def clicked(_button: Any) -> None:
            if button.disabled:
                return
            button.disabled = True
            button.description = "Stopping…"
            stop()

        button.on_click(clicked)
        self.stop_button = button
        self.box.children = (
            self._widgets.HBox([self.header, button]),
            *self.box.children[1:],
        )

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
        self._ticker.start()

    def _tick(self) -> None:
        """Advance the elapsed time every second, also while one step (a 12 s query, a slow
        model call) sends no event."""
        while not self._stopped.wait(TICK_S):
            self._set_status(self._status_text)

    def finish(self, turn: TurnResult) -> None:
        """Replace the live widgets with the static trace (one output, where they were),
        then release the widgets."""
        from IPython.display import update_display

        try:
            data, metadata = turn_bundle(turn, max_rows=self.max_rows)
            update_display(data, metadata=metadata, raw=True, display_id=self.display_id)
        finally:
            self.close()

    def interrupted(self, why: str = "interrupted") -> None:
        """The turn ended before a result existed (the cell was interrupted; a background
        run failed: ``why``): say so, keep no widgets."""
        from IPython.display import update_display

        try:
            update_display(
                {"text/plain": f"Q: {self.question}\n({why})"},
                raw=True,
                display_id=self.display_id,
            )
        finally:
            self.close()

    def close(self) -> None:
        """Answer any open approval as denied, then close every widget the view made.

        ``Widget.close()`` closes one model only: its layout and style models, and the
        children of its boxes, stay open in the kernel and in the page, and JupyterLab saves
        each open model's state into the notebook. :func:`close_tree` closes them all, so a
        saved notebook keeps the static trace and no dead widget state.
        """
        with self._closing:  # an event still arriving from the loop (after Ctrl-C) is ignored
            self._closed = True
        self._stopped.set()
        if self._ticker.is_alive():
            self._ticker.join(timeout=2 * TICK_S)
        for controls in list(self._asking.values()):
            controls.give_up("the turn ended")
        close_tree(self.box)

    # -- events (called on relay_nb's loop thread) -----------------------------------------------

    def on_event(self, event: Event) -> None:
        """Feed the view-model, then map what changed onto the widgets."""
        with self._closing:
            if not self._closed:
                self._on_event(event)

    def _on_event(self, event: Event) -> None:
        discarded = self.view.answer
        call = self.view.apply(event)
        if call is not None:
            self._show_call(call)
        if event.type == "text_delta" or (discarded and not self.view.answer):
            escaped = keep_dollars(html.escape(self.view.answer))
            self.answer.value = (
                f'<div class="{NO_MATH_CLASSES}" style="white-space:pre-wrap">{escaped}</div>'
                if escaped
                else ""
            )
        if event.type == "usage":
            self._show_usage()
        if event.type not in ("text_delta", "usage"):
            self._set_status(self.view.phase)

    def _show_call(self, call: CallView) -> None:
        """The call's entry: made on its first event, retitled on each, filled when done."""
        entry = self._calls.get(call.tool_call_id)
        if entry is None:
            if call.state == "done":
                return  # a result with no call shown (a malformed next_step): the trace has it
            panel = self._widgets.Accordion(children=[self._widgets.VBox([self._query(call)])])
            for earlier, _index in self._calls.values():
                if earlier.selected_index is not None and not self._shows_chart(earlier):
                    earlier.selected_index = None  # the newest step is the one to read
            self._calls[call.tool_call_id] = (panel, call.index)
            self.calls.children = (*self.calls.children, panel)
            panel.selected_index = 0  # open while it runs: the query is visible at once
        else:
            panel = entry[0]
        verdict = self._verdicts.get(call.tool_call_id)
        title = call.title
        if verdict and call.state == "done":
            title = f"[{call.index}] {call.name} · {verdict} · {call.status}"
        panel.set_title(0, title)
        (box,) = panel.children
        self._show_line(call, box)
        if call.state == "done":
            query, *rest = box.children
            query.value = self._query_html(call)  # what ran (re-serialised, limited)
            box.children = (query, *rest, self._result(call))
            panel.selected_index = 0

    def _show_line(self, call: CallView, box: Any) -> None:
        """The call's own line, under its query, from the moment the tool sends it (a
        query's cost: before the query runs); a later line replaces it."""
        if not call.status_line:
            return
        shown = status_line_html(call.status_line)
        line = self._lines.get(call.tool_call_id)
        if line is None:
            line = self._lines[call.tool_call_id] = self._widgets.HTML(shown)
            query, *rest = box.children
            box.children = (query, line, *rest)
        elif line.value != shown:
            line.value = shown

    def _shows_chart(self, panel: Any) -> bool:
        """A chart stays unfolded when the next step starts; other steps fold."""
        (box,) = panel.children
        return any(isinstance(child, self._widgets.Image) for child in box.children)

    def _query(self, call: CallView) -> Any:
        return self._widgets.HTML(self._query_html(call))

    def _query_html(self, call: CallView) -> str:
        if call.asked:
            return f"<div>{html.escape(call.asked)}</div>"
        if call.query:
            return sql_html(call.readable_query())
        shown = json.dumps(call.input, ensure_ascii=False, default=str)
        return f"<pre>{html.escape(shown)}</pre>"

    def _result(self, call: CallView) -> Any:
        if call.frame is not None:
            pager = TablePager(self._widgets, call.frame, self.max_rows).box
            if not call.notes:
                return pager
            notes = "".join(f"<div>⚠ {html.escape(note)}</div>" for note in call.notes)
            return self._widgets.VBox([pager, self._widgets.HTML(notes)])
        if call.png is not None and call.png_dark is not None:  # the page's theme picks one
            return self._widgets.HTML(
                f"<style>{CHART_STYLE}</style>{chart_html(call.png, call.png_dark)}"
            )
        if call.png is not None:
            return self._widgets.Image(value=call.png, format="png")
        shown = html.escape(call.content[:_MAX_PREVIEW_CHARS])
        style = f' style="color:{ERROR_COLOR}"' if call.is_error else ""
        return self._widgets.HTML(f"<pre{style}>{shown}</pre>")

    def _show_usage(self) -> None:
        usage = self.view.usage or Usage()
        total = self.session_before + usage
        turn_line = describe_usage(usage, self.view.model, simulated=self.view.simulated)
        session_cost = "unknown" if total.cost_usd is None else f"${total.cost_usd:.4f}"
        self.usage.value = keep_dollars(
            f'<span class="{NO_MATH_CLASSES}" style="color:{MUTED_COLOR}">this turn: '
            f"{html.escape(turn_line)} · session: {session_cost}</span>"
        )

    # -- approval (called on relay_nb's loop thread; clicks arrive on the cell's thread) -------

    def ask_approval(
        self,
        tool_call_id: str,
        name: str,
        on_answer: Callable[[bool, str], None],
        *,
        unanswered: str = "",
        reason: str = "",
    ) -> ApprovalControls | None:
        """Show Approve / Deny under the call's entry (opened, so its input is visible);
        ``on_answer(approved, note)`` is called once, by the first answer; ``unanswered``
        says what happens without one, ``reason`` why this call needs a yes (its cost
        estimate). None when the call has no entry here."""
        entry = self._calls.get(tool_call_id)
        if entry is None or self._closed:
            return None
        panel, index = entry

        def settle(approved: bool, note: str) -> None:
            verdict = note or ("approved" if approved else "denied")
            self._verdicts[tool_call_id] = verdict
            self._asking.pop(tool_call_id, None)
            panel.set_title(0, f"[{index}] {name} · {verdict}")
            self._set_status(f"{name} {verdict}")
            on_answer(approved, note)

        controls = ApprovalControls(self._widgets, name, settle)
        waiting = f"waiting for your approval of {name}: Approve or Deny below"
        if reason:
            waiting = f"{name}: {reason}. Approve or Deny below"
        self._ask(tool_call_id, controls, f"[{index}] {name} · waiting for your approval")
        self._set_status(f"{waiting} ({unanswered})" if unanswered else waiting)
        return controls

    def ask_choice(
        self,
        tool_call_id: str,
        question: str,
        options: tuple[str, ...],
        on_answer: Callable[[str | None, str], None],
        *,
        unanswered: str = "",
    ) -> ChoiceControls | None:
        """Show ``question`` with one button per option under the call's entry;
        ``on_answer(choice, note)`` is called once (``choice`` None: no answer). None when
        the call has no entry here."""
        entry = self._calls.get(tool_call_id)
        if entry is None or self._closed:
            return None
        panel, index = entry

        def settle(choice: str | None, note: str) -> None:
            verdict = note or (f"you chose {choice}" if choice is not None else "no answer")
            self._verdicts[tool_call_id] = verdict
            self._asking.pop(tool_call_id, None)
            panel.set_title(0, f"[{index}] clarify · {verdict}")
            self._set_status(verdict)
            on_answer(choice, note)

        controls = ChoiceControls(self._widgets, question, options, settle)
        self._ask(tool_call_id, controls, f"[{index}] clarify · waiting for your answer")
        waiting = "the model asks: choose an answer below"
        self._set_status(f"{waiting} ({unanswered})" if unanswered else waiting)
        return controls

    def _ask(self, tool_call_id: str, controls: Any, title: str) -> None:
        """Put ``controls`` under the call's entry, opened, and keep them until answered."""
        panel, _index = self._calls[tool_call_id]
        self._asking[tool_call_id] = controls
        panel.selected_index = 0
        children = list(self.calls.children)
        children.insert(children.index(panel) + 1, controls.row)
        self.calls.children = tuple(children)
        panel.set_title(0, title)

    def _set_status(self, text: str) -> None:
        """Show ``text`` with the elapsed time; the ticker re-renders the same text (an
        approval prompt is not replaced by the phase until the next event)."""
        self._status_text = text
        self.status.value = self._status_html(text)

    def _status_html(self, text: str) -> str:
        elapsed = time.monotonic() - self.started
        return f'<span style="color:{MUTED_COLOR}">{html.escape(text)} · {elapsed:.0f} s</span>'


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

    def give_up(self, why: str) -> None:
        """Nobody answered (``why``: the turn ended, the time is up): that is a no."""
        self.answer(False, f"denied: {why}")

    def answer(self, approved: bool, note: str = "") -> bool:
        """Record the answer unless one was given already; returns whether this one counted."""
        with self._lock:
            if self.verdict is not None:
                return False
            self.verdict = approved
        self.approve.disabled = self.deny.disabled = True
        shown = note or ("approved" if approved else "denied")
        self.note.value = f'<span style="color:{MUTED_COLOR}">{html.escape(shown)}</span>'
        self._settle(approved, note)
        return True


class ChoiceControls:
    """The model's question and one button per option. The first answer wins — a click, or
    the clarifier giving up (timeout, interrupt, the turn's end) — and disables them all."""

    def __init__(
        self,
        widgets: Any,
        question: str,
        options: tuple[str, ...],
        settle: Callable[[str | None, str], None],
    ) -> None:
        self._settle = settle
        self._lock = threading.Lock()
        self.answered = False
        self.choice: str | None = None
        self.buttons = [
            widgets.Button(description=option, tooltip=option, layout=widgets.Layout(width="auto"))
            for option in options
        ]
        for button, option in zip(self.buttons, options, strict=True):
            button.on_click(lambda _button, chosen=option: self.answer(chosen))
        self.note = widgets.HTML("")
        asked = widgets.HTML(f"<b>{html.escape(question)}</b>")
        self.row = widgets.VBox([asked, widgets.HBox([*self.buttons, self.note])])

    def give_up(self, why: str) -> None:
        self.answer(None, f"not answered: {why}")

    def answer(self, choice: str | None, note: str = "") -> bool:
        """Record the answer unless one was given already; returns whether this one counted."""
        with self._lock:
            if self.answered:
                return False
            self.answered = True
            self.choice = choice
        for button in self.buttons:
            button.disabled = True
            if button.description == choice:
                button.button_style = "info"
        shown = note or (f"you chose {choice}" if choice is not None else "no answer")
        self.note.value = f'<span style="color:{MUTED_COLOR}">{html.escape(shown)}</span>'
        self._settle(choice, note)
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
        controls = [self.label]
        if self.pages > 1:  # buttons only where they page: a widget not shown is never closed
            self.previous = widgets.Button(description="◀", layout=widgets.Layout(width="3em"))
            self.next = widgets.Button(description="▶", layout=widgets.Layout(width="3em"))
            self.previous.on_click(lambda _button: self.show(self.page - 1))
            self.next.on_click(lambda _button: self.show(self.page + 1))
            controls = [self.previous, self.label, self.next]
        self.box = widgets.VBox([self.table, widgets.HBox(controls)])
        self.show(0)

    def show(self, page: int) -> None:
        self.page = min(max(page, 0), self.pages - 1)
        start = self.page * self.page_rows
        rows = self.frame.iloc[start : start + self.page_rows]
        self.table.value = table_html(rows, max_rows=self.page_rows)
        end = start + len(rows)
        self.label.value = f"rows {start + 1:,} to {end:,} of {len(self.frame):,}"
        if self.pages > 1:
            self.previous.disabled = self.page == 0
            self.next.disabled = self.page >= self.pages - 1


def close_tree(root: Any) -> None:
    """Close ``root`` and every widget it holds: children, layouts, styles (see
    :meth:`LiveTurnView.close`)."""
    from ipywidgets import Widget

    seen: set[int] = set()
    stack = [root]
    while stack:
        widget = stack.pop()
        if id(widget) in seen:
            continue
        seen.add(id(widget))
        for name in widget.keys:
            value = getattr(widget, name, None)
            values = value if isinstance(value, (list, tuple)) else (value,)
            stack.extend(v for v in values if isinstance(v, Widget))
        widget.close()
