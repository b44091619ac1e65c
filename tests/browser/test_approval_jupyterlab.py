"""Approve / Deny buttons clicked in a real JupyterLab while the ``%relay`` cell runs.

A notebook defines a tool that needs approval (``@relay.tool(requires_approval=True)`` in a
cell) and asks two ``%relay`` questions whose scripted model calls it; it is run with "Run All
Cells". While the first cell is still running ([*]) the live view shows the call's input with
Approve / Deny, and the status line says it waits; the test clicks Approve as a user would
(Playwright, real mouse events on the rendered widget), sees both buttons disabled and
"approved" in the entry, and the tool runs. The second question's call gets Deny. When all
cells ran, the saved traces show the tool's result and the denial, and the cell after them ran.

This fails if the kernel handles the clicks only after the cell (as it does without
relay_nb.notebook.ui_events): the approval would then time out as a denial. Screenshots:
``test-artifacts/jupyterlab-approval-waiting.png`` (buttons shown, cell running),
``jupyterlab-approval-approved.png`` (after the click, tool running) and
``jupyterlab-approval.png`` (the end).
"""

from __future__ import annotations

import re
import time

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

NOTEBOOK = "relay_approval.ipynb"

SETUP = """\
import tempfile

import relay_nb
from relay_nb import ScriptedRuntime
from relay_nb.testing.seed import seed_database

shop_url = f"sqlite:///{tempfile.mkdtemp()}/shop.sqlite"
seed_database(shop_url)
model = ScriptedRuntime(
    [
        # %relay wipe the x cache  -> approved
        {"tool_calls": [{"name": "wipe_cache", "input": {"name": "x"}}]},
        {"text": "The x cache is wiped."},
        # %relay wipe the y cache  -> denied
        {"tool_calls": [{"name": "wipe_cache", "input": {"name": "y"}}]},
        {"text": "I left the y cache alone."},
    ],
    model="claude-haiku-4-5",
)
relay = relay_nb.default_relay(model=model, ledger=False)
relay.connect("shop", shop_url, tables=["customers"])
print("setup done")"""

TOOL = '''\
import time

wiped = []

@relay.tool(requires_approval=True)
def wipe_cache(name: str) -> str:
    """Wipes one named cache."""
    time.sleep(2)  # slow enough to see the answered buttons while it runs
    wiped.append(name)
    return f"cache {name!r} wiped"'''

CELLS = [
    SETUP,
    TOOL,
    "%load_ext relay_nb",
    "%relay wipe the x cache",
    "%relay wipe the y cache",
    'print("wiped:", wiped)',
]
APPROVE_CELL, DENY_CELL, LAST_CELL = 3, 4, 5


def test_approve_and_deny_buttons_work_while_the_cell_runs(open_notebook) -> None:
    from playwright.sync_api import expect

    with open_notebook(NOTEBOOK, CELLS, "jupyterlab-approval") as nb:
        cells = nb.page.locator(".jp-Notebook .jp-CodeCell")
        nb.run_all()

        # -- the first call: Approve ------------------------------------------------------
        area = nb.output(APPROVE_CELL)
        approve = area.get_by_role("button", name="Approve")
        deny = area.get_by_role("button", name="Deny")
        expect(approve).to_be_enabled()
        shown = time.monotonic()
        expect(cells.nth(APPROVE_CELL).locator(".jp-InputArea-prompt")).to_have_text("[*]:")
        expect(area).to_contain_text("waiting for your approval of wipe_cache")
        expect(area).to_contain_text("wipe_cache · waiting for your approval")
        expect(area).to_contain_text('{"name": "x"}')  # the entry is open on the call's input
        nb.screenshot("jupyterlab-approval-waiting.png")
        approve.click()
        expect(approve).to_be_disabled()
        expect(deny).to_be_disabled()
        expect(area).to_contain_text("wipe_cache · approved")
        expect(cells.nth(APPROVE_CELL).locator(".jp-InputArea-prompt")).to_have_text("[*]:")
        nb.screenshot("jupyterlab-approval-approved.png")
        answered = time.monotonic()

        # -- the second call (queued behind the first by Run All): Deny --------------------
        area = nb.output(DENY_CELL)
        deny = area.get_by_role("button", name="Deny")
        expect(deny).to_be_enabled()
        expect(area).to_contain_text('{"name": "y"}')
        deny.click()

        nb.wait_until_all_ran()
        ran = time.monotonic()
        texts = nb.texts()
        for i, text in enumerate(texts):
            assert "Traceback" not in text, f"cell {i} failed:\n{text}"

        approved = nb.expand(APPROVE_CELL)  # the saved trace that replaced the live view
        for expected in ("Q: wipe the x cache", "cache 'x' wiped", "The x cache is wiped."):
            expect(approved).to_contain_text(expected, use_inner_text=True, timeout=10_000)
        expect(approved.get_by_role("button")).to_have_count(0)  # no widgets left
        denied = nb.expand(DENY_CELL)
        for expected in (
            "the user denied this call to wipe_cache",
            "I left the y cache alone.",
        ):
            expect(denied).to_contain_text(expected, use_inner_text=True, timeout=10_000)
        assert re.search(r"wiped: \['x'\]", nb.output(LAST_CELL).inner_text())
        texts = nb.texts()

    print(f"--- approved cell ---\n{texts[APPROVE_CELL]}")
    print(f"--- denied cell ---\n{texts[DENY_CELL]}")
    print(
        f"timings: page+kernel ready {nb.loaded - nb.started:.1f}s, buttons shown after "
        f"{shown - nb.loaded:.1f}s, approve answered {answered - shown:.1f}s later, all ran "
        f"{ran - nb.loaded:.1f}s after Run All, total in test {time.monotonic() - nb.started:.1f}s"
    )
