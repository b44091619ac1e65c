"""The second wall on ClickHouse: what the guard never saw still cannot write, on chDB.

These tests hand statements to :func:`run_read_only` directly, past the guard: the only thing
between them and the data is the statement's session, bounded and then ``readonly = 1``. Each
write is first shown to work on a plain chDB connection, so the refusal is the read-only mode's
and not a fault of the statement.
"""

from __future__ import annotations

import threading
import time

import pytest
from chdb_helpers import run_raw, url

from relay_nb.connectors.bounds import ResultBudget
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.connectors.sql.fetch import is_server_timeout
from relay_nb.connectors.sql.readonly import CancelHandle, build_engine, run_read_only
from relay_nb.errors import ConfigurationError, QueryTimeoutError

SEED = [
    "CREATE TABLE orders (id UInt64, status LowCardinality(String), amount Decimal(10, 2)) "
    "ENGINE = MergeTree ORDER BY id",
    "INSERT INTO orders SELECT number, ['paid', 'refunded'][number % 2 + 1], number / 4 "
    "FROM numbers(1000)",
]


@pytest.fixture(scope="module")
def database(chdb_database):
    return chdb_database(SEED)


@pytest.fixture(scope="module")
def engine(database):
    engine = build_engine(url(database))
    yield engine
    engine.dispose()


def _writes(scratch) -> dict[str, str]:
    return {
        "insert": "INSERT INTO orders VALUES (5000, 'pwned', 1)",
        "insert-select": "INSERT INTO orders SELECT 5001, 'pwned', 1",
        "create": "CREATE TABLE pwned (a UInt8) ENGINE = MergeTree ORDER BY a",
        "create-temporary": "CREATE TEMPORARY TABLE pwned (a UInt8)",
        "drop": "DROP TABLE orders",
        "truncate": "TRUNCATE TABLE orders",
        "alter-delete": "ALTER TABLE orders DELETE WHERE 1",
        "lightweight-delete": "DELETE FROM orders WHERE 1",
        "alter-update": "ALTER TABLE orders UPDATE status = 'pwned' WHERE 1",
        "optimize": "OPTIMIZE TABLE orders FINAL",
        "rename": "RENAME TABLE orders TO orders_gone",
        "write-a-file": f"INSERT INTO FUNCTION file('{scratch}/written.csv', 'CSV') SELECT 1",
        "lift-the-time-bound": "SET max_execution_time = 0",
        "leave-read-only": "SET readonly = 0",
        "settings-clause": "SELECT count() FROM orders SETTINGS readonly = 0",
    }


WRITES = sorted(_writes("/x"))


def _state(database) -> list:
    (orders,), (tables,) = run_raw(
        database,
        [
            "SELECT count(), sum(id), groupArraySorted(3)(status) FROM orders",
            "SELECT groupArraySorted(100)(name) FROM system.tables "
            "WHERE database = currentDatabase()",
        ],
    )
    return [orders, tables]


@pytest.mark.parametrize("name", WRITES)
def test_a_write_fails_at_the_engine_even_past_the_guard(database, engine, tmp_path, name):
    statement = _writes(tmp_path)[name]
    before = _state(database)
    with pytest.raises(Exception, match=r"readonly mode\. \(READONLY\)"):
        run_read_only(engine, statement, max_rows=10, timeout_s=5)
    assert _state(database) == before
    assert not (tmp_path / "written.csv").exists()


def test_the_same_writes_work_on_a_plain_connection(database, tmp_path):
    """The control: on a session that is not read-only, the statements above do write (on a
    copy in a database of its own: chDB opens one directory per process)."""
    writes = _writes(tmp_path)
    *_, (count,), (pwned,) = run_raw(
        database,
        [
            "CREATE DATABASE control",
            "CREATE TABLE control.orders ENGINE = MergeTree ORDER BY id AS SELECT * FROM orders",
            "USE control",
            writes["insert"],
            writes["create"],
            writes["write-a-file"],
            "SELECT count() FROM orders",
            "SELECT count() FROM system.tables WHERE database = 'control' AND name = 'pwned'",
        ],
    )
    assert count == (1001,) and pwned == (1,)
    assert (tmp_path / "written.csv").read_text() == "1\n"


def test_reads_work_and_rows_are_bounded(engine):
    fetched = run_read_only(engine, "SELECT id FROM orders ORDER BY id", max_rows=7, timeout_s=5)
    assert fetched.columns == ["id"]
    assert [row[0] for row in fetched.rows] == list(range(7))


def test_a_result_without_limit_is_cut_by_the_engine(engine):
    """``max_result_rows`` with ``result_overflow_mode = 'break'``: a statement that would
    return a billion rows stops at the first block past the bound, inside the engine, instead
    of being materialised (chDB's cursor reads a whole result at once)."""
    started = time.perf_counter()
    fetched = run_read_only(
        engine, "SELECT number FROM numbers(1000000000)", max_rows=5, timeout_s=20
    )
    assert [row[0] for row in fetched.rows] == [0, 1, 2, 3, 4]
    assert time.perf_counter() - started < 5


def test_a_result_past_the_byte_limit_is_cut_and_noted(engine):
    budget = ResultBudget(max_value_bytes=1000, max_result_bytes=20_000)
    fetched = run_read_only(
        engine,
        "SELECT id, repeat('x', 3000) FROM orders ORDER BY id",
        max_rows=200,
        timeout_s=5,
        budget=budget,
    )
    assert 0 < len(fetched.rows) < 200 and budget.full and budget.clipped
    assert all(len(row[1]) < 1100 for row in fetched.rows)


def test_the_engine_bounds_time(engine):
    endless = "SELECT count() FROM numbers(100000000000000)"
    started = time.perf_counter()
    with pytest.raises(Exception, match=r"TIMEOUT_EXCEEDED|QUERY_WAS_CANCELLED") as info:
        run_read_only(engine, endless, max_rows=1, timeout_s=0.5)
    assert time.perf_counter() - started < 3
    assert is_server_timeout(info.value) or "QUERY_WAS_CANCELLED" in str(info.value)


def test_a_cancel_stops_the_statement_with_kill_query(engine):
    """chDB's DB-API cursor cannot be interrupted; the cancel finds the statement by its
    marker comment and kills it from another connection."""
    cancel = CancelHandle()
    threading.Timer(0.3, cancel.cancel).start()
    started = time.perf_counter()
    with pytest.raises(Exception, match="QUERY_WAS_CANCELLED"):
        run_read_only(
            engine,
            "SELECT count() FROM numbers(100000000000000)",
            max_rows=1,
            timeout_s=30,
            cancel=cancel,
        )
    assert time.perf_counter() - started < 3
    assert run_read_only(engine, "SELECT count() FROM orders", max_rows=1, timeout_s=5).rows == [
        (1000,)
    ]


def test_no_read_only_session_goes_back_to_the_pool(engine):
    for _ in range(3):
        run_read_only(engine, "SELECT 1", max_rows=1, timeout_s=5)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT getSetting('readonly')").scalar() == 0


def test_chdb_returns_a_failed_statements_header_as_rows_of_the_next_result(database):
    """The chdb 4.4 fault relay_nb works around (statement connections are discarded, pooled
    ones invalidated after an error). If this starts failing, chdb has fixed it."""
    import chdb.dbapi

    connection = chdb.dbapi.connect(path=str(database))
    try:
        cursor = connection.cursor()
        with pytest.raises(Exception, match="Cannot parse string"):
            cursor.execute("SELECT toInt32(status) FROM orders")
        cursor.execute("SELECT 42 AS answer")
        assert len(cursor.fetchall()) == 3  # the header lines, then (42,)
    finally:
        connection.close()


def test_the_connector_is_unaffected_by_that_fault(database):
    shop = SQLConnector("ch", url(database), statement_timeout_s=2)
    try:
        with pytest.raises(Exception, match="Cannot parse string"):
            shop.query("SELECT toInt32(status) FROM orders")
        assert shop.query("SELECT 42 AS answer").df.to_dict("records") == [{"answer": 42}]
        shop.refresh(force=True)
        assert [t.name for t in shop.catalog.tables] == ["orders"]
    finally:
        shop.close()


def test_a_slow_query_through_the_connector_is_a_timeout(database):
    shop = SQLConnector("ch", url(database), statement_timeout_s=0.5)
    try:
        cross = "SELECT count() FROM orders AS a, orders AS b, orders AS c, orders AS d"
        with pytest.raises(QueryTimeoutError, match=r"longer than 0\.5 s"):
            shop.query(cross)
    finally:
        shop.close()


def test_readonly_in_the_url_is_refused(database):
    for query in ("?readonly=1", "?settings=readonly=1"):
        with pytest.raises(ConfigurationError, match="readonly"):
            build_engine(url(database) + query)
