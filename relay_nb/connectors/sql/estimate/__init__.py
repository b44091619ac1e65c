"""What a guarded query will scan, asked of the database before it runs (the preflight).

One module per engine, each saying what its estimate holds and what it cannot know:

- PostgreSQL (:mod:`.postgres`): ``EXPLAIN (FORMAT JSON, VERBOSE)`` and the sizes on disk of
  the relations a sequential scan reads whole — rows and bytes, times the runs of each scan;
  which of the plan's conditions the statistics back is :mod:`.conditions`.
- DuckDB (:mod:`.duckdb`): ``EXPLAIN (FORMAT JSON)`` and the tables' row counts — rows.
- BigQuery (:mod:`.bigquery`): a dry run of the query job — bytes processed.
- Snowflake (:mod:`.snowflake`): ``EXPLAIN USING JSON``'s ``GlobalStats`` — the bytes of the
  micro-partitions left after compile-time pruning.
- Trino (:mod:`.trino`): ``EXPLAIN (TYPE IO, FORMAT JSON)`` — rows and bytes of every table
  scan, from table statistics.
- ClickHouse (:mod:`.clickhouse`, also chdb): ``EXPLAIN ESTIMATE`` and ``system.parts`` —
  rows of the granules left to read, and their compressed bytes.

Other engines have no estimate here (None). Every statement is built from text the guard
produced (one checked ``SELECT``) and runs through
:func:`~relay_nb.connectors.sql.readonly.run_read_only` like the query itself: read-only,
bounded in time. ``EXPLAIN`` without ``ANALYZE`` plans, it never executes; BigQuery's dry run
goes through the connection's own client, bounded by the same timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from relay_nb.connectors.preflight import Estimate
from relay_nb.connectors.sql.estimate import (
    bigquery,
    clickhouse,
    duckdb,
    postgres,
    snowflake,
    trino,
)
from relay_nb.connectors.sql.estimate.common import Planning
from relay_nb.connectors.sql.readonly import run_read_only

__all__ = ["FIGURES", "estimate_query"]

_CLICKHOUSE = frozenset({"rows", "bytes"})

FIGURES: dict[str, frozenset[str]] = {
    "postgresql": frozenset({"rows", "bytes"}),
    "duckdb": frozenset({"rows"}),
    "bigquery": frozenset({"bytes"}),
    "snowflake": frozenset({"bytes"}),
    "trino": frozenset({"rows", "bytes"}),
    # clickhouse-sqlalchemy (clickhouse+http://, clickhouse+native://), clickhouse-connect
    # (clickhousedb://) and chdb (chdb://): one server's EXPLAIN, whichever driver
    "clickhouse": _CLICKHOUSE,
    "clickhousedb": _CLICKHOUSE,
    "chdb": _CLICKHOUSE,
}
"""What each SQLAlchemy backend's estimate gives: a threshold on a figure it does not give
would never fire, so it is refused when the connector is made."""

_ESTIMATORS: dict[str, Callable[[Planning], Estimate]] = {
    "postgresql": postgres.estimate,
    "duckdb": duckdb.estimate,
    "bigquery": bigquery.estimate,
    "snowflake": snowflake.estimate,
    "trino": trino.estimate,
    "clickhouse": clickhouse.estimate,
    "clickhousedb": clickhouse.estimate,
    "chdb": clickhouse.estimate,
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
