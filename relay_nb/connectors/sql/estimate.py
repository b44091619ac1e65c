"""What a guarded query will scan, asked of the database before it runs (the preflight).

PostgreSQL: ``EXPLAIN (FORMAT JSON, VERBOSE)`` — for a sequential scan the whole relation (its
size on disk, ``pg_relation_size``, and its row estimate: a sequential scan reads every page
whatever its filter keeps), for other scans the planner's rows and widths. DuckDB:
``EXPLAIN (FORMAT JSON)`` and its tables' row counts (``duckdb_tables()``) — rows, no bytes.
Every guarded query has a LIMIT: a scan that feeds it through streaming steps only (no sort,
aggregate or join build in between) stops early, so it counts for the share of it the LIMIT
needs — PostgreSQL's own cost fraction at the Limit node; for DuckDB the limit over the
scan's expected matches. Other engines have no estimate here (None).

Both statements are built from text the guard produced (one checked ``SELECT``) and run
through :func:`~relay_nb.connectors.sql.readonly.run_read_only` like the query itself:
read-only, bounded in time; ``EXPLAIN`` without ``ANALYZE`` plans, it never executes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import Engine, literal

from relay_nb.connectors.preflight import Estimate
from relay_nb.connectors.sql.readonly import run_read_only

__all__ = ["FIGURES", "estimate_query"]

_SEQUENTIAL = {"Seq Scan"}


FIGURES: dict[str, frozenset[str]] = {
    "postgresql": frozenset({"rows", "bytes"}),
    "duckdb": frozenset({"rows"}),
}
"""What each SQLAlchemy backend's estimate gives: a threshold on a figure it does not give
would never fire, so it is refused when the connector is made."""


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

    return estimator(engine, sql, run, limit)


_Run = Callable[[str], list[tuple[Any, ...]]]


def _postgres(engine: Engine, sql: str, run: _Run, limit: int | None = None) -> Estimate:
    rows = run(f"EXPLAIN (FORMAT JSON, VERBOSE) {sql}")
    plan = _json(rows[0][0])[0]["Plan"]
    scans = [(node, share) for node, share in _shared(plan) if "Relation Name" in node]
    sequential = {
        (node.get("Schema"), node["Relation Name"])
        for node, _ in scans
        if node["Node Type"] in _SEQUENTIAL
    }
    sizes = _pg_sizes(engine, sequential, run) if sequential else {}
    rows_scanned = bytes_scanned = 0.0
    for node, share in scans:
        key = (node.get("Schema"), node["Relation Name"])
        if key in sizes:  # the whole relation is read, whatever the filter keeps
            size, tuples = sizes[key]
            bytes_scanned += size * share
            rows_scanned += (tuples if tuples >= 0 else int(node.get("Plan Rows", 0))) * share
        else:
            planned = int(node.get("Plan Rows", 0)) * share
            rows_scanned += planned
            bytes_scanned += planned * int(node.get("Plan Width", 0))
    return Estimate(
        rows_scanned=round(rows_scanned),
        bytes_scanned=round(bytes_scanned),
        result_rows=int(plan.get("Plan Rows", 0)),
        source="PostgreSQL EXPLAIN",
    )


_PG_STREAMING = {"Limit", "Result", "Subquery Scan", "Append", "Gather", "ProjectSet"}
"""Nodes that pass rows on as they come: a LIMIT above them stops the scan under them."""


def _shared(plan: dict[str, Any]) -> Iterator[tuple[dict[str, Any], float]]:
    """Each node with the share of its work the query needs: a Limit's cost over its
    input's, carried down through streaming nodes; anything else reads all of its input."""
    stack: list[tuple[dict[str, Any], float]] = [(plan, 1.0)]
    while stack:
        node, share = stack.pop()
        yield node, share
        children = [child for child in node.get("Plans", ()) if isinstance(child, dict)]
        if node.get("Node Type") == "Limit" and children:
            below = float(children[0].get("Total Cost") or 0.0)
            fraction = float(node.get("Total Cost") or 0.0) / below if below > 0 else 1.0
            share *= min(1.0, max(fraction, 0.0))
        elif node.get("Node Type") not in _PG_STREAMING:
            share = 1.0
        stack.extend((child, share) for child in children)


def _pg_sizes(
    engine: Engine, relations: set[tuple[str | None, str]], run: _Run
) -> dict[tuple[str | None, str], tuple[int, int]]:
    """``(schema, name) -> (bytes on disk, estimated rows)`` for the relations read whole."""
    pairs = ", ".join(
        f"({_literal(engine, schema or 'public')}, {_literal(engine, name)})"
        for schema, name in sorted(relations, key=lambda pair: (pair[0] or "", pair[1]))
    )
    statement = (
        "SELECT n.nspname, c.relname, pg_relation_size(c.oid), c.reltuples::bigint "
        "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE (n.nspname, c.relname) IN ({pairs})"
    )
    return {
        (schema, name): (int(size), int(tuples)) for schema, name, size, tuples in run(statement)
    }


def _duckdb(engine: Engine, sql: str, run: _Run, limit: int | None = None) -> Estimate:
    rows = run(f"EXPLAIN (FORMAT JSON) {sql}")
    plans = _json(rows[0][-1])
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


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _literal(engine: Engine, value: str) -> str:
    """A string literal as the engine's own compiler quotes it."""
    return str(
        literal(value).compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True})
    )


_ESTIMATORS: dict[str, Callable[[Engine, str, _Run, int | None], Estimate]] = {
    "postgresql": _postgres,
    "duckdb": _duckdb,
}
