"""The live view: a real turn's events drive real ipywidgets, then the static trace
replaces them in the same display."""

from __future__ import annotations

import threading

from relay_nb import Relay, ScriptedRuntime
from relay_nb.markup import keep_dollars
from relay_nb.notebook.live import LiveTurnView
from relay_nb.runtime.types import Usage
from relay_nb.testing.shell import TestingShell

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_events_drive_the_widgets_and_the_trace_replaces_them(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add(
        {"tool_calls": [{"name": "query_shop", "input": {"sql": "SELECT nope FROM products"}}]},
        {
            "tool_calls": [
                {"name": "query_shop", "input": {"sql": "SELECT COUNT(*) AS n FROM products"}}
            ]
        },
        {"text": "There are 20 products."},
    )
    view = LiveTurnView(
        "how many?", max_rows=5, session_usage=Usage(input_tokens=0, output_tokens=0, cost_usd=0.01)
    )
    threads: set[str] = set()

    def record(event) -> None:
        threads.add(threading.current_thread().name)
        view.on_event(event)

    turn = relay.ask("how many?", on_event=record)
    assert threads == {"relay_nb-loop"}  # widgets were updated from relay_nb's loop thread
    first, second = view.calls.children
    assert first.get_title(0) == "[1] query_shop · error"
    assert second.get_title(0).startswith("[2] query_shop · 1 row")
    # the newest step is unfolded, the earlier (made good by it) folded
    assert first.selected_index is None and second.selected_index == 0
    sql, pager = second.children[0].children
    # the result travels on its event: the panel pages through its table
    assert "SELECT" in sql.value and "20" in pager.children[0].value
    assert view.answer.value.endswith("There are 20 products.</div>")
    assert "done (stop)" in view.status.value
    assert "this turn: scripted model, priced as claude-haiku-4-5" in view.usage.value
    session_total = 0.01 + turn.usage.cost_usd
    assert keep_dollars(f"session: ${session_total:.4f}") in view.usage.value


def test_the_magic_shows_widgets_then_leaves_only_the_static_trace(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    from IPython.utils.capture import capture_output

    model.add(
        {
            "tool_calls": [
                {"name": "query_shop", "input": {"sql": "SELECT COUNT(*) AS n FROM products"}}
            ]
        },
        {"text": "20"},
    )
    with capture_output() as captured:
        shell.ip.run_cell("%relay how many products?")
    live, *middle, final = captured.outputs
    assert WIDGET_VIEW in live.data and live.data["text/plain"] == ""
    assert not [o for o in middle if not o.update]  # no second output: no empty one before it
    # the trace replaces the live view in its own output (no empty output left before it)
    assert final.update and final.transient["display_id"] == live.transient["display_id"]
    assert WIDGET_VIEW not in final.data and "text/html" in final.data
    assert final.data["text/plain"].startswith("Q: how many products?")
    assert final.metadata["relay_nb"]["model"] == "claude-haiku-4-5"


def test_widgets_can_be_turned_off(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    from IPython.utils.capture import capture_output

    shell.run("%config RelayMagics.widgets = False")
    model.add({"text": "plain"})
    try:
        with capture_output() as captured:
            shell.ip.run_cell("%relay no widgets please")
    finally:
        shell.run("%config RelayMagics.widgets = True")
    (only,) = captured.outputs
    assert WIDGET_VIEW not in only.data and only.data["text/plain"].startswith("Q: no widgets")


def test_a_result_is_paged_in_the_live_view(relay: Relay, model: ScriptedRuntime) -> None:
    from relay_nb.notebook.live import TablePager

    model.add(
        {
            "tool_calls": [
                {
                    "name": "query_shop",
                    "input": {"sql": "SELECT id, name FROM customers ORDER BY id"},
                }
            ]
        },
        {"text": "50 customers"},
    )
    view = LiveTurnView(
        "list customers",
        max_rows=20,
        session_usage=Usage(input_tokens=0, output_tokens=0, cost_usd=0.0),
    )
    relay.ask("list customers", on_event=view.on_event)
    (panel,) = view.calls.children
    table, controls = panel.children[0].children[1].children
    previous, label, following = controls.children
    assert label.value == "rows 1 to 20 of 50" and previous.disabled and not following.disabled
    assert table.value.count("<tr>") == 20  # one page of rows, never the whole frame
    following.click()
    following.click()
    assert label.value == "rows 41 to 50 of 50" and following.disabled
    assert ">41<" in table.value and ">1<" not in table.value
    pager = TablePager(view._widgets, relay.turns[-1].df.head(3), 20)
    assert pager.label.value == "rows 1 to 3 of 3" and len(pager.box.children[1].children) == 1
    view.close()


def test_a_finished_turn_leaves_no_widget_open(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    """Item 9 of issue 18: every model the live view made (boxes, pagers, buttons, and each
    one's layout and style) is closed when the turn ends, so JupyterLab saves no dead widget
    state into the notebook."""
    from IPython.utils.capture import capture_output
    from ipywidgets.widgets.widget import _instances

    model.add(
        {"tool_calls": [{"name": "query_shop", "input": {"sql": "SELECT id FROM customers"}}]},
        {"tool_calls": [{"name": "query_shop", "input": {"sql": "SELECT nope FROM customers"}}]},
        # one page: a pager without buttons (buttons made but not shown were never closed)
        {
            "tool_calls": [
                {"name": "query_shop", "input": {"sql": "SELECT COUNT(*) FROM customers"}}
            ]
        },
        {"text": "50 customers"},
    )
    before = set(_instances)
    with capture_output():
        shell.ip.run_cell("%relay list customers")
    assert relay.turns[-1].answer == "50 customers"
    assert set(_instances) - before == set()


def test_the_running_query_is_shown_open_and_the_elapsed_time_advances(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime, monkeypatch
) -> None:
    """Item 8 of issue 18: while a query runs its SQL is visible (its entry unfolded, before
    any result), and the status line's seconds advance without any event."""
    import time

    from relay_nb.notebook import live

    monkeypatch.setattr(live, "TICK_S", 0.02)
    model.add(
        {"tool_calls": [{"name": "query_shop", "input": {"sql": "SELECT name FROM products"}}]},
        {"text": "done"},
    )
    view = LiveTurnView("names", max_rows=5, session_usage=Usage())
    view.show()
    seen: list[tuple[int | None, str, str]] = []

    def record(event) -> None:
        view.on_event(event)
        if event.type == "tool_call":
            panel = view.calls.children[-1]
            seen.append(
                (panel.selected_index, panel.get_title(0), panel.children[0].children[0].value)
            )

    relay.ask("names", on_event=record)
    ((opened, title, sql),) = seen
    assert opened == 0 and title == "[1] query_shop · running…"
    assert "products" in sql and "LIMIT" not in sql  # what the model wrote, before the guard
    view.started = time.monotonic() - 7  # as if the turn had been running for 7 s
    deadline = time.monotonic() + 5
    while "· 7 s" not in view.status.value and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "done (stop) · 7 s" in view.status.value
    # a tick re-renders the line it has, not the phase: an approval prompt stays readable
    view._set_status("waiting for your approval of x: Approve or Deny below")
    time.sleep(0.1)
    assert "Approve or Deny below · 7 s" in view.status.value
    view.close()
    assert not view._ticker.is_alive()
    # an event the loop delivers after the view closed (a Ctrl-C's grace period) is ignored
    from relay_nb.agent.events import ToolCallEvent

    view.on_event(ToolCallEvent(tool_call_id="late", name="query_shop", input={"sql": "x"}))
    assert view.view.call("late") is None and len(view.calls.children) == 1


SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 400000000) "
    "SELECT max(x) AS counted FROM c"
)


def test_the_stop_button_stops_the_turn_from_the_waiting_cell(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    """Issue 37, item 14: a Stop button beside the question. Its click is handled on the
    cell's own thread while the cell waits (the wait's idle hook, where the notebook reads
    the kernel's widget messages); the running query is cancelled, the turn ends
    "cancelled" with its trace, and the button says it is stopping."""
    import time

    from relay_nb.facade.loop_thread import while_waiting
    from relay_nb.runtime.abort import AbortSignal

    model.add({"tool_calls": [{"name": "query_shop", "input": {"sql": SLOW}}]}, {"text": "no"})
    view = LiveTurnView("count", max_rows=5, session_usage=Usage())
    abort = AbortSignal()
    view.offer_stop(lambda: abort.abort("stopped"))
    assert view.stop_button.description == "Stop" and view.box.children[0].children[1] is (
        view.stop_button
    )
    waits: list[str] = []
    cell = threading.current_thread().name

    def idle() -> None:  # what handle_clicks does in a kernel: here, the click itself
        waits.append(threading.current_thread().name)
        if len(waits) == 5:  # half a second into the slow query
            view.stop_button.click()

    started = time.monotonic()
    with while_waiting(idle):
        turn = relay.ask("count", on_event=view.on_event, abort=abort)
    assert time.monotonic() - started < 10  # the query alone takes far longer
    seen = len(waits)
    assert set(waits) == {cell}  # on the cell's thread, between its wait slices
    assert turn.finish_reason == "cancelled"
    assert "cancelled by the user" in turn.tool_results[0].content
    assert view.stop_button.disabled and view.stop_button.description == "Stopping…"
    view.stop_button.click()  # a second click does nothing more
    view.close()
    # outside the block the wait has no idle hook
    model.add({"text": "hello"})
    relay.ask("hello")
    assert len(waits) == seen
