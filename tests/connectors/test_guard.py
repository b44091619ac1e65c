"""The SQL guard, driven by the corpora in ``corpus/`` plus focused unit tests.

* every adversarial payload is refused with its expected rule, in every listed dialect;
* every benign query passes, its output re-parses to the input's tree (apart from the limit),
  the limit is within row_limit, and guarding the output again changes nothing;
* on the seeded databases the guarded SQL returns the same rows as the original (bounded by
  the limit): SQLite and DuckDB always, PostgreSQL and MariaDB when ``scripts/services`` runs.
"""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import sqlglot
import yaml
from sqlglot import exp

from relay_nb.errors import ConfigurationError, UnsafeQueryError
from relay_nb.sql.guard import rules as guard_rules
from relay_nb.sql.guard.query import RULES, GuardedQuery, guard_query

CORPUS = Path(__file__).with_name("corpus")
DIALECTS = ("sqlite", "duckdb", "postgres", "mysql")
ROW_LIMIT = 200
_TABLES = ("customers", "products", "orders", "order_items", "events", "customer_revenue")
SCHEMAS: dict[str, str | None] = {
    "sqlite": None,
    "duckdb": "main",
    "postgres": "public",
    "mysql": "shop",
    "mariadb": "shop",
}
GUARDED_AS = {"mysql": ("mysql", "mariadb")}
"""The corpus's "mysql" means MariaDB/MySQL: its entries are guarded in both sqlglot dialects
relay_nb uses for them. The test server is MariaDB, so rows are compared under "mariadb"."""
MARIADB_ONLY = frozenset(
    {"mariadb-timestampadd", "mariadb-timestampadd-every-row", "mariadb-timestampadd-month",
     "mariadb-to-char", "mariadb-median"}
)  # fmt: skip
"""MariaDB idioms sqlglot's MySQL 8 dialect cannot write back faithfully (TIMESTAMPADD as
DATE_ADD reads back differently, TO_CHAR with a format, MEDIAN as PERCENTILE_CONT)."""


# Snowflake and Oracle store unquoted names in upper case, so their catalogs list them so
_UPPERCASE_CATALOGS = ("snowflake", "oracle")


def _stored(name: str, dialect: str) -> str:
    return name.upper() if dialect in _UPPERCASE_CATALOGS else name


def allowlist(dialect: str) -> frozenset[tuple[str | None, str]]:
    schema = _stored(SCHEMAS.get(dialect, "public"), dialect)
    return frozenset((schema, _stored(t, dialect)) for t in _TABLES)


def guard(sql: str, dialect: str, row_limit: int = ROW_LIMIT) -> GuardedQuery:
    return guard_query(
        sql,
        dialect=dialect,
        allowed_tables=allowlist(dialect),
        default_schema=_stored(SCHEMAS.get(dialect, "public"), dialect),
        row_limit=row_limit,
    )


def refusal(sql: str, dialect: str) -> UnsafeQueryError:
    with pytest.raises(UnsafeQueryError) as info:
        guard(sql, dialect)
    return info.value


def _load(name: str) -> list[dict[str, Any]]:
    return yaml.safe_load((CORPUS / name).read_text(encoding="utf-8"))


def _cases(entries: list[dict[str, Any]], *, on_server: bool = False) -> list[Any]:
    """(entry, sqlglot dialect) pairs; ``on_server``: only the dialect the test server speaks."""
    out = []
    for entry in entries:
        listed = DIALECTS if entry["dialects"] == "all" else entry["dialects"]
        for name in listed:
            guarded = GUARDED_AS.get(name, (name,))
            if on_server:
                guarded = guarded[-1:]
            out.extend(
                pytest.param(entry, d, id=f"{entry['id']}-{d}")
                for d in guarded
                if not (d == "mysql" and entry["id"] in MARIADB_ONLY)
            )
    return out


ADVERSARIAL = _load("adversarial.yaml") + _load("value_sizes.yaml")
BENIGN = _load("benign.yaml")

# Benign queries whose re-parsed output differs from the input tree only by a normalisation
# sqlglot's generator applies (the SQL text of both trees is identical).
GENERATOR_NORMALISATIONS = {
    ("round-average-price", "postgres"): "ROUND(x, n) gets an explicit CAST(x AS DECIMAL)",
    ("pg-dollar-quoted-string-is-data", "postgres"): "$$…$$ is re-serialised as '…'",
    ("pg-percentile", "duckdb"): "percentile_cont WITHIN GROUP becomes QUANTILE_CONT",
    **{
        (case, dialect): reason
        for case, reason in {
            "mariadb-group-concat-distinct": "GROUP_CONCAT gets its default SEPARATOR ','",
            "mariadb-to-days": "TO_DAYS(x) is read as DATEDIFF(x, '0000-01-01') + 1",
            "mariadb-nvl2": "NVL2 is read as CASE WHEN NOT x IS NULL …",
            "mariadb-monthname-space": "MONTHNAME, SPACE, UCASE, LCASE read as their synonyms",
            "mariadb-cast-double-float": "CAST(x AS INTEGER) is read as CAST(x AS SIGNED)",
        }.items()
        for dialect in GUARDED_AS["mysql"]
    },
}


# --------------------------------------------------------------------------------------------
# The corpora themselves


def test_corpora_are_large_and_well_formed():
    assert len(ADVERSARIAL) >= 170
    assert len(BENIGN) >= 110
    for entries, keys in ((ADVERSARIAL, {"id", "dialects", "sql", "rule"}), (BENIGN, None)):
        ids = [e["id"] for e in entries]
        assert len(ids) == len(set(ids)), "duplicate ids"
        for entry in entries:
            assert keys is None or set(entry) == keys, entry["id"]
            assert entry["dialects"] == "all" or set(entry["dialects"]) <= set(DIALECTS)
    per_dialect = collections.Counter(
        d for e in ADVERSARIAL for d in (DIALECTS if e["dialects"] == "all" else e["dialects"])
    )
    assert min(per_dialect.values()) >= 80, per_dialect


def test_adversarial_corpus_exercises_every_rule():
    assert {e["rule"] for e in ADVERSARIAL} == RULES


# --------------------------------------------------------------------------------------------
# Adversarial: refused, with the expected rule


@pytest.mark.parametrize(("entry", "dialect"), _cases(ADVERSARIAL))
def test_adversarial_payload_is_refused(entry: dict[str, Any], dialect: str):
    error = refusal(entry["sql"], dialect)
    assert error.rule == entry["rule"], error.message
    assert error.rule in RULES
    assert error.message and len(error.message) < 300
    if len(entry["sql"]) > 40:
        assert entry["sql"] not in error.message  # messages never echo the query


# --------------------------------------------------------------------------------------------
# Benign: passes, same tree apart from the limit, limit bounded, idempotent


def _query_root(tree: exp.Expr) -> exp.Expr:
    while isinstance(tree, exp.Subquery) and not any(
        v for k, v in tree.args.items() if k != "this"
    ):
        tree = tree.this
    return tree


def _without_limit(sql: str, dialect: str) -> exp.Expr:
    tree = sqlglot.parse_one(sql, read=dialect)
    _query_root(tree).set("limit", None)
    return tree


@pytest.mark.parametrize(("entry", "dialect"), _cases(BENIGN))
def test_benign_query_passes_unchanged_in_meaning(entry: dict[str, Any], dialect: str):
    result = guard(entry["sql"], dialect)
    assert 0 <= result.limit <= ROW_LIMIT
    if "expect_limit" in entry:
        assert result.limit == entry["expect_limit"]
    had_limit = _query_root(sqlglot.parse_one(entry["sql"], read=dialect)).args.get("limit")
    assert result.limit_injected == (had_limit is None)
    before = _without_limit(entry["sql"], dialect)
    after = _without_limit(result.sql, dialect)
    if (entry["id"], dialect) in GENERATOR_NORMALISATIONS:
        assert before.sql(dialect) == after.sql(dialect)
    else:
        assert before == after, f"\n in: {entry['sql']}\nout: {result.sql}"
    limit_node = _query_root(sqlglot.parse_one(result.sql, read=dialect)).args["limit"]
    assert limit_node is not None
    assert guard(result.sql, dialect).sql == result.sql  # a fixed point


def _normalise(value: Any) -> Any:
    if isinstance(value, float | decimal.Decimal):
        return round(float(value), 6)
    if isinstance(value, dt.datetime | dt.date | dt.time | dt.timedelta):
        return value.isoformat() if not isinstance(value, dt.timedelta) else str(value)
    return repr(value)


@pytest.fixture(scope="module")
def shop_engines(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """One engine factory per dialect; file databases are private copies of the seeded ones
    (DuckDB refuses a second in-process connection to a file with another configuration)."""
    engines: dict[str, sa.Engine] = {}

    def get(dialect: str) -> sa.Engine:
        if dialect not in engines:
            if dialect in ("sqlite", "duckdb"):
                source: Path = request.getfixturevalue(f"{dialect}_shop")
                copy = tmp_path_factory.mktemp(f"guard_{dialect}") / source.name
                shutil.copy2(source, copy)
                url = f"{dialect}:///{copy}"
            else:
                server = request.getfixturevalue(
                    "pg_urls" if dialect == "postgres" else "mariadb_urls"
                )
                url = server.ro
            engines[dialect] = sa.create_engine(url, pool_size=1)
        return engines[dialect]

    yield get
    for engine in engines.values():
        engine.dispose()


def _rows(engine: sa.Engine, sql: str) -> list[tuple[Any, ...]]:
    with engine.connect() as conn:
        if engine.dialect.name != "sqlite" and engine.dialect.name != "duckdb":
            sql = sql.replace("%", "%%")  # pyformat drivers
        rows = conn.exec_driver_sql(sql).fetchall()
        conn.rollback()
    return [tuple(_normalise(v) for v in row) for row in rows]


@pytest.mark.parametrize(("entry", "dialect"), _cases(BENIGN, on_server=True))
def test_benign_query_returns_the_same_rows(entry: dict[str, Any], dialect: str, shop_engines):
    engine = shop_engines(dialect)
    result = guard(entry["sql"], dialect)
    original = collections.Counter(_rows(engine, entry["sql"]))
    guarded = _rows(engine, result.sql)
    assert len(guarded) == min(sum(original.values()), result.limit)
    assert not collections.Counter(guarded) - original  # every guarded row is an original row


UNCOUNTED_LIMITS = [
    ("sqlite", "SELECT * FROM orders LIMIT (SELECT count(*) FROM orders)"),
    ("duckdb", "SELECT * FROM orders LIMIT (SELECT count(*) FROM orders)"),
    ("postgres", "SELECT * FROM orders LIMIT (SELECT count(*) FROM orders)"),
    ("postgres", "SELECT * FROM orders ORDER BY status FETCH FIRST 5 ROWS WITH TIES"),
    ("duckdb", "SELECT * FROM orders LIMIT 10%"),
    ("duckdb", "SELECT * FROM orders ORDER BY status LIMIT 50 PERCENT"),
    ("sqlite", "SELECT * FROM orders LIMIT '100000'"),
    ("postgres", "SELECT * FROM orders LIMIT '100000'"),
]
"""LIMITs that count no rows the guard can know: each runs as written inside a query the
guard's cap bounds (``SELECT * FROM (…) AS capped LIMIT n``), never refused, never uncapped."""


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [(d, sql) for d, sql in UNCOUNTED_LIMITS],
)
def test_uncounted_limits_run_inside_the_cap(dialect: str, sql: str, shop_engines):
    engine = shop_engines(dialect)
    small = guard(sql, dialect, row_limit=3)
    outer = sqlglot.parse_one(small.sql, read=dialect)
    assert outer.args["limit"] is not None and small.limit == 3 and small.limit_injected
    inner = outer.args["from_"].this
    assert inner.alias == "capped" and inner.this.args["limit"] is not None  # kept as written
    original = collections.Counter(_rows(engine, sql))
    capped = _rows(engine, small.sql)
    assert len(capped) == min(sum(original.values()), 3)
    assert not collections.Counter(capped) - original


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [
        ("tsql", "SELECT TOP 50 PERCENT id FROM orders ORDER BY id"),
        ("tsql", "SELECT TOP 5 WITH TIES id FROM orders ORDER BY status"),
        ("oracle", "SELECT id FROM orders FETCH FIRST 10 PERCENT ROWS ONLY"),
        ("snowflake", "SELECT id FROM orders LIMIT (SELECT 5)"),
        ("clickhouse", "SELECT id FROM orders LIMIT 2 BY status"),
    ],
)
def test_uncounted_limits_are_capped_in_every_family(dialect: str, sql: str):
    result = guard(sql, dialect)
    assert result.limit == ROW_LIMIT and "capped" in result.sql
    assert guard(result.sql, dialect).sql == result.sql


# --------------------------------------------------------------------------------------------
# Focused unit tests


def test_rule_names_are_stable():
    expected = frozenset(
        {
            "parse_error", "multiple_statements", "not_a_query", "forbidden_statement",
            "forbidden_command", "select_into", "locking_clause", "optimizer_hint",
            "server_variable", "executable_comment", "forbidden_function", "file_access",
            "table_function_not_allowed", "table_not_allowed", "unsupported_limit",
            "unfaithful_rewrite", "unsafe_identifier", "value_too_large",
        }
    )  # fmt: skip
    assert expected == RULES


def test_parse_errors_carry_the_parsers_reason():
    error = refusal("SELECT * FROM orders WHERE", "postgres")
    assert error.rule == "parse_error"
    assert "line 1" in error.message and "fix the syntax" in error.message
    error = refusal("SELECT 'unterminated", "sqlite")
    assert error.rule == "parse_error" and "unterminated" in error.message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT '/*!50000 DROP TABLE orders */' AS s",
        "SELECT `/*!50000 x */` FROM (SELECT 1 AS `/*!50000 x */`) t",
        'SELECT "/*M!100000 sleep(5) */" AS s',  # a string in MySQL
        "SELECT 'a\\'/*!b' AS s",  # backslash-escaped quote, still inside the string
    ],
)
def test_executable_comment_check_ignores_strings_and_identifiers(sql: str):
    assert guard(sql, "mysql").limit == ROW_LIMIT


def test_executable_comment_is_refused_before_parsing():
    # sqlglot would parse this fine and drop the comment; MySQL would run the DROP
    assert sqlglot.parse_one("SELECT 1 /*!50000 , sleep(5) */", read="mysql") is not None
    assert refusal("SELECT 1 /*!50000 , sleep(5) */", "mysql").rule == "executable_comment"


def test_limit_is_set_on_the_union_not_on_its_last_branch():
    result = guard("SELECT id FROM customers UNION ALL SELECT id FROM orders", "postgres")
    tree = sqlglot.parse_one(result.sql, read="postgres")
    assert isinstance(tree, exp.Union)
    assert tree.args["limit"].expression.name == "200"
    assert tree.expression.args.get("limit") is None and tree.this.args.get("limit") is None
    assert (result.limit, result.limit_injected, result.limit_clamped) == (200, True, False)


def test_union_limit_is_clamped_in_the_tree():
    result = guard("SELECT id FROM customers UNION SELECT id FROM orders LIMIT 9999", "mysql")
    assert result.sql.endswith("LIMIT 200") and result.limit_clamped


def test_fetch_first_is_clamped_not_replaced():
    result = guard("SELECT id FROM orders ORDER BY id FETCH FIRST 500 ROWS ONLY", "postgres")
    assert result.sql == "SELECT id FROM orders ORDER BY id FETCH FIRST 200 ROWS ONLY"
    assert (result.limit, result.limit_injected, result.limit_clamped) == (200, False, True)


def test_limit_is_never_appended_as_text():
    # a naive "append LIMIT" would land inside the trailing comment
    result = guard("SELECT id FROM orders -- all of them", "sqlite")
    assert result.sql == "SELECT id FROM orders LIMIT 200"
    # and a LIMIT inside a string is data, not the query's limit
    result = guard("SELECT 'LIMIT 5' AS s FROM orders", "duckdb")
    assert result.limit == 200 and result.limit_injected


def test_offset_is_kept_and_small_limits_are_untouched():
    result = guard("SELECT id FROM orders ORDER BY id LIMIT 1000 OFFSET 40", "postgres")
    assert result.sql == "SELECT id FROM orders ORDER BY id LIMIT 200 OFFSET 40"
    result = guard("SELECT id FROM orders LIMIT 5", "postgres")
    assert (result.limit, result.limit_injected, result.limit_clamped) == (5, False, False)


def test_tables_are_qualified_as_the_catalog_names_them():
    sql = "SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id"
    assert guard(sql, "postgres").tables == ("public.customers", "public.orders")
    assert guard(sql, "sqlite").tables == ("customers", "orders")
    assert guard("SELECT * FROM main.orders", "sqlite").tables == ("orders",)
    assert refusal("SELECT * FROM temp.orders", "sqlite").rule == "table_not_allowed"


def test_cte_names_resolve_and_are_not_reported_as_tables():
    sql = "WITH recent AS (SELECT * FROM orders) SELECT * FROM recent JOIN customers ON true"
    assert guard(sql, "postgres").tables == ("public.customers", "public.orders")
    # a CTE may shadow an allowed table; then it is the CTE that is read
    shadow = "WITH customers AS (SELECT 1 AS id) SELECT * FROM customers"
    assert guard(shadow, "duckdb").tables == ()
    # but never a non-allowed one, nor outside its scope, nor before it is defined
    for sql in (
        "WITH secrets AS (SELECT * FROM secrets) SELECT * FROM secrets",
        "SELECT * FROM (WITH secrets AS (SELECT 1 AS x) SELECT * FROM secrets) t, secrets",
        "WITH a AS (SELECT * FROM secrets), secrets AS (SELECT 1 AS x) SELECT * FROM a",
    ):
        assert refusal(sql, "postgres").rule == "table_not_allowed", sql


def test_recursive_cte_sees_itself_only_in_its_recursive_term():
    ok = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) TABLE t"
    assert guard(ok, "duckdb").tables == ()
    # DuckDB reads the *base table* in the anchor and in a non-UNION body
    anchor = "WITH RECURSIVE secrets AS (SELECT * FROM secrets UNION SELECT 1, 'x') SELECT 1"
    assert refusal(anchor, "duckdb").rule == "table_not_allowed"


def test_cte_names_follow_the_dialects_identifier_rules():
    sql = 'WITH "Secrets" AS (SELECT 1 AS x) SELECT * FROM secrets'
    assert refusal(sql, "postgres").rule == "table_not_allowed"  # case-sensitive when quoted
    assert guard(sql, "duckdb").tables == ()  # DuckDB folds even quoted names


def test_quoting_is_preserved():
    sql = 'SELECT "user", "comment", "replace", "set" FROM events'
    assert guard(sql, "postgres").sql == sql + " LIMIT 200"
    sql = "SELECT `user`, `set` FROM events"
    assert guard(sql, "mysql").sql == sql + " LIMIT 200"
    # quoted function names keep their case (they are case-sensitive in PostgreSQL)
    assert '"MyFunc"(id)' in guard('SELECT "MyFunc"(id) FROM orders', "postgres").sql


def test_table_names_follow_the_dialects_case_rules():
    hidden = frozenset({("public", "customers")})
    for sql in ('SELECT * FROM "Customers"', 'SELECT * FROM "PUBLIC".customers'):
        with pytest.raises(UnsafeQueryError, match="table_not_allowed"):
            guard_query(
                sql, dialect="postgres", allowed_tables=hidden, default_schema="public", row_limit=5
            )
    # unquoted names fold in PostgreSQL, so these are the allowed table
    for sql in (
        "SELECT * FROM Customers",
        "SELECT * FROM PUBLIC.CUSTOMERS",
        'SELECT * FROM "customers"',
    ):
        guard_query(
            sql, dialect="postgres", allowed_tables=hidden, default_schema="public", row_limit=5
        )
    # MySQL (case-sensitive table names) and a stored mixed-case name
    with pytest.raises(UnsafeQueryError, match="table_not_allowed"):
        guard_query(
            "SELECT * FROM Customers",
            dialect="mysql",
            allowed_tables={("shop", "customers")},
            default_schema="shop",
            row_limit=5,
        )
    # SQLite ignores case
    guard_query(
        "SELECT * FROM CUSTOMERS",
        dialect="sqlite",
        allowed_tables={(None, "customers")},
        default_schema=None,
        row_limit=5,
    )


def test_output_that_the_database_would_read_differently_is_refused():
    """sqlglot writes JSONB_DELETE_AT_PATH as PostgreSQL's #- operator, a comment in MySQL."""
    error = refusal("SELECT id FROM orders WHERE id > J_S_O_N_B_DELETE_AT_PATH(0, 1)", "mysql")
    assert error.rule == "unfaithful_rewrite"
    error = refusal("SELECT 1 AS `a\nb` FROM orders", "mysql")
    assert error.rule == "unsafe_identifier"


def test_output_drops_comments():
    result = guard("SELECT /* hi */ id FROM orders -- bye", "postgres")
    assert "/*" not in result.sql and "--" not in result.sql


@pytest.mark.parametrize("dialect", ["tsql", "snowflake", "bigquery", "oracle", "trino"])
def test_generic_dialects_still_enforce_the_structural_rules(dialect: str):
    assert refusal("DELETE FROM orders", dialect).rule == "forbidden_statement"
    assert refusal("SELECT 1; SELECT 2", dialect).rule == "multiple_statements"
    assert refusal("SELECT * FROM secrets", dialect).rule == "table_not_allowed"
    assert refusal("SELECT * INTO t FROM orders", dialect).rule in ("select_into", "parse_error")
    assert refusal("SELECT dblink_exec('x')", dialect).rule == "forbidden_function"
    assert refusal("SELECT * FROM some_udtf(1)", dialect).rule == "table_function_not_allowed"
    result = guard("SELECT id FROM orders", dialect)
    assert result.limit_injected and result.tables == (_stored("public.orders", dialect),)
    assert sqlglot.parse_one(result.sql, read=dialect).args.get("limit") is not None


def test_tsql_limit_becomes_top():
    assert guard("SELECT id FROM orders", "tsql").sql == "SELECT TOP 200 id FROM orders"


def test_nul_characters_and_oversized_input_are_refused():
    # libpq would stop reading at the NUL: the server would run a prefix of the guarded SQL
    assert refusal("SELECT id FROM orders WHERE status = 'a\x00' LIMIT 5", "postgres").rule == (
        "parse_error"
    )
    huge = "SELECT id FROM orders WHERE id IN (" + ", ".join(["1"] * 40_000) + ")"
    assert refusal(huge, "sqlite").rule == "parse_error"


@pytest.mark.parametrize(
    ("dialect", "sql", "rule"),
    [
        ("clickhouse", "SELECT id FROM orders SETTINGS max_execution_time = 0", "server_variable"),
        ("tsql", "SELECT id FROM orders OPTION (MAXDOP 1)", "optimizer_hint"),
        ("mysql", "SELECT /*+ MAX_EXECUTION_TIME(0) */ id FROM orders", "optimizer_hint"),
    ],
)
def test_per_query_timeout_and_limit_overrides_are_refused(dialect: str, sql: str, rule: str):
    assert refusal(sql, dialect).rule == rule


def test_mysql_dual_is_not_a_table():
    result = guard("SELECT 1 + 1 AS two FROM dual", "mysql")
    assert result.sql == "SELECT 1 + 1 AS two FROM dual LIMIT 200" and result.tables == ()
    assert refusal("SELECT 1 FROM `dual`", "mysql").rule == "table_not_allowed"


def test_bad_configuration_is_not_a_query_refusal():
    with pytest.raises(ConfigurationError):
        guard("SELECT 1", "no-such-dialect")
    with pytest.raises(ConfigurationError):
        guard("SELECT 1", "postgres", row_limit=0)


def test_guarded_query_is_frozen():
    result = guard("SELECT 1", "sqlite")
    with pytest.raises(ValueError, match="frozen"):
        result.limit = 5  # type: ignore[misc]


def test_standard_sqlglot_functions_are_not_denied():
    """Only the intended typed functions are refused: the denylists have no false positives
    among the ~570 functions sqlglot models (COUNT, DATE_TRUNC, PARSE_URL …), in no family."""
    from relay_nb.sql.guard.policies import FAMILIES
    from relay_nb.sql.guard.policies import base as module

    def subclasses(cls: type) -> set[type]:
        return {s for c in cls.__subclasses__() for s in {c, *subclasses(c)}}

    refused = set()
    for cls in subclasses(exp.Func):
        if issubclass(cls, exp.Anonymous | exp.AnonymousAggFunc):
            continue
        try:
            node = cls()
        except TypeError:  # a mypyc trait (compiled sqlglot): a mixin, not a function
            continue
        for family in FAMILIES:
            if module._function_verdict(node, module.function_names(node), family):
                refused.add(cls)
    assert refused == set(guard_rules.DENIED_FUNCTION_CLASSES)


def test_statement_denylist_survives_sqlglot_upgrades():
    """The module-derived denylist depends on sqlglot's layout (expressions/ddl.py, dml.py):
    if an upgrade moves classes, fail here rather than silently allowing less."""
    derived = set(guard_rules.denied_statement_classes())
    for cls in (exp.Create, exp.Drop, exp.Insert, exp.Delete, exp.Update, exp.Merge, exp.Copy):
        assert cls in derived
    for cls in (exp.Command, exp.Pragma, exp.Attach, exp.Set, exp.Transaction, exp.Install):
        assert cls in derived and issubclass(cls, guard_rules.COMMAND_NODES)
    assert exp.Comprehension not in derived  # DuckDB list comprehensions are queries


def test_denylists_are_lowercase_data():
    for names in (guard_rules.FILE_FUNCTIONS, guard_rules.DENIED_FUNCTIONS):
        assert all(n == n.lower() for n in names)
    assert all(p == p.lower() for p in guard_rules.DENIED_PREFIXES + guard_rules.FILE_PREFIXES)
