"""PostgreSQL: ``EXPLAIN (FORMAT JSON, VERBOSE)``, read for what the plan can back.

Rows read are counted per scan, times the number of times the scan runs:

- **Which rows a scan reads.** A sequential scan reads the whole relation whatever its filter
  keeps (its size on disk, ``pg_relation_size``, and its rows at the density the last
  ``ANALYZE`` measured, as the planner scales them). A bitmap heap scan reads the rows its
  index conditions find, before its filter. An index scan without an index condition reads
  the whole relation; one with a filter reads the rows its index condition finds, which is
  planned again on its own, without the filter (its own filter's keep is not what it reads).
- **How many times it runs.** The inner side of a nested loop once per outer row; a
  correlated subquery (``SubPlan``) once per row its parent reads; an init plan, a hashed
  subplan, and what a ``Materialize`` or ``Hash`` keeps, once. A recursive query's
  iterations are unknown: one that reads a table has no estimate (the gate then asks).
- **A LIMIT** stops the scans under it (through nodes that stream rows on) at PostgreSQL's
  own cost fraction — unless a condition under it is one the planner guessed
  (:mod:`.conditions`): a guessed filter may keep nothing, and the scan reads to its end.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from relay_nb.connectors.preflight import Estimate
from relay_nb.connectors.sql.estimate.common import Planning, Run, as_json, quoted
from relay_nb.connectors.sql.estimate.conditions import guessed, guessed_keep, qualifiers

__all__ = ["estimate"]

Node = dict[str, Any]
Relation = tuple[str | None, str]

_WHOLE = {"Seq Scan", "Sample Scan"}
_INDEX = {"Index Scan", "Index Only Scan"}
_STREAMING = {
    "Limit", "Result", "Subquery Scan", "Append", "Gather", "ProjectSet", "Nested Loop",
    "Hash Join", "Merge Join", "Memoize",
}  # fmt: skip
"""Nodes that pass rows on as they come: a LIMIT above them stops the scans under them (a
join's outer side; its inner side is counted by how often it runs)."""
_CONDITIONS = ("Filter", "Join Filter", "Hash Cond", "Merge Cond", "Index Cond", "Recheck Cond")
_REPLANS = 8
"""Index scans planned again on their own, at most, per query; beyond, a whole relation."""
_TUPLE_BYTES = 32
"""The fewest bytes a heap row takes (header, item pointer, one small column): a relation
never analysed holds at most its size over this."""


def estimate(planning: Planning) -> Estimate:
    run = planning.run
    rows = run(f"EXPLAIN (FORMAT JSON, VERBOSE) {planning.sql}")
    plan = as_json(rows[0][0])[0]["Plan"]
    relations = {_relation(node) for node in _nodes(plan) if "Relation Name" in node}
    reads = _Reads(_pg_sizes(planning.engine, relations, run), run)
    rows_scanned = bytes_scanned = 0.0
    for node, loops, processes in _runs(plan, reads):
        if loops is None:
            why = "a recursive query reads a table an unknown number of times"
            return Estimate(
                result_rows=int(plan.get("Plan Rows", 0)), source=f"PostgreSQL EXPLAIN: {why}"
            )
        if "Relation Name" not in node:
            continue
        read, bytes_read = reads.per_run(node)
        if not (node.get("Parallel Aware") and reads.whole(node)):
            loops *= processes  # else the processes share one pass over the relation
        rows_scanned += read * loops
        bytes_scanned += bytes_read * loops
    return Estimate(
        rows_scanned=round(rows_scanned),
        bytes_scanned=round(bytes_scanned),
        result_rows=int(plan.get("Plan Rows", 0)),
        source="PostgreSQL EXPLAIN",
    )


def _nodes(plan: Node) -> Iterator[Node]:
    stack = [plan]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in node.get("Plans", ()) if isinstance(child, dict))


def _runs(plan: Node, reads: _Reads) -> Iterator[tuple[Node, float | None, float]]:
    """Each node, how many times each process runs it to its end (a fraction where a LIMIT
    stops it early; None where that is unknown: a recursive query's step), and how many
    processes run it (a parallel plan's workers and leader)."""
    stack: list[tuple[Node, float | None, float]] = [(plan, 1.0, 1.0)]
    while stack:
        node, loops, processes = stack.pop()
        yield node, loops, processes
        children = [child for child in node.get("Plans", ()) if isinstance(child, dict)]
        if loops is None or not children:
            continue
        kind = node.get("Node Type")
        whole = float(math.ceil(loops))  # a node that reads all its input does, once begun
        streamed: float | None = loops if kind in _STREAMING else whole
        if kind == "Limit":
            streamed = loops * _limit_share(node, children[0])
        elif kind in ("Gather", "Gather Merge"):
            workers = 1.0 + float(node.get("Workers Planned") or 0)
            stack.extend((child, loops, processes * workers) for child in children)
            continue
        elif kind == "Recursive Union" and len(children) > 1 and _reads_a_table(children[1]):
            streamed = None
        elif kind == "Nested Loop":
            main = [c for c in children if c.get("Parent Relationship") in ("Outer", "Inner")]
            if len(main) == 2:
                outer, inner = main
                repeats = loops * float(outer.get("Plan Rows") or 1)
                if inner.get("Node Type") == "Materialize":
                    repeats = whole  # the inner rows are kept after the first run
                stack.append((outer, loops, processes))
                stack.append((inner, repeats, processes))
                children = [c for c in children if c is not outer and c is not inner]
        for child in children:
            runs = _child_runs(node, child, loops, streamed, whole, reads)
            stack.append((child, runs, processes))


def _child_runs(
    parent: Node, child: Node, loops: float, streamed: float | None, whole: float, reads: _Reads
) -> float | None:
    relationship = child.get("Parent Relationship")
    name = str(child.get("Subplan Name", ""))
    if relationship == "InitPlan" or (relationship == "SubPlan" and _hashed(parent, name)):
        return whole
    if relationship == "SubPlan":  # correlated: once per row its parent reads
        return loops * _evaluations(parent, child, reads)
    if parent.get("Node Type") in ("Hash", "Materialize"):
        return whole
    return streamed


def _hashed(parent: Node, name: str) -> bool:
    """A subplan PostgreSQL runs once into a hash table: its parent names it ``hashed``."""
    mark = f"hashed {name}" if not name.startswith("hashed") else name
    return any(mark in str(value) for key, value in parent.items() if key != "Plans")


def _evaluations(parent: Node, subplan: Node, reads: _Reads) -> float:
    """How many times a correlated subquery runs per run of its parent: at most once per
    row the parent reads (a scan's rows before its filter; another node's input or output,
    whichever is larger), and no more than the planner charged the parent for — its cost
    beyond its inputs' over one run of the subquery, since PostgreSQL costs a subquery per
    row it evaluates it for."""
    if "Relation Name" in parent:
        most = reads.per_run(parent)[0]
    else:
        inputs = [
            float(child.get("Plan Rows") or 0)
            for child in parent.get("Plans", ())
            if isinstance(child, dict) and child.get("Parent Relationship") in ("Outer", "Inner")
        ]
        most = max(float(parent.get("Plan Rows") or 0), sum(inputs))
    each = float(subplan.get("Total Cost") or 0)
    if each > 0:
        below = sum(
            float(child.get("Total Cost") or 0)
            for child in parent.get("Plans", ())
            if isinstance(child, dict) and child.get("Parent Relationship") in ("Outer", "Inner")
        )
        charged = (float(parent.get("Total Cost") or 0) - below) / each
        most = min(most, math.ceil(charged)) if charged >= 0 else most
    return max(most, 1.0)


def _limit_share(limit: Node, below: Node) -> float:
    """The share of its input a LIMIT lets run: PostgreSQL's cost fraction, or all of it
    when a condition under it is a guess."""
    if _has_guess(below):
        return 1.0
    total = float(below.get("Total Cost") or 0.0)
    fraction = float(limit.get("Total Cost") or 0.0) / total if total > 0 else 1.0
    return min(1.0, max(fraction, 0.0))


def _has_guess(plan: Node) -> bool:
    return any(guessed(node.get(key)) for node in _nodes(plan) for key in _CONDITIONS)


def _reads_a_table(plan: Node) -> bool:
    return any("Relation Name" in node for node in _nodes(plan))


def _relation(node: Node) -> Relation:
    return (node.get("Schema"), node["Relation Name"])


@dataclass
class _Reads:
    """Rows and bytes one run of a scan reads, asked once per scan."""

    sizes: dict[Relation, tuple[int, float]]
    run: Run
    replans: int = 0
    known: dict[int, tuple[float, float]] = field(default_factory=dict)

    def whole(self, node: Node) -> bool:
        kind = node.get("Node Type")
        return kind in _WHOLE or (kind in _INDEX and not node.get("Index Cond"))

    def per_run(self, node: Node) -> tuple[float, float]:
        if id(node) not in self.known:
            self.known[id(node)] = self._count(node)
        return self.known[id(node)]

    def _count(self, node: Node) -> tuple[float, float]:
        planned = float(node.get("Plan Rows") or 0)
        width = float(node.get("Plan Width") or 0)
        size, tuples = self.sizes.get(_relation(node), (0, -1.0))
        if tuples < 0:  # never analysed: the most rows its pages can hold
            tuples = max(planned, size / _TUPLE_BYTES)
        if self.whole(node):
            return tuples, float(size)
        read = planned
        if node.get("Node Type") == "Bitmap Heap Scan":
            bitmaps = [_bitmap_rows(c) for c in node.get("Plans", ()) if isinstance(c, dict)]
            read = max([planned, *bitmaps])
        elif node.get("Filter"):
            read = self._index_rows(node, tuples)
        read = min(read, tuples) if tuples > 0 else read
        share = read / tuples if tuples > 0 else 0.0
        return read, max(size * share, read * width)

    def _index_rows(self, node: Node, tuples: float) -> float:
        """Rows an index scan's condition finds before its filter: planned again without
        the filter. Where that cannot be asked (the condition depends on another table's
        row, or enough scans were asked already), the planned rows over the least share
        PostgreSQL's default selectivities can have let the filter's guessed clauses keep."""
        condition = str(node.get("Index Cond") or "")
        if not condition:  # a scan of another kind (foreign, TID): all it may read
            return tuples
        alias = str(node.get("Alias") or node["Relation Name"])
        alone = qualifiers(condition) <= {alias} and not guessed(condition)
        if not alone or self.replans >= _REPLANS:
            planned = max(float(node.get("Plan Rows") or 0), 1.0)
            return planned / guessed_keep(node.get("Filter"))
        self.replans += 1
        schema, name = _relation(node)
        target = f"{_ident(schema or 'public')}.{_ident(name)} AS {_ident(alias)}"
        try:
            rows = self.run(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM ONLY {target} WHERE {condition}")
        except Exception:  # a condition that cannot stand alone: fail closed
            return tuples
        for found in _nodes(as_json(rows[0][0])[0]["Plan"]):
            if "Relation Name" in found:
                return float(found.get("Plan Rows") or 0)
        return tuples


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _bitmap_rows(node: Node) -> float:
    """Rows a bitmap finds: an index's, the sum of an OR's, the fewest of an AND's."""
    kind = node.get("Node Type")
    children = [_bitmap_rows(c) for c in node.get("Plans", ()) if isinstance(c, dict)]
    if kind == "BitmapOr" and children:
        return sum(children)
    if kind == "BitmapAnd" and children:
        return min(children)
    return float(node.get("Plan Rows") or 0)


def _pg_sizes(
    engine: Engine, relations: set[Relation], run: Run
) -> dict[Relation, tuple[int, float]]:
    """``(schema, name) -> (bytes on disk, rows now)``: the rows at the density of the last
    ``ANALYZE`` over the pages the relation has now (as the planner scales them; -1 when it
    was never analysed)."""
    if not relations:
        return {}
    pairs = ", ".join(
        f"({quoted(engine, schema or 'public')}, {quoted(engine, name)})"
        for schema, name in sorted(relations, key=lambda pair: (pair[0] or "", pair[1]))
    )
    statement = (
        "SELECT n.nspname, c.relname, pg_relation_size(c.oid), c.reltuples, c.relpages, "
        "current_setting('block_size')::int "
        "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE (n.nspname, c.relname) IN ({pairs})"
    )
    sizes: dict[Relation, tuple[int, float]] = {}
    for schema, name, size, tuples, pages, block in run(statement):
        rows = float(tuples)
        if rows >= 0 and int(pages) > 0:
            rows = rows / int(pages) * (int(size) / int(block))
        sizes[(schema, name)] = (int(size), rows)
    return sizes
