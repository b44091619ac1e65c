"""Fetch to DataFrame: ``SQLConnector.query`` vs ``pandas.read_sql`` on the same 100,000 rows.

Both read the same table through the same engine in the same run, samples alternating; the
connector also guards the SQL, runs it read-only, bounds and redacts it and converts dtypes,
so the ratio is the whole overhead. The connector's byte limit is set above the result
(``max_result_bytes``), so it reads every row (checked), as ``read_sql`` does. On DuckDB,
the engine's own DataFrame (``.df()``, what JupySQL uses) is measured too.
PostgreSQL is measured when ``RELAY_TEST_PG_ADMIN_URL`` is set (``scripts/services start``).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import sqlalchemy as sa

from relay_nb.connectors.sql.connector import SQLConnector

ROWS = 100_000
REPEAT = 5
_CREATE = {
    "sqlite": (
        "CREATE TABLE big AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
        "WHERE i < {rows}) SELECT i AS id, i * 0.5 AS amount, 'label ' || (i % 97) AS label, "
        "datetime('2025-01-01', '+' || (i % 1000) || ' minutes') AS created FROM n"
    ),
    "duckdb": (
        "CREATE TABLE big AS SELECT i AS id, i * 0.5 AS amount, 'label ' || (i % 97) AS label, "
        "TIMESTAMP '2025-01-01' + INTERVAL (i % 1000) MINUTE AS created "
        "FROM range(1, {rows} + 1) t(i)"
    ),
    "postgres": (
        "CREATE TABLE {schema}.big AS SELECT i AS id, (i * 0.5)::float8 AS amount, "
        "'label ' || (i %% 97) AS label, TIMESTAMP '2025-01-01' + (i %% 1000) * INTERVAL '1 minute'"
        " AS created FROM generate_series(1, {rows}) AS g(i)"
    ),
}


def _seconds(work: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


def _compare(url: str, *, schemas: list[str] | None = None, table: str = "big") -> dict:
    """Medians of ``REPEAT`` samples each, alternating (relay_nb, read_sql, relay_nb …) so
    load from other processes hits both alike."""
    connector = SQLConnector(
        "bench",
        url,
        schemas=schemas,
        row_limit=ROWS,
        statement_timeout_s=600,
        max_result_bytes=1 << 30,
        profile=False,
    )
    engine = connector.engine
    sql = f"SELECT * FROM {table}"
    ours: list[float] = []
    theirs: list[float] = []
    native: list[float] = []
    # DuckDB's own DataFrame of the same rows (``.df()``, as JupySQL reads DuckDB), on a
    # connection of the same engine (a second one to the file would need its settings)
    duck = engine.raw_connection() if url.startswith("duckdb") else None
    try:
        for _ in range(REPEAT):
            seconds, result = _seconds(lambda: connector.query(sql))
            ours.append(seconds)
            rows = result.row_count
            assert rows == ROWS and not result.truncated, result
            del result
            theirs.append(_seconds(lambda: pd.read_sql(sa.text(sql), engine))[0])
            if duck is not None:
                native.append(_seconds(lambda: duck.driver_connection.execute(sql).df())[0])
    finally:
        if duck is not None:
            duck.close()
        connector.close()
    ours_s, theirs_s = statistics.median(ours), statistics.median(theirs)
    found = {"rows": rows, "relay_nb_s": ours_s, "read_sql_s": theirs_s, "ratio": ours_s / theirs_s}
    if native:
        native_s = statistics.median(native)
        found.update(native_s=native_s, native_ratio=ours_s / native_s)
    return found


def _file_db(kind: str, directory: Path) -> str:
    url = f"{kind}:///{directory / ('big.' + kind)}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(_CREATE[kind].format(rows=ROWS))
    engine.dispose()
    return url


def _postgres() -> dict | None:
    admin_url = os.environ.get("RELAY_TEST_PG_ADMIN_URL")
    if not admin_url:
        print("postgres: skipped (set RELAY_TEST_PG_ADMIN_URL: scripts/services start)")
        return None
    schema = f"relay_fetch_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(admin_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
        conn.exec_driver_sql(_CREATE["postgres"].format(schema=schema, rows=ROWS))
    try:
        return _compare(admin_url, schemas=[schema], table=f"{schema}.big")
    finally:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        engine.dispose()


def run() -> dict:
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for kind in ("sqlite", "duckdb"):
            results[kind] = _compare(_file_db(kind, Path(scratch)))
    pg = _postgres()
    if pg is not None:
        results["postgres"] = pg
    print(f"{'database':<10} {'rows':>9} {'relay_nb s':>11} {'read_sql s':>11} {'ratio':>7}")
    for kind, row in results.items():
        print(
            f"{kind:<10} {row['rows']:>9} {row['relay_nb_s']:>11.3f} {row['read_sql_s']:>11.3f} "
            f"{row['ratio']:>7.2f}"
        )
    return results


if __name__ == "__main__":
    run()
