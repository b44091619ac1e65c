"""The built-in ``chart`` tool: the model describes a chart, relay_nb draws it.

Analysts would rather look than read, but a model that writes plotting code would have that
code executed — which relay_nb never does. So the model gets a *declarative* tool: which
earlier result to plot (the id of the tool call that fetched it), the kind (bar, line,
scatter, histogram, area), the columns for x, y and an optional series, and a title.
relay_nb checks the spec against the result's columns and draws it with matplotlib's
object API (no pyplot global state, safe on any thread) into a PNG that the notebook shows
and saves. Results are looked up in the session's result store, so a chart costs no query.
"""

from __future__ import annotations

import asyncio
import io
from collections import OrderedDict
from collections.abc import MutableMapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.tools import Tool, ToolResult

__all__ = ["CHART_TOOL", "Chart", "ChartSpec", "ResultStore", "chart_tool", "draw_chart"]

CHART_TOOL = "chart"
MAX_POINTS = 20_000
MAX_BARS = 60
_STORE_SIZE = 50


class ResultStore(OrderedDict[str, Any]):
    """Tool artifacts by the id of the call that made them; the oldest drop out past a size."""

    def __init__(self, size: int = _STORE_SIZE) -> None:
        super().__init__()
        self.size = size

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


class ChartSpec(BaseModel):
    """What to draw. Columns must exist in the result; nothing here is code."""

    model_config = ConfigDict(extra="forbid")

    result: str = Field(description="the id of the earlier tool call whose rows to plot")
    kind: Literal["bar", "line", "scatter", "histogram", "area"]
    x: str = Field(description="column for the x axis (the values, for a histogram)")
    y: list[str] = Field(
        default_factory=list, description="column(s) for the y axis; empty for a histogram"
    )
    series: str | None = Field(
        default=None, description="optional column whose values become separate series"
    )
    title: str = Field(default="", max_length=200)


class Chart(BaseModel):
    """A drawn chart: the spec it came from and the PNG, drawn twice: for a light page
    (``png``) and for a dark one (``png_dark``: light text on a clear background), so a
    notebook in a dark theme shows no white box."""

    model_config = ConfigDict(frozen=True)

    spec: ChartSpec
    png: bytes
    points: int
    png_dark: bytes | None = None

    def __repr__(self) -> str:
        return f"<Chart {self.spec.kind} of {self.points} points>"

    def _repr_png_(self) -> bytes:
        return self.png


def chart_tool(store: MutableMapping[str, Any]) -> Tool:
    """The ``chart`` tool over ``store`` (see the module docstring)."""

    async def handler(spec: ChartSpec) -> ToolResult:
        artifact = store.get(spec.result)
        frame = getattr(artifact, "df", None)
        if frame is None:
            known = ", ".join(k for k, v in store.items() if getattr(v, "df", None) is not None)
            return ToolResult(
                content=f"no result with id {spec.result!r}; results you can chart: "
                f"{known or 'none yet — query first'}",
                is_error=True,
            )
        problem = check_spec(spec, list(frame.columns), len(frame))
        if problem:
            return ToolResult(content=problem, is_error=True)
        png = await asyncio.to_thread(draw_chart, frame, spec)
        dark = await asyncio.to_thread(draw_chart, frame, spec, dark=True)
        chart = Chart(spec=spec, png=png, png_dark=dark, points=len(frame))
        what = f"{spec.kind} chart of {', '.join(spec.y) or spec.x}"
        return ToolResult(
            content=f"drew a {what} by {spec.x} ({len(frame)} rows); the user sees it",
            artifact=chart,
        )

    return Tool(
        name=CHART_TOOL,
        description=(
            "Draw a chart of a result you already fetched (give that tool call's id as "
            "`result`). Kinds: bar, line, scatter, histogram, area. Use it when a picture "
            "answers better than a table; aggregate in SQL first (at most "
            f"{MAX_BARS} bars, {MAX_POINTS:,} points)."
        ),
        input_model=ChartSpec,
        handler=handler,
        timeout_s=30.0,
    )


def check_spec(spec: ChartSpec, columns: list[str], rows: int) -> str:
    """A sentence saying what is wrong with ``spec`` for this result, or ``""``."""
    named = [spec.x, *spec.y, *([spec.series] if spec.series else [])]
    missing = [c for c in named if c not in columns]
    if missing:
        return f"no column {', '.join(map(repr, missing))} in that result; its columns: {columns}"
    if spec.kind != "histogram" and not spec.y:
        return f"a {spec.kind} chart needs at least one y column"
    if rows == 0:
        return "that result has no rows to chart"
    if rows > MAX_POINTS:
        return f"{rows:,} rows is too many to chart; aggregate first (at most {MAX_POINTS:,})"
    if spec.kind == "bar" and rows > MAX_BARS:
        return f"{rows} bars is too many; aggregate or take the top {MAX_BARS} first"
    return ""


DARK_TEXT = "#e0e0e0"
"""Text, ticks and axes of a chart for a dark page: 14.3:1 on JupyterLab's dark background
(#111111), 12.6:1 on VS Code's (#1e1e1e)."""


def draw_chart(frame: Any, spec: ChartSpec, *, dark: bool = False) -> bytes:
    """The PNG for ``spec`` over ``frame`` (byte-stable for the same input and matplotlib);
    ``dark``: for a dark page — a clear background, light text and axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 3.6), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    groups = [(None, frame)] if spec.series is None else list(frame.groupby(spec.series, sort=True))
    for label, part in groups:
        _plot(axes, part, spec, label)
    axes.set_xlabel(spec.x)
    if spec.y:
        axes.set_ylabel(", ".join(spec.y))
    if spec.title:
        axes.set_title(spec.title)
    if spec.series is not None or len(spec.y) > 1:
        axes.legend(fontsize="small")
    if spec.kind == "bar":
        axes.tick_params(axis="x", labelrotation=45)
    if dark:
        _darken(figure, axes)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _darken(figure: Any, axes: Any) -> None:
    """Colours for a dark page, set on this figure's objects (never matplotlib's global
    rcParams, which other threads share)."""
    figure.patch.set_alpha(0.0)
    axes.set_facecolor("none")
    axes.tick_params(colors=DARK_TEXT, which="both")
    for spine in axes.spines.values():
        spine.set_edgecolor(DARK_TEXT)
    for text in (axes.xaxis.label, axes.yaxis.label, axes.title):
        text.set_color(DARK_TEXT)
    legend = axes.get_legend()
    if legend is not None:
        legend.get_frame().set_facecolor("none")
        legend.get_frame().set_edgecolor(DARK_TEXT)
        for text in legend.get_texts():
            text.set_color(DARK_TEXT)


def _plot(axes: Any, frame: Any, spec: ChartSpec, series: Any) -> None:
    x = frame[spec.x]
    if spec.kind == "histogram":
        axes.hist(x.dropna(), bins=min(30, max(5, len(frame) // 5)), label=_label(series, None))
        return
    for column in spec.y:
        label = _label(series, column if len(spec.y) > 1 else None)
        if spec.kind == "bar":
            axes.bar(x.astype(str), frame[column], label=label)
        elif spec.kind == "line":
            axes.plot(x, frame[column], marker="o", markersize=3, label=label)
        elif spec.kind == "area":
            axes.fill_between(x, frame[column], alpha=0.4, label=label)
        else:
            axes.scatter(x, frame[column], s=12, label=label)


def _label(series: Any, column: str | None) -> str | None:
    parts = [str(p) for p in (series, column) if p is not None]
    return " · ".join(parts) or None
