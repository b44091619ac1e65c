"""One row of the performance table, and the lookups every row is made with.

Standard library only, like the rest of ``report``: the test loads the package by path and
runs nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Results", "Row", "get", "missing"]


@dataclass(frozen=True)
class Row:
    metric: str
    target: str
    measured: str
    met: bool | None
    """None: no target (reported only), or not measured."""
    reason: str = ""
    """Why a target is missed (or why there is no figure)."""

    def cells(self) -> list[str]:
        if self.met is None:
            verdict = f"— {self.reason}".rstrip()
        elif self.met:
            verdict = "✓"
        else:
            verdict = f"✗ {self.reason}"
        return [self.metric, self.target, self.measured, verdict]


Results = Mapping[str, Any]


def get(results: Results, *path: str) -> Any:
    value: Any = results
    for key in path:
        if not isinstance(value, Mapping) or value.get(key) is None:
            return None
        value = value[key]
    return value


def missing(metric: str, target: str, benchmark: str) -> Row:
    return Row(metric, target, "not measured", None, f"run `python -m benchmarks {benchmark}`")
