"""Trino: ``EXPLAIN (TYPE IO, FORMAT JSON)`` — the cost-based optimizer's estimates.

The IO plan lists every table the query reads (``inputTableColumnInfos``), each with the
constraint pushed into its scan (partitions pruned by the filter) and the estimate of that
scan's output (``outputRowCount``, ``outputSizeInBytes``: rows and bytes of the columns read,
after what the connector prunes), and the estimate of the query's own output (``estimate``)
(https://trino.io/docs/current/sql/explain.html, ``IoPlanPrinter``). Rows and bytes scanned
are the sums over the tables; the result rows are the query's output.

The figures come from table statistics (``ANALYZE``, or what the connector knows): a table
without them has ``NaN`` for its rows or bytes, and then the estimate has no such figure —
with a threshold on it, the query asks first. A LIMIT is not credited (a scan is split across
workers; where it stops is not planned), so a plain ``SELECT * … LIMIT`` counts its whole
scan. The plan lists each distinct (table, constraint, estimate) once: a table read twice
the same way counts once.
"""

from __future__ import annotations

from typing import Any

from relay_nb.connectors.preflight import Estimate
from relay_nb.connectors.sql.estimate.common import Planning, as_json, finite

__all__ = ["estimate"]


def estimate(planning: Planning) -> Estimate:
    rows = planning.run(f"EXPLAIN (TYPE IO, FORMAT JSON) {planning.sql}")
    plan = as_json(rows[0][0])
    if not isinstance(plan, dict) or not isinstance(plan.get("inputTableColumnInfos"), list):
        raise ValueError("Trino's IO plan has no inputTableColumnInfos")
    scans = [
        info.get("estimate") or {}
        for info in plan["inputTableColumnInfos"]
        if isinstance(info, dict)
    ]
    result = finite((plan.get("estimate") or {}).get("outputRowCount"))
    return Estimate(
        rows_scanned=_total(scans, "outputRowCount"),
        bytes_scanned=_total(scans, "outputSizeInBytes"),
        result_rows=None if result is None else round(result),
        source="Trino EXPLAIN (TYPE IO)",
    )


def _total(scans: list[Any], figure: str) -> int | None:
    """The sum of one figure over the scans; None when any scan does not know it (a sum
    of the known ones would understate the query)."""
    total = 0.0
    for scan in scans:
        value = finite(scan.get(figure)) if isinstance(scan, dict) else None
        if value is None:
            return None
        total += value
    return round(total)
