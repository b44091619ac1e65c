"""The cost line's two dollar amounts are not typeset as math in a real JupyterLab.

JupyterLab runs MathJax over every ``text/html`` output, and reads the text between two
``$`` as a formula: ``≈ $0.004 model · ≈ 1.2 GB scanned (≈ $0.0075 at your price)`` would
come out as one italic run without its spaces. The saved trace writes the line with
:func:`relay_nb.views.status_line_html`; this notebook shows that, and the same words in a
bare ``<div>`` as the control: the control is typeset (so the check means something), the
line is not, and reads exactly as written. Screenshot: ``jupyterlab-cost-line-math.png``.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

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
