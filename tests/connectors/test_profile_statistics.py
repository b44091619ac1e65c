"""Profiles of tables larger than the sample, on a real PostgreSQL: from its planner
statistics when it has them (no row read, checked in ``pg_stat_user_tables``), from a
bounded sample when it has not (a table never analysed).

Expectations come from the database itself (``SELECT DISTINCT``, ``MIN``/``MAX`` through
the bare driver), never from numbers written here.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.connectors.sql.readonly import run_read_only
from relay_nb.sql.catalog.model import Catalog, ColumnProfile
from relay_nb.sql.catalog.profile import ProfileSettings
from relay_nb.sql.prompt.describe import describe_tables
from relay_nb.sql.prompt.render import render_catalog
from relay_nb.testing.seed import scratch_database

ROWS = 3000
SAMPLE = 200

TABLE = """CREATE TABLE {name} (
    id integer PRIMARY KEY,
    status text NOT NULL,
    "Region" varchar(20),
    amount numeric(10, 2),
    made_at timestamp NOT NULL,
    note text
) WITH (autovacuum_enabled = false)"""
"""``autovacuum_enabled = false``: only the test's own ``ANALYZE`` makes statistics."""

FILL = """INSERT INTO {name}
SELECT i,
       (ARRAY['paid', 'paid', 'paid', 'shipped', 'shipped', 'refunded', 'it''s late'])
           [1 + mod(i, 7)],
       CASE WHEN mod(i, 5) = 0 THEN NULL ELSE (ARRAY['north', 'south'])[1 + mod(i, 2)] END,
       round(mod(i * 7919, 100000) / 100.0, 2) - 20,
       timestamp '2021-03-04 05:06:07' + mod(i * 3547, 1000) * interval '1 day',
       CASE WHEN mod(i, 4) = 0 THEN NULL ELSE 'note ' || i END
FROM generate_series(1, {rows}) AS i"""


@pytest.fixture
def scratch(pg_urls) -> Iterator[str]:
    """A private database with ``analysed`` (statistics read) and ``fresh`` (never
    analysed) holding the same rows."""
    with scratch_database(pg_urls.admin, "profile_stats") as url:
        owner = sa.create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        try:
            with owner.connect() as conn:
                for table in ("analysed", "fresh"):
                    conn.exec_driver_sql(TABLE.format(name=table))
                    conn.exec_driver_sql(FILL.format(name=table, rows=ROWS))
                conn.exec_driver_sql("ANALYZE analysed")
        finally:
            owner.dispose()
        yield url


def rows_read(url: str, table: str) -> int:
    """Rows the server read of ``table`` by scans of any kind, as its statistics count them."""
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT pg_stat_clear_snapshot()")
            return int(
                conn.exec_driver_sql(
                    "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) "
                    f"FROM pg_stat_user_tables WHERE relname = '{table}'"
                ).scalar_one()
            )
    finally:
        engine.dispose()


def direct(url: str, sql: str) -> list[tuple]:
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.exec_driver_sql(sql)]
    finally:
        engine.dispose()


def profile_of(catalog: Catalog, table: str, name: str) -> ColumnProfile:
    found = catalog.find(table)
    assert found is not None
    profile = next(c for c in found.columns if c.name == name).profile
    assert profile is not None, name
    return profile


def profiled(url: str) -> tuple[Catalog, dict[str, int]]:
    """The catalog profiled by a connector with a small sample, and the rows each table
    had read of it meanwhile (the connector's connections closed, so their counts are
    flushed to the statistics)."""
    before = {t: rows_read(url, t) for t in ("analysed", "fresh")}
    connector = SQLConnector("stats", url)
    connector.profile = ProfileSettings(sample_rows=SAMPLE)
    try:
        catalog = connector.catalog
    finally:
        connector.close()
    read: dict[str, int] = {}
    for table, was in before.items():
        for _ in range(50):  # a closing backend flushes its counts within moments
            read[table] = rows_read(url, table) - was
            if read[table] or table == "analysed":
                break
            time.sleep(0.1)
    return catalog, read


def test_an_analysed_table_is_profiled_from_its_statistics_without_reading_a_row(scratch):
    catalog, read = profiled(scratch)
    # the check's own dependency: the fresh table's samples were counted (one per statement
    # branch: counts, then the values of status and Region), so a read would be
    assert 0 < read["fresh"] <= 3 * SAMPLE
    assert read["analysed"] == 0

    status = profile_of(catalog, "analysed", "status")
    counts = direct(scratch, "SELECT status, COUNT(*) FROM analysed GROUP BY 1 ORDER BY 2 DESC")
    assert status.from_statistics and status.sampled_rows is None
    assert list(status.values) == [value for value, _ in counts]  # most common first
    amount = profile_of(catalog, "analysed", "amount")
    made = profile_of(catalog, "analysed", "made_at")
    (low, high, first, last) = direct(
        scratch, "SELECT MIN(amount), MAX(amount), MIN(made_at), MAX(made_at) FROM analysed"
    )[0]
    # ANALYZE's sample is the whole of a 3,000-row table: its extremes are the table's
    assert (float(amount.low), float(amount.high)) == (float(low), float(high))
    assert (made.low, made.high) == (str(first)[:19], str(last)[:19])
    region = profile_of(catalog, "analysed", "Region")
    nulls = direct(scratch, 'SELECT AVG(("Region" IS NULL)::int) FROM analysed')[0][0]
    assert region.null_share == pytest.approx(float(nulls), abs=0.01)
    assert set(region.values) == {"north", "south"}
    note = profile_of(catalog, "analysed", "note")
    assert note.values == () and note.null_share == pytest.approx(0.25, abs=0.01)

    line = next(x for x in render_catalog(catalog).text.splitlines() if "made_at" in x)
    assert f"≈{str(first)[:10]}..{str(last)[:10]}" in line
    assert "'it''s late'" in render_catalog(catalog).text
    detail = describe_tables(catalog, ["analysed"])
    assert "(from the database's statistics)" in detail


def test_a_table_never_analysed_is_sampled_and_says_so(scratch):
    catalog, _ = profiled(scratch)
    made = profile_of(catalog, "fresh", "made_at")
    assert made.sampled_rows == SAMPLE and not made.from_statistics
    first, last = direct(scratch, "SELECT MIN(made_at), MAX(made_at) FROM fresh")[0]
    assert str(first)[:19] <= made.low <= made.high <= str(last)[:19]
    status = profile_of(catalog, "fresh", "status")
    distinct = {v for (v,) in direct(scratch, "SELECT DISTINCT status FROM fresh")}
    assert set(status.values) <= distinct and status.values
    line = next(x for x in render_catalog(catalog).text.splitlines() if "fresh" in x)
    assert made.low[:10] not in line  # a sample's bounds are not the table's
    assert f"(in a sample of {SAMPLE} rows)" in describe_tables(catalog, ["fresh"])


def test_statistics_are_skipped_when_turned_off(scratch):
    connector = SQLConnector("stats", scratch)
    connector.profile = ProfileSettings(sample_rows=SAMPLE, statistics=False)
    try:
        status = profile_of(connector.catalog, "analysed", "status")
    finally:
        connector.close()
    assert status.sampled_rows == SAMPLE and not status.from_statistics


def test_sampled_values_read_a_sample_not_the_table(scratch):
    """``sample_values`` (opt-in example values per text column) reads the first rows of
    each table, never a ``DISTINCT`` over all of it."""
    before = rows_read(scratch, "analysed")
    connector = SQLConnector("stats", scratch, tables=["analysed"], sample_values=3)
    connector.profile = ProfileSettings(sample_rows=SAMPLE, enabled=False)
    try:
        samples = connector.samples()
    finally:
        connector.close()
    assert samples["public.analysed.status"] == ["it's late", "paid", "refunded"]
    read = 0
    for _ in range(50):
        read = rows_read(scratch, "analysed") - before
        if read:
            break
        time.sleep(0.1)
    text_columns = 3  # status, Region, note
    assert 0 < read <= text_columns * SAMPLE


def test_profiling_statements_run_without_parallel_workers(scratch):
    """A parallel scan outlives its statement timeout (seen: 8 s past 4.6 s), so profiling
    runs with none; a query keeps the server's setting."""
    connector = SQLConnector("stats", scratch)
    setting = "SELECT current_setting('max_parallel_workers_per_gather')"
    try:
        assert connector._profile_runner()(setting, 5.0) == [("0",)]
        default = direct(scratch, "SHOW max_parallel_workers_per_gather")[0][0]
        assert default != "0"  # the check's own dependency: the server allows some
        assert run_read_only(connector.engine, setting, max_rows=1, timeout_s=5.0).rows == [
            (default,)
        ]
    finally:
        connector.close()
