"""What a guarded query will scan, asked of the database before it runs (the preflight).

PostgreSQL: ``EXPLAIN (FORMAT JSON, VERBOSE)`` — the planner's rows for every scan, and for a
sequential scan the whole relation (its size on disk, ``pg_relation_size``, and its row
estimate), since a sequential scan reads every page whatever its filter keeps. DuckDB:
``EXPLAIN (FORMAT JSON)`` — the rows its scans are expected to produce (its plan gives no
bytes). Other engines have no estimate here (None): their queries run as before.

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

__all__ = ["estimate_query", "supports_estimate"]

_SEQUENTIAL = {"Seq Scan"}


def supports_estimate(backend: str) -> bool:
    """Whether :func:`estimate_query` can ask this SQLAlchemy backend."""
    return backend in _ESTIMATORS


def estimate_query(
    engine: Engine, sql: str, *, timeout_s: float, search_path: str | None
) -> Estimate | None:
    """The engine's estimate for the guarded ``sql``; None where it has none."""
    estimator = _ESTIMATORS.get(engine.dialect.name)
    if estimator is None:
        return None

    def run(statement: str) -> list[tuple[Any, ...]]:
        fetched = run_read_only(
            engine, statement, max_rows=1000, timeout_s=timeout_s, search_path=search_path
        )
        return list(fetched.rows)

    return estimator(engine, sql, run)


_Run = Callable[[str], list[tuple[Any, ...]]]


def _postgres(engine: Engine, sql: str, run: _Run) -> Estimate:
    rows = run(f"EXPLAIN (FORMAT JSON, VERBOSE) {sql}")
    plan = _json(rows[0][0])[0]["Plan"]
    scans = [node for node in _nodes(plan) if "Relation Name" in node]
    sequential = {
        (node.get("Schema"), node["Relation Name"])
        for node in scans
        if node["Node Type"] in _SEQUENTIAL
    }
    sizes = _pg_sizes(engine, sequential, run) if sequential else {}
    rows_scanned = bytes_scanned = 0
    for node in scans:
        key = (node.get("Schema"), node["Relation Name"])
        if key in sizes:  # the whole relation is read, whatever the filter keeps
            size, tuples = sizes[key]
            bytes_scanned += size
            rows_scanned += tuples if tuples >= 0 else int(node.get("Plan Rows", 0))
        else:
            planned = int(node.get("Plan Rows", 0))
            rows_scanned += planned
            bytes_scanned += planned * int(node.get("Plan Width", 0))
    return Estimate(
        rows_scanned=rows_scanned,
        bytes_scanned=bytes_scanned,
        result_rows=int(plan.get("Plan Rows", 0)),
        source="PostgreSQL EXPLAIN",
    )


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


def _duckdb(engine: Engine, sql: str, run: _Run) -> Estimate:
    rows = run(f"EXPLAIN (FORMAT JSON) {sql}")
    plans = _json(rows[0][-1])
    scanned = 0
    result: int | None = None
    for root in plans:
        for node in _nodes(root, children="children"):
            cardinality = _cardinality(node)
            if cardinality is None:
                continue
            if result is None and "LIMIT" not in str(node.get("name", "")).upper():
                result = cardinality  # the topmost node that estimates its output (a
                # LIMIT node's own figure is 0)
            if "SCAN" in str(node.get("name", "")).upper():
                scanned += cardinality
    return Estimate(rows_scanned=scanned, result_rows=result, source="DuckDB EXPLAIN")


def _cardinality(node: dict[str, Any]) -> int | None:
    info = node.get("extra_info")
    value = info.get("Estimated Cardinality") if isinstance(info, dict) else None
    try:
        return int(str(value).lstrip("~")) if value is not None else None
    except ValueError:
        return None


def _nodes(plan: dict[str, Any], children: str = "Plans") -> Iterator[dict[str, Any]]:
    stack = [plan]
    while stack:
        node = stack.pop(0)
        yield node
        stack.extend(child for child in node.get(children, ()) if isinstance(child, dict))


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _literal(engine: Engine, value: str) -> str:
    """A string literal as the engine's own compiler quotes it."""
    return str(
        literal(value).compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True})
    )


_ESTIMATORS: dict[str, Callable[[Engine, str, _Run], Estimate]] = {
    "postgresql": _postgres,
    "duckdb": _duckdb,
}
