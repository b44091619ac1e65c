"""Cutting text an MCP server wrote down to size, for every part of the connector.

One rule so results, errors and the prompt agree: redact *before* clipping (a secret cut in
half by the clip would no longer match and leak its first half), and mark a cut with ``…``.
"""

from __future__ import annotations

from collections.abc import Iterable

from relay_nb.redaction import redact

__all__ = ["clip", "redacted_clip"]


def clip(text: str, limit: int, *, one_line: bool = False) -> str:
    """``text`` cut to at most ``limit`` characters (``…`` marks a cut); with ``one_line``,
    runs of whitespace (newlines too) become one space first."""
    if one_line:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def redacted_clip(
    text: str, limit: int, *, secrets: Iterable[str] = (), one_line: bool = False
) -> str:
    """``text`` with every known secret (and ``secrets``) redacted, then clipped."""
    return clip(redact(text, extra=secrets), limit, one_line=one_line)
