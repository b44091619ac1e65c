"""Snowflake: ``EXPLAIN USING JSON`` — its ``GlobalStats``.

Snowflake compiles the query without running it (no warehouse needs to be up) and says how
many micro-partitions its tables have (``partitionsTotal``), how many are left after
compile-time pruning (``partitionsAssigned``) and how many bytes those hold
(``bytesAssigned``), for the whole query (``GlobalStats``) and per ``TableScan``
(https://docs.snowflake.com/en/sql-reference/sql/explain). The estimate is
``bytesAssigned``: compressed micro-partition bytes, an upper bound of what the query reads —
Snowflake reads only the columns the query names, prunes more at run time (join filters),
and a LIMIT may stop a scan early. It has no rows: Snowflake's EXPLAIN gives none.

Snowflake bills warehouse time, not bytes: ``price_per_tb`` is your own model of what a
terabyte scanned costs you, and a byte threshold (``approve_above``) is the gate that fits.
"""

from __future__ import annotations

from typing import Any

from relay_nb.connectors.preflight import Estimate
from relay_nb.connectors.sql.estimate.common import Planning, as_json, finite

__all__ = ["estimate"]


def estimate(planning: Planning) -> Estimate:
    rows = planning.run(f"EXPLAIN USING JSON {planning.sql}")
    plan = as_json(rows[0][0])
    stats = plan.get("GlobalStats") if isinstance(plan, dict) else None
    if not isinstance(stats, dict):
        raise ValueError("Snowflake's EXPLAIN gave no GlobalStats")
    assigned = finite(stats.get("bytesAssigned"))
    return Estimate(
        bytes_scanned=None if assigned is None else round(assigned),
        source="Snowflake EXPLAIN" + _pruning(stats),
    )


def _pruning(stats: dict[str, Any]) -> str:
    """``", 12 of 400 partitions"``: what compile-time pruning left of the tables."""
    assigned, total = finite(stats.get("partitionsAssigned")), finite(stats.get("partitionsTotal"))
    if assigned is None or total is None or total <= 0:
        return ""
    return f", {round(assigned):,} of {round(total):,} partitions"
