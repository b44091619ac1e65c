"""SQLConnector end to end on real seeded databases: results, dtypes, limits, errors, cancel."""

from __future__ import annotations

import asyncio
import threading
import time

import pandas as pd
import pytest
import sqlalchemy as sa

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import ConfigurationError, QueryExecutionError, UnsafeQueryError

ALLOWED = ["customers", "products", "orders", "order_items", "events", "customer_revenue"]

# A statement that never ends on its own: only the timeout or a cancel stops it.
_COUNT_FOREVER = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
)
ENDLESS = {
    "sqlite": _COUNT_FOREVER,
    "duckdb": _COUNT_FOREVER,
    "postgres": _COUNT_FOREVER,
    # MariaDB stops recursive CTEs after max_recursive_iterations (1000): a huge join instead
    "mysql": "SELECT COUNT(*) FROM order_items a, order_items b, order_items c, order_items d",
}


@pytest.fixture
def shop(shop_db):
    connector = SQLConnector(
        "shop", shop_db.ro_url, tables=ALLOWED, row_limit=50, statement_timeout_s=2
    )
    yield connector
    connector.close()


def direct(connector: SQLConnector, sql: str) -> pd.DataFrame:
    """The same SQL through the bare driver: no guard, no limit, no conversion.

    It reuses the connector's engine because DuckDB refuses a second, differently
    configured connection to the same file within one process.
    """
    raw = connector.engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute(sql)
        columns = [d[0] for d in cursor.description]
        return pd.DataFrame.from_records(cursor.fetchall(), columns=columns)
    finally:
        raw.close()


def test_results_match_the_direct_driver(shop, shop_db):
    sql = (
        "SELECT status, COUNT(*) AS n, SUM(total) AS revenue FROM orders "
        "GROUP BY status ORDER BY status"
    )
    result = shop.query(sql)
    expected = direct(shop, sql)
    assert list(result.df.columns) == ["status", "n", "revenue"]
    assert result.df["status"].tolist() == expected["status"].tolist()
    assert result.df["n"].astype(int).tolist() == expected["n"].astype(int).tolist()
    assert result.df["revenue"].astype(float).round(2).tolist() == pytest.approx(
        expected["revenue"].astype(float).round(2).tolist()
    )
    assert result.truncated is False and result.row_count == len(expected)
    assert result.elapsed_ms > 0


def test_dtypes_dates_decimals_nulls(shop):
    result = shop.query("SELECT id, email, signed_up FROM customers ORDER BY id")
    frame = result.df
    assert pd.api.types.is_integer_dtype(frame["id"])
    assert pd.api.types.is_datetime64_any_dtype(frame["signed_up"]), frame.dtypes
    assert frame["email"].isna().any() and frame["email"].notna().any()
    totals = shop.query("SELECT id, total FROM orders ORDER BY id").df
    assert pd.api.types.is_float_dtype(totals["total"])
    assert totals["total"].isna().any()
    stamps = shop.query("SELECT ordered_at FROM orders ORDER BY id").df
    assert pd.api.types.is_datetime64_any_dtype(stamps["ordered_at"]), stamps.dtypes


def test_row_limit_truncates_and_says_so(shop):
    many = shop.query("SELECT id FROM orders ORDER BY id")
    assert (many.row_count, many.truncated) == (50, True)
    assert many.df["id"].tolist() == list(range(1, 51))
    exact = shop.query("SELECT id FROM orders ORDER BY id LIMIT 50")
    assert (exact.row_count, exact.truncated) == (50, False)
    few = shop.query("SELECT id FROM orders ORDER BY id LIMIT 3")
    assert (few.row_count, few.truncated) == (3, False)
    assert "LIMIT" in many.executed_sql.upper()


def test_guard_rejections_run_nothing(shop):
    with pytest.raises(UnsafeQueryError) as info:
        shop.query("DELETE FROM orders")
    assert info.value.rule
    with pytest.raises(UnsafeQueryError) as info:
        shop.query("SELECT * FROM secrets")
    assert info.value.rule == "table_not_allowed"


def test_database_errors_carry_the_driver_message_without_credentials(shop, shop_db):
    with pytest.raises(QueryExecutionError) as info:
        shop.query("SELECT no_such_column FROM orders")
    message = str(info.value)
    assert "no_such_column" in message
    password = sa.make_url(shop_db.ro_url).password
    if password:
        assert password not in message


def test_statement_timeout_stops_an_endless_query_and_the_session_survives(shop, shop_db):
    started = time.perf_counter()
    with pytest.raises(QueryExecutionError, match="longer than 2 s"):
        shop.query(ENDLESS[shop_db.dialect])
    assert time.perf_counter() - started < 15
    assert shop.query("SELECT COUNT(*) AS n FROM customers").df["n"].iloc[0] == 50


async def test_cancelling_the_task_cancels_the_statement(shop, shop_db):
    task = asyncio.create_task(shop.aquery(ENDLESS[shop_db.dialect]))
    await asyncio.sleep(0.3)
    started = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - started < 1.9  # well before the 2 s statement timeout
    result = await shop.aquery("SELECT COUNT(*) AS n FROM products")
    assert result.df["n"].iloc[0] == 20


def test_keyboard_interrupt_cancels_the_running_statement(shop, shop_db):
    import _thread

    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        shop.query(ENDLESS[shop_db.dialect])
    assert time.perf_counter() - started < 1.9
    assert shop.query("SELECT COUNT(*) AS n FROM products").df["n"].iloc[0] == 20


async def test_query_tool_returns_preview_and_keeps_the_frame(shop):
    tools = {tool.name: tool for tool in shop.tools()}
    assert set(tools) == {"query_shop", "describe_shop"}
    result = await tools["query_shop"].run({"sql": "SELECT id, name FROM customers ORDER BY id"})
    assert not result.is_error
    assert result.content.startswith("50 rows")
    assert "columns: id" in result.content
    assert result.artifact.row_count == 50 and len(result.artifact.df) == 50
    refused = await tools["query_shop"].run({"sql": "DROP TABLE customers"})
    assert refused.is_error and ":" in refused.content
    described = await tools["describe_shop"].run({"tables": ["orders"]})
    assert "customer_id" in described.content


def test_prompt_context_lists_allowed_tables_only(shop):
    text = shop.prompt_context()
    assert "query_shop" in text and "orders" in text and "customers" in text
    assert "secrets" not in text and "api_key" not in text


def test_refresh_keeps_an_unchanged_catalog(shop):
    first = shop.catalog
    assert shop.catalog is first  # cached
    assert shop.refresh() is first  # unchanged (checked by one statement): the same object
    assert shop.refresh(force=True) == first and shop.catalog == first


def test_bad_arguments_are_configuration_errors(shop_db):
    with pytest.raises(ConfigurationError, match="snake_case"):
        SQLConnector("Shop DB", shop_db.ro_url)
    with pytest.raises(ConfigurationError, match="row_limit"):
        SQLConnector("shop", shop_db.ro_url, row_limit=0)


def test_a_tight_budget_keeps_relevant_tables_and_names_the_describe_tool(shop):
    text = shop.prompt_context(max_tokens=120, question="which products sell best?")
    assert "products" in text
    assert "describe_shop" in text
    assert len(text) // 4 <= 130


def test_sample_values_are_opt_in_and_capped(shop, shop_db):
    assert shop.samples() == {} and "e.g." not in shop.prompt_context()
    sampled = SQLConnector("shop", shop_db.ro_url, tables=ALLOWED, sample_values=3)
    try:
        samples = sampled.samples()
        status = next(v for k, v in samples.items() if k.endswith("orders.status"))
        assert len(status) == 3 and status == sorted(status)
        assert not any(k.endswith(".id") for k in samples)  # text columns only
        text = sampled.prompt_context()
        assert "e.g." in text and status[0] in text
    finally:
        sampled.close()
    with pytest.raises(ConfigurationError, match="sample_values"):
        SQLConnector("shop", shop_db.ro_url, sample_values=100)


def test_driver_messages_are_scrubbed_of_the_connection_password():
    """A driver that echoes the URL (some do, on connection errors) must not leak it."""
    from relay_nb.connectors.sql.fetch import driver_message as _driver_message

    password = "pw-for-scrub-test-0042"
    # constructing registers the URL's password as a secret (nothing connects yet)
    connector = SQLConnector("scrub", f"postgresql+psycopg://u:{password}@127.0.0.1:1/x")
    connector.close()
    message = _driver_message(RuntimeError(f"could not connect to postgresql://u:{password}@db"))
    assert password not in message and "[REDACTED]" in message
