"""What the engine already knows about a column's values: its planner statistics.

PostgreSQL keeps, per analysed column (``ANALYZE``, which autovacuum runs as tables change),
the share of NULLs, an estimate of the distinct values, the most common values with their
frequencies, and a histogram of the rest — computed over its own random sample of the whole
table, and readable by any role that may read the column (the ``pg_stats`` view filters by
column privilege). Reading them costs one catalog statement per batch of columns and no row
of any table, so a 10-million-row table profiles as fast as a 10-row one.

The profile built from them says so (:attr:`ColumnProfile.from_statistics`): its values are
the most common ones when the engine saw no others (no histogram: the list is the column's
whole value set, as far as the engine's sample knows), and its bounds are the lowest and
highest value the statistics hold, an estimate (``≈``).

Engines without such statistics (or a table never analysed) are sampled instead
(:mod:`relay_nb.sql.catalog.profile`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = [
    "STATISTICS_DIALECTS",
    "Statistics",
    "large_tables_sql",
    "read_statistics",
    "statistics_sql",
]

STATISTICS_DIALECTS = frozenset({"postgres"})
"""sqlglot dialect names whose planner statistics are read (others are sampled)."""


class Column(NamedTuple):
    """One column to look up: its numbers in the catalog, its names in the database."""

    table: int
    position: int
    schema: str
    relation: str
    name: str


class Statistics(NamedTuple):
    """What the statistics say of one column."""

    null_share: float
    values: tuple[str, ...] | None
    """Every value the statistics saw, most common first; None when there are more (a
    histogram) or none were kept."""
    low: str | None
    high: str | None


def _literal(text: str) -> str:
    """A PostgreSQL string literal (``standard_conforming_strings`` is on for every statement
    relay_nb runs: :func:`~relay_nb.connectors.sql.readonly.run_read_only`)."""
    if "\x00" in text:
        raise ValueError("a name with a NUL byte")
    return "'" + text.replace("'", "''") + "'"


def statistics_sql(columns: Sequence[Column]) -> str:
    """One statement: per column with statistics, one row of (table, position, inherited,
    NULL share, most common values as JSON, histogram's first and
    last bound). Columns without statistics have no row. Reads only the catalog."""
    rows = ", ".join(
        f"({c.table}, {c.position}, {_literal(c.schema)}, {_literal(c.relation)}, "
        f"{_literal(c.name)})"
        for c in columns
    )
    return (
        "SELECT t.tp, t.cp, s.inherited, s.null_frac, "
        "array_to_json(s.most_common_vals::text::text[]), "
        "(s.histogram_bounds::text::text[])[1], "
        "(s.histogram_bounds::text::text[])[cardinality(s.histogram_bounds::text::text[])] "
        f"FROM (VALUES {rows}) AS t(tp, cp, sch, rel, att) "
        "JOIN pg_catalog.pg_stats s "
        "ON s.schemaname = t.sch AND s.tablename = t.rel AND s.attname = t.att"
    )


def large_tables_sql(tables: Sequence[tuple[int, str, str]], min_rows: int) -> str:
    """One statement: the numbers of the ``(number, schema, table)`` whose estimated row
    count (``pg_class.reltuples``, kept by ``ANALYZE`` and ``VACUUM``) is at least
    ``min_rows``. Reads only the catalog."""
    rows = ", ".join(f"({n}, {_literal(schema)}, {_literal(table)})" for n, schema, table in tables)
    return (
        f"SELECT t.tp FROM (VALUES {rows}) AS t(tp, sch, rel) "
        "JOIN pg_catalog.pg_namespace n ON n.nspname = t.sch "
        "JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = t.rel "
        f"WHERE c.reltuples >= {int(min_rows)}"
    )


def read_statistics(
    rows: Sequence[tuple[Any, ...]], kinds: dict[tuple[int, int], str], max_values: int
) -> dict[tuple[int, int], Statistics]:
    """The statements' rows as :class:`Statistics` per ``(table, position)``; ``kinds`` says
    each column's kind (``text``, ``number``, ``temporal``). A partitioned or inherited
    table's whole-hierarchy row wins over its own."""
    chosen: dict[tuple[int, int], tuple[Any, ...]] = {}
    for row in rows:
        key = (int(row[0]), int(row[1]))
        if key not in chosen or bool(row[2]):
            chosen[key] = row
    found = {}
    for key, (_, _, _, null_frac, common, first, last) in chosen.items():
        kind = kinds.get(key)
        if kind is None:
            continue
        common_values = _strings(common)
        values = None
        if first is None and common_values and len(common_values) <= max_values:
            values = tuple(common_values)  # no histogram: the common values are all of them
        low, high = _bounds(kind, [*common_values, *(v for v in (first, last) if v is not None)])
        found[key] = Statistics(
            null_share=float(null_frac or 0.0),
            values=values if kind == "text" else None,
            low=low,
            high=high,
        )
    return found


def _strings(common: Any) -> list[str]:
    if common is None:
        return []
    decoded = json.loads(common) if isinstance(common, str) else common
    return [str(v) for v in decoded if v is not None] if isinstance(decoded, list) else []


def _bounds(kind: str, candidates: list[str]) -> tuple[str | None, str | None]:
    """The lowest and highest of the values the statistics hold, compared as the kind's
    values (numbers as numbers; dates and timestamps as their ISO text, which sorts as they
    do); text has none."""
    if kind == "text" or not candidates:
        return None, None
    if kind == "number":
        numbers = []
        for value in candidates:
            try:
                number = float(value)
            except ValueError:
                return None, None
            if math.isfinite(number):
                numbers.append((number, value))
        if not numbers:
            return None, None
        return min(numbers)[1], max(numbers)[1]
    if any(not value[:1].isdigit() for value in candidates):  # infinity, BC dates
        return None, None
    return min(candidates), max(candidates)
