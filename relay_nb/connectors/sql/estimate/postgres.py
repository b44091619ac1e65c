"""PostgreSQL: ``EXPLAIN (FORMAT JSON, VERBOSE)``.

For a sequential scan the whole relation counts (its size on disk, ``pg_relation_size``, and
its row estimate: a sequential scan reads every page whatever its filter keeps); for other
scans the planner's rows and widths. A scan that feeds the LIMIT through streaming nodes
only counts for PostgreSQL's own cost fraction at the Limit node.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Engine

from relay_nb.connectors.preflight import Estimate
from relay_nb.connectors.sql.estimate.common import Planning, Run, as_json, quoted

__all__ = ["estimate"]

_SEQUENTIAL = {"Seq Scan"}


def estimate(planning: Planning) -> Estimate:
    run = planning.run
    rows = run(f"EXPLAIN (FORMAT JSON, VERBOSE) {planning.sql}")
    plan = as_json(rows[0][0])[0]["Plan"]
    scans = [(node, share) for node, share in _shared(plan) if "Relation Name" in node]
    sequential = {
        (node.get("Schema"), node["Relation Name"])
        for node, _ in scans
        if node["Node Type"] in _SEQUENTIAL
    }
    sizes = _pg_sizes(planning.engine, sequential, run) if sequential else {}
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
    engine: Engine, relations: set[tuple[str | None, str]], run: Run
) -> dict[tuple[str | None, str], tuple[int, int]]:
    """``(schema, name) -> (bytes on disk, estimated rows)`` for the relations read whole."""
    pairs = ", ".join(
        f"({quoted(engine, schema or 'public')}, {quoted(engine, name)})"
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
