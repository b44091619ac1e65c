"""Pick and render the OpenAPI operations that fit the prompt, best match to the question first.

A large API has hundreds of operations; the prompt has room for a few dozen. When the list
does not fit ``max_operations`` or the token budget, operations are scored by the question's
words (path segments count most, then the summary, then ids, tags and parameter names), the
best are kept in document order — so related paths stay together — and one closing line says
how many were left out and names as many as still fit, so the model knows they exist.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from relay_nb.connectors.http.openapi import Operation

__all__ = ["render_operations", "score_operation"]

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_STOP_WORDS = (
    "the and for with from that this what which who how many much are was were get list "
    "show all any each per into about have has had our their them they you your give tell "
    "find api call"
)
_STOP = frozenset(_STOP_WORDS.split())
_INDENT = "  "


def render_operations(
    operations: Sequence[Operation],
    *,
    max_operations: int,
    max_chars: int | None = None,
    question: str | None = None,
) -> str:
    """One indented line per shown operation, then ``(N more operations not shown: …)``.

    When space is short, a matching operation is shown without its parameters rather than
    dropped; the model can still call it and read the API's error if a parameter is wrong.
    """
    lines = [_INDENT + op.text() for op in operations]
    total = sum(len(line) + 1 for line in lines)
    if len(lines) <= max_operations and (max_chars is None or total <= max_chars):
        return "\n".join(lines)
    words = _words(question or "")
    ranked = sorted(
        range(len(operations)), key=lambda i: (-score_operation(operations[i], words), i)
    )
    budget = None if max_chars is None else max_chars - _note_reserve(len(operations))
    shown: dict[int, str] = {}
    used = 0
    for index in ranked:
        if len(shown) >= max_operations:
            break
        # the full line, or without its parameters when only that fits
        for line in (lines[index], _INDENT + _short(operations[index])):
            if budget is None or used + len(line) + 1 <= budget:
                shown[index] = line
                used += len(line) + 1
                break
    body = [shown[i] for i in sorted(shown)]
    omitted = [operations[i].label for i in ranked if i not in shown]
    room = None if max_chars is None else max(0, max_chars - used)
    body.append(_omitted_note(omitted, room))
    return "\n".join(body)


def _short(operation: Operation) -> str:
    return operation.label + (f" — {operation.summary}" if operation.summary else "")


def score_operation(operation: Operation, words: set[str]) -> int:
    """How well an operation matches the question's (stemmed) words."""
    if not words:
        return 0
    path = _words(operation.path)
    summary = _words(operation.summary)
    other = _words(
        " ".join([operation.operation_id, *operation.tags, *(p.name for p in operation.parameters)])
    )
    return 3 * len(words & path) + 2 * len(words & summary) + len(words & other)


def _words(text: str) -> set[str]:
    """Lowercase stems of the words, camelCase and snake_case split, stop words dropped."""
    found = set()
    for word in _WORD.findall(text):
        word = word.lower()
        if len(word) < 3 or word in _STOP:
            continue
        found.add(_stem(word))
    return found


def _stem(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us")) and len(word) > 3:
        return word[:-1]
    return word


def _note_reserve(count: int) -> int:
    return len(f"{_INDENT}({count} more operations not shown)") + 1


def _omitted_note(labels: list[str], room: int | None) -> str:
    head = f"{_INDENT}({len(labels)} more operation{'s' if len(labels) != 1 else ''} not shown"
    names: list[str] = []
    length = len(head) + 3
    for label in labels:
        extra = len(label) + 2
        if room is not None and length + extra + 2 > room:
            break
        names.append(label)
        length += extra
        if len(names) >= 40:
            break
    if not names:
        return head + ")"
    more = ", …" if len(names) < len(labels) else ""
    return f"{head}: {', '.join(names)}{more})"
