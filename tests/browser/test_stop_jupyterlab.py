"""The Stop button in a real JupyterLab (issue 37, item 14), clicked while the cell runs.

A ``%relay`` question whose scripted model runs a query of many seconds is run with "Run All";
while its cell is still running ([*]) the live view shows a Stop button beside the question.
The test clicks it as a user would: the button says "Stopping…", the query is cancelled
within seconds (not run to its end), the saved trace says the step was cancelled, and the
cell after it runs — the session is ready, nothing else was stopped (the kernel was not
interrupted). Screenshots: ``test-artifacts/jupyterlab-stop-{running,stopped}.png``.
"""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

NOTEBOOK = "relay_stop.ipynb"
ENDLESS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000000000) "
    "SELECT max(x) AS counted FROM c"
)
"""Minutes on this machine: only a Stop ends it within the test's time."""

SETUP = f"""\
import tempfile

import relay_nb
from relay_nb import ScriptedRuntime
from relay_nb.testing.seed import seed_database

shop_url = f"sqlite:///{{tempfile.mkdtemp()}}/shop.sqlite"
seed_database(shop_url)
model = ScriptedRuntime(
    [
        {{"tool_calls": [{{"name": "query_shop", "input": {{"sql": {ENDLESS!r}}}}}]}},
        # the stopped turn asks the model nothing more: the next question gets this
        {{"text": "Still here."}},
    ],
    model="claude-haiku-4-5",
)
relay = relay_nb.default_relay(model=model, ledger=False)
relay.connect("shop", shop_url)
print("setup done")"""

CELLS = [SETUP, "%load_ext relay_nb", "%relay count forever", "%relay are you there?"]
STOP_CELL, NEXT_CELL = 2, 3


def test_stop_cancels_the_running_query_and_the_next_cell_runs(open_notebook) -> None:
    from playwright.sync_api import expect

    with open_notebook(NOTEBOOK, CELLS, "jupyterlab-stop") as nb:
        cells = nb.page.locator(".jp-Notebook .jp-CodeCell")
        nb.run_all()
        area = nb.output(STOP_CELL)
        expect(area).to_contain_text("query_shop · running…", timeout=60_000)
        stop = area.get_by_role("button", name="Stop")
        expect(stop).to_be_enabled()
        expect(cells.nth(STOP_CELL).locator(".jp-InputArea-prompt")).to_have_text("[*]:")
        nb.screenshot("jupyterlab-stop-running.png")
        clicked = time.monotonic()
        stop.click()
        nb.wait_until_all_ran()
        stopped_in = time.monotonic() - clicked
        assert stopped_in < 30, stopped_in  # cancelled, not run to its end
        texts = nb.texts()
        assert "Traceback" not in texts[STOP_CELL] and "KeyboardInterrupt" not in texts[STOP_CELL]
        trace = nb.expand(STOP_CELL)
        expect(trace).to_contain_text("cancelled by the user", use_inner_text=True)
        expect(trace.get_by_role("button")).to_have_count(0)  # the live widgets are gone
        expect(nb.output(NEXT_CELL)).to_contain_text("Still here.")
        nb.screenshot("jupyterlab-stop-stopped.png")
