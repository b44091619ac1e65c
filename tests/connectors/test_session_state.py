"""Nothing a query does outlives it: "every query runs in a transaction that is rolled back"
holds for everything the next query can observe, not only for the data.

A rollback undoes writes and (on PostgreSQL) settings, but not a session's random seed, its
prepared statements, its advisory or named locks, or its user variables. Each case below is
first shown to outlive a rolled-back read-only transaction on a raw connection of the data's
owner (so the test cannot pass vacuously), then run through the connector on a one-connection
pool, after which the same state is looked for on the connection the next query would get.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.testing.seed import ALLOWED_TABLES, scratch_database, seed_database

# -- fixtures: a private database with functions that leave state behind ----------------------

PG_FUNCTIONS = (
    # a prepared statement and a session-level advisory lock: neither is transactional
    """CREATE FUNCTION note_state() RETURNS integer LANGUAGE plpgsql AS $$
    BEGIN
      EXECUTE 'PREPARE relay_leftover AS SELECT 1';
      PERFORM pg_advisory_lock(4242);
      RETURN 1;
    END $$""",
)
MARIADB_FUNCTIONS = (
    """CREATE FUNCTION note_state() RETURNS INT NOT DETERMINISTIC
    BEGIN
      SET @relay_leftover = 42;
      RETURN 1;
    END""",
)


@pytest.fixture(params=["postgres", "mariadb"])
def owner_db(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """``(dialect, owner URL)`` of a private seeded database holding ``note_state()``."""
    kind = request.param
    server = request.getfixturevalue("pg_urls" if kind == "postgres" else "mariadb_urls")
    with scratch_database(server.admin, "shop_state") as url:
        seed_database(url)
        owner = sa.create_engine(url, poolclass=NullPool)
        with owner.begin() as conn:
            for ddl in PG_FUNCTIONS if kind == "postgres" else MARIADB_FUNCTIONS:
                conn.exec_driver_sql(ddl)
        owner.dispose()
        yield kind, url


def _one_connection_engine(url: str) -> sa.Engine:
    """The connector's engine, but with one pooled connection: the next query's."""
    return sa.create_engine(url, pool_size=1, max_overflow=0)


def _leftovers(engine: sa.Engine, kind: str) -> list[str]:
    """What the pooled connection still holds from an earlier query."""
    with engine.connect() as conn:
        if kind == "postgres":
            found = []
            prepared = "SELECT count(*) FROM pg_prepared_statements WHERE name = 'relay_leftover'"
            if conn.exec_driver_sql(prepared).scalar_one():
                found.append("prepared statement")
            locks = (
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                "AND pid = pg_backend_pid()"
            )
            if conn.exec_driver_sql(locks).scalar_one():
                found.append("advisory lock")
            return found
        value = conn.exec_driver_sql("SELECT @relay_leftover").scalar_one()
        return ["user variable"] if value is not None else []


def test_state_a_function_leaves_outlives_a_rollback_on_a_raw_connection(owner_db) -> None:
    kind, url = owner_db
    engine = _one_connection_engine(url)
    try:
        with engine.connect() as conn:
            if kind == "postgres":
                conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            conn.exec_driver_sql("SELECT note_state()")
            conn.rollback()
        assert _leftovers(engine, kind)  # harmful: the test below could fail
    finally:
        engine.dispose()


def test_the_connector_leaves_no_state_for_the_next_query(owner_db) -> None:
    kind, url = owner_db
    engine = _one_connection_engine(url)
    shop = SQLConnector("shop", engine, tables=list(ALLOWED_TABLES))
    try:
        result = shop.query("SELECT note_state() AS n")
        assert result.row_count == 1
        assert _leftovers(engine, kind) == []
        assert shop.query("SELECT COUNT(*) AS n FROM orders").df.iloc[0, 0] == 300
    finally:
        shop.close()
        engine.dispose()


# -- the random seed: PostgreSQL and DuckDB ----------------------------------------------------

SEED = {"postgres": "SELECT setseed(0.42)", "duckdb": "SELECT setseed(0.42)"}


def _seeded_random(shop_db) -> float:
    """What ``random()`` gives right after ``setseed(0.42)`` on a connection of its own."""
    if shop_db.dialect == "duckdb":
        import duckdb

        path = sa.make_url(shop_db.admin_url).database
        with contextlib.closing(duckdb.connect(path, read_only=True)) as conn:
            conn.execute("SELECT setseed(0.42)")
            return conn.execute("SELECT random()").fetchone()[0]
    engine = sa.create_engine(shop_db.admin_url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT setseed(0.42)")
            conn.rollback()  # the seed outlives the rollback: that is the hole
            return conn.exec_driver_sql("SELECT random()").scalar_one()
    finally:
        engine.dispose()


def test_a_seed_set_by_one_query_does_not_reach_the_next(shop_db) -> None:
    if shop_db.dialect not in SEED:
        pytest.skip(f"{shop_db.dialect} has no seed a query can set")
    predicted = _seeded_random(shop_db)
    assert predicted == _seeded_random(shop_db)  # deterministic once seeded: a real hole
    url = shop_db.admin_url
    engine = _one_connection_engine(url) if shop_db.dialect == "postgres" else url
    shop = SQLConnector("shop", engine, tables=list(ALLOWED_TABLES))
    try:
        shop.query(SEED[shop_db.dialect])
        drawn = shop.query("SELECT random() AS r").df.iloc[0, 0]
        assert drawn != predicted
    finally:
        shop.close()


# -- how the server reads the SQL: MySQL/MariaDB's sql_mode -----------------------------------


def test_a_connection_that_reads_sql_differently_reads_it_as_the_guard_did(mariadb_urls) -> None:
    """Under ``NO_BACKSLASH_ESCAPES`` (or ``ANSI_QUOTES``, ``PIPES_AS_CONCAT``…) the server
    reads strings and operators unlike the guard: the guard's re-serialised ``'x\\\\'`` (the
    one-backslash string it checked) would come back with two. Those modes are off while a
    guarded query runs, and the connection gets its own mode back afterwards."""
    engine = _one_connection_engine(mariadb_urls.admin)

    @sa.event.listens_for(engine, "connect")
    def _own_mode(dbapi_connection, _record) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')")
        cursor.close()

    shop = SQLConnector("shop", engine, tables=list(ALLOWED_TABLES))
    try:
        guarded = shop.guard(r"SELECT 'x\\' AS a").sql
        with engine.connect() as conn:  # harmful first: the connection's own reading differs
            assert conn.exec_driver_sql(guarded).scalar_one() == "x\\\\"
        assert shop.query(r"SELECT 'x\\' AS a").df.iloc[0, 0] == "x\\"
        with engine.connect() as conn:
            mode = conn.exec_driver_sql("SELECT @@SESSION.sql_mode").scalar_one()
        assert "NO_BACKSLASH_ESCAPES" in mode
    finally:
        shop.close()
        engine.dispose()
