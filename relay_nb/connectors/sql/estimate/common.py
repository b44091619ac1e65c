"""What every engine's estimator takes and the small readers they share."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, literal

__all__ = ["Planning", "Run", "as_json", "finite", "quoted"]

Run = Callable[[str], list[tuple[Any, ...]]]
"""Runs one statement read-only, bounded in time, and returns its rows."""


@dataclass(frozen=True)
class Planning:
    """One guarded query to estimate, and how to ask its engine."""

    engine: Engine
    sql: str
    """The guard's output: one checked query, its outermost LIMIT ``limit``."""
    limit: int | None
    timeout_s: float
    run: Run
    """The statement runner (:func:`~relay_nb.connectors.sql.readonly.run_read_only`)."""


def as_json(value: Any) -> Any:
    """A plan column's JSON, whether the driver gave text, bytes or a decoded value."""
    return json.loads(value) if isinstance(value, str | bytes) else value


def finite(value: Any) -> float | None:
    """A plan's number, or None for a missing, non-numeric or non-finite one (Trino writes
    an unknown statistic as ``"NaN"``)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def quoted(engine: Engine, value: str) -> str:
    """A string literal as the engine's own compiler quotes it."""
    return str(
        literal(value).compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True})
    )
