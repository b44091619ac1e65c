"""Approving a tool call in the notebook: Approve / Deny buttons in the live view, and the
input() fallback where buttons cannot work.

There is no kernel here (a real IPython shell, not ipykernel), so the magic must fall back
to input(). The buttons themselves are driven directly: a real turn waits in the approver
while another thread clicks, as the kernel's thread does when it handles a click message
(tests/notebook/test_approval_kernel.py and tests/browser do it through a real kernel).
"""

from __future__ import annotations

import _thread
import threading
import time
from collections.abc import Callable

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.agent.services import TurnServices
from relay_nb.facade.loop_thread import LoopThread
from relay_nb.notebook.approval import (
    ButtonApprover,
    ask_with_input,
    buttons_unavailable_reason,
    no_events,
)
from relay_nb.notebook.live import LiveTurnView
from relay_nb.runtime.types import Usage
from relay_nb.testing.shell import TestingShell

WIPE = {"tool_calls": [{"name": "wipe_cache", "input": {"name": "x"}}]}


@pytest.fixture
def wiped(relay: Relay) -> list[str]:
    """A tool that needs approval on the default session; lists the caches it wiped."""
    calls: list[str] = []

    @relay.tool(requires_approval=True)
    def wipe_cache(name: str) -> str:
        """Wipes a cache."""
        calls.append(name)
        return f"wiped {name}"

    return calls


def new_view() -> LiveTurnView:
    return LiveTurnView("wipe x", max_rows=5, session_usage=Usage(input_tokens=0, output_tokens=0))


def buttons(view: LiveTurnView) -> dict[str, object]:
    found = {}
    for child in view.calls.children:
        for widget in getattr(child, "children", ()):
            if getattr(widget, "description", None) in ("Approve", "Deny"):
                found[widget.description] = widget
    return found


def click_when_shown(view: LiveTurnView, label: str, then: Callable[[], None] = lambda: None):
    """Another thread: wait for the buttons, click ``label``, then run ``then``."""

    def run() -> None:
        deadline = time.monotonic() + 10
        while label not in buttons(view) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # the approver is waiting by now
        buttons(view)[label].click()
        then()

    thread = threading.Thread(target=run, name="clicker")
    thread.start()
    return thread


def title(view: LiveTurnView) -> str:
    return view.calls.children[0].get_title(0)


def test_approve_runs_the_tool_and_the_entry_says_approved(
    relay: Relay, model: ScriptedRuntime, wiped: list[str]
) -> None:
    model.add(WIPE, {"text": "done"})
    view = new_view()
    clicker = click_when_shown(view, "Approve")
    turn = relay.ask(
        "wipe x",
        approver=ButtonApprover(view, timeout_s=10, events=no_events),
        on_event=view.on_event,
    )
    clicker.join()
    assert wiped == ["x"] and turn.tool_results[0].content == "wiped x"
    assert title(view) == "[1] wipe_cache · approved · ok"
    shown = buttons(view)
    assert shown["Approve"].disabled and shown["Deny"].disabled
    assert "approved" in view.calls.children[1].children[2].value  # the note beside them
    assert "done (stop)" in view.status.value


def test_deny_skips_the_tool_and_a_later_click_changes_nothing(
    relay: Relay, model: ScriptedRuntime, wiped: list[str]
) -> None:
    model.add(WIPE, {"text": "not wiped"})
    view = new_view()
    clicker = click_when_shown(view, "Deny", then=lambda: buttons(view)["Approve"].click())
    turn = relay.ask(
        "wipe x",
        approver=ButtonApprover(view, timeout_s=10, events=no_events),
        on_event=view.on_event,
    )
    clicker.join()
    assert wiped == []
    (result,) = turn.tool_results
    assert result.is_error and "the user denied this call to wipe_cache" in result.content
    assert title(view) == "[1] wipe_cache · denied · error"
    assert "denied" in view.calls.children[1].children[2].value  # the note beside the buttons


def test_no_click_in_time_denies_and_says_so(
    relay: Relay, model: ScriptedRuntime, wiped: list[str]
) -> None:
    model.add(WIPE, {"text": "gave up"})
    view = new_view()
    started = time.monotonic()
    turn = relay.ask(
        "wipe x",
        approver=ButtonApprover(view, timeout_s=0.3, events=no_events),
        on_event=view.on_event,
    )
    assert 0.3 <= time.monotonic() - started < 5
    assert wiped == [] and turn.tool_results[0].is_error
    assert title(view) == "[1] wipe_cache · denied: no answer within 0.3 s · error"
    assert all(button.disabled for button in buttons(view).values())


def test_interrupting_the_wait_cancels_the_turn_cleanly(
    relay: Relay, model: ScriptedRuntime, wiped: list[str]
) -> None:
    model.add(WIPE, {"text": "never"})
    view = new_view()
    loop = LoopThread.get()

    def interrupt_when_shown() -> None:
        deadline = time.monotonic() + 10
        while "Approve" not in buttons(view) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        _thread.interrupt_main()  # Ctrl-C / "interrupt kernel"

    threading.Thread(target=interrupt_when_shown, name="interrupter").start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        relay.ask(
            "wipe x",
            approver=ButtonApprover(view, timeout_s=30, events=no_events),
            on_event=view.on_event,
        )
    assert time.monotonic() - started < 5  # not the 30 s timeout
    assert wiped == [] and relay.turns[-1].finish_reason == "cancelled"
    assert "not answered" in title(view)
    assert all(button.disabled for button in buttons(view).values())
    assert LoopThread.get() is loop and loop.thread.is_alive()
    assert relay.ask("and now?").answer == "never"  # the session goes on


def test_without_a_kernel_the_magic_asks_with_input(
    shell: TestingShell,
    relay: Relay,
    model: ScriptedRuntime,
    wiped: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A terminal IPython or this test shell has no kernel to carry clicks: input() it is,
    with the live view on (the default) and off."""
    assert buttons_unavailable_reason() == "not running in a Jupyter kernel"
    magics = shell.ip.magics_manager.registry["RelayMagics"]
    assert magics._approver(new_view()) is ask_with_input
    assert magics._approver(None) is ask_with_input
    answers = iter(["y", "n"])
    prompts: list[str] = []
    monkeypatch.setattr("builtins.input", lambda p: prompts.append(p) or next(answers))
    for widgets in (True, False):
        shell.run(f"%config RelayMagics.widgets = {widgets}")
        model.add(WIPE, {"text": "ok"})
        shell.run("%relay wipe the x cache")
    assert wiped == ["x"] and len(prompts) == 2


def test_the_approval_mode_picks_the_approver(shell: TestingShell, relay: Relay) -> None:
    from relay_nb.agent.approval import approve_all

    magics = shell.ip.magics_manager.registry["RelayMagics"]
    view = new_view()
    # allow and deny are the turn's approval setting; nobody is asked under either
    shell.run("%config RelayMagics.approval = 'allow'")
    assert magics._approver(view) is None
    assert TurnServices(runtime=ScriptedRuntime()).approver_for("allow") is approve_all
    shell.run("%config RelayMagics.approval = 'deny'")
    assert magics._approver(view) is None
    assert magics.approval_timeout_s == 300
