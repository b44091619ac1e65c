"""Dollar amounts are not typeset as math in a real JupyterLab: the cost line, and a whole
turn whose question, SQL, result and answer hold several (issue 37, item 1).

JupyterLab runs MathJax over every ``text/html`` output, and reads the text between two
``$`` as a formula: ``≈ $0.004 model · ≈ 1.2 GB scanned (≈ $0.0075 at your price)`` would
come out as one italic run without its spaces. The saved trace writes the line with
:func:`relay_nb.views.status_line_html`; this notebook shows that, and the same words in a
bare ``<div>`` as the control: the control is typeset (so the check means something), the
line is not, and reads exactly as written. Screenshot: ``jupyterlab-cost-line-math.png``.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

LINE = "≈ $0.004 model · ≈ 1.2 GB scanned (≈ $0.0075 at your price)"
CELLS = [
    f"""\
from IPython.display import HTML, display

from relay_nb.views import status_line_html

display(HTML(status_line_html({LINE!r})))""",
    f"""\
from IPython.display import HTML, display

display(HTML("<div>" + {LINE!r} + "</div>"))""",
]
LINE_CELL, CONTROL_CELL = 0, 1


def test_the_line_s_dollar_amounts_stay_text(open_notebook) -> None:
    from playwright.sync_api import expect

    with open_notebook("relay_cost_line_math.ipynb", CELLS, "jupyterlab-cost-line-math") as nb:
        nb.run_all()
        nb.wait_until_all_ran()
        control = nb.output(CONTROL_CELL)
        expect(control.locator("mjx-container")).to_have_count(1)  # JupyterLab typesets it
        line = nb.output(LINE_CELL)
        expect(line.locator(".relay-status")).to_have_text(LINE)
        expect(line.locator("mjx-container")).to_have_count(0)
        nb.screenshot("jupyterlab-cost-line-math.png")


ANSWER = (
    "Revenue went from $449.46 in 2009 to $450.58 in 2013, and the best customer spent "
    "$1,200 over $3.5 a day."
)
TURN_CELLS = [
    f"""\
import tempfile

import relay_nb
from relay_nb import ScriptedRuntime
from relay_nb.testing.seed import seed_database

shop_url = f"sqlite:///{{tempfile.mkdtemp()}}/shop.sqlite"
seed_database(shop_url)
model = ScriptedRuntime(
    [
        {{"tool_calls": [{{"name": "query_shop",
                          "input": {{"sql": "SELECT '$1' AS a, '$2' AS b"}}}}]}},
        {{"text": {ANSWER!r}}},
    ],
    model="claude-haiku-4-5",
)
relay = relay_nb.default_relay(model=model, ledger=False)
relay.connect("shop", shop_url)
print("setup done")""",
    "%load_ext relay_nb",
    "%relay how did revenue move from $449 to $450?",
]
TURN_CELL = 2


def test_an_answer_with_several_amounts_reads_as_written(open_notebook) -> None:
    """A whole ``%relay`` turn whose question, SQL, result and answer hold several ``$``:
    nothing of its output is typeset, and the answer reads exactly as the model wrote it."""
    from playwright.sync_api import expect

    with open_notebook("relay_money_math.ipynb", TURN_CELLS, "jupyterlab-money-math") as nb:
        nb.run_all()
        nb.wait_until_all_ran()
        area = nb.output(TURN_CELL)
        expect(area.locator(".relay-answer")).to_have_text(ANSWER)
        expect(area).to_contain_text("how did revenue move from $449 to $450?")
        expect(area).to_contain_text("(not spent)")  # the usage line and its amount
        for fold in area.locator("summary").all():  # the query's fold, as a user opens it
            fold.click()
        expect(area).to_contain_text("$1")
        expect(area.locator("mjx-container")).to_have_count(0)
        nb.screenshot("jupyterlab-money-math.png")
