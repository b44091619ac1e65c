"""The test databases themselves: same data in four dialects, a read-only role the servers
enforce on their own, and a fingerprint sensitive enough to prove "nothing changed".

These check the ground the connector's security tests stand on. If ``relay_ro`` could write,
or the fingerprint missed an update, a passing adversarial corpus would prove nothing.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.testing.fingerprint import fingerprint, fingerprint_parts
from relay_nb.testing.seed import (
    ALLOWED_TABLES,
    PG_ONLY_ROW_COUNTS,
    SEED_ROW_COUNTS,
    SEED_TABLES,
    expected_rows,
    expected_seed_digest,
    seed_database,
    seed_digest,
)

CENT = Decimal("0.01")


def _reader(url: str) -> sa.Engine:
    """Read without writing: DuckDB read-only (another test may hold the file open)."""
    if url.startswith("duckdb:"):
        url += "?access_mode=read_only"
    return sa.create_engine(url, poolclass=NullPool)


def _rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    engine = _reader(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(sql)).all()]
    finally:
        engine.dispose()


def _q(dialect: str, ident: str) -> str:
    return f"`{ident}`" if dialect == "mysql" else f'"{ident}"'


def _dec(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value)).quantize(CENT)


# --- identical data everywhere -----------------------------------------------------------------


def test_seed_content_is_identical_in_every_dialect(shop_db):
    # read through the read-only login: it must see every seeded table, secrets included
    engine = _reader(shop_db.ro_url)
    try:
        assert seed_digest(engine) == expected_seed_digest()
    finally:
        engine.dispose()


def test_row_counts(shop_db):
    for table, expected in SEED_ROW_COUNTS.items():
        assert _rows(shop_db.ro_url, f"SELECT COUNT(*) FROM {table}") == [(expected,)], table
    assert SEED_ROW_COUNTS["order_items"] > 800
    assert set(ALLOWED_TABLES) == (set(SEED_TABLES) - {"secrets"}) | {"customer_revenue"}


def test_totals_per_status_match_python(shop_db):
    expected: dict[str, tuple[Decimal | None, int, int]] = {}
    for _id, _customer, _at, status, total in expected_rows("orders"):
        s, n, priced = expected.get(status, (None, 0, 0))
        if total is not None:
            s = (s or Decimal(0)) + total
        expected[status] = (s, n + 1, priced + (total is not None))
    got = _rows(
        shop_db.ro_url,
        "SELECT status, SUM(total), COUNT(*), COUNT(total) FROM orders GROUP BY status",
    )
    assert {status: (_dec(s), n, p) for status, s, n, p in got} == expected
    assert any(p < n for _s, n, p in expected.values()), "some totals must be NULL"


def test_view_customer_revenue(shop_db):
    expected: dict[int, Decimal | None] = {}
    for _id, customer, _at, _status, total in expected_rows("orders"):
        if total is not None:
            expected[customer] = (expected.get(customer) or Decimal(0)) + total
        else:
            expected.setdefault(customer, None)
    got = _rows(shop_db.ro_url, "SELECT customer_id, revenue FROM customer_revenue")
    assert {c: _dec(r) for c, r in got} == expected


def test_reserved_word_columns_and_tricky_strings(shop_db):
    q = lambda ident: _q(shop_db.dialect, ident)  # noqa: E731
    cols = ", ".join(q(c) for c in ("user", "comment", "replace", "set"))
    rows = _rows(shop_db.ro_url, f"SELECT id, {cols} FROM events ORDER BY id")
    assert [r[:5] for r in rows] == [r[:5] for r in expected_rows("events")]
    comments = {r[2] for r in rows}
    for needle in (";", "--", "DROP TABLE customers", "LIMIT 5", "'"):
        assert any(c and needle in c for c in comments), needle
    hit = _rows(
        shop_db.ro_url,
        f"SELECT COUNT(*) FROM events WHERE {q('comment')} = 'DROP TABLE customers'",
    )
    assert hit[0][0] >= 1


def test_null_emails_and_order_dates_over_2025_2026(shop_db):
    assert _rows(shop_db.ro_url, "SELECT COUNT(*) FROM customers WHERE email IS NULL")[0][0] > 0
    first, last = _rows(shop_db.ro_url, "SELECT MIN(ordered_at), MAX(ordered_at) FROM orders")[0]
    assert str(first)[:4] == "2025" and str(last)[:4] == "2026"


@pytest.mark.parametrize("shop_db", ["duckdb", "postgres", "mariadb"], indirect=True)
def test_comments_where_the_dialect_has_them(shop_db):  # SQLite has no comments
    d = shop_db.dialect
    sql = {
        "postgres": "SELECT obj_description('orders'::regclass, 'pg_class'), "
        "col_description('orders'::regclass, 5)",
        "mysql": "SELECT t.TABLE_COMMENT, c.COLUMN_COMMENT FROM information_schema.TABLES t "
        "JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND "
        "c.TABLE_NAME = t.TABLE_NAME WHERE t.TABLE_SCHEMA = DATABASE() AND "
        "t.TABLE_NAME = 'orders' AND c.COLUMN_NAME = 'total'",
        "duckdb": "SELECT t.comment, c.comment FROM duckdb_tables() t JOIN duckdb_columns() c "
        "ON c.table_oid = t.table_oid WHERE t.table_name = 'orders' AND c.column_name = 'total'",
    }[d]
    table_comment, column_comment = _rows(shop_db.ro_url, sql)[0]
    assert "order" in table_comment.lower()
    assert "NULL" in column_comment


def test_pg_internal_schema_is_readable(pg_urls):
    assert _rows(pg_urls.ro, "SELECT COUNT(*) FROM internal.audit") == [
        (PG_ONLY_ROW_COUNTS["internal.audit"],)
    ]


# --- the servers' own defences: relay_ro cannot write ---------------------------------------


def test_pg_ro_role_cannot_write(pg_urls):
    import psycopg
    from psycopg import errors

    before = fingerprint(pg_urls.admin, paths=pg_urls.paths)
    conninfo = sa.make_url(pg_urls.ro).set(drivername="postgresql")
    with psycopg.connect(conninfo.render_as_string(hide_password=False), autocommit=True) as c:
        # layer 1: every transaction of the role is read-only by default
        with pytest.raises(errors.ReadOnlySqlTransaction):
            c.execute("INSERT INTO customers (id, name, signed_up) VALUES (999, 'x', '2025-01-01')")
        # layer 2: even after switching that off, the role has no write privilege at all
        c.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")
        for sql in (
            "INSERT INTO customers (id, name, signed_up) VALUES (999, 'x', '2025-01-01')",
            "UPDATE orders SET total = 0 WHERE id = 1",
            "DELETE FROM secrets",
            "INSERT INTO internal.audit VALUES (99, 'x')",
            "CREATE TABLE public.pwned (id int)",
            "CREATE TEMP TABLE pwned (id int)",
            "COMMENT ON TABLE orders IS 'pwned'",
        ):
            with pytest.raises(errors.InsufficientPrivilege):
                c.execute(sql)
        with pytest.raises((errors.InsufficientPrivilege, errors.UndefinedFile)):
            c.execute("COPY customers TO '/tmp/relay_nb_pwned.csv'")
    assert not os.path.exists("/tmp/relay_nb_pwned.csv")
    assert fingerprint(pg_urls.admin, paths=pg_urls.paths) == before


def test_mariadb_ro_role_cannot_write(mariadb_urls):
    import pymysql

    before = fingerprint(mariadb_urls.admin, paths=mariadb_urls.paths)
    url = sa.make_url(mariadb_urls.ro)
    conn = pymysql.connect(
        host=url.host,
        port=url.port or 3306,
        user=url.username,
        password=url.password or "",
        database=url.database,
        autocommit=True,
    )
    try:
        with conn.cursor() as cur:
            for sql, code in (
                (
                    "INSERT INTO customers (id, name, signed_up) VALUES (999, 'x', '2025-01-01')",
                    1142,
                ),
                ("UPDATE orders SET total = 0 WHERE id = 1", 1142),
                ("DELETE FROM secrets", 1142),
                ("CREATE TABLE pwned (id int)", 1142),
                ("SELECT * FROM customers INTO OUTFILE 'pwned.csv'", 1227),  # needs FILE
            ):
                with pytest.raises(pymysql.err.MySQLError) as info:
                    cur.execute(sql)
                assert info.value.args[0] == code, (sql, info.value)
    finally:
        conn.close()
    assert fingerprint(mariadb_urls.admin, paths=mariadb_urls.paths) == before


# --- the fingerprint notices changes ----------------------------------------------------------


def _execute(url: str, sql: str) -> None:
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(sql))
    finally:
        engine.dispose()


def test_fingerprint_changes_with_one_row_and_comes_back(scratch_shop):
    url = scratch_shop.admin_url
    before = fingerprint(url)
    before_parts = fingerprint_parts(url)
    assert fingerprint(url) == before, "fingerprint must be stable when nothing changes"
    original = expected_rows("secrets")[0][1]
    _execute(url, "UPDATE secrets SET api_key = 'leaked' WHERE id = 1")
    assert fingerprint(url) != before
    changed = fingerprint_parts(url)
    diff = [k for k in changed if changed[k] != before_parts.get(k)]
    assert len(diff) == 1 and diff[0].endswith("secrets"), diff
    _execute(url, f"UPDATE secrets SET api_key = '{original}' WHERE id = 1")
    assert fingerprint(url) == before
    _execute(url, "UPDATE orders SET total = NULL WHERE id = 2")
    assert fingerprint(url) != before


def test_fingerprint_sees_schema_objects(scratch_shop):
    url = scratch_shop.admin_url
    before = fingerprint_parts(url)
    _execute(url, "CREATE TABLE pwned (id INTEGER)")
    after = fingerprint_parts(url)
    assert set(after) - set(before), "a new table must show up"
    assert any(after[k] != before[k] for k in before if k in after)


def test_fingerprint_sees_files(shop_db):
    target = Path(shop_db.paths[-1])
    before = fingerprint(shop_db.admin_url, paths=shop_db.paths)
    stray = target / f"relay_nb_fingerprint_probe_{uuid.uuid4().hex[:8]}"
    stray.write_text("x")
    try:
        assert fingerprint(shop_db.admin_url, paths=shop_db.paths) != before
    finally:
        stray.unlink()
    assert fingerprint(shop_db.admin_url, paths=shop_db.paths) == before


def test_fingerprint_sees_settings(pg_urls, mariadb_urls):
    before = fingerprint_parts(pg_urls.admin)
    _execute(pg_urls.admin, "ALTER ROLE relay_ro SET work_mem = '8MB'")
    try:
        assert fingerprint_parts(pg_urls.admin)["db:role_settings"] != before["db:role_settings"]
    finally:
        _execute(pg_urls.admin, "ALTER ROLE relay_ro RESET work_mem")
    assert fingerprint_parts(pg_urls.admin) == before

    before = fingerprint_parts(mariadb_urls.admin)
    (value,) = _rows(mariadb_urls.admin, "SELECT @@GLOBAL.max_connect_errors")[0]
    _execute(mariadb_urls.admin, f"SET GLOBAL max_connect_errors = {int(value) + 1}")
    try:
        assert fingerprint_parts(mariadb_urls.admin)["db:settings"] != before["db:settings"]
    finally:
        _execute(mariadb_urls.admin, f"SET GLOBAL max_connect_errors = {int(value)}")
    assert fingerprint_parts(mariadb_urls.admin) == before


def test_seeding_is_deterministic_and_rerunnable(tmp_path):
    one, two = (f"sqlite:///{tmp_path / name}" for name in ("one.sqlite", "two.sqlite"))
    seed_database(one)
    seed_database(two)
    assert fingerprint(one) == fingerprint(two)
    seed_database(one)  # over an existing database: drops and recreates
    assert seed_digest(one) == expected_seed_digest()


# --- fixture behaviour: CI never skips server tests ---------------------------------------------


def _load_conftest() -> Any:
    path = Path(__file__).with_name("conftest.py")
    spec = importlib.util.spec_from_file_location("_connectors_conftest_under_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_missing_server_fails_in_ci_and_skips_locally(monkeypatch):
    conftest = _load_conftest()
    monkeypatch.delenv("RELAY_TEST_PG_URL", raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        conftest._server("PostgreSQL", "PG", ())
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="scripts/services start"):
        conftest._server("PostgreSQL", "PG", ())


def test_unreachable_server_fails_in_ci(monkeypatch):
    conftest = _load_conftest()
    dead = "postgresql+psycopg://relay_ro:x@127.0.0.1:9/shop"  # port 9 (discard): closed
    monkeypatch.setenv("RELAY_TEST_PG_URL", dead)
    monkeypatch.setenv("RELAY_TEST_PG_ADMIN_URL", dead)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="unreachable"):
        conftest._server("PostgreSQL", "PG", ())
