"""How a turn is shown: one view-model (:mod:`.model`) and its static renderings.

:class:`TurnView` decides what every view of a turn shows — which calls, how each ended, the
query it ran, its result, the answer, the usage line — from a finished ``TurnResult`` or from
the turn's events as they arrive. :mod:`.html` maps it to the saved notebook output's
``text/html``, :mod:`.text` to the deterministic ``text/plain`` the CLI prints and nbval
compares; the notebook's live widgets map it too (``relay_nb.notebook.live``). Sits below the
notebook, the demo and the CLI, above the facade; imports no IPython.
"""

from __future__ import annotations

from relay_nb.views.html import (
    HTML_PREVIEW_ROWS,
    answer_html,
    chart_html,
    one_line,
    sql_html,
    status_line_html,
    table_html,
    turn_html,
)
from relay_nb.views.model import (
    CallView,
    TurnView,
    describe_usage,
    model_label,
    sql_of,
    status_of,
)
from relay_nb.views.text import TEXT_PREVIEW_ROWS, turn_text, visible_controls

__all__ = [
    "HTML_PREVIEW_ROWS",
    "TEXT_PREVIEW_ROWS",
    "CallView",
    "TurnView",
    "answer_html",
    "chart_html",
    "describe_usage",
    "model_label",
    "one_line",
    "sql_html",
    "sql_of",
    "status_line_html",
    "status_of",
    "table_html",
    "turn_html",
    "turn_text",
    "visible_controls",
]
