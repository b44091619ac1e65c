"""Value profiling in the catalog pass, on the real seeded shop of every dialect.

Every expectation is checked against the database itself (the bare driver's ``SELECT
DISTINCT`` / ``MIN`` / ``MAX``), never against numbers written here.
"""

from __future__ import annotations

import re
import time

import pytest

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.connectors.sql.readonly import run_read_only
from relay_nb.errors import ConfigurationError
from relay_nb.sql.catalog.model import Catalog, ColumnInfo, TableInfo
from relay_nb.sql.catalog.profile import ProfileSettings, column_kind, profile_catalog
from relay_nb.sql.prompt.describe import describe_tables
from relay_nb.sql.prompt.render import render_catalog

ALL = ["customers", "products", "orders", "order_items", "events", "secrets"]


def column(catalog: Catalog, table: str, name: str) -> ColumnInfo:
    found = catalog.find(table)
    assert found is not None
    return next(c for c in found.columns if c.name == name)


def direct(connector: SQLConnector, sql: str) -> list[tuple]:
    raw = connector.engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute(sql)
        return list(cursor.fetchall())
    finally:
        raw.close()


@pytest.fixture
def shop(shop_db):
    connector = SQLConnector("shop", shop_db.ro_url, tables=ALL)
    yield connector
    connector.close()


def test_low_cardinality_values_ranges_and_null_shares_match_the_data(shop):
    catalog = shop.catalog
    status = column(catalog, "orders", "status").profile
    expected = direct(shop, "SELECT status, COUNT(*) FROM orders GROUP BY status")
    assert status is not None and set(status.values) == {v for v, _ in expected}
    counts = dict(expected)
    assert [counts[v] for v in status.values] == sorted(counts.values(), reverse=True)
    ordered = column(catalog, "orders", "ordered_at").profile
    low, high = direct(shop, "SELECT MIN(ordered_at), MAX(ordered_at) FROM orders")[0]
    assert (ordered.low[:10], ordered.high[:10]) == (str(low)[:10], str(high)[:10])
    email = column(catalog, "customers", "email").profile
    nulls, rows = direct(shop, "SELECT COUNT(*) - COUNT(email), COUNT(*) FROM customers")[0]
    assert email.values == ()  # one per customer: not a category
    assert email.null_share == pytest.approx(nulls / rows, abs=1e-3)
    text = shop.prompt_context()
    assert re.search(r"status varchar[^∈]*? ∈ \{[^}]*'paid'", text)
    assert f"{str(low)[:10]}..{str(high)[:10]}" in text


def test_keys_and_secret_named_columns_are_never_profiled(shop):
    catalog = shop.catalog
    assert column(catalog, "secrets", "api_key").profile is None
    assert column(catalog, "orders", "id").profile is None
    assert column(catalog, "orders", "customer_id").profile is None  # a foreign key
    secret = direct(shop, "SELECT api_key FROM secrets")[0][0]
    assert secret not in shop.prompt_context()
    assert secret not in describe_tables(catalog, ["secrets"])


def test_opting_out_per_connector_and_per_column(shop_db):
    off = SQLConnector("shop", shop_db.ro_url, tables=ALL, profile=False)
    some = SQLConnector(
        "shop", shop_db.ro_url, tables=ALL, profile_exclude=["orders.status", "*.category"]
    )
    try:
        assert all(c.profile is None for t in off.catalog.tables for c in t.columns)
        # the connect check and the prompt's schema source give the catalog read its time,
        # plus the profiling budget
        assert some.startup_timeout_s == off.startup_timeout_s + some.profile.time_budget_s
        from relay_nb.context import ConnectorSchemaSource

        assert ConnectorSchemaSource(some).timeout_s == some.catalog_timeout_s
        assert "∈" not in off.prompt_context()
        assert column(some.catalog, "orders", "status").profile is None
        assert column(some.catalog, "products", "category").profile is None
        assert column(some.catalog, "events", "set").profile.values  # others still are
    finally:
        off.close()
        some.close()


def test_a_table_larger_than_the_sample_shows_the_samples_bounds_only_as_the_samples(shop):
    """No statement reads the whole table: the bounds are the sample's, within the table's,
    labelled in ``describe`` and left out of the prompt's line (never shown as the table's)."""
    catalog = shop.catalog
    shop.profile = ProfileSettings(sample_rows=100, statistics=False)
    statements: list[str] = []
    run = shop._profile_runner()

    def counted(sql: str, timeout_s: float) -> list[tuple]:
        statements.append(sql)
        return run(sql, timeout_s)

    quote = shop.engine.dialect.identifier_preparer.quote_identifier
    profiled = profile_catalog(catalog, shop.profile, counted, quote)
    rows = direct(shop, "SELECT COUNT(*) FROM orders")[0][0]
    assert rows > 100
    assert all("LIMIT 100)" in sql for sql in statements), statements
    ordered = column(profiled, "orders", "ordered_at").profile
    low, high = direct(shop, "SELECT MIN(ordered_at), MAX(ordered_at) FROM orders")[0]
    assert ordered.sampled_rows == 100 and not ordered.from_statistics
    assert str(low)[:10] <= ordered.low[:10] <= ordered.high[:10] <= str(high)[:10]
    detail = describe_tables(profiled, ["orders"])
    assert f"range ≈{ordered.low}..{ordered.high}" in detail
    assert "(in a sample of 100 rows)" in detail
    line = next(x for x in render_catalog(profiled).text.splitlines() if "ordered_at" in x)
    assert ordered.low[:10] not in line.split("ordered_at", 1)[1].split(",", 1)[0]


def test_the_time_budget_bounds_the_pass_and_failures_cost_only_their_table(shop, shop_db):
    unprofiled = SQLConnector("bare", shop_db.ro_url, tables=ALL, profile=False)
    catalog = unprofiled.catalog
    unprofiled.close()

    def slow(sql: str, timeout_s: float) -> list[tuple]:
        time.sleep(0.05)
        return []

    started = time.monotonic()
    settings = ProfileSettings(time_budget_s=0.01)
    quote = shop.engine.dialect.identifier_preparer.quote_identifier
    profile_catalog(catalog, settings, slow, quote)
    assert time.monotonic() - started < 1.0
    position = [t.name for t in catalog.tables].index("orders")

    def failing_on_orders(sql: str, timeout_s: float) -> list[tuple]:
        if quote("orders") in sql:
            raise RuntimeError("permission denied for table orders")
        return direct(shop, sql)

    profiled = profile_catalog(catalog, ProfileSettings(), failing_on_orders, quote)
    assert all(c.profile is None for c in profiled.tables[position].columns)
    assert column(profiled, "products", "category").profile.values


def test_bad_options_say_the_fix(shop_db):
    with pytest.raises(ConfigurationError, match="profile must be True or False"):
        SQLConnector("x", shop_db.ro_url, profile="yes")
    with pytest.raises(ConfigurationError, match="profile_exclude must be column patterns"):
        SQLConnector("x", shop_db.ro_url, profile_exclude=[""])
    with pytest.raises(ConfigurationError, match="profile_time_s must be a positive"):
        SQLConnector("x", shop_db.ro_url, profile_time_s=0)


@pytest.mark.parametrize(
    ("type_", "kind"),
    [
        ("varchar(20)", "text"),
        ("character varying", "text"),
        ("integer", "number"),
        ("numeric(10,2)", "number"),
        ("timestamp with time zone", "temporal"),
        ("date", "temporal"),
        ("jsonb", None),
        ("text[]", None),
        ("interval", None),
        ("bool", None),
    ],
)
def test_column_kinds(type_, kind):
    assert column_kind(type_) == kind


def test_a_cut_value_list_says_so_and_a_whole_one_does_not():
    many = tuple(f"category number {i}" for i in range(12))
    table = TableInfo(
        schema_name=None,
        name="t",
        columns=(
            ColumnInfo(name="few", type="text", profile={"values": ("a", "b")}),
            ColumnInfo(name="many", type="text", profile={"values": many}),
        ),
    )
    text = render_catalog(Catalog(dialect="sqlite", default_schema=None, tables=(table,))).text
    assert "few text? ∈ {'a','b'}" in text
    assert "'category number 0'" in text and ",…}" in text


def test_the_whole_catalog_costs_one_statement_per_kind_when_nothing_fails(shop, shop_db):
    """Counts and bounds, then values: the statements cover every table together, so no
    dialect may split them for its types."""
    unprofiled = SQLConnector("bare", shop_db.ro_url, tables=ALL, profile=False)
    catalog = unprofiled.catalog
    unprofiled.close()
    statements: list[str] = []

    def counted(sql: str, timeout_s: float) -> list[tuple]:
        statements.append(sql)
        return run_read_only(shop.engine, sql, max_rows=2000, timeout_s=timeout_s).rows

    quote = shop.engine.dialect.identifier_preparer.quote_identifier
    profiled = profile_catalog(catalog, ProfileSettings(), counted, quote)
    # PostgreSQL first asks its statistics (none used: every table fits the sample)
    assert len(statements) == (3 if shop.dialect == "postgres" else 2), statements
    assert column(profiled, "orders", "status").profile.values
    assert column(profiled, "orders", "ordered_at").profile.low


def test_a_small_table_lists_categories_but_never_a_persons_data(tmp_path) -> None:
    """In a 4-row table every column has few values: the lookup's names are listed (a
    question says "European"), the people's e-mails, phones and names never are."""
    import sqlite3

    path = tmp_path / "small.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE continents (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute(
            "CREATE TABLE people (id INTEGER PRIMARY KEY, first_name TEXT, email TEXT, "
            "phone TEXT, contact TEXT, tier TEXT, accessToken TEXT, birth_date DATE)"
        )
        conn.executemany(
            "INSERT INTO continents (name) VALUES (?)", [("Europe",), ("Asia",), ("Africa",)]
        )
        conn.executemany(
            "INSERT INTO people (first_name, email, phone, contact, tier, accessToken, birth_date)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    "Ada",
                    "ada@example.com",
                    "+31 6 1",
                    "ada@example.com",
                    "gold",
                    "tk1",
                    "1990-01-02",
                ),
                (
                    "Bo",
                    "bo@example.com",
                    "+31 6 5",
                    "bo@example.com",
                    "silver",
                    "tk2",
                    "1991-03-04",
                ),
            ],
        )
    connector = SQLConnector("small", f"sqlite:///{path}")
    try:
        catalog = connector.catalog
        assert column(catalog, "continents", "name").profile.values == ("Africa", "Asia", "Europe")
        assert column(catalog, "people", "tier").profile.values == ("gold", "silver")
        for name in ("first_name", "email", "phone", "contact"):  # contact: values hold an @
            assert column(catalog, "people", name).profile.values == ()
        assert column(catalog, "people", "accessToken").profile is None  # a secret, camelCase
        birth = column(catalog, "people", "birth_date").profile
        assert birth.low is None and birth.high is None  # someone's birthday is not a range
        text = connector.prompt_context()
        assert "'Europe'" in text and "example.com" not in text and "Ada" not in text
        assert "1990" not in text and "tk1" not in text
    finally:
        connector.close()
