"""The model asks back, and the analyst answers with a click, in a real JupyterLab.

A ``%relay`` question whose scripted model calls ``clarify`` ("Which quarter do you mean?",
two options) is run with "Run All Cells". While the cell is still running ([*]) the live view
shows the question with one button per option under the call's entry; the test clicks
"fiscal quarter" as a user would (Playwright, real mouse events), and the turn goes on with
the answer: the model's next request carries it, and the saved trace shows the question and
the choice (tests/notebook/test_clarify.py checks the answered buttons). Screenshots:
``test-artifacts/jupyterlab-clarify-waiting.png`` and ``jupyterlab-clarify.png``.
"""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

NOTEBOOK = "relay_clarify.ipynb"

SETUP = """\
import tempfile

import relay_nb
from relay_nb import ScriptedRuntime
from relay_nb.testing.seed import seed_database

shop_url = f"sqlite:///{tempfile.mkdtemp()}/shop.sqlite"
seed_database(shop_url)
model = ScriptedRuntime(
    [
        {"tool_calls": [{"name": "clarify", "input": {
            "question": "Which quarter do you mean?",
            "options": ["calendar quarter", "fiscal quarter"],
        }}]},
        {"text": "Revenue for the last fiscal quarter was …"},
    ],
    model="claude-haiku-4-5",
)
relay = relay_nb.default_relay(model=model, ledger=False)
relay.connect("shop", shop_url, tables=["orders"])
print("setup done")"""

CELLS = [
    SETUP,
    "%load_ext relay_nb",
    "%relay revenue last quarter",
    'print("answer sent:", "The user chose: fiscal quarter" in str(model.requests[-1].messages))',
]
ASK_CELL, LAST_CELL = 2, 3


def test_the_model_asks_and_a_click_answers_while_the_cell_runs(open_notebook) -> None:
    from playwright.sync_api import expect

    with open_notebook(NOTEBOOK, CELLS, "jupyterlab-clarify") as nb:
        cells = nb.page.locator(".jp-Notebook .jp-CodeCell")
        nb.run_all()
        area = nb.output(ASK_CELL)
        fiscal = area.get_by_role("button", name="fiscal quarter")
        calendar = area.get_by_role("button", name="calendar quarter")
        expect(fiscal).to_be_enabled()
        shown = time.monotonic()
        expect(cells.nth(ASK_CELL).locator(".jp-InputArea-prompt")).to_have_text("[*]:")
        expect(area).to_contain_text("Which quarter do you mean?")
        expect(area).to_contain_text("clarify · waiting for your answer")
        nb.screenshot("jupyterlab-clarify-waiting.png")
        expect(calendar).to_be_enabled()
        fiscal.click()  # the turn goes on at once: the live view gives way to the saved trace
        nb.wait_until_all_ran()
        answered = time.monotonic()
        texts = nb.texts()
        for i, text in enumerate(texts):
            assert "Traceback" not in text, f"cell {i} failed:\n{text}"
        trace = nb.expand(ASK_CELL)  # the saved trace that replaced the live view
        for expected in (
            "asked: Which quarter do you mean? [calendar quarter | fiscal quarter]",
            "The user chose: fiscal quarter",
            "Revenue for the last fiscal quarter was",
        ):
            expect(trace).to_contain_text(expected, use_inner_text=True, timeout=10_000)
        expect(trace.get_by_role("button")).to_have_count(0)  # no widgets left
        assert "answer sent: True" in nb.output(LAST_CELL).inner_text()
        nb.screenshot("jupyterlab-clarify.png")

    print(
        f"timings: buttons shown {shown - nb.loaded:.1f}s after load, the turn finished "
        f"{answered - shown:.1f}s after they appeared"
    )
