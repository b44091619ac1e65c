"""Approve / Deny in a real ipykernel, driven over its ZMQ channels like a frontend would.

A ``%relay`` cell waits for approval; the test sends the button's click as a ``comm_msg`` —
exactly what JupyterLab sends — while the cell still runs, and a cell queued behind it must
run after it, in order (Run All). This is the kernel half of tests/browser's approval test,
fast and without a browser; it fails if clicks are only handled after the cell.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kernel_client import Kernel, of, running, texts

pytestmark = pytest.mark.timeout(120)

SETUP = r'''
import tempfile
import relay_nb
from relay_nb import Relay, ScriptedRuntime
from relay_nb.facade import default as facade
from relay_nb.testing.seed import seed_database

url = f"sqlite:///{tempfile.mkdtemp()}/shop.sqlite"
seed_database(url)
wiped = []
relay = Relay(
    ScriptedRuntime(
        [{"tool_calls": [{"name": "wipe_cache", "input": {"name": "x"}}]}, {"text": "done"}],
        model="claude-haiku-4-5",
    ),
    ledger=False,
)
relay.connect("shop", url)
facade._default = relay

@relay.tool(requires_approval=True)
def wipe_cache(name: str) -> str:
    """Wipes a cache."""
    wiped.append(name)
    return f"wiped {name}"

%load_ext relay_nb
'''


@pytest.fixture
def kernel() -> Iterator[Kernel]:
    with running(SETUP) as kernel:
        yield kernel


class Clicker:
    """Clicks the button labelled ``label`` once it is shown, and records widget updates."""

    def __init__(self, kernel: Kernel, label: str | None) -> None:
        self.kernel, self.label = kernel, label
        self.buttons: dict[str, str] = {}  # label -> comm id
        self.clicked_at: float | None = None
        self.updates: list[dict[str, Any]] = []

    def __call__(self, message: dict[str, Any]) -> None:
        data = message["content"].get("data", {})
        if message["msg_type"] == "comm_open":
            label = data.get("state", {}).get("description")
            if label in ("Approve", "Deny"):
                self.buttons[label] = message["content"]["comm_id"]
        elif message["msg_type"] == "comm_msg":
            self.updates.append(data.get("state", {}))
        if self.label in self.buttons and self.clicked_at is None:
            time.sleep(0.2)  # the cell is waiting in the approver by now
            self.kernel.click(self.buttons[self.label])
            self.clicked_at = time.monotonic()


@pytest.mark.parametrize(("label", "ran"), [("Approve", True), ("Deny", False)])
def test_a_click_reaches_the_waiting_cell_and_queued_cells_run_after_it(
    kernel: Kernel, label: str, ran: bool
) -> None:
    relay_cell = kernel.execute("%relay wipe the x cache")
    next_cell = kernel.execute("print('next cell sees', wiped)")
    clicker = Clicker(kernel, label)
    seen = kernel.until_idle(relay_cell, on=clicker)
    seen += kernel.until_idle(next_cell, on=clicker)

    assert clicker.clicked_at is not None, "no Approve / Deny buttons were shown"
    assert not of(seen, relay_cell, "error"), of(seen, relay_cell, "error")
    trace = texts(seen, relay_cell)
    if ran:
        assert "wipe_cache: ok\n    wiped x" in trace
    else:
        assert "the user denied this call to wipe_cache" in trace
    titles = [t for u in clicker.updates for t in u.get("titles", [])]
    verdict = "approved" if ran else "denied"
    assert f"[1] wipe_cache · {verdict}" in titles
    assert sum(1 for u in clicker.updates if u.get("disabled") is True) == 2  # both buttons
    # the cell queued behind the waiting one ran after it, and saw what it did
    assert f"next cell sees {['x'] if ran else []}" in texts(seen, next_cell)


def test_interrupting_the_wait_cancels_the_turn_and_the_kernel_goes_on(kernel: Kernel) -> None:
    """Ctrl-C while the buttons wait: the turn is cancelled, and a cell queued behind it is
    aborted as after any failed cell (ipykernel's stop_on_error) — not lost, not hung."""
    relay_cell = kernel.execute("%relay wipe the x cache")
    queued_cell = kernel.execute("print('queued cell ran')")
    clicker = Clicker(kernel, None)
    interrupted: list[float] = []

    def interrupt_when_shown(message: dict[str, Any]) -> None:
        clicker(message)
        if "Deny" in clicker.buttons and not interrupted:
            time.sleep(0.3)
            kernel.manager.interrupt_kernel()
            interrupted.append(time.monotonic())

    seen = kernel.until_idle(relay_cell, on=interrupt_when_shown)
    assert interrupted and time.monotonic() - interrupted[0] < 10
    assert [e["ename"] for e in of(seen, relay_cell, "error")] == ["Cancelled"]
    seen = kernel.until_idle(queued_cell)
    assert "queued cell ran" not in texts(seen, queued_cell)
    assert kernel.reply(queued_cell)["status"] == "aborted"
    check = kernel.execute("print('after:', wiped, relay.turns[-1].finish_reason)")
    assert "after: [] cancelled" in texts(kernel.until_idle(check), check)


def test_a_run_that_takes_no_input_is_refused_at_once_without_buttons(kernel: Kernel) -> None:
    """nbclient / nbval / papermill send allow_stdin=False: nobody is there to click."""
    relay_cell = kernel.execute("%relay wipe the x cache", allow_stdin=False)
    clicker = Clicker(kernel, None)
    started = time.monotonic()
    seen = kernel.until_idle(relay_cell, on=clicker)
    assert time.monotonic() - started < 10 and clicker.buttons == {}
    assert "approval of wipe_cache failed (StdinNotImplementedError)" in texts(seen, relay_cell)
