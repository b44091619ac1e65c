"""Typos read as typos (issue 37, item 9): a misspelt table gets the closest table the query
may read ("did you mean customers?"), never a table outside the allowlist; a misspelt column
gets the closest column of the tables the query reads, on each engine's own error wording
(SQLite, PostgreSQL, MariaDB on the services' servers; DuckDB names its candidates itself)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import QueryExecutionError, UnsafeQueryError
from relay_nb.testing.seed import seed_database


@pytest.fixture(scope="module")
def shop_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('typos') / 'shop.sqlite'}"
    seed_database(url)
    return url


@pytest.fixture
def shop(shop_url: str) -> Iterator[SQLConnector]:
    connector = SQLConnector("shop", shop_url)
    yield connector
    connector.close()


@pytest.mark.parametrize(
    ("sql", "hint"),
    [
        ("SELECT * FROM customer", "did you mean customers?"),
        ("SELECT * FROM order_item", "did you mean order_items?"),
        ("SELECT * FROM main.custmers", "did you mean customers?"),
        ("SELECT count(*) FROM Prodcts", "did you mean products?"),
        ("SELECT * FROM weather", "use the schema's tables"),
    ],
)
def test_a_misspelt_table_gets_the_closest_readable_one(shop, sql, hint):
    with pytest.raises(UnsafeQueryError) as raised:
        shop.query(sql)
    assert raised.value.rule == "table_not_allowed"
    assert raised.value.message.endswith(hint)


def test_a_table_outside_the_allowlist_is_never_suggested(shop_url):
    connector = SQLConnector("few", shop_url, tables=["orders"])
    try:
        with pytest.raises(UnsafeQueryError) as raised:
            connector.query("SELECT * FROM customer")
    finally:
        connector.close()
    assert "customers" not in raised.value.message
    assert raised.value.message.endswith("use the schema's tables")


def test_a_table_outside_the_default_schema_is_suggested_with_its_schema():
    from relay_nb.sql import guard_query

    allowed = {("public", "customers"), ("sales", "orders"), ("sales", "customers")}
    for sql, hint in (
        ("SELECT * FROM order", "did you mean sales.orders?"),
        ("SELECT * FROM customer", "did you mean customers?"),  # the default schema's
        ("SELECT * FROM sales.customer", "did you mean customers?"),  # named with its schema
    ):
        with pytest.raises(UnsafeQueryError) as raised:
            guard_query(
                sql,
                dialect="postgres",
                allowed_tables=allowed,
                default_schema="public",
                row_limit=10,
            )
        assert raised.value.message.endswith(hint), raised.value.message


def _urls(shop_url: str) -> list[tuple[str, str]]:
    urls = [("sqlite", shop_url)]
    for name, variable in (
        ("postgres", "RELAY_TEST_PG_URL"),
        ("mariadb", "RELAY_TEST_MARIADB_URL"),
    ):
        if os.environ.get(variable):
            urls.append((name, os.environ[variable]))
        elif os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{variable} is not set (scripts/services start)")
    return urls


def test_a_misspelt_column_gets_the_closest_column_of_the_tables_read(shop_url):
    seen = []
    for engine, url in _urls(shop_url):
        connector = SQLConnector(engine, url)
        try:
            with pytest.raises(QueryExecutionError) as raised:
                connector.query("SELECT c.nme, count(*) FROM customers c GROUP BY c.nme")
            assert str(raised.value).endswith("; did you mean name?"), (engine, raised.value)
            with pytest.raises(QueryExecutionError) as unrelated:
                connector.query("SELECT zzz_nothing_alike FROM customers")
            assert "did you mean" not in str(unrelated.value)
        finally:
            connector.close()
        seen.append(engine)
    assert "sqlite" in seen


def test_duckdb_names_its_own_candidates(tmp_path: Path):
    import duckdb

    duckdb.connect(str(tmp_path / "x.duckdb")).close()
    connector = SQLConnector("duck", f"duckdb:///{tmp_path / 'x.duckdb'}")
    try:
        with pytest.raises(QueryExecutionError, match="Referenced column"):
            connector.query("SELECT nme FROM (SELECT 1 AS name) AS t")
    finally:
        connector.close()
