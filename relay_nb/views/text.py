"""A turn as deterministic plain text: the notebook's ``text/plain`` and the CLI's transcript.

A mapping of the turn view-model (:mod:`relay_nb.views.model`), below the notebook, the demo
and the CLI, which may not import each other. Deterministic
so that nbval can compare a re-executed notebook with the saved one, and a diff of two runs
shows what changed in the *answer*: no turn ids, no timings, no paths. What stays: the
question, each tool call with its SQL, the line it showed while it ran (a query's cost before
it ran) and how it ended, the first rows of each result, the answer, and what the turn cost.

Plain text is not inert everywhere it is shown: a terminal (the CLI, ``jupyter console``)
acts on control sequences, so a row or an answer carrying ``ESC ] 8 ;; URL`` would print a
clickable hyperlink to anywhere, ``ESC [ 2J`` would clear the screen and a carriage return or
a right-to-left override would make a line read differently from what it holds. Every
control character except newline and tab, and every bidirectional override, is therefore
written as a visible escape (``\x1b``, ``\u202e``).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable

from relay_nb.agent.turn_result import TurnResult
from relay_nb.views.model import CallView, TurnView

__all__ = ["TEXT_PREVIEW_ROWS", "turn_text", "visible_controls"]

TEXT_PREVIEW_ROWS = 5
_MAX_LINE = 160
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def turn_text(
    turn: TurnResult | TurnView,
    *,
    preview_rows: int = TEXT_PREVIEW_ROWS,
    format_sql: Callable[[str], str] | None = None,
    width: int | None = None,
) -> str:
    """The saved-output summary of ``turn`` (see the module docstring).

    For a terminal: ``format_sql`` lays out each tool call's SQL for reading (it must be
    deterministic; the CLI pretty-prints with sqlglot), and ``width`` wraps the answer's long
    lines at word boundaries. Both default to the saved-output form: SQL as it ran, no wrapping.
    """
    view = turn if isinstance(turn, TurnView) else TurnView.of(turn)
    lines = [f"Q: {_one_line(view.question)}"]
    for call in view.calls:
        lines += _call_lines(call, preview_rows, format_sql)
    answer = view.answer.strip()
    if answer and width:
        answer = "\n".join(
            textwrap.fill(line, width - 3, break_on_hyphens=False) if line else line
            for line in answer.splitlines()
        )
    lines += [_one_line(reading) for reading in view.readings]
    lines.append("A: " + (answer.replace("\n", "\n   ") if answer else "(no answer)"))
    if view.finish_reason not in (None, "stop"):
        lines.append(f"stopped: {view.finish_reason}")
    lines += [f"✓ {note}" for note in view.notes]
    lines.append(view.usage_line())
    return visible_controls("\n".join(lines))


def visible_controls(text: str) -> str:
    """``text`` with terminal-active characters as visible escapes (see the module docstring);
    Windows line ends become plain newlines first."""
    return _CONTROL.sub(_escape, text.replace("\r\n", "\n"))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _call_lines(
    call: CallView, preview_rows: int, format_sql: Callable[[str], str] | None = None
) -> list[str]:
    lines = [f"[{call.index}] {call.name}: {call.status}"]
    if call.asked:  # the model's question to the user, and the answer it got
        return [*lines, "    " + _one_line(call.asked), "    " + _one_line(call.content)]
    sql = call.readable_query(pretty=False)
    if sql and format_sql is not None:
        sql = format_sql(sql)
    if sql:
        lines += ["    " + line for line in sql.strip().splitlines()]
    if call.status_line:  # what it said while it ran: a query's cost, before it ran
        lines.append("    " + _one_line(call.status_line))
    if call.is_error:
        lines.append("    " + _one_line(call.shown_content))
    elif call.frame is not None and preview_rows > 0:
        table = call.frame.head(preview_rows).to_string(index=False, max_colwidth=40)
        lines += ["    " + line[:_MAX_LINE] for line in table.splitlines()]
        lines += ["    note: " + _one_line(note) for note in call.notes]
    elif call.artifact is None or call.png is not None:
        lines.append("    " + _one_line(call.content))  # a chart says what it drew
    return lines


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_LINE else flat[: _MAX_LINE - 1] + "…"
