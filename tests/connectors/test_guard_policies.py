"""A guard policy per dialect family: shared rules everywhere, a family's own rules and data
in its own module, and plain reads only for the families without a corpus of their own."""

from __future__ import annotations

import pytest
import sqlglot

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.dialects import _SQLALCHEMY_TO_SQLGLOT
from relay_nb.sql.guard import policies
from relay_nb.sql.guard.policies import FAMILIES, PlainReadPolicy, policy_for
from relay_nb.sql.guard.policies.snowflake import SnowflakePolicy, refuse_stages
from relay_nb.sql.guard.query import guard_query

TABLES = {(None, "orders"), (None, "customers"), ("public", "orders"), ("public", "customers")}
TABLES |= {(s, t.upper()) for s, t in list(TABLES)} | {(s and s.upper(), t) for s, t in TABLES}
WAREHOUSES = ("snowflake", "bigquery", "trino", "presto", "spark", "databricks", "clickhouse")
WAREHOUSES += ("tsql", "redshift", "oracle")
EVERY = ("postgres", "mysql", "sqlite", "duckdb", *WAREHOUSES)


def guard(sql: str, dialect: str):
    return guard_query(
        sql, dialect=dialect, allowed_tables=TABLES, default_schema=None, row_limit=100
    )


def rule(sql: str, dialect: str) -> str:
    with pytest.raises(UnsafeQueryError) as caught:
        guard(sql, dialect)
    return caught.value.rule


# -- which family ------------------------------------------------------------------------------


def test_the_issue_s_families_exist_and_claim_their_dialects() -> None:
    names = {family.name: family for family in FAMILIES}
    assert {"postgres", "mysql", "sqlite", "duckdb", "snowflake", "bigquery", "trino"} <= set(names)
    assert {"spark", "databricks", "redshift", "clickhouse", "tsql"} <= set(names)
    assert issubclass(policy_for("redshift"), names["postgres"])  # PostgreSQL's, and its own
    assert policy_for("presto") is policy_for("athena") is names["trino"]
    assert policy_for("hive") is names["spark"]
    assert issubclass(policy_for("databricks"), names["spark"])
    assert policy_for("SNOWFLAKE") is names["snowflake"]
    for sqlglot_name in _SQLALCHEMY_TO_SQLGLOT.values():  # every dialect relay_nb connects to
        assert policy_for(sqlglot_name) is not PlainReadPolicy, sqlglot_name
    assert policy_for("teradata") is PlainReadPolicy  # no family: plain reads only
    claimed = [d for family in FAMILIES for d in family.dialects]
    assert len(claimed) == len(set(claimed)), "a dialect in two families"


# -- the shared rules hold in every family -----------------------------------------------------


@pytest.mark.parametrize("dialect", EVERY)
@pytest.mark.parametrize(
    ("sql", "rules"),
    [
        ("DELETE FROM orders", {"forbidden_statement"}),
        ("UPDATE orders SET id = 1", {"forbidden_statement"}),
        ("DROP TABLE orders", {"forbidden_statement"}),
        ("SELECT 1; SELECT 2", {"multiple_statements"}),
        ("SELECT * FROM secrets", {"table_not_allowed"}),
        ("SELECT * INTO copy FROM orders", {"select_into", "parse_error", "forbidden_statement"}),
        ("CALL do_things()", {"forbidden_command", "not_a_query"}),
        ("SET x = 1", {"forbidden_command"}),
        ("EXECUTE IMMEDIATE 'DROP TABLE orders'", {"forbidden_command"}),
        ("SELECT pg_sleep(10)", {"forbidden_function"}),
        ("SELECT * FROM read_csv('/etc/passwd')", {"file_access", "table_function_not_allowed"}),
        ("WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d", {"forbidden_statement",
         "parse_error"}),
    ],
)  # fmt: skip
def test_every_family_refuses_what_is_no_plain_read(dialect: str, sql: str, rules: set) -> None:
    assert rule(sql, dialect) in rules


@pytest.mark.parametrize("dialect", EVERY)
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id, total FROM orders WHERE total > 10 ORDER BY total DESC",
        "SELECT customer_id, COUNT(*) AS n, SUM(total) AS revenue FROM orders "
        "GROUP BY customer_id HAVING COUNT(*) > 2",
        "SELECT o.id, c.name FROM orders AS o JOIN customers AS c ON c.id = o.customer_id",
        "WITH big AS (SELECT * FROM orders WHERE total > 100) SELECT COUNT(*) AS n FROM big",
        "SELECT id, ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY total) AS rn FROM orders",
        "SELECT CASE WHEN total > 100 THEN 'big' ELSE 'small' END AS size, "
        "COALESCE(note, '') AS note, ROUND(total, 1) AS t, UPPER(status) AS s FROM orders",
        "SELECT DISTINCT customer_id FROM orders WHERE customer_id IN (SELECT id FROM customers)",
        "SELECT id FROM orders UNION ALL SELECT id FROM customers",
    ],
)
def test_plain_reads_pass_in_every_family_with_the_limit_in_its_syntax(
    dialect: str, sql: str
) -> None:
    result = guard(sql, dialect)
    assert result.limit == 100 and result.limit_injected
    again = sqlglot.parse_one(result.sql, read=dialect)
    assert again.args.get("limit") is not None or (dialect == "tsql" and "TOP 100" in result.sql)
    assert guard(result.sql, dialect).sql == result.sql  # a fixed point, as every guarded query


# -- a family's own rules and data -------------------------------------------------------------


def test_a_snowflake_only_rule_lives_in_the_snowflake_policy_alone() -> None:
    assert ("table", refuse_stages) in SnowflakePolicy.rules
    others = [f for f in FAMILIES if f is not SnowflakePolicy]
    assert all(refuse_stages not in [fn for _, fn in f.rules] for f in others)
    # a stage is files: the model hears that, not "name tables plainly"
    assert rule("SELECT $1 FROM @my_stage", "snowflake") == "file_access"
    assert rule("SELECT t.c FROM @my_stage AS t", "snowflake") == "file_access"
    tree = sqlglot.parse_one("SELECT t.c FROM @my_stage AS t", read="snowflake")
    found = policies.Findings()
    for node in tree.walk():
        if type(node).__name__ == "Table":
            policies.GuardPolicy.check(node, "table", found)
    assert found.violations == []  # the base policy has no such rule


def test_families_without_a_corpus_refuse_functions_sqlglot_does_not_know() -> None:
    sql = "SELECT my_udf(total) AS x FROM orders"
    for dialect in ("postgres", "mysql", "sqlite", "duckdb"):  # vetted families: name checks
        guard(sql, dialect)
    for dialect in WAREHOUSES:
        if dialect == "redshift":
            continue  # a PostgreSQL dialect here
        assert rule(sql, dialect) == "forbidden_function", dialect


def test_family_data_allows_and_refuses_its_own_names() -> None:
    flatten = "SELECT f.value FROM orders, TABLE(FLATTEN(input => orders.items)) AS f"
    assert guard(flatten, "snowflake").limit == 100
    rescan = "SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))"  # another query's rows
    assert rule(rescan, "snowflake") in {"file_access", "table_function_not_allowed"}
    assert rule("SELECT reflect('java.lang.Runtime', 'getRuntime') AS r", "spark") == (
        "forbidden_function"
    )
    assert guard("FROM orders SELECT id", "duckdb").limit == 100  # DuckDB's FROM-first
    assert rule("FROM orders SELECT id", "snowflake") == "not_a_query"
    assert guard("SELECT 1 AS one FROM dual", "oracle").tables == ()  # DUAL is no table
    assert guard("SELECT id FROM main.orders", "sqlite").tables == ("orders",)
    assert rule("SELECT id FROM main.orders", "duckdb") == "table_not_allowed"


# -- names as each warehouse compares them ------------------------------------------------------


def test_snowflake_reads_sqlalchemy_s_lowercase_names_as_the_uppercase_ones() -> None:
    """snowflake-sqlalchemy reports ORDERS as ``orders`` (its normalize_name): that catalog
    name is the table unquoted names reach, and a quoted lowercase "orders" is another."""
    allowed = {("analytics", "orders")}

    def run(sql: str) -> str:
        return guard_query(
            sql, dialect="snowflake", allowed_tables=allowed, default_schema="analytics",
            row_limit=10,
        ).tables[0]  # fmt: skip

    assert (
        run("SELECT * FROM orders") == run("SELECT * FROM ANALYTICS.Orders") == "ANALYTICS.ORDERS"
    )
    with pytest.raises(UnsafeQueryError, match="not a table you may read"):
        run('SELECT * FROM "orders"')


def test_bigquery_datasets_and_tables_compare_exactly() -> None:
    allowed = {("analytics", "orders")}
    for sql in ("SELECT * FROM analytics.Orders", "SELECT * FROM `Analytics.orders`"):
        with pytest.raises(UnsafeQueryError, match="not a table you may read"):
            guard_query(
                sql, dialect="bigquery", allowed_tables=allowed, default_schema="analytics",
                row_limit=10,
            )  # fmt: skip


def test_clickhouse_caps_a_per_group_limit_and_keeps_it_as_written() -> None:
    guarded = guard_query(
        "SELECT region, amount FROM orders ORDER BY amount DESC LIMIT 500 BY region",
        dialect="clickhouse", allowed_tables={(None, "orders")}, default_schema=None,
        row_limit=100,
    )  # fmt: skip
    assert guarded.sql == (
        "SELECT * FROM (SELECT region, amount FROM orders ORDER BY amount DESC "
        "LIMIT 500 BY region) AS capped LIMIT 100"
    )
    assert (guarded.limit, guarded.limit_injected) == (100, True)
