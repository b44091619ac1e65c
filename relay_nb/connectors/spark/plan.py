"""Spark's own estimate of a query, read from its optimized logical plan (the preflight).

Spark builds the optimized plan of a query before it runs any job: partition pruning and
filter push-down have already shrunk each scan, and every leaf (a file scan, a Hive table, a
local relation) carries statistics — its size in bytes and, where the table was analysed,
its row count. The sum over the leaves is what the query reads; the root's row count, when
known, is what it returns. Reading them costs no job: on a classic session the plan is read
in this process's JVM; a Spark Connect session has no JVM here, so its plan comes back as text
(``explain(mode="cost")``, one round trip) and the same figures are read from that text.
"""

from __future__ import annotations

import re
from typing import Any

from relay_nb.connectors.preflight import Estimate

__all__ = ["plan_estimate", "read_cost_plan"]

_SOURCE = "Spark's optimized plan"
_STATISTICS = re.compile(
    r"Statistics\(sizeInBytes=(?P<size>[\d.E+]+)\s*(?P<unit>[KMGTPE]iB|B)"
    r"(?:,\s*rowCount=(?P<rows>[\d.E+]+))?"
)
_UNIT = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}
_UNIT["EiB"] = 2**60
_TREE_PREFIX = re.compile(r"[\s:|+\-]*")
"""What comes before a node's name in a tree string: ``:- ``, ``+- ``, ``:  `` and spaces."""


_UNKNOWN_SIZE = 2**62
"""A leaf at or above this size has no statistics: Spark reports ``spark.sql.defaultSizeInBytes``
(Long.MaxValue, ``8.0 EiB``) so that its planner never broadcasts it. That is no estimate."""


def plan_estimate(frame: Any) -> Estimate | None:
    """The estimate of a (not yet run) DataFrame's optimized plan."""
    jdf = getattr(frame, "_jdf", None)
    if jdf is None:  # Spark Connect: the plan as text
        return read_cost_plan(frame._explain_string(mode="cost"))
    plan = jdf.queryExecution().optimizedPlan()
    size = rows = 0
    rows_known = True
    leaves = plan.collectLeaves().iterator()
    while leaves.hasNext():
        stats = leaves.next().stats()
        size += _number(stats.sizeInBytes())
        count = stats.rowCount()
        if count.isDefined():
            rows += _number(count.get())
        else:
            rows_known = False
    root = plan.stats().rowCount()
    return Estimate(
        bytes_scanned=size if size < _UNKNOWN_SIZE else None,
        rows_scanned=rows if rows_known else None,
        result_rows=_number(root.get()) if root.isDefined() else None,
        source=_SOURCE,
    )


def read_cost_plan(text: str) -> Estimate | None:
    """The estimate in ``explain(mode="cost")`` text: the leaves of its optimized logical
    plan (a line with no deeper line under it) and the root's row count."""
    lines = _optimized_lines(text)
    if not lines:
        return None
    size = rows = 0
    rows_known = True
    for index, (depth, line) in enumerate(lines):
        if index + 1 < len(lines) and lines[index + 1][0] > depth:
            continue  # it has children: not a leaf
        found = _STATISTICS.search(line)
        if found is None:
            return None
        size += int(float(found.group("size")) * _UNIT[found.group("unit")])
        if found.group("rows") is None:
            rows_known = False
        else:
            rows += int(float(found.group("rows")))
    root = _STATISTICS.search(lines[0][1])
    result = root.group("rows") if root else None
    return Estimate(
        bytes_scanned=size if size < _UNKNOWN_SIZE else None,
        rows_scanned=rows if rows_known else None,
        result_rows=None if result is None else int(float(result)),
        source=_SOURCE,
    )


def _optimized_lines(text: str) -> list[tuple[int, str]]:
    """``(depth, line)`` for each node of the "Optimized Logical Plan" section."""
    section: list[tuple[int, str]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("== "):
            inside = line.strip() == "== Optimized Logical Plan =="
            continue
        if inside and line.strip():
            depth = _TREE_PREFIX.match(line).end()  # type: ignore[union-attr]
            section.append((depth, line[depth:]))
    return section


def _number(value: Any) -> int:
    """A Scala ``BigInt`` as py4j hands it over: a Python int, or an object to print."""
    return value if isinstance(value, int) else int(value.toString())
