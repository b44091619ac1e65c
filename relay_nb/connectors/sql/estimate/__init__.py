"""What a guarded query will scan, asked of the database before it runs (the preflight).

One module per engine, each saying what its estimate holds and what it cannot know:

- PostgreSQL (:mod:`.postgres`): ``EXPLAIN (FORMAT JSON, VERBOSE)`` and the sizes on disk of
  the relations a sequential scan reads whole — rows and bytes.
- DuckDB (:mod:`.duckdb`): ``EXPLAIN (FORMAT JSON)`` and the tables' row counts — rows.

Other engines have no estimate here (None). Every statement is built from text the guard
produced (one checked ``SELECT``) and runs through
:func:`~relay_nb.connectors.sql.readonly.run_read_only` like the query itself: read-only,
bounded in time. ``EXPLAIN`` without ``ANALYZE`` plans, it never executes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from relay_nb.connectors.preflight import Estimate
from relay_nb.connectors.sql.estimate import duckdb, postgres
from relay_nb.connectors.sql.estimate.common import Planning
from relay_nb.connectors.sql.readonly import run_read_only

__all__ = ["FIGURES", "estimate_query"]

FIGURES: dict[str, frozenset[str]] = {
    "postgresql": frozenset({"rows", "bytes"}),
    "duckdb": frozenset({"rows"}),
}
"""What each SQLAlchemy backend's estimate gives: a threshold on a figure it does not give
would never fire, so it is refused when the connector is made."""

_ESTIMATORS: dict[str, Callable[[Planning], Estimate]] = {
    "postgresql": postgres.estimate,
    "duckdb": duckdb.estimate,
}


def estimate_query(
    engine: Engine, sql: str, *, limit: int, timeout_s: float, search_path: str | None
) -> Estimate | None:
    """The engine's estimate for the guarded ``sql`` (whose outermost LIMIT is ``limit``);
    None where it has none."""
    estimator = _ESTIMATORS.get(engine.dialect.name)
    if estimator is None:
        return None

    def run(statement: str) -> list[tuple[Any, ...]]:
        fetched = run_read_only(
            engine, statement, max_rows=100_000, timeout_s=timeout_s, search_path=search_path
        )
        return list(fetched.rows)

    return estimator(Planning(engine, sql, limit, timeout_s, run))
