"""A query over its connector's scan threshold waits for a click, in a real JupyterLab.

A notebook connects a DuckDB shop with ``approve_above_rows=500`` and asks two ``%relay``
questions; each one's scripted model queries ``order_items`` (about 900 rows scanned, above
the threshold). While the first cell runs, the query's entry shows its cost line (the model's
spend so far and the rows it would scan) before the query has run, and the live view says why
the query waits — that line and the threshold — beside Approve / Deny; the test clicks Approve
and the query runs (its entry keeps the line above the table). The second query gets Deny: the
model is told the estimate and how to narrow the query, and its next, narrower query
(``orders``, under the threshold) runs without asking. Screenshots:
``jupyterlab-preflight-waiting.png``, ``jupyterlab-preflight.png``.
"""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

NOTEBOOK = "relay_preflight.ipynb"
BIG = "SELECT product_id, SUM(quantity) AS sold FROM order_items GROUP BY product_id"
SMALL = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status"

SETUP = f"""\
import tempfile

import relay_nb
from relay_nb import ScriptedRuntime
from relay_nb.testing.seed import seed_database

shop_url = f"duckdb:///{{tempfile.mkdtemp()}}/shop.duckdb"
seed_database(shop_url)
model = ScriptedRuntime(
    [
        {{"tool_calls": [{{"name": "query_shop", "input": {{"sql": "{BIG}"}}}}]}},
        {{"text": "Sales per product are in the table."}},
        {{"tool_calls": [{{"name": "query_shop", "input": {{"sql": "{BIG}"}}}}]}},
        {{"tool_calls": [{{"name": "query_shop", "input": {{"sql": "{SMALL}"}}}}]}},
        {{"text": "Orders per status instead."}},
    ],
    model="claude-haiku-4-5",
)
relay = relay_nb.default_relay(model=model, ledger=False)
relay.connect("shop", shop_url, approve_above_rows=500)
print("setup done")"""

CELLS = [
    SETUP,
    "%load_ext relay_nb",
    "%relay how much of each product sold?",
    "%relay how much of each product sold, again?",
    'print("done")',
]
APPROVE_CELL, DENY_CELL = 2, 3


def test_a_costly_query_waits_for_a_click(open_notebook) -> None:
    from playwright.sync_api import expect

    with open_notebook(NOTEBOOK, CELLS, "jupyterlab-preflight") as nb:
        nb.run_all()
        area = nb.output(APPROVE_CELL)
        approve = area.get_by_role("button", name="Approve")
        expect(approve).to_be_enabled()
        expect(area).to_contain_text("above the 500 rows")
        expect(area).to_contain_text("DuckDB EXPLAIN")
        # the cost line, shown while the query waits: it has not run yet
        line = re.compile(r"\$0\.\d+ model \(not spent\) · ≈ \d+ rows scanned")
        expect(area.locator(".relay-status")).to_have_text(line)
        nb.screenshot("jupyterlab-preflight-waiting.png")
        approve.click()
        # "approved", then at once the result's row count: either may show
        expect(area).to_contain_text(re.compile(r"query_shop · (approved|\d+ rows)"))

        area = nb.output(DENY_CELL)
        deny = area.get_by_role("button", name="Deny")
        expect(deny).to_be_enabled()
        deny.click()

        nb.wait_until_all_ran()
        for i, text in enumerate(nb.texts()):
            assert "Traceback" not in text, f"cell {i} failed:\n{text}"
        approved = nb.expand(APPROVE_CELL)
        expect(approved).to_contain_text(line, use_inner_text=True, timeout=10_000)
        expect(approved).to_contain_text("Sales per product", use_inner_text=True)
        denied = nb.expand(DENY_CELL)
        for expected in (
            "not run",
            "the analyst did not approve it",
            "A narrower query",
            "Orders per status instead.",
        ):
            expect(denied).to_contain_text(expected, use_inner_text=True, timeout=10_000)
        nb.screenshot("jupyterlab-preflight.png")
