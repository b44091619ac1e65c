"""keep_dollars: every ``$`` of an HTML fragment's text in an element of its own, the text
read the same, tags, attributes and style blocks untouched (issue 37, item 1; the browser
test tests/browser/test_cost_line_math_jupyterlab.py shows the effect in JupyterLab)."""

from __future__ import annotations

import html
import re

import pytest

from relay_nb.markup import NO_MATH_CLASSES, keep_dollars
from relay_nb.views.html import answer_html, status_line_html

# answers as people and models write money
ANSWERS = [
    "Revenue went from $449.46 in 2009 to $450.58 in 2013.",
    "It cost $1,200 — about $3.5k a year, or US$ 12/month.",
    "Budget: $$ 5 and $$ 6",
    "The total was **$1.2M** vs `$900` in `SELECT '$x'`",
    "| region | revenue |\n|---|---|\n| EU | $10 |\n| US | $20 |",
    "no money here",
]


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


@pytest.mark.parametrize("answer", ANSWERS)
def test_no_two_dollars_share_a_run_of_text_and_the_text_is_unchanged(answer):
    rendered = answer_html(answer)
    runs = re.split(r"<[^>]+>", rendered)
    assert all(run.count("$") <= 1 for run in runs)
    assert _text(rendered) == _text(_plain(answer))
    assert keep_dollars(rendered) == rendered  # a second pass changes nothing


def _plain(answer: str) -> str:
    from relay_nb.views import html as views_html

    return views_html._markdown().render(answer)


def test_tags_attributes_and_style_blocks_stay_as_they_are():
    fragment = '<style>a[title$="x"]{}</style><a title="$5">$5 and $6</a>'
    assert keep_dollars(fragment) == (
        '<style>a[title$="x"]{}</style><a title="$5"><span>$</span>5 and <span>$</span>6</a>'
    )


def test_the_cost_line_carries_the_classes_mathjax_skips():
    line = status_line_html("≈ $0.004 model (≈ $0.0075 at your price)")
    assert NO_MATH_CLASSES in line and line.count("<span>$</span>") == 2
