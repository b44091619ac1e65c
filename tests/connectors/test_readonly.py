"""The second wall: even SQL the guard never saw cannot write through run_read_only.

These tests bypass the guard on purpose and connect with the OWNER's credentials, so the
only thing standing between the statement and the data is the read-only execution mode. They
run on a private scratch copy, so a failing defence cannot damage the shared test database.
"""

from __future__ import annotations

import threading
import time

import pytest

from relay_nb.connectors.sql.readonly import (
    CancelHandle,
    QueryCancelled,
    build_engine,
    run_read_only,
)
from relay_nb.testing.fingerprint import fingerprint

WRITES = {
    "all": [
        "DELETE FROM orders",
        "UPDATE customers SET name = 'pwned'",
        "INSERT INTO products (id, name, category, price) VALUES (999, 'x', 'y', 1)",
        "CREATE TABLE pwned (a INTEGER)",
        "DROP TABLE order_items",
    ],
}


@pytest.fixture
def owner_engine(scratch_shop):
    engine = build_engine(scratch_shop.admin_url)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("statement", WRITES["all"])
def test_writes_fail_even_with_the_owners_credentials(scratch_shop, owner_engine, statement):
    before = fingerprint(scratch_shop.admin_url, paths=scratch_shop.paths)
    with pytest.raises(Exception) as info:  # noqa: PT011 - each driver words it differently
        run_read_only(owner_engine, statement, max_rows=10, timeout_s=5)
    text = str(info.value).lower()
    assert any(
        word in text
        for word in ("read-only", "read only", "readonly", "query_only", "attempt to write")
    ), text
    owner_engine.dispose()  # DuckDB: the fingerprint opens the file with another configuration
    assert fingerprint(scratch_shop.admin_url, paths=scratch_shop.paths) == before


def test_reads_work_and_rows_are_bounded(owner_engine):
    fetched = run_read_only(
        owner_engine, "SELECT id FROM orders ORDER BY id", max_rows=7, timeout_s=5
    )
    assert fetched.columns == ["id"]
    assert [row[0] for row in fetched.rows] == list(range(1, 8))


HUGE_JOIN = "SELECT COUNT(*) FROM order_items a, order_items b, order_items c, order_items d"


def test_a_cancel_before_the_statement_starts_means_it_never_starts(owner_engine):
    cancel = CancelHandle()
    cancel.cancel("cancelled")
    with pytest.raises(QueryCancelled):
        run_read_only(owner_engine, HUGE_JOIN, max_rows=1, timeout_s=30, cancel=cancel)


def test_a_cancel_from_another_thread_stops_the_statement_and_retires_the_connection(
    owner_engine,
):
    cancel = CancelHandle()
    threading.Timer(0.3, cancel.cancel, kwargs={"reason": "stop button"}).start()
    started = time.perf_counter()
    with pytest.raises(Exception):  # noqa: PT011, B017 - each driver raises its own type
        run_read_only(owner_engine, HUGE_JOIN, max_rows=1, timeout_s=30, cancel=cancel)
    assert time.perf_counter() - started < 10
    assert cancel.fired  # delivered to the driver, so that connection was discarded
    fetched = run_read_only(owner_engine, "SELECT COUNT(*) FROM customers", max_rows=1, timeout_s=5)
    assert fetched.rows[0][0] == 50


def test_an_autocommit_postgres_engine_still_runs_read_only(scratch_shop):
    if scratch_shop.dialect != "postgres":
        pytest.skip("AUTOCOMMIT engines matter for PostgreSQL's SET TRANSACTION")
    import sqlalchemy as sa

    engine = sa.create_engine(scratch_shop.admin_url, isolation_level="AUTOCOMMIT")
    try:
        with pytest.raises(Exception, match="read-only transaction"):
            run_read_only(engine, "CREATE TABLE pwned (a int)", max_rows=1, timeout_s=5)
        with engine.connect() as conn:  # and the caller's engine is autocommit again
            assert conn.exec_driver_sql("SHOW transaction_read_only").scalar() == "off"
            assert conn.exec_driver_sql("SELECT to_regclass('pwned')").scalar() is None
    finally:
        engine.dispose()


def test_the_connection_is_reusable_after_a_failure(owner_engine):
    with pytest.raises(Exception):  # noqa: PT011, B017 - each driver raises its own type
        run_read_only(owner_engine, "SELECT no_such_column FROM orders", max_rows=1, timeout_s=5)
    fetched = run_read_only(owner_engine, "SELECT COUNT(*) FROM customers", max_rows=1, timeout_s=5)
    assert fetched.rows[0][0] == 50


def test_a_callers_own_engine_gets_its_connections_back_writable(tmp_path):
    """relay_nb may borrow an analyst's engine; it must not leave it read-only afterwards."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'mine.db'}", poolclass=sa.pool.StaticPool)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE notes (body TEXT)")
    assert build_engine(engine) is engine  # used as is
    fetched = run_read_only(engine, "SELECT COUNT(*) FROM notes", max_rows=1, timeout_s=5)
    assert fetched.rows == [(0,)]
    with pytest.raises(Exception, match="readonly"):
        run_read_only(engine, "INSERT INTO notes VALUES ('x')", max_rows=1, timeout_s=5)
    with engine.begin() as conn:  # the caller's own write works again
        conn.exec_driver_sql("INSERT INTO notes VALUES ('mine')")
        assert conn.exec_driver_sql("SELECT body FROM notes").scalar() == "mine"
    engine.dispose()


def test_a_duckdb_engine_with_external_access_is_refused(tmp_path):
    import sqlalchemy as sa

    from relay_nb.connectors.sql.readonly import ReadOnlyNotEnforced

    engine = sa.create_engine(f"duckdb:///{tmp_path / 'open.duckdb'}")
    try:
        with pytest.raises(ReadOnlyNotEnforced, match="external access"):
            run_read_only(engine, "SELECT 1", max_rows=1, timeout_s=5)
    finally:
        engine.dispose()
    locked = build_engine(f"duckdb:///{tmp_path / 'open.duckdb'}")
    try:
        assert run_read_only(locked, "SELECT 42", max_rows=1, timeout_s=5).rows == [(42,)]
    finally:
        locked.dispose()


def test_http_warehouses_are_not_pinged_before_each_use() -> None:
    """BigQuery's and Trino's connections are HTTP clients: a ping before each checkout is a
    round trip (on BigQuery a query job) and guards against nothing; a server is pinged."""
    trino = build_engine("trino://relay@127.0.0.1:9/hive/web")
    server = build_engine("postgresql+psycopg://relay@127.0.0.1:9/shop")
    try:
        assert trino.pool._pre_ping is False and server.pool._pre_ping is True
    finally:
        trino.dispose()
        server.dispose()
