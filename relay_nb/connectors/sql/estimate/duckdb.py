"""DuckDB: ``EXPLAIN (FORMAT JSON)`` and its tables' row counts (``duckdb_tables()``) — rows,
no bytes. A scan that feeds the LIMIT through streaming steps only counts for the limit over
the scan's expected matches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from relay_nb.connectors.preflight import Estimate
from relay_nb.connectors.sql.estimate.common import Planning, as_json

__all__ = ["estimate"]


def estimate(planning: Planning) -> Estimate:
    run, limit = planning.run, planning.limit
    rows = run(f"EXPLAIN (FORMAT JSON) {planning.sql}")
    plans = as_json(rows[0][-1])
    tables = {
        f"{database}.{schema}.{name}": int(size or 0)
        for database, schema, name, size in run(
            "SELECT database_name, schema_name, table_name, estimated_size FROM duckdb_tables()"
        )
    }
    # per table, (rows, under a LIMIT): a plan may scan one twice — late materialisation
    # finds the LIMIT's row ids in one scan, then fetches only those rows in a second one
    read: dict[str, list[tuple[float, bool]]] = {}
    result: int | None = None
    for root in plans:
        for node, streamed in _duckdb_nodes(root):
            cardinality = _cardinality(node)
            name = str(node.get("name", "")).upper()
            if result is None and cardinality is not None and "LIMIT" not in name:
                result = cardinality  # the topmost node that estimates its output (a
                # LIMIT node's own figure is 0)
            if "SCAN" not in name:
                continue
            table = str((node.get("extra_info") or {}).get("Table", ""))
            whole = tables.get(table, cardinality or 0)
            scanned = float(whole)
            if streamed and limit is not None and cardinality:  # stops after `limit` matches
                scanned = min(scanned, limit * whole / cardinality)
            read.setdefault(table, []).append((scanned, streamed))
    total = 0.0
    for scans in read.values():
        limited = [rows for rows, streamed in scans if streamed]
        total += max(limited or [rows for rows, _ in scans])
    return Estimate(rows_scanned=round(total), result_rows=result, source="DuckDB EXPLAIN")


_DUCKDB_LIMITS = {"STREAMING_LIMIT", "LIMIT"}
_DUCKDB_STREAMING = {*_DUCKDB_LIMITS, "PROJECTION", "FILTER"}


def _duckdb_nodes(root: dict[str, Any]) -> Iterator[tuple[dict[str, Any], bool]]:
    """Each node, and whether a LIMIT lies above it with only streaming steps between."""
    stack: list[tuple[dict[str, Any], bool]] = [(root, False)]
    while stack:
        node, streamed = stack.pop()
        yield node, streamed
        name = str(node.get("name", "")).upper()
        below = name in _DUCKDB_LIMITS or (streamed and name in _DUCKDB_STREAMING)
        stack.extend(
            (child, below) for child in node.get("children", ()) if isinstance(child, dict)
        )


def _cardinality(node: dict[str, Any]) -> int | None:
    info = node.get("extra_info")
    value = info.get("Estimated Cardinality") if isinstance(info, dict) else None
    try:
        return int(str(value).lstrip("~")) if value is not None else None
    except ValueError:
        return None
