"""ClickHouse: ``EXPLAIN ESTIMATE`` and the tables' parts (``system.parts``).

``EXPLAIN ESTIMATE`` answers one row per MergeTree table the query reads — ``database,
table, parts, rows, marks`` — after the primary key and the partition key pruned what the
filter excludes: the rows of the granules left to read (whole granules of
``index_granularity`` rows, 8192 by default). Rows scanned are their sum.

Bytes: per table, the compressed bytes per row of its active parts (``system.parts``:
``sum(data_compressed_bytes) / sum(rows)``) times the rows left to read — what the scan
reads from disk if it reads every column. That is an upper bound (ClickHouse reads only the
columns the query names); the column-exact figure would need the query's columns, which
``EXPLAIN ESTIMATE`` does not give. A user who may not read ``system.parts`` gets rows only.

What it cannot know: only MergeTree tables are in ``EXPLAIN ESTIMATE``. So the plan is read
too (``EXPLAIN PLAN json = 1``): when a step reads anything else — a Memory or Log table, a
Distributed table's shards, a table function over files or URLs — the estimate has no rows
and no bytes, and with a threshold set the query asks first. Steps that read no storage (a
trivial ``count()`` answered from the parts' metadata, ``system.one``, ``numbers()``) count
nothing. ``PREWHERE`` and skip indexes drop more at run time, and a LIMIT is not credited (a
plain ``SELECT * … LIMIT`` stops after a few granules; the estimate counts all the filter
keeps). No result rows: ClickHouse does not estimate them.
"""

from __future__ import annotations

import logging
from typing import Any

from relay_nb.connectors.preflight import Estimate
from relay_nb.connectors.sql.estimate.common import Planning, Run, as_json

__all__ = ["estimate"]

logger = logging.getLogger("relay_nb.connectors.sql")


def estimate(planning: Planning) -> Estimate:
    read: dict[tuple[str, str], int] = {}
    for database, table, _parts, rows, _marks in planning.run(f"EXPLAIN ESTIMATE {planning.sql}"):
        key = (str(database), str(table))
        read[key] = read.get(key, 0) + int(rows)
    source = "ClickHouse EXPLAIN ESTIMATE"
    plan = as_json(planning.run(f"EXPLAIN PLAN json = 1, description = 0 {planning.sql}")[0][0])
    uncounted = sorted(_uncounted_reads(plan))
    if uncounted:  # a read EXPLAIN ESTIMATE does not see: no figure rather than too low a one
        return Estimate(source=f"{source}, not counting {', '.join(uncounted)}")
    bytes_scanned: int | None = 0
    if read:
        try:
            per_row = _bytes_per_row(set(read), planning.run)
        except Exception:  # no grant on system.parts: the rows are still an estimate
            logger.info("no part sizes for the ClickHouse estimate", exc_info=True)
            bytes_scanned = None
        else:
            bytes_scanned = round(sum(rows * per_row.get(key, 0.0) for key, rows in read.items()))
    return Estimate(rows_scanned=sum(read.values()), bytes_scanned=bytes_scanned, source=source)


_COUNTED = {"ReadFromMergeTree"}
"""Read steps ``EXPLAIN ESTIMATE`` counts."""
_NO_STORAGE = {
    "ReadFromPreparedSource",
    "ReadFromSystemOne",
    "ReadFromSystemNumbers",
    "ReadNothing",
}
"""Read steps that read no table's data: a trivial ``count()`` from the parts' metadata,
constants, ``system.one``, ``numbers()``."""


def _uncounted_reads(plan: Any) -> set[str]:
    """The plan's read steps that neither ``EXPLAIN ESTIMATE`` counts nor read nothing."""
    found: set[str] = set()
    stack = (
        [entry.get("Plan") for entry in plan if isinstance(entry, dict)]
        if isinstance(plan, list)
        else [plan]
    )
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        kind = str(node.get("Node Type", ""))
        if kind.startswith("Read") and kind not in _COUNTED | _NO_STORAGE:
            found.add(kind)
        stack.extend(node.get("Plans") or ())
    return found


def _bytes_per_row(tables: set[tuple[str, str]], run: Run) -> dict[tuple[str, str], float]:
    """``(database, table) -> compressed bytes per row`` of the tables' active parts."""
    pairs = ", ".join(f"({_string(db)}, {_string(name)})" for db, name in sorted(tables))
    statement = (
        "SELECT database, table, sum(data_compressed_bytes), sum(rows) FROM system.parts "
        f"WHERE active AND (database, table) IN ({pairs}) GROUP BY database, table"
    )
    return {
        (str(database), str(table)): int(size) / int(rows)
        for database, table, size, rows in run(statement)
        if int(rows) > 0
    }


def _string(value: str) -> str:
    """A ClickHouse string literal (backslash escapes, as ClickHouse reads them)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
