"""The session as the analyst looks back on it: the conversation and what each turn cost.

``%relay --history`` prints :func:`history_text` — each question, the queries that answered
it (their SQL on one line, with the rows each returned) and the answer as plain words, cut at
a word with an ellipsis. ``%relay --usage`` shows :func:`usage_frame`, one row per turn
(question, model, model calls, tokens, dollars, time), under :func:`usage_total`'s line.
Both read the finished turns only; they sit with the other views, below the notebook and the
CLI, and import no IPython.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from relay_nb.agent.turn_result import TurnResult
from relay_nb.views.model import TurnView, describe_usage, model_label
from relay_nb.views.text import visible_controls

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["history_text", "plain_answer", "usage_frame", "usage_total"]

ANSWER_CHARS = 300
"""An answer in the history is cut here (at a word, with an ellipsis)."""
_SQL_CHARS = 240
_MARKDOWN = (
    (re.compile(r"\[([^\]]+)\]\([^)\s]+\)"), r"\1"),  # [text](url) → text
    (re.compile(r"(\*\*|__)(.+?)\1"), r"\2"),  # **bold**
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"\1"),  # *italic*
    (re.compile(r"`([^`]+)`"), r"\1"),  # `code`
    (re.compile(r"^\s{0,3}#{1,6}\s+"), ""),  # # heading
    (re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+"), "· "),  # list items
)
_TABLE_RULE = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{2,}:?[ \t]*\|)+[ \t]*:?-*:?[ \t]*\|?\s*$")


def history_text(turns: Sequence[TurnResult], *, answer_chars: int = ANSWER_CHARS) -> str:
    """The conversation so far, a few lines a turn (see the module docstring)."""
    if not turns:
        return "no questions in this conversation yet"
    lines: list[str] = []
    for number, turn in enumerate(turns, 1):
        view = TurnView.of(turn)
        lines.append(f"[{number}] Q: {_flat(turn.question, 200)}")
        for call in view.calls:
            query = call.readable_query(pretty=False)
            if call.asked:
                lines.append(f"    {_flat(call.asked, 200)} → {_flat(call.content, 120)}")
            elif query:
                lines.append(f"    {call.name} · {call.status}: {_flat(query, _SQL_CHARS)}")
        answer = plain_answer(turn.answer, answer_chars) or "(no answer)"
        lines.append(f"    A: {answer}")
        if turn.finish_reason != "stop":
            lines.append(f"    stopped: {turn.finish_reason}")
    return visible_controls("\n".join(lines))


def plain_answer(answer: str, limit: int = ANSWER_CHARS) -> str:
    """``answer`` without its Markdown markup, on one line, cut at a word within ``limit``
    characters with an ellipsis (a table's rows read ``a | b; 1 | 2``)."""
    parts: list[str] = []
    # only what can be shown is read (the patterns' worst case grows with the square of a
    # line, and the answer is the model's): a few times the limit, for markup to drop
    for line in answer[: limit * 4].splitlines():
        if _TABLE_RULE.match(line):
            continue
        for pattern, replacement in _MARKDOWN:
            line = pattern.sub(replacement, line)
        if line.strip().startswith("|"):
            cells = " | ".join(cell.strip() for cell in line.strip().strip("|").split("|"))
            parts.append(cells + ";")
        elif line.strip():
            parts.append(line.strip())
    return _flat(" ".join(parts).rstrip(";"), limit)


def usage_frame(turns: Sequence[TurnResult]) -> pd.DataFrame:
    """One row per turn: question, who answered, model calls, tokens in and out, cost in
    dollars (None: unpriced; 0.0 for a scripted or replayed turn: nothing was spent) and
    wall time (``412 ms``: for reading; ``relay.usage_report()`` is the table to compute on)."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for turn in turns:
        usage = turn.usage
        cost = usage.cost_usd
        rows.append(
            {
                "question": _flat(turn.question, 80),
                "model": model_label(turn.model, turn.simulated),
                "calls": sum(1 for event in turn.events if event.type == "usage"),
                "tokens_in": usage.input_tokens or 0,
                "tokens_out": usage.output_tokens or 0,
                "cost_usd": 0.0 if turn.simulated else cost,
                "time": f"{turn.elapsed_ms:.0f} ms",
            }
        )
    frame = pd.DataFrame(rows, columns=list(_COLUMNS))
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="turn")
    return frame


_COLUMNS = ("question", "model", "calls", "tokens_in", "tokens_out", "cost_usd", "time")


def usage_total(turns: Sequence[TurnResult], total: Any) -> str:
    """The line above the table: turns, tokens and dollars over the whole session
    (``total``, the session's ``Usage``, counts compactions and runs the turns do not)."""
    count = len(turns)
    last = turns[-1] if turns else None
    stood_in = [t for t in turns if t.simulated]
    # the total is "not spent" only when no real model answered any turn
    simulated = last.simulated if last and len(stood_in) == count else None
    line = f"session: {count} turn{'s' if count != 1 else ''} · " + describe_usage(
        total, last.model if last else "", simulated=simulated
    )
    if stood_in and len(stood_in) < count:  # some turns real, some not: say which is which
        priced = sum(t.usage.cost_usd or 0.0 for t in stood_in)
        line += f" (of which ${priced:.4f} for {len(stood_in)} scripted or replayed, not spent)"
    return line


def _flat(text: str, limit: int) -> str:
    """One line; past ``limit`` characters cut at the last space (an ellipsis shows it)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"
