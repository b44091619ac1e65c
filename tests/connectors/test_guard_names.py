"""Table names as warehouses write them: catalog-qualified names, T-SQL's ``db..table``,
BigQuery's wildcard tables, a schema of another catalog — resolved against the connection's
own catalog, then checked like any name; on real PostgreSQL and DuckDB through the
connector, whose catalog learns the database's name when it connects.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pytest

import relay_nb
from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard.query import GuardedQuery, guard_query


def guard(
    sql: str,
    dialect: str,
    allowed: Collection[tuple[str | None, str]],
    default: str | None,
    *,
    catalog: str | None = None,
    complete: Collection[str] = (),
) -> GuardedQuery:
    return guard_query(
        sql, dialect=dialect, allowed_tables=frozenset(allowed), default_schema=default,
        row_limit=100, catalog=catalog, complete_schemas=complete,
    )  # fmt: skip


def refused(sql: str, dialect: str, *args, **kwargs) -> UnsafeQueryError:
    with pytest.raises(UnsafeQueryError) as info:
        guard(sql, dialect, *args, **kwargs)
    return info.value


# (dialect, sql, allowlist, default schema, connected catalog, the table it reads)
CONNECTED = [
    ("bigquery", "SELECT * FROM `my-project.sales.orders`", {("sales", "orders")}, "sales",
     "my-project", "sales.orders"),
    ("bigquery", "SELECT * FROM `my-project`.sales.orders", {("sales", "orders")}, "sales",
     "my-project", "sales.orders"),
    ("snowflake", "SELECT * FROM ANALYTICS.PUBLIC.ORDERS", {("PUBLIC", "ORDERS")}, "PUBLIC",
     "ANALYTICS", "PUBLIC.ORDERS"),
    ("snowflake", "SELECT * FROM analytics.public.orders", {("PUBLIC", "ORDERS")}, "PUBLIC",
     "ANALYTICS", "PUBLIC.ORDERS"),
    ("trino", "SELECT * FROM hive.web.events", {("web", "events")}, "web", "hive",
     "web.events"),
    ("databricks", "SELECT * FROM main.sales.orders", {("sales", "orders")}, None, "main",
     "sales.orders"),
    ("tsql", "SELECT * FROM shop.dbo.orders", {("dbo", "orders")}, "dbo", "shop", "dbo.orders"),
    ("tsql", "SELECT * FROM shop..orders", {("dbo", "orders")}, "dbo", "shop", "dbo.orders"),
    ("postgres", "SELECT * FROM shop.public.orders", {("public", "orders")}, "public", "shop",
     "public.orders"),
    # another catalog, connected with: its schema is written "catalog.schema"
    ("bigquery", "SELECT * FROM `bigquery-public-data.samples.shakespeare`",
     {("sales", "orders"), ("bigquery-public-data.samples", "shakespeare")}, "sales",
     "my-project", "bigquery-public-data.samples.shakespeare"),
    ("snowflake", "SELECT * FROM SHARED.PUBLIC.RATES", {("SHARED.PUBLIC", "RATES")}, "PUBLIC",
     "ANALYTICS", "SHARED.PUBLIC.RATES"),
]  # fmt: skip


@pytest.mark.parametrize(("dialect", "sql", "allowed", "default", "catalog", "table"), CONNECTED)
def test_a_catalog_qualified_name_reads_as_its_table(
    dialect: str, sql: str, allowed, default, catalog, table: str
) -> None:
    result = guard(sql, dialect, allowed, default, catalog=catalog)
    assert result.tables == (table,)
    assert guard(result.sql, dialect, allowed, default, catalog=catalog).sql == result.sql


OTHER = [
    ("bigquery", "SELECT * FROM `other-project.sales.orders`", {("sales", "orders")}, "sales",
     "my-project"),
    ("snowflake", 'SELECT * FROM "analytics".PUBLIC.ORDERS', {("PUBLIC", "ORDERS")}, "PUBLIC",
     "ANALYTICS"),  # quoted lower case: another database than ANALYTICS
    ("snowflake", "SELECT * FROM SNOWFLAKE.ACCOUNT_USAGE.QUERY_HISTORY",
     {("PUBLIC", "ORDERS")}, "PUBLIC", "ANALYTICS"),
    ("trino", "SELECT * FROM system.runtime.queries", {("web", "events")}, "web", "hive"),
    ("tsql", "SELECT * FROM master..orders", {("dbo", "orders")}, "dbo", "shop"),
    ("tsql", "SELECT * FROM master.dbo.orders", {("dbo", "orders")}, "dbo", "shop"),
    ("postgres", "SELECT * FROM postgres.public.orders", {("public", "orders")}, "public",
     "shop"),
    ("mysql", "SELECT * FROM a.shop.orders", {("shop", "orders")}, "shop", None),
    # no catalog known: a three-part name is another catalog's
    ("bigquery", "SELECT * FROM `my-project.sales.orders`", {("sales", "orders")}, "sales",
     None),
]  # fmt: skip


@pytest.mark.parametrize(("dialect", "sql", "allowed", "default", "catalog"), OTHER)
def test_another_catalogs_table_is_refused(dialect: str, sql: str, allowed, default, catalog):
    error = refused(sql, dialect, allowed, default, catalog=catalog)
    assert error.rule == "table_not_allowed" and "is not a table you may read" in error.message


@pytest.mark.parametrize(
    "sql",
    ['SELECT * FROM "SHARED.PUBLIC".RATES', 'SELECT * FROM "SHARED.PUBLIC"."RATES"'],
)
def test_a_dotted_name_cannot_pass_for_another_catalogs_schema(sql: str) -> None:
    allowed = {("PUBLIC", "ORDERS"), ("SHARED.PUBLIC", "RATES")}
    error = refused(sql, "snowflake", allowed, "PUBLIC", catalog="ANALYTICS")
    assert error.rule == "table_not_allowed" and "no dot" in error.message


# -- BigQuery wildcard tables ---------------------------------------------------------------

SHARDS = {("ga4", "events_20240101"), ("ga4", "events_20240102"), ("ga4", "users")}
GA4 = (
    "SELECT event_name, COUNT(*) AS n FROM `my-project.ga4.events_*` "
    "WHERE _TABLE_SUFFIX BETWEEN '20240101' AND '20240131' GROUP BY 1"
)


def test_a_wildcard_reads_a_dataset_read_whole() -> None:
    result = guard(GA4, "bigquery", SHARDS, "ga4", catalog="my-project", complete={"ga4"})
    assert result.tables == ("ga4.events_*",)
    assert "_TABLE_SUFFIX BETWEEN" in result.sql


def test_a_wildcard_over_a_dataset_only_partly_allowed_is_refused() -> None:
    error = refused(GA4, "bigquery", SHARDS, "ga4", catalog="my-project")
    assert error.rule == "table_not_allowed" and "name the tables" in error.message


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("SELECT * FROM `ga4.sessions_*`", "matches no table"),
        ("SELECT * FROM `ga4.ev*nts_*`", "a wildcard ends"),
        ("SELECT * FROM `other.events_*`", "would read tables of other"),
    ],
)
def test_wildcards_that_match_nothing_allowed_are_refused(sql: str, says: str) -> None:
    error = refused(sql, "bigquery", SHARDS, "ga4", catalog="p", complete={"ga4"})
    assert error.rule == "table_not_allowed" and says in error.message


def test_a_star_is_a_wildcard_only_on_bigquery() -> None:
    error = refused('SELECT * FROM "events_*"', "snowflake", {("PUBLIC", "EVENTS_1")}, "PUBLIC")
    assert error.rule in ("table_not_allowed", "file_access")


# -- the connector learns its catalog when it connects -----------------------------------------


def test_duckdb_connector_reads_its_own_database_by_name(duckdb_shop: Path) -> None:
    relay = relay_nb.Relay(relay_nb.ScriptedRuntime(), ledger=False)
    try:
        shop = relay.connect("shop", f"duckdb:///{duckdb_shop}")
        assert shop.catalog.database == duckdb_shop.stem
        assert shop.catalog.complete_schemas == ("main",)
        assert shop.guard(f"SELECT count(*) FROM {duckdb_shop.stem}.main.orders").tables == (
            "main.orders",
        )
        assert (
            shop.query(f"SELECT count(*) AS n FROM {duckdb_shop.stem}.main.orders").df["n"].iloc[0]
            > 0
        )
        with pytest.raises(UnsafeQueryError):
            shop.guard("SELECT count(*) FROM system.main.duckdb_tables")
    finally:
        relay.close()


def test_postgres_connector_reads_its_own_database_by_name(pg_urls) -> None:
    relay = relay_nb.Relay(relay_nb.ScriptedRuntime(), ledger=False)
    try:
        shop = relay.connect("shop", pg_urls.ro)
        database = shop.catalog.database
        assert database
        frame = shop.query(f"SELECT count(*) AS n FROM {database}.public.orders").df
        assert frame["n"].iloc[0] > 0
        with pytest.raises(UnsafeQueryError):
            shop.guard("SELECT count(*) FROM postgres.public.orders")
    finally:
        relay.close()


def test_a_restricted_catalog_has_no_complete_schema(duckdb_shop: Path) -> None:
    relay = relay_nb.Relay(relay_nb.ScriptedRuntime(), ledger=False)
    try:
        shop = relay.connect("shop", f"duckdb:///{duckdb_shop}", tables=["orders"])
        assert shop.catalog.complete_schemas == ()
    finally:
        relay.close()


@pytest.mark.parametrize("allowed", [None, {"orders"}, ["public.orders"], "orders", [("a",)]])
def test_an_allowlist_of_the_wrong_shape_says_so(allowed) -> None:
    from relay_nb.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"\(schema, table\) pairs"):
        guard_query(
            "SELECT 1 FROM orders", dialect="postgres", allowed_tables=allowed,
            default_schema="public", row_limit=10,
        )  # fmt: skip


def test_a_table_named_like_a_keyword_is_quoted_on_the_second_try() -> None:
    """Databricks reads ``FROM stream LIMIT 200`` as a STREAM source: the plain text does not
    read back, so the guard writes every name quoted (as the engine folds it) and checks
    that instead; units and keyword arguments stay as written."""
    result = guard("SELECT * FROM stream", "databricks", {(None, "stream")}, None)
    assert result.sql == "SELECT * FROM `stream` LIMIT 100" and result.tables == ("stream",)
    plain = guard("SELECT s.a AS x FROM stream AS s", "databricks", {(None, "stream")}, None)
    assert "`" not in plain.sql  # the first try read back: nothing quoted
