"""Helpers shared by the DataFrame connector tests."""

from __future__ import annotations


def table_line(context: str, table: str) -> str:
    """The prompt line that renders ``table`` (``sales(…)`` or ``"order"(…)``)."""
    for line in context.splitlines():
        if line.startswith((f"{table}(", f'"{table}"(')):
            return line
    raise AssertionError(f"no line for table {table!r} in:\n{context}")
