"""ClickHouse's catalog read for real, on chDB: one statement over ``system.tables`` and
``system.columns``, comments, views, the system databases and dictionaries left out, and a
fingerprint that follows the schema and not the data."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from chdb_helpers import run_raw, url

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.connectors.sql.introspect import fingerprint, introspect
from relay_nb.errors import ConfigurationError

SEED = [
    "CREATE TABLE orders (id UInt64 COMMENT 'the order''s number', status Enum8('Paid' = 1, "
    "'Refunded' = 2) COMMENT 'as the shop writes it', total Nullable(Decimal(12, 2))) "
    "ENGINE = MergeTree ORDER BY (status, id) COMMENT 'one row per order'",
    "INSERT INTO orders SELECT number, if(number % 3 = 0, 'Refunded', 'Paid'), number * 2.5 "
    "FROM numbers(30)",
    "CREATE TABLE events (at DateTime64(3, 'UTC'), kind LowCardinality(Nullable(String)), "
    "tags Array(String)) ENGINE = MergeTree ORDER BY at",
    "CREATE VIEW paid AS SELECT id, total FROM orders WHERE status = 'Paid'",
    "CREATE MATERIALIZED VIEW per_status ENGINE = SummingMergeTree ORDER BY status "
    "AS SELECT status, count() AS n FROM orders GROUP BY status",
    "CREATE DICTIONARY status_names (id UInt64, status String) PRIMARY KEY id "
    "SOURCE(CLICKHOUSE(TABLE 'orders')) LAYOUT(FLAT()) LIFETIME(0)",
    "CREATE DATABASE archive COMMENT 'old orders'",
    "CREATE TABLE archive.orders_2019 (id UInt64) ENGINE = MergeTree ORDER BY id",
    # changed by the tests below, each in a database of its own (any test order)
    "CREATE DATABASE fp",
    "CREATE TABLE fp.orders (id UInt64, total Decimal(12, 2)) ENGINE = MergeTree ORDER BY id",
    "CREATE DATABASE live",
    "CREATE TABLE live.orders (id UInt64) ENGINE = MergeTree ORDER BY id",
]


@pytest.fixture(scope="module")
def database(chdb_database):
    return chdb_database(SEED)


@pytest.fixture(scope="module")
def engine(database):
    engine = sa.create_engine(url(database))
    yield engine
    engine.dispose()


def test_the_catalog_holds_tables_and_views_with_their_comments(engine):
    with engine.connect() as conn:
        catalog = introspect(conn)
    assert catalog.dialect == "clickhouse" and catalog.default_schema == "default"
    by_name = {t.name: t for t in catalog.tables}
    assert sorted(by_name) == ["events", "orders", "paid", "per_status"]  # no dictionary
    orders = by_name["orders"]
    assert orders.kind == "table" and orders.comment == "one row per order"
    assert [(c.name, c.type, c.nullable, c.primary_key, c.comment) for c in orders.columns] == [
        ("id", "UInt64", False, False, "the order's number"),
        ("status", "Enum8('Paid' = 1, 'Refunded' = 2)", False, False, "as the shop writes it"),
        ("total", "Nullable(Decimal(12, 2))", True, False, None),
    ]
    events = by_name["events"]
    assert [(c.type, c.nullable) for c in events.columns] == [
        ("DateTime64(3, 'UTC')", False),
        ("LowCardinality(Nullable(String))", True),
        ("Array(String)", False),
    ]
    assert by_name["paid"].kind == by_name["per_status"].kind == "view"
    assert all(not t.name.startswith(".inner") for t in catalog.tables)


def test_the_catalog_is_one_statement_of_metadata(engine, statement_log):
    with engine.connect() as conn:
        introspect(conn)
        read = list(statement_log.statements)
        statement_log.clear()
        fingerprint(conn)
    catalog_reads = [s for s in read if "system.tables" in s.sql]
    assert len(catalog_reads) == 1 and len(read) == 2  # currentDatabase(), then the catalog
    assert len(statement_log.statements) == 2  # currentDatabase(), then the fingerprint
    for statement in [*read, *statement_log.statements]:
        assert "orders" not in statement.sql and "events" not in statement.sql


def test_other_databases_are_read_when_named_and_system_ones_never(engine):
    with engine.connect() as conn:
        archive = introspect(conn, schemas=["archive"])
        assert [t.qualified_name for t in archive.tables] == ["archive.orders_2019"]
        both = introspect(conn, tables=["orders", "archive.orders_2019"])
        assert [t.qualified_name for t in both.tables] == ["archive.orders_2019", "default.orders"]
        for system in ("system", "INFORMATION_SCHEMA", "information_schema"):
            with pytest.raises(ConfigurationError, match="never exposed"):
                introspect(conn, schemas=[system])
        with pytest.raises(ConfigurationError, match="unknown schema"):
            introspect(conn, schemas=["archiv"])


def test_the_fingerprint_follows_the_schema_not_the_data(database, engine):
    def token() -> str | None:
        with engine.connect() as conn:
            return fingerprint(conn, schemas=["fp"])

    first = token()
    assert first and first.startswith("clickhouse:") and token() == first
    run_raw(database, ["INSERT INTO fp.orders VALUES (1000, 1)"])
    assert token() == first
    changes = [
        "ALTER TABLE fp.orders COMMENT COLUMN total 'in euros'",
        "ALTER TABLE fp.orders ADD COLUMN note String",
        "CREATE TABLE fp.scratch (a UInt8) ENGINE = Memory",
        "DROP TABLE fp.scratch",
        "ALTER TABLE fp.orders MODIFY COMMENT 'one row per order, refunds too'",
    ]
    previous = first
    for change in changes:
        run_raw(database, [change])
        assert token() != previous, change
        previous = token()


def test_the_connector_sees_a_change_on_refresh(database):
    shop = SQLConnector("ch", url(database), schemas=["live"], profile=False)
    try:
        before = shop.catalog
        assert shop.refresh() is before
        run_raw(database, ["ALTER TABLE live.orders ADD COLUMN channel LowCardinality(String)"])
        after = shop.refresh()
        assert after is not before
        assert [c.name for c in after.tables[0].columns] == ["id", "channel"]
    finally:
        shop.close()
