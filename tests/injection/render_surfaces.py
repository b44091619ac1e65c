"""Every place a turn is rendered for a person, as HTML an audit can parse.

- the live view: the HTML of every ``ipywidgets.HTML`` under the view's box, and the
  accordion titles (plain text, shown by the widget as text);
- a Markdown export: the notebook a ``%relay`` cell leaves, converted by nbconvert's
  ``MarkdownExporter`` (which copies the ``text/html`` output verbatim) and then rendered as
  CommonMark with raw HTML on, as GitHub or a documentation site renders a ``.md`` file.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from relay_nb.agent.loop import TurnResult
from relay_nb.notebook.view import turn_bundle

__all__ = ["live_view_html", "markdown_export_html"]


def live_view_html(view: Any) -> tuple[list[str], list[str]]:
    """(HTML values, accordion titles) of every widget under ``view.box``."""
    import ipywidgets as widgets

    values: list[str] = []
    titles: list[str] = []

    def walk(widget: Any) -> None:
        if isinstance(widget, widgets.HTML):
            values.append(widget.value)
        if isinstance(widget, widgets.Accordion):
            titles.extend(widget.get_title(i) for i in range(len(widget.children)))
        for child in getattr(widget, "children", ()):
            walk(child)

    walk(view.box)
    return values, titles


def markdown_export_html(turn: TurnResult) -> str:
    """The turn's saved output, exported to Markdown by nbconvert, rendered as CommonMark."""
    import nbformat

    data, metadata = turn_bundle(turn)
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(f"%relay {turn.question}")
    cell.outputs = [nbformat.v4.new_output("display_data", data=data, metadata=metadata)]
    notebook.cells.append(cell)
    exporter, commonmark = _converters()
    markdown, _ = exporter.from_notebook_node(notebook)
    return commonmark.render(markdown)


@cache
def _converters() -> tuple[Any, Any]:
    """nbconvert's exporter (its templates load once) and a CommonMark renderer."""
    from markdown_it import MarkdownIt
    from nbconvert import MarkdownExporter

    return MarkdownExporter(), MarkdownIt("commonmark")
