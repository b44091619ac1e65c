"""%relay in a real JupyterLab, executed in headless Chromium (issue 6, Tests; item 2).

A notebook is run with "Run" → "Run All Cells", as an analyst would: a scripted, offline
``relay_nb.default_relay(...)`` on a seeded SQLite shop, ``%load_ext relay_nb``, a ``%relay``
question, then the sync ``Relay.ask`` called directly inside the kernel's running event loop,
with plain cells before and after it that must still run — the proof, in a live JupyterLab
kernel and not only under nbclient/nbval, that the sync API neither fails in a running loop
nor wedges the kernel.

Assertions read the *visible text* of each cell's output area (``.jp-OutputArea``), not its
HTML structure: the saved static bundle and a live ipywidgets view must both pass. Collapsed
parts (a ``<details>`` tool call, an Accordion) are opened first, as a user would, so their
text is rendered. The server, the browser and the page helpers are in ``conftest.py``; the
full-page screenshot is ``test-artifacts/jupyterlab-relay.png``.
"""

from __future__ import annotations

import re
import time

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

NOTEBOOK = "relay_browser_e2e.ipynb"

SETUP = """\
import asyncio
import tempfile
import threading

import relay_nb
from relay_nb import ScriptedRuntime
from relay_nb.testing.seed import seed_database

shop_url = f"sqlite:///{tempfile.mkdtemp()}/shop.sqlite"
seed_database(shop_url)  # 50 customers

model = ScriptedRuntime(
    [
        # %relay how many customers do we have?
        {"tool_calls": [{"name": "query_shop",
                         "input": {"sql": "SELECT COUNT(*) AS customers FROM customers"}}]},
        {"text": "We have **50** customers."},
        # relay_nb.default_relay().ask(...), the sync API, called directly in a cell
        {"tool_calls": [{"name": "query_shop",
                         "input": {"sql": "SELECT COUNT(*) AS products FROM products"}}]},
        {"text": "We sell **20** products."},
    ],
    model="claude-haiku-4-5",
)
relay = relay_nb.default_relay(model=model, ledger=False)
relay.connect("shop", shop_url, tables=["customers", "orders", "products"])
print("setup done")"""

SYNC_ASK = """\
kernel_loop = asyncio.get_running_loop()  # this cell runs inside the kernel's event loop
result = relay_nb.default_relay().ask("how many products do we sell?")
print("sync ask in a running loop:", kernel_loop.is_running(),
      "| thread:", threading.current_thread().name)
print("products:", int(result.df.iloc[0, 0]), "| answer:", result.answer)"""

CELLS = [
    SETUP,
    "%load_ext relay_nb",
    "%relay how many customers do we have?",
    'print("still alive", 6*7)',
    SYNC_ASK,
    'print("still alive", 6*7, "after the sync ask")',
]
RELAY_CELL, ALIVE_CELL, SYNC_CELL, LAST_CELL = 2, 3, 4, 5


def test_relay_magic_and_sync_ask_in_jupyterlab(open_notebook) -> None:
    from playwright.sync_api import expect

    with open_notebook(NOTEBOOK, CELLS, "jupyterlab-relay") as nb:
        nb.run_all()
        nb.wait_until_all_ran()
        ran = time.monotonic()
        texts = nb.texts()
        for i, text in enumerate(texts):
            assert "Traceback" not in text, f"cell {i} failed:\n{text}"
        # the %relay cell's visible text (retried: a live view may still be drawing)
        relay_area = nb.expand(RELAY_CELL)
        for expected in (
            "query_shop",  # the tool call
            "SELECT COUNT(*)",  # its SQL
            re.compile(r"customers\s+50\b"),  # the result table
            "We have 50 customers.",  # the answer, rendered from Markdown
            re.compile(r"\$\d+\.\d+"),  # the cost
        ):
            expect(relay_area).to_contain_text(expected, use_inner_text=True, timeout=10_000)
        texts[RELAY_CELL] = relay_area.inner_text()

    print(f"--- %relay output (visible text) ---\n{texts[RELAY_CELL]}")
    print(f"--- sync ask output ---\n{texts[SYNC_CELL]}")
    assert "still alive 42" in texts[ALIVE_CELL]
    assert "sync ask in a running loop: True" in texts[SYNC_CELL]
    assert "products: 20 | answer: We sell **20** products." in texts[SYNC_CELL]
    assert "still alive 42 after the sync ask" in texts[LAST_CELL]  # the kernel is not wedged
    print(
        f"timings: page+kernel ready {nb.loaded - nb.started:.1f}s, run all "
        f"{ran - nb.loaded:.1f}s, total in test {time.monotonic() - nb.started:.1f}s"
    )
