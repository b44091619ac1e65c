"""The chart tool: a declarative spec over a result fetched earlier in the conversation,
drawn by relay_nb — scripted model, real SQLite data, real matplotlib."""

from __future__ import annotations

import pandas as pd
import pytest

from relay_nb.agent.charts import ChartSpec, ResultStore, check_spec, draw_chart
from relay_nb.agent.session import Session
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.runtime.scripted import ScriptedRuntime

MONTHLY = (
    "SELECT strftime('%Y-%m', ordered_at) AS month, SUM(total) AS revenue "
    "FROM orders GROUP BY month ORDER BY month"
)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


async def test_the_model_charts_a_result_it_fetched(shop: SQLConnector) -> None:
    chart = {"result": "q1", "kind": "line", "x": "month", "y": ["revenue"], "title": "Revenue"}
    runtime = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "query_shop", "input": {"sql": MONTHLY}, "id": "q1"}]},
            {"tool_calls": [{"name": "chart", "input": chart, "id": "c1"}]},
            {"text": "Revenue rose."},
        ]
    )
    session = Session(runtime, connectors=[shop])
    turn = await session.ask_async("plot monthly revenue")
    (drawn,) = turn.charts
    assert drawn.png.startswith(PNG_MAGIC) and drawn.points == len(turn.df)
    assert drawn.spec.kind == "line" and "drew a line chart of revenue by month" in (
        turn.tool_results[1].content
    )
    assert "chart" in {t.name for t in runtime.requests[0].tools}
    # a later turn can chart the same result without querying again
    runtime.add(
        {"tool_calls": [{"name": "chart", "input": {**chart, "kind": "bar"}}]},
        {"text": "as bars"},
    )
    again = await session.ask_async("as bars please")
    assert again.charts[0].spec.kind == "bar" and again.queries == []


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({"result": "nope", "kind": "bar", "x": "month", "y": ["revenue"]}, "no result with id"),
        ({"result": "q1", "kind": "bar", "x": "mnth", "y": ["revenue"]}, "no column 'mnth'"),
        ({"result": "q1", "kind": "line", "x": "month"}, "needs at least one y column"),
    ],
)
async def test_bad_specs_go_back_to_the_model(shop: SQLConnector, spec: dict, problem: str) -> None:
    runtime = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "query_shop", "input": {"sql": MONTHLY}, "id": "q1"}]},
            {"tool_calls": [{"name": "chart", "input": spec}]},
            {"text": "could not chart"},
        ]
    )
    turn = await Session(runtime, connectors=[shop]).ask_async("chart it")
    outcome = turn.tool_results[1]
    assert outcome.is_error and problem in outcome.content and turn.charts == []


def test_limits_and_determinism() -> None:
    frame = pd.DataFrame({"k": [f"c{i}" for i in range(100)], "v": range(100)})
    bars = ChartSpec(result="r", kind="bar", x="k", y=["v"])
    assert "100 bars is too many" in check_spec(bars, ["k", "v"], 100)
    small = frame.head(10)
    assert draw_chart(small, bars) == draw_chart(small, bars)  # stable bytes for nbval
    series = pd.DataFrame({"m": [1, 2, 1, 2], "v": [3, 4, 5, 6], "s": ["a", "a", "b", "b"]})
    spec = ChartSpec(result="r", kind="scatter", x="m", y=["v"], series="s")
    assert draw_chart(series, spec).startswith(PNG_MAGIC)
    hist = ChartSpec(result="r", kind="histogram", x="v")
    assert draw_chart(series, hist).startswith(PNG_MAGIC)


def test_the_result_store_keeps_the_newest() -> None:
    store = ResultStore(size=2)
    for key in "abc":
        store[key] = key
    assert list(store) == ["b", "c"]


def test_a_dark_page_gets_its_own_drawing() -> None:
    """Issue 37, item 11: the chart for a dark page has a clear background and light text
    (matplotlib's default draws a white box, dark text); the saved trace carries both and a
    stylesheet picks by the page's theme, the dark one hidden where no stylesheet applies."""
    import io

    from matplotlib.image import imread

    from relay_nb.agent.charts import DARK_TEXT
    from relay_nb.views.html import CHART_STYLE, chart_html

    frame = pd.DataFrame({"month": ["2024-01", "2024-02", "2024-03"], "revenue": [3.0, 5.0, 4.0]})
    spec = ChartSpec(result="q1", kind="bar", x="month", y=["revenue"], title="Revenue")
    light, dark = draw_chart(frame, spec), draw_chart(frame, spec, dark=True)
    light_px, dark_px = imread(io.BytesIO(light)), imread(io.BytesIO(dark))
    assert tuple(light_px[0, 0]) == (1.0, 1.0, 1.0, 1.0)  # the corner: opaque white
    assert dark_px[0, 0, 3] == 0.0  # clear: the page's own dark background shows
    # the title's glyphs: the lightest opaque pixels of the dark drawing are its text colour
    opaque = dark_px[dark_px[..., 3] == 1.0]
    brightest = opaque[:, :3].sum(axis=1).max() / 3
    expected = int(DARK_TEXT[1:3], 16) / 255
    assert brightest >= expected - 0.01
    page = chart_html(light, dark)
    assert page.count("<img") == 2 and 'class="relay-chart-dark" alt="chart" hidden ' in page
    assert 'body[data-jp-theme-light="false"] .relay-chart-dark' in CHART_STYLE
    assert "body.vscode-dark .relay-chart-light" in CHART_STYLE
    assert chart_html(light).count("<img") == 1  # a chart saved before keeps its one image
