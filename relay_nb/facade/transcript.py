"""A turn as deterministic plain text: the notebook's ``text/plain`` and the CLI's transcript.

It lives below both, since the notebook and the CLI may not import each other. Deterministic
so that nbval can compare a re-executed notebook with the saved one, and a diff of two runs
shows what changed in the *answer*: no turn ids, no timings, no paths. What stays: the
question, each tool call with its SQL and how it ended, the first rows of each result, the
answer, and what the turn cost.

Plain text is not inert everywhere it is shown: a terminal (the CLI, ``jupyter console``)
acts on control sequences, so a row or an answer carrying ``ESC ] 8 ;; URL`` would print a
clickable hyperlink to anywhere, ``ESC [ 2J`` would clear the screen and a carriage return or
a right-to-left override would make a line read differently from what it holds. Every
control character except newline and tab, and every bidirectional override, is therefore
written as a visible escape (``\x1b``, ``\u202e``).
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from typing import Any

from relay_nb.agent.tool_calls import ToolOutcome
from relay_nb.agent.turn_result import TurnResult
from relay_nb.runtime.types import Usage

__all__ = [
    "TEXT_PREVIEW_ROWS",
    "describe_usage",
    "sql_of",
    "status_of",
    "turn_text",
    "visible_controls",
]

TEXT_PREVIEW_ROWS = 5
_MAX_LINE = 160
_MAX_QUERY_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def turn_text(
    turn: TurnResult,
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
    lines = [f"Q: {_one_line(turn.question)}"]
    for index, outcome in enumerate(turn.tool_results, 1):
        lines += _tool_lines(index, outcome, preview_rows, format_sql)
    answer = turn.answer.strip()
    if answer and width:
        answer = "\n".join(
            textwrap.fill(line, width - 3, break_on_hyphens=False) if line else line
            for line in answer.splitlines()
        )
    lines.append("A: " + (answer.replace("\n", "\n   ") if answer else "(no answer)"))
    if turn.finish_reason != "stop":
        lines.append(f"stopped: {turn.finish_reason}")
    lines.append(describe_usage(turn.usage, turn.model, calls=_model_calls(turn)))
    return visible_controls("\n".join(lines))


def visible_controls(text: str) -> str:
    """``text`` with terminal-active characters as visible escapes (see the module docstring);
    Windows line ends become plain newlines first."""
    return _CONTROL.sub(_escape, text.replace("\r\n", "\n"))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def describe_usage(usage: Usage, model: str, *, calls: int | None = None) -> str:
    """One line: model, calls, tokens (flagged when estimated), cost or "cost unknown"."""
    parts = [model or "model unknown"]
    if calls is not None:
        parts.append(f"{calls} call{'s' if calls != 1 else ''}")
    tokens = f"{usage.input_tokens or 0:,} in / {usage.output_tokens or 0:,} out tokens"
    cached = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
    if cached:
        tokens += f" (+{cached:,} cache)"
    if usage.estimated:
        tokens += " (estimated)"
    parts.append(tokens)
    parts.append("cost unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f}")
    return " · ".join(parts)


def _tool_lines(
    index: int,
    outcome: ToolOutcome,
    preview_rows: int,
    format_sql: Callable[[str], str] | None = None,
) -> list[str]:
    artifact = outcome.artifact
    status = "error" if outcome.is_error else status_of(artifact)
    lines = [f"[{index}] {outcome.name}: {status}"]
    sql = sql_of(outcome)
    if sql and format_sql is not None:
        sql = format_sql(sql)
    if sql:
        lines += ["    " + line for line in sql.strip().splitlines()]
    if outcome.is_error:
        lines.append("    " + _one_line(outcome.content))
    elif getattr(artifact, "df", None) is not None and preview_rows > 0:
        table = artifact.df.head(preview_rows).to_string(index=False, max_colwidth=40)
        lines += ["    " + line[:_MAX_LINE] for line in table.splitlines()]
    elif artifact is None or getattr(artifact, "png", None) is not None:
        lines.append("    " + _one_line(outcome.content))  # a chart says what it drew
    return lines


def status_of(artifact: Any) -> str:
    rows = getattr(artifact, "row_count", None)
    if rows is None:
        return "ok"
    more = " (more exist)" if getattr(artifact, "truncated", False) else ""
    return f"{rows:,} row{'s' if rows != 1 else ''}{more}"


def sql_of(outcome: ToolOutcome) -> str:
    """What the call ran, or — when it was refused before running — what it asked for.

    SQL tools show their statement; other tools (an HTTP call, a Mongo query) show their
    input, so a refused ``GET ../admin`` is visible in the saved trace, not only its error.
    """
    executed = getattr(outcome.artifact, "executed_sql", None)
    if isinstance(executed, str) and executed:
        return executed
    arguments = outcome.input if isinstance(outcome.input, dict) else {}
    submitted = arguments.get("sql")
    if isinstance(submitted, str):
        return submitted
    name = outcome.name
    if name.startswith("call_") and isinstance(arguments.get("path"), str):  # HTTP
        query = arguments.get("query")
        text = f"{arguments.get('method') or 'GET'} {arguments['path']}"
        return text + (f" {_compact(query)}" if query else "")
    if name == "web_search" and isinstance(arguments.get("query"), str):
        return f"web_search {_compact(arguments['query'])}"
    if name.startswith("query_") and arguments:  # a Mongo find or aggregate
        return _compact(arguments)
    return ""


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= _MAX_QUERY_CHARS else text[: _MAX_QUERY_CHARS - 1] + "…"


def _model_calls(turn: TurnResult) -> int:
    return sum(1 for event in turn.events if event.type == "usage")


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_LINE else flat[: _MAX_LINE - 1] + "…"
