"""The guard's cost against the catalog's size, its throughput and its growth with the SQL's
length (issue 22, goals 1 and 2).

- Catalog size: one small query (``SELECT id FROM t00000 WHERE id = 1``) guarded against a
  catalog of one table and against one of 10,000, the allowlist taken from the catalog as the
  connectors do (``catalog.allowlist()`` on every query); medians of 300 after a warm-up.
  Before issue 22 the allowlist was rebuilt and re-folded on each of the guard's two passes:
  13.7 ms a query at 10,000 tables against 0.18 ms at one.
- Throughput: every benign analytic SELECT of ``tests/connectors/corpus/benign.yaml`` for the
  dialect, guarded in a loop on one thread, as queries per second; side by side with the
  guard as it was (its whole pipeline run a second time over its own output, still in the
  code as the fallback). Target ≥ 3,000 a second.
- Length: ``SELECT … WHERE`` with 10, 100 and 1,000 ``AND`` conditions, microseconds per
  kilobyte of SQL at each size: linear means flat.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from typing import Any

from benchmarks.guard import SCHEMAS, TABLES, _for, _load
from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.catalog.model import Catalog, ColumnInfo, TableInfo
from relay_nb.sql.guard import query as guard
from relay_nb.sql.guard.query import guard_query

SIZES = (1, 10_000)
RUNS = 300
_SQL = "SELECT id FROM t00000 WHERE id = 1"
_DIALECTS = {"postgres": "public", "sqlite": None}


def _catalog(dialect: str, schema: str | None, tables: int) -> Catalog:
    column = (ColumnInfo(name="id", type="int"),)
    return Catalog(
        dialect=dialect,
        default_schema=schema,
        tables=tuple(
            TableInfo(schema_name=schema, name=f"t{i:05d}", columns=column) for i in range(tables)
        ),
    )


def _median_ms(catalog: Catalog, dialect: str) -> float:
    def once() -> None:
        guard_query(
            _SQL,
            dialect=dialect,
            allowed_tables=catalog.allowlist(),
            default_schema=catalog.default_schema,
            row_limit=201,
        )

    for _ in range(20):
        once()
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        once()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _two_passes(sql: str, dialect: str, allowed: frozenset, schema: str | None) -> None:
    """The guard's pass and the fixed-point pass over its output (what runs when the text
    does not read back as its tree)."""
    names = guard._Names(allowed, schema)
    first, _ = guard._guard_once(
        sql, dialect=dialect, names=names, row_limit=201, bounds=guard._INPUT
    )
    guard._fixed_point(first, names, 201, dialect)


def _per_second(check: Any, queries: list[str], rounds: int = 5) -> float:
    def once() -> None:
        for sql in queries:
            with contextlib.suppress(UnsafeQueryError):
                check(sql)

    once()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        once()
        samples.append(len(queries) / (time.perf_counter() - started))
    return statistics.median(samples)


def _throughput() -> dict[str, Any]:
    benign = _load("benign.yaml")
    results: dict[str, Any] = {}
    for dialect in ("postgres", "mysql", "sqlite", "duckdb"):
        schema = SCHEMAS[dialect]
        allowed = frozenset((schema, t) for t in TABLES)
        queries = _for(benign, dialect)
        one = _per_second(
            lambda sql, d=dialect, a=allowed, s=schema: guard_query(
                sql, dialect=d, allowed_tables=a, default_schema=s, row_limit=201
            ),
            queries,
        )
        two = _per_second(lambda sql, d=dialect, a=allowed, s=schema: _two_passes(sql, d, a, s),
                          queries)  # fmt: skip
        results[dialect] = {"queries": len(queries), "per_s": one, "two_passes_per_s": two}
        print(f"{dialect}: {one:,.0f} SELECTs/s (two passes: {two:,.0f}/s) over {len(queries)}")
    return results


def _length() -> dict[str, float]:
    allowed = frozenset({("public", "orders")})
    per_kb: dict[str, float] = {}
    for conditions in (10, 100, 1_000):
        where = " AND ".join(f"(total > {n} OR status = 's{n}')" for n in range(conditions))
        sql = f"SELECT id, total FROM orders WHERE {where}"
        times = []
        for _ in range(7):
            started = time.perf_counter()
            guard_query(sql, dialect="postgres", allowed_tables=allowed,
                        default_schema="public", row_limit=201)  # fmt: skip
            times.append(time.perf_counter() - started)
        per_kb[str(conditions)] = statistics.median(times) * 1e6 / (len(sql) / 1024)
    print("µs per KB of SQL at 10 / 100 / 1,000 conditions: "
          + " / ".join(f"{v:.0f}" for v in per_kb.values()))  # fmt: skip
    return per_kb


def run() -> dict[str, Any]:
    results: dict[str, Any] = {"throughput": _throughput(), "us_per_kb": _length()}
    for dialect, schema in _DIALECTS.items():
        ms = {size: _median_ms(_catalog(dialect, schema, size), dialect) for size in SIZES}
        results[dialect] = {
            "one_table_ms": ms[1],
            "tables_10k_ms": ms[10_000],
            "ratio": ms[10_000] / ms[1],
        }
        print(
            f"{dialect}: 1 table {ms[1]:.3f} ms · 10,000 tables {ms[10_000]:.3f} ms → "
            f"{ms[10_000] / ms[1]:.2f}x"
        )
    return results


if __name__ == "__main__":
    run()
