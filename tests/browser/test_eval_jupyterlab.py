"""``%relay --eval`` in a real JupyterLab: a progress bar while the bank's questions are
asked, then the static report — accuracy, per tag, every miss with its reason — and no
widget left behind (a saved notebook keeps only static output). The scripted model takes
a moment per question, so the bar is seen moving. Screenshots:
``test-artifacts/jupyterlab-eval-running.png`` and ``jupyterlab-eval.png``.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

NOTEBOOK = "relay_eval.ipynb"

SETUP = """\
import asyncio, os, tempfile
from pathlib import Path

import relay_nb
from relay_nb import ScriptedRuntime
from relay_nb.demo.data import build_shop_database

os.environ["RELAY_DATA_DIR"] = tempfile.mkdtemp()
shop = build_shop_database(Path(tempfile.mkdtemp()) / "shop.sqlite")
bank = Path(tempfile.mkdtemp()) / "bank.yaml"
bank.write_text(
    "name: browser\\nconnector: shop\\nquestions:\\n"
    + "".join(
        f"  - {{id: q{i}, question: 'Orders in status {s} ({i})?', "
        f"sql: SELECT COUNT(*) FROM orders WHERE status = '{s}', tags: [count]}}\\n"
        for i, s in enumerate(["paid", "refunded", "cancelled", "paid", "refunded", "cancelled"])
    )
)

def slow(sql):
    async def step(request):
        await asyncio.sleep(1.0)
        return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]}
    return step

answers = {}
for i, s in enumerate(["paid", "refunded", "cancelled", "paid", "refunded", "cancelled"]):
    sql = f"SELECT COUNT(*) FROM orders WHERE status = '{s}'"
    if i == 4:
        sql = "SELECT COUNT(*) FROM orders"  # a missing filter: wrong values
    answers[f"Orders in status {s} ({i})?"] = [slow(sql), {"text": "done"}]
relay = relay_nb.default_relay(model=ScriptedRuntime(by_question=answers), ledger=False)
relay.connect("shop", shop.url)
print("setup done")"""

CELLS = [
    SETUP,
    "%load_ext relay_nb",
    "%relay --eval {bank} --out report",
    'print("accuracy:", report.accuracy)',
]
EVAL_CELL, LAST_CELL = 2, 3


def test_a_bank_runs_with_a_progress_bar_and_leaves_a_static_report(open_notebook) -> None:
    from playwright.sync_api import expect

    with open_notebook(NOTEBOOK, CELLS, "jupyterlab-eval") as nb:
        nb.run_all()
        area = nb.output(EVAL_CELL)
        bar = area.locator(".widget-hprogress")
        expect(bar).to_be_visible()
        expect(area).to_contain_text("right")  # the label: "2/6 · 2 right"
        expect(area).to_contain_text("estimate: 6 attempt(s) of 6 question(s)")
        nb.screenshot("jupyterlab-eval-running.png")
        nb.wait_until_all_ran()
        texts = nb.texts()
        for i, text in enumerate(texts):
            assert "Traceback" not in text, f"cell {i} failed:\n{text}"
        expect(bar).to_have_count(0)  # the bar gave way to the report
        expect(area).to_contain_text("browser: accuracy 83.3% (5/6)")
        expect(area.locator("table")).to_have_count(2)  # per tag, and every attempt
        expect(area).to_contain_text("wrong values")
        expect(area).to_contain_text("the first saved run of this bank")
        expect(area.locator(".jupyter-widgets")).to_have_count(0)
        expect(area.locator("mjx-container")).to_have_count(0)  # its costs stay money
        assert "accuracy: 0.8333" in nb.output(LAST_CELL).inner_text()
        nb.screenshot("jupyterlab-eval.png")
