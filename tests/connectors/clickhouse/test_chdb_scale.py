"""ClickHouse at size, on chDB (slow: about 20 s of seeding): connecting to 1,000 tables and a
10M-row table reads no table whole — measured by the engine, statement by statement — and a
5M-row table's rows come back at once under the guard's LIMIT, typed."""

from __future__ import annotations

import time

import pandas as pd
import pytest
from chdb_helpers import run_raw, url

from relay_nb import Relay, ScriptedRuntime
from relay_nb.connectors.sql.connector import SQLConnector

pytestmark = pytest.mark.slow

TABLES = 1_000
BIG = 10_000_000
FACTS = 5_000_000
SAMPLE = 10_000  # ProfileSettings.sample_rows

COLUMNS = (
    "id UInt32, name String, status LowCardinality(String), amount Decimal(10, 2), "
    "created DateTime, qty Nullable(Int32), flag UInt8, note String"
)


def _seed() -> list[str]:
    statements = []
    for i in range(TABLES):
        statements.append(f"CREATE TABLE t{i:04} ({COLUMNS}) ENGINE = MergeTree ORDER BY id")
        statements.append(
            f"INSERT INTO t{i:04} SELECT number, 'n', ['a', 'b'][number % 2 + 1], number, "
            f"toDateTime('2024-01-01 00:00:00') + number, number, 1, '' FROM numbers(100)"
        )
    statements += [
        "CREATE TABLE big (id UInt64, customer UInt32, status LowCardinality(String), "
        "amount Decimal(12, 2), at DateTime) ENGINE = MergeTree ORDER BY id",
        f"INSERT INTO big SELECT number, number % 10007, ['paid', 'refunded', 'open'][number % 3 "
        f"+ 1], number % 1000 / 10, toDateTime('2024-01-01 00:00:00') + number "
        f"FROM numbers({BIG})",
        "CREATE TABLE facts (id UInt64, region LowCardinality(String), amount Decimal(12, 2), "
        "qty Nullable(Int64), at DateTime64(3), day Date, tags Array(String)) "
        "ENGINE = MergeTree ORDER BY id",
        f"INSERT INTO facts SELECT number, ['north', 'south'][number % 2 + 1], number % 1000 / 8, "
        f"if(number % 10 = 0, NULL, number), toDateTime64('2024-01-01 00:00:00', 3) + number, "
        f"toDate('2024-01-01') + number % 365, ['x', toString(number % 3)] FROM numbers({FACTS})",
    ]
    return statements


@pytest.fixture(scope="module")
def database(chdb_database):
    started = time.perf_counter()
    path = chdb_database(_seed())
    seconds = time.perf_counter() - started
    print(f"\nseeded {TABLES} tables, {BIG:,} and {FACTS:,} rows in {seconds:.1f} s")
    return path


def test_connecting_reads_no_table_whole(database, statement_log):
    relay = Relay(ScriptedRuntime(), ledger=False)
    try:
        started = time.perf_counter()
        shop = relay.connect("ch", url(database))
        connect_s = time.perf_counter() - started
        assert len(shop.catalog.tables) == TABLES + 2
    finally:
        relay.close()
    statements = statement_log.statements
    catalog = [s for s in statements if "system.tables" in s.sql]
    profile = [s for s in statements if "_relay_0" in s.sql]
    print(
        f"connect with profiling: {connect_s:.2f} s, {len(statements)} statements "
        f"({len(catalog)} catalog, {len(profile)} profiling)"
    )
    assert len(catalog) == 2  # the fingerprint and the read, whatever the number of tables
    for statement in catalog:
        assert statement.rows_read < 20 * (TABLES + 20)  # system tables' rows, no user rows
    # every profiling statement reads samples (LIMIT 10,000 per table; the engine reads whole
    # granules of 8,192 rows on several threads, so a few granules more), never a table whole
    on_big = [s for s in profile if '"big"' in s.sql]
    assert on_big, "the 10M-row table was profiled"
    print(f"rows read by the statements naming the 10M-row table: {[s.rows_read for s in on_big]}")
    for statement in on_big:
        assert statement.rows_read <= 10 * SAMPLE, statement
    total = sum(s.rows_read for s in statements)
    print(f"rows read by the whole connect: {total:,}")
    assert total < BIG // 10


def test_the_catalog_alone_is_two_statements_on_1000_tables(database, statement_log):
    import chdb.dbapi

    timings = {}
    for state in ("cold", "warm"):
        # warm: another connection keeps chDB's engine up (started, 1,002 tables loaded)
        keep = chdb.dbapi.connect(path=str(database)) if state == "warm" else None
        statement_log.clear()
        try:
            started = time.perf_counter()
            shop = SQLConnector("ch", url(database), profile=False)
            try:
                assert len(shop.catalog.tables) == TABLES + 2
                timings[state] = time.perf_counter() - started
            finally:
                shop.close()
        finally:
            if keep is not None:
                keep.close()
        reads = [s for s in statement_log.statements if "system.tables" in s.sql]
        assert len(reads) == 2 and len(statement_log.statements) == 4  # + currentDatabase() x2
        assert all(s.rows_read < 20 * (TABLES + 20) for s in statement_log.statements)
    print(
        f"connect without profiling (the catalog only): {timings['cold']:.2f} s with chDB's "
        f"engine starting, {timings['warm']:.2f} s with it running"
    )


def test_a_5m_row_table_comes_back_at_once_under_the_limit(database):
    shop = SQLConnector("ch", url(database), tables=["facts"], profile=False)
    try:
        started = time.perf_counter()
        result = shop.query("SELECT * FROM facts ORDER BY at DESC")
        seconds = time.perf_counter() - started
        frame = result.df
    finally:
        shop.close()
    print(f"SELECT * FROM facts ORDER BY at DESC (5M rows, LIMIT 201): {seconds * 1000:.0f} ms")
    assert result.row_count == 200 and result.truncated
    assert seconds < 10  # the engine's sort; a fetch of 5M rows would take minutes
    dtypes = {name: str(dtype) for name, dtype in frame.dtypes.items()}
    assert dtypes["at"].startswith("datetime64") and dtypes["day"].startswith("datetime64")
    assert dtypes["amount"] == "float64" and dtypes["qty"] == "Int64"
    assert dtypes["tags"] == "object"
    assert frame["at"].iloc[0] == pd.Timestamp("2024-01-01 00:00:00") + pd.Timedelta(
        seconds=FACTS - 1
    )
    assert frame["tags"].iloc[0] == ["x", str((FACTS - 1) % 3)]
    assert frame["qty"].isna().sum() == 20


def test_counting_5m_rows_is_the_engines_work(database):
    shop = SQLConnector("ch", url(database), tables=["facts"], profile=False)
    try:
        frame = shop.query(
            "SELECT region, count() AS n, sum(qty) AS q FROM facts GROUP BY region"
        ).df
    finally:
        shop.close()
    assert sorted(frame["n"].tolist()) == [FACTS // 2, FACTS // 2]


def test_the_seed_is_what_the_tests_think(database):
    (counts,) = run_raw(database, ["SELECT count() FROM big"])
    assert counts == [(BIG,)]
