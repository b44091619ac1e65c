"""ClickHouse fetch on chDB: ``SQLConnector.query`` vs raw chDB on the same rows of 5M.

``python -m benchmarks.clickhouse_fetch``. One database directory of its own (chDB holds one
per process), a 5,000,000-row MergeTree table of mixed types (UInt64, LowCardinality(String),
Decimal, Nullable(Int64), DateTime64, Array(String)). For each row limit the connector runs
``SELECT * FROM facts ORDER BY id`` — guarded (the LIMIT injected), each statement on a
read-only session of its own, rows through the byte budget, framed with dtypes — and raw
chDB runs the very SQL the guard wrote, two ways: ``chdb`` DB-API cursor ``fetchall()`` (the
driver the connector reads through) and ``Connection.query(sql, "DataFrame")`` (chDB's own
Arrow path to pandas). Samples alternate; medians of ``REPEAT``; the ratios are the
connector's time over each raw one. Not a test: it reports, never asserts.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROWS = 5_000_000
LIMITS = (200, 10_000, 100_000)
REPEAT = 5
SEED = (
    "CREATE TABLE facts (id UInt64, region LowCardinality(String), amount Decimal(12, 2), "
    "qty Nullable(Int64), at DateTime64(3), tags Array(String)) "
    "ENGINE = MergeTree ORDER BY id",
    f"INSERT INTO facts SELECT number, ['north', 'south', 'east', 'west'][number % 4 + 1], "
    f"number % 100000 / 100, if(number % 10 = 0, NULL, number % 1000), "
    f"toDateTime64('2024-01-01 00:00:00', 3) + number, ['a', toString(number % 3)] "
    f"FROM numbers({ROWS})",
)


def _seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _measure(path: Path, raw: Any, limit: int) -> dict:
    from relay_nb.connectors.sql.connector import SQLConnector

    sql = "SELECT * FROM facts ORDER BY id"
    connector = SQLConnector(
        "bench", f"chdb:///{path}", row_limit=limit, statement_timeout_s=600,
        max_result_bytes=1 << 30, profile=False,
    )  # fmt: skip
    cursor = raw.cursor()
    guarded = connector.guard(sql).sql  # what raw chDB runs too

    def dbapi() -> None:
        cursor.execute(guarded)
        cursor.fetchall()

    ours: list[float] = []
    fetched: list[float] = []
    frame: list[float] = []
    rows = 0
    try:
        for _ in range(REPEAT):
            started = time.perf_counter()
            rows = connector.query(sql).row_count
            ours.append(time.perf_counter() - started)
            fetched.append(_seconds(dbapi))
            frame.append(_seconds(lambda: raw.query(guarded, "DataFrame")))
    finally:
        connector.close()
    return {
        "rows": rows,
        "relay_nb_ms": _median_ms(ours),
        "chdb_dbapi_ms": _median_ms(fetched),
        "chdb_dataframe_ms": _median_ms(frame),
        "ratio_dbapi": statistics.median(ours) / statistics.median(fetched),
        "ratio_dataframe": statistics.median(ours) / statistics.median(frame),
    }


def run() -> dict:
    import chdb.dbapi

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "ch"
        raw = chdb.dbapi.connect(path=str(path))
        try:
            cursor = raw.cursor()
            for statement in SEED:
                cursor.execute(statement)
            for limit in LIMITS:
                results[str(limit)] = _measure(path, raw, limit)
        finally:
            raw.close()
    print(
        f"table: {ROWS:,} rows; SELECT * … ORDER BY id with the guard's LIMIT; medians of {REPEAT}"
    )
    print(
        f"{'limit':>8} {'rows':>8} {'relay_nb ms':>12} {'dbapi ms':>10} {'ratio':>6} "
        f"{'DataFrame ms':>13} {'ratio':>6}"
    )
    for limit, row in results.items():
        print(
            f"{limit:>8} {row['rows']:>8} {row['relay_nb_ms']:>12.1f} "
            f"{row['chdb_dbapi_ms']:>10.1f} {row['ratio_dbapi']:>6.2f} "
            f"{row['chdb_dataframe_ms']:>13.1f} {row['ratio_dataframe']:>6.2f}"
        )
    return results


if __name__ == "__main__":
    run()
