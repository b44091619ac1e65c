"""Connecting to a table of ten million rows costs what connecting to one of a thousand does
(issue 35, goal 1).

One table, ``events`` (12 columns: keys, three categories, numbers, dates, free text), at
10,000,000 rows and at 1,000 rows, same schema, on SQLite and PostgreSQL (the PostgreSQL
one analysed, as autovacuum leaves a loaded table). Measured, cold (a new connector each
time): what a first turn asks of the database — the connector, its schema with value
profiles (``prompt_context()``) and one small query (``WHERE id = 5``) — and beside it, in
the same run, the raw catalog's version of the same work, the way LangChain's
``SQLDatabase`` does it (SQLAlchemy's reflection of the table, three sample rows, the same
query through ``pandas.read_sql``). Target: the 10M/1k ratio ≤ 1.2x.

PostgreSQL also runs with ``statistics=False`` (a table never analysed: profiled from a
sample), and reports the rows profiling read of the table (``pg_stat_user_tables``:
sequential and index tuples, counted by the server). The data is built once and kept
(``/tmp/relay_nb_bench/``, database ``relay_bench_big``): building 10M rows takes a minute.
PostgreSQL needs ``RELAY_TEST_PG_ADMIN_URL`` (``scripts/services start``).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.sql.catalog.profile import ProfileSettings

BIG, SMALL = 10_000_000, 1_000
RUNS = 5
DATA = Path(os.environ.get("RELAY_BENCH_DATA", "/tmp/relay_nb_bench"))
QUERY = "SELECT id, status, amount FROM {table} WHERE id = 5"

COLUMNS = """(
    id integer PRIMARY KEY,
    customer_id integer,
    status varchar(12),
    region varchar(12),
    channel varchar(12),
    amount numeric(12, 2),
    quantity integer,
    discount real,
    created_at timestamp,
    shipped_on date,
    note text,
    score real
)"""


def _rows_sql(n: int, series: str, mod: Callable[[str, int], str], stamp: str, day: str) -> str:
    """The SELECT that makes ``n`` rows from ``series`` (a relation of ``i`` in 1..n)."""
    return (
        f"SELECT i, {mod('i * 7919', 100000)}, "
        f"CASE {mod('i', 5)} WHEN 0 THEN 'paid' WHEN 1 THEN 'shipped' WHEN 2 THEN 'refunded' "
        "WHEN 3 THEN 'cancelled' ELSE 'pending' END, "
        f"CASE {mod('i', 4)} WHEN 0 THEN 'north' WHEN 1 THEN 'south' WHEN 2 THEN 'east' "
        "ELSE 'west' END, "
        f"CASE {mod('i', 3)} WHEN 0 THEN 'web' WHEN 1 THEN 'store' ELSE 'phone' END, "
        f"{mod('i * 31', 100000)} / 100.0, {mod('i', 9)} + 1, {mod('i', 20)} / 100.0, "
        f"{stamp}, {day}, 'note ' || i, {mod('i * 13', 1000)} / 10.0 "
        f"FROM {series}"
    )


def _sqlite(n: int) -> str:
    path = DATA / f"events_{n}.db"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        engine = sa.create_engine(f"sqlite:///{partial}", poolclass=NullPool)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE TABLE events {COLUMNS}")
            series = (
                f"(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s "
                f"WHERE i < {n}) SELECT i FROM s)"
            )
            conn.exec_driver_sql(
                "INSERT INTO events "
                + _rows_sql(
                    n,
                    series,
                    lambda x, m: f"(({x}) % {m})",
                    "datetime('2020-01-01', '+' || ((i * 37) % 157680000) || ' seconds')",
                    "date('2020-01-01', '+' || ((i * 37) % 1825) || ' days')",
                )
            )
        engine.dispose()
        partial.rename(path)
    return f"sqlite:///{path}"


def _postgres(admin_url: str, n: int) -> str:
    """``relay_bench_big.events_<n>``, built once and analysed."""
    url = sa.make_url(admin_url).set(database="relay_bench_big")
    admin = sa.create_engine(admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        exists = conn.exec_driver_sql(
            "SELECT 1 FROM pg_database WHERE datname = 'relay_bench_big'"
        ).first()
        if exists is None:
            conn.exec_driver_sql("CREATE DATABASE relay_bench_big")
    admin.dispose()
    engine = sa.create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    table = f"events_{n}"
    with engine.connect() as conn:
        found = conn.exec_driver_sql(f"SELECT to_regclass('{table}') IS NOT NULL").scalar()
        count = conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar() if found else 0
        if count != n:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
            conn.exec_driver_sql(f"CREATE TABLE {table} {COLUMNS}")
            conn.exec_driver_sql(
                f"INSERT INTO {table} "
                + _rows_sql(
                    n,
                    f"generate_series(1::bigint, {n}) AS i",
                    lambda x, m: f"mod({x}, {m})",
                    "timestamp '2020-01-01' + mod(i * 37, 157680000) * interval '1 second'",
                    "date '2020-01-01' + mod(i * 37, 1825)::int",
                )
            )
            conn.exec_driver_sql(f"ANALYZE {table}")
    engine.dispose()
    return url.render_as_string(hide_password=False)


def _ms(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def _relay(url: str, table: str, settings: ProfileSettings | None) -> Callable[[], object]:
    def first_turn() -> None:
        connector = SQLConnector("bench", url, tables=[table])
        if settings is not None:
            connector.profile = settings
        try:
            assert table in connector.prompt_context()
            assert connector.query(QUERY.format(table=table)).row_count == 1
        finally:
            connector.close()

    return first_turn


def _raw(url: str, table: str) -> Callable[[], object]:
    """LangChain's ``SQLDatabase`` way: reflect the table, show three rows, run the query."""

    def first_turn() -> None:
        engine = sa.create_engine(url)
        try:
            metadata = sa.MetaData()
            reflected = sa.Table(table, metadata, autoload_with=engine)
            with engine.connect() as conn:
                assert len(conn.execute(sa.select(reflected).limit(3)).fetchall()) == 3
            assert len(pd.read_sql(sa.text(QUERY.format(table=table)), engine)) == 1
        finally:
            engine.dispose()

    return first_turn


def _rows_read(url: str, table: str) -> int:
    engine = sa.create_engine(url, poolclass=NullPool)
    with engine.connect() as conn:
        conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
        read = conn.exec_driver_sql(
            "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) "
            f"FROM pg_stat_user_tables WHERE relname = '{table}'"
        ).scalar_one()
    engine.dispose()
    return int(read)


def _profile_rows_read(url: str, table: str, settings: ProfileSettings | None) -> int:
    """Rows of ``table`` the server read while a connector read its profiled schema."""
    before = _rows_read(url, table)
    connector = SQLConnector("bench", url, tables=[table])
    if settings is not None:
        connector.profile = settings
    assert connector.catalog.tables
    connector.close()
    read = 0
    for _ in range(30):  # a closed backend's counts reach the statistics within moments
        time.sleep(0.2)
        read = _rows_read(url, table) - before
        if read:
            break
    return read


def _compare(sides: dict[str, Callable[[], object]]) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for work in sides.values():
        work()  # warm the imports and the file cache
    for _ in range(RUNS):
        for name, work in sides.items():
            samples[name].append(_ms(work))
    return {f"{name}_ms": statistics.median(values) for name, values in samples.items()}


def _ratios(found: dict[str, float], kinds: tuple[str, ...]) -> dict[str, float]:
    return {f"{kind}_ratio": found[f"{kind}_big_ms"] / found[f"{kind}_small_ms"] for kind in kinds}


def run() -> dict[str, Any]:
    results: dict[str, Any] = {}
    big, small = _sqlite(BIG), _sqlite(SMALL)
    found = _compare(
        {
            "relay_big": _relay(big, "events", None),
            "relay_small": _relay(small, "events", None),
            "raw_big": _raw(big, "events"),
            "raw_small": _raw(small, "events"),
        }
    )
    results["sqlite"] = {**found, **_ratios(found, ("relay", "raw"))}
    admin_url = os.environ.get("RELAY_TEST_PG_ADMIN_URL")
    if admin_url:
        big, small = _postgres(admin_url, BIG), _postgres(admin_url, SMALL)
        sampled = ProfileSettings(statistics=False)
        found = _compare(
            {
                "relay_big": _relay(big, f"events_{BIG}", None),
                "relay_small": _relay(big, f"events_{SMALL}", None),
                "sampled_big": _relay(big, f"events_{BIG}", sampled),
                "sampled_small": _relay(big, f"events_{SMALL}", sampled),
                "raw_big": _raw(big, f"events_{BIG}"),
                "raw_small": _raw(big, f"events_{SMALL}"),
            }
        )
        results["postgres"] = {
            **found,
            **_ratios(found, ("relay", "sampled", "raw")),
            "profile_rows_read": _profile_rows_read(big, f"events_{BIG}", None),
            "sampled_profile_rows_read": _profile_rows_read(big, f"events_{BIG}", sampled),
        }
    else:
        print("postgres: skipped (set RELAY_TEST_PG_ADMIN_URL: scripts/services start)")
    for engine, r in results.items():
        print(
            f"{engine:<9} relay_nb {r['relay_big_ms']:.0f} vs {r['relay_small_ms']:.0f} ms "
            f"→ {r['relay_ratio']:.2f}x · raw catalog {r['raw_big_ms']:.0f} vs "
            f"{r['raw_small_ms']:.0f} ms → {r['raw_ratio']:.2f}x"
        )
        if "sampled_ratio" in r:
            print(
                f"{'':<9} sampled (no statistics) {r['sampled_big_ms']:.0f} vs "
                f"{r['sampled_small_ms']:.0f} ms → {r['sampled_ratio']:.2f}x · rows profiling "
                f"read: {r['profile_rows_read']:,} (sampled: {r['sampled_profile_rows_read']:,})"
            )
    return results


if __name__ == "__main__":
    run()
