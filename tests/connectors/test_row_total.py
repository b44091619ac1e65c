"""A result cut at the row limit says how many rows the query had: "10 of 300 rows".

On every engine the suite runs (SQLite, DuckDB, PostgreSQL, MariaDB) the count is checked
against the engine's own ``count(*)``; the planner's estimate (PostgreSQL, DuckDB) is checked
to be used, with ``≈``, where no count runs; the statement that counts drops an ORDER BY only
where the cap is the query's one limit; views and the model's preview say the total."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from relay_nb.connectors.results import RowTotal, preview_for_model
from relay_nb.connectors.sql import total
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.connectors.sql.readonly import CancelHandle
from relay_nb.testing.seed import ALLOWED_TABLES
from relay_nb.views import CallView, status_of


@pytest.fixture
def shop(shop_db):
    connector = SQLConnector("shop", shop_db.ro_url, tables=list(ALLOWED_TABLES), row_limit=10)
    yield connector
    connector.close()


def _engine_count(shop: SQLConnector, sql: str) -> int:
    """The engine's own count, on the connector's engine (DuckDB opens a file once)."""
    with shop.engine.connect() as conn:
        return int(conn.execute(sa.text(f"SELECT count(*) FROM ({sql}) AS t")).scalar_one())


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id FROM orders",
        "SELECT id, status FROM orders WHERE status = 'delivered' ORDER BY id DESC",
        "SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id",
        "SELECT o.id, i.product_id FROM orders o JOIN order_items i ON i.order_id = o.id",
    ],
)
def test_the_total_is_the_engines_own_count(shop, sql: str) -> None:
    result = shop.query(sql)
    assert result.truncated and result.row_count == 10
    assert result.total == RowTotal(rows=_engine_count(shop, sql), how="counted")
    assert status_of(result) == f"10 of {result.total.rows:,} rows"


def test_a_limit_the_query_wrote_bounds_its_total(shop) -> None:
    assert shop.query("SELECT id FROM orders ORDER BY id LIMIT 25").total == RowTotal(
        rows=25, how="counted"
    )
    skipped = shop.query("SELECT id FROM orders ORDER BY id LIMIT 25 OFFSET 290")
    assert not skipped.truncated and skipped.total is None  # 10 rows: nothing was cut
    assert shop.query("SELECT id FROM orders LIMIT 10").total is None  # exactly the limit


def test_past_the_cap_the_total_says_more_than(shop, monkeypatch) -> None:
    monkeypatch.setattr(total, "COUNT_CAP", 100)
    result = shop.query("SELECT order_id FROM order_items")
    assert result.total == RowTotal(rows=100, how="more_than")
    assert status_of(result) == "10 of more than 100 rows"


def test_without_a_count_postgres_and_duckdb_give_their_planners_estimate(shop) -> None:
    guarded = shop.guard("SELECT id FROM orders")
    found = total.row_total(
        shop.engine,
        shop.dialect,
        lambda cap: shop.guard("SELECT id FROM orders", row_limit=cap).sql,
        row_limit=10,
        elapsed_ms=60_000,  # a query this slow is not counted again
        timeout_s=5,
        cancel=CancelHandle(),
        search_path=shop.catalog.default_schema if shop.policy.pins_search_path else None,
        reset_session=bool(guarded.unvetted_functions),
    )
    if shop.engine.dialect.name in total.ESTIMATED:
        assert found is not None and found.how == "estimated"
        assert found.rows > 10 and found.describe().startswith("≈")
    else:
        assert found is None  # SQLite and MariaDB's planners give no row estimate


def test_an_interrupted_query_asks_for_no_total(shop) -> None:
    cancel = CancelHandle()
    cancel.cancel("interrupted")
    found = total.row_total(
        shop.engine,
        shop.dialect,
        lambda cap: shop.guard("SELECT id FROM orders", row_limit=cap).sql,
        row_limit=10,
        elapsed_ms=1,
        timeout_s=5,
        cancel=cancel,
        search_path=None,
        reset_session=False,
    )
    assert found is None


@pytest.mark.parametrize(
    ("sql", "dialect", "counted"),
    [
        (  # the cap is the only limit: the order goes, the engine can stop at the cap
            "SELECT a FROM t ORDER BY a LIMIT 101",
            "sqlite",
            "SELECT COUNT(*) FROM (SELECT a FROM t LIMIT 101) AS relay_total",
        ),
        (  # a limit the query wrote: its order decides which rows, and it stays
            "SELECT a FROM t ORDER BY a LIMIT 50",
            "sqlite",
            "SELECT COUNT(*) FROM (SELECT a FROM t ORDER BY a LIMIT 50) AS relay_total",
        ),
        (  # rows skipped: the order decides how many are left
            "SELECT a FROM t ORDER BY a LIMIT 101 OFFSET 5",
            "postgres",
            "SELECT COUNT(*) FROM (SELECT a FROM t ORDER BY a LIMIT 101 OFFSET 5) AS relay_total",
        ),
        (  # Oracle takes no AS before a table alias
            "SELECT a FROM t ORDER BY a FETCH FIRST 101 ROWS ONLY",
            "oracle",
            "SELECT COUNT(*) FROM (SELECT a FROM t FETCH FIRST 101 ROWS ONLY) relay_total",
        ),
        (
            "SELECT TOP 101 a FROM t ORDER BY a",
            "tsql",
            "SELECT COUNT_BIG(*) FROM (SELECT TOP 101 a AS a FROM t) AS relay_total",
        ),
    ],
)
def test_the_count_statement(sql: str, dialect: str, counted: str) -> None:
    assert total._count_statement(sql, dialect, 101) == counted


def test_views_and_the_model_say_the_total_and_how_to_raise_the_limit(shop) -> None:
    result = shop.query("SELECT id, status FROM orders")
    assert preview_for_model(result).startswith("10 of 300 rows (stopped at the row limit")
    from relay_nb.agent.tool_calls import ToolOutcome

    outcome = ToolOutcome(
        tool_call_id="1",
        name="query_shop",
        input={"sql": "SELECT id, status FROM orders"},
        content="",
        artifact=result,
    )
    call = CallView.of(1, outcome)
    assert call.status == "10 of 300 rows"
    assert any("--row-limit N" in note and "first 10 rows" in note for note in call.notes)
    # a query that wrote its own limit was not cut by the connector's: no such note
    own = shop.query("SELECT id FROM orders LIMIT 5")
    assert not any(
        "row limit" in note
        for note in CallView.of(1, outcome.model_copy(update={"artifact": own})).notes
    )
