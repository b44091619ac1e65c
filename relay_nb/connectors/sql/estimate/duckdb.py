"""DuckDB: ``EXPLAIN (FORMAT JSON)`` and its tables' row counts (``duckdb_tables()``) — rows,
no bytes. A scan that feeds the LIMIT through streaming steps only counts for the limit over
the scan's expected matches — when nothing filters them: DuckDB's share kept by a filter is a
fixed fraction or a distinct count, which says nothing of where (or whether) the matching
rows lie, so a filtered scan under a LIMIT may read its whole table and is counted so."""

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
        for node, streamed, filtered in _duckdb_nodes(root):
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
            if streamed and limit is not None and cardinality and not filtered:
                # stops after `limit` rows: every row it reads is one the LIMIT takes
                scanned = min(scanned, limit * whole / cardinality)
            read.setdefault(table, []).append((scanned, streamed))
    total = 0.0
    for scans in read.values():
        limited = [rows for rows, streamed in scans if streamed]
        total += max(limited or [rows for rows, _ in scans])
    return Estimate(rows_scanned=round(total), result_rows=result, source="DuckDB EXPLAIN")


_DUCKDB_LIMITS = {"STREAMING_LIMIT", "LIMIT"}
_DUCKDB_STREAMING = {*_DUCKDB_LIMITS, "PROJECTION", "FILTER"}


def _duckdb_nodes(root: dict[str, Any]) -> Iterator[tuple[dict[str, Any], bool, bool]]:
    """Each node, whether a LIMIT lies above it with only streaming steps between, and
    whether one of those steps (or the node itself) filters rows."""
    stack: list[tuple[dict[str, Any], bool, bool]] = [(root, False, False)]
    while stack:
        node, streamed, filtered = stack.pop()
        name = str(node.get("name", "")).upper()
        info = node.get("extra_info")
        filters = isinstance(info, dict) and bool(info.get("Filters"))
        filtered = streamed and (filtered or filters or name == "FILTER")
        yield node, streamed, filtered
        below = name in _DUCKDB_LIMITS or (streamed and name in _DUCKDB_STREAMING)
        stack.extend(
            (child, below, below and filtered)
            for child in node.get("children", ())
            if isinstance(child, dict)
        )


def _cardinality(node: dict[str, Any]) -> int | None:
    info = node.get("extra_info")
    value = info.get("Estimated Cardinality") if isinstance(info, dict) else None
    try:
        return int(str(value).lstrip("~")) if value is not None else None
    except ValueError:
        return None
