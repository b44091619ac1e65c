"""A 1-row query: ``SQLConnector.query`` vs ``pandas.read_sql`` (issue 22, goal 1).

``SELECT id, label FROM t00000 WHERE id = 1`` on a catalog of one table and on one of
10,000 (three columns each), SQLite and PostgreSQL. Both sides read through the same
database; ``read_sql`` through a plain pooled SQLAlchemy engine, the connector through its
own (read-only session, guard, statement timeout, budgets, dtypes). The connector's catalog is
read once before timing, as a notebook session has it; samples alternate, medians of
``RUNS``. Target: ≤ 1.5x ``read_sql`` in all four, so that what a query costs is what the
driver costs. PostgreSQL needs ``RELAY_TEST_PG_ADMIN_URL`` (``scripts/services start``).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.connectors.sql.connector import SQLConnector

SIZES = (1, 10_000)
RUNS = 300
SQL = "SELECT id, label FROM t00000 WHERE id = 1"


def _ddl(tables: int, schema: str | None) -> Iterator[str]:
    prefix = f"{schema}." if schema else ""
    for i in range(tables):
        yield f"CREATE TABLE {prefix}t{i:05d} (id INTEGER PRIMARY KEY, label TEXT, amount REAL)"
    yield (
        f"INSERT INTO {prefix}t00000 (id, label, amount) VALUES "
        + ", ".join(f"({n}, 'row {n}', {n * 1.5})" for n in range(1, 11))
    )


def _execute(url: str | sa.URL, statements: Iterator[str]) -> None:
    """Run ``statements``, committing every 500 (PostgreSQL's lock table holds a few
    thousand objects per transaction)."""
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            for count, statement in enumerate(statements, 1):
                conn.exec_driver_sql(statement)
                if count % 500 == 0:
                    conn.commit()
            conn.commit()
    finally:
        engine.dispose()


def _ms(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def _compare(url: str | sa.URL, schema: str | None) -> dict[str, float]:
    connector = SQLConnector("bench", url, schemas=[schema] if schema else None)
    engine = sa.create_engine(url)
    sql = SQL if schema is None else SQL.replace("t00000", f"{schema}.t00000")
    try:
        assert connector.query(sql).row_count == 1
        assert len(pd.read_sql(sa.text(sql), engine)) == 1
        ours, theirs = [], []
        for _ in range(RUNS):
            ours.append(_ms(lambda: connector.query(sql)))
            theirs.append(_ms(lambda: pd.read_sql(sa.text(sql), engine)))
    finally:
        connector.close()
        engine.dispose()
    relay, raw = statistics.median(ours), statistics.median(theirs)
    return {"relay_ms": relay, "read_sql_ms": raw, "ratio": relay / raw}


@contextmanager
def _pg_schema(admin_url: str, tables: int) -> Iterator[str]:
    name = f"relay_small_{uuid.uuid4().hex[:8]}"
    _execute(admin_url, iter([f"CREATE SCHEMA {name}"]))
    try:
        yield name
    finally:
        drops = (f"DROP TABLE IF EXISTS {name}.t{i:05d}" for i in range(tables))
        _execute(admin_url, iter([*drops, f"DROP SCHEMA IF EXISTS {name} CASCADE"]))


def run() -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="relay_small_") as scratch:
        for size in SIZES:
            url = f"sqlite:///{Path(scratch) / f'small_{size}.db'}"
            _execute(url, _ddl(size, None))
            results[f"sqlite_{size}"] = _compare(url, None)
    admin_url = os.environ.get("RELAY_TEST_PG_ADMIN_URL")
    if admin_url:
        for size in SIZES:
            with _pg_schema(admin_url, size) as schema:
                _execute(admin_url, _ddl(size, schema))
                results[f"postgres_{size}"] = _compare(admin_url, schema)
    else:
        print("postgres: skipped (set RELAY_TEST_PG_ADMIN_URL: scripts/services start)")
    for key, r in results.items():
        print(
            f"{key:<16} relay_nb {r['relay_ms']:.3f} ms · read_sql {r['read_sql_ms']:.3f} ms "
            f"→ {r['ratio']:.2f}x"
        )
    return results


if __name__ == "__main__":
    run()
