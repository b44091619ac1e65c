"""Catalog introspection against real SQLite, DuckDB, PostgreSQL and MariaDB databases.

The shop schema (relay_nb.testing.seed) must read back as the same logical catalog from all
four; the number of catalog statements must not grow with the number of tables (counted with
a ``before_cursor_execute`` listener on the connection, so nothing is estimated).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.connectors.sql.introspect import generic as introspect_generic
from relay_nb.connectors.sql.introspect import introspect
from relay_nb.connectors.sql.introspect.common import CatalogBuilder, compact_type
from relay_nb.errors import ConfigurationError
from relay_nb.sql.catalog.model import Catalog, TableInfo
from relay_nb.testing.seed import scratch_database

# (name, nullable, primary key) per column, in declaration order
SHOP_TABLES = {
    "customers": [
        ("id", False, True),
        ("name", False, False),
        ("email", True, False),
        ("country", True, False),
        ("signed_up", False, False),
    ],
    "products": [
        ("id", False, True),
        ("name", False, False),
        ("category", True, False),
        ("price", False, False),
    ],
    "orders": [
        ("id", False, True),
        ("customer_id", False, False),
        ("ordered_at", False, False),
        ("status", False, False),
        ("total", True, False),
    ],
    "order_items": [
        ("order_id", False, True),
        ("product_id", False, True),
        ("quantity", False, False),
        ("unit_price", False, False),
    ],
    "events": [
        ("id", False, True),
        ("user", True, False),
        ("comment", True, False),
        ("replace", True, False),
        ("set", True, False),
        ("occurred_at", True, False),
    ],
    "secrets": [("id", False, True), ("api_key", True, False)],
}
SHOP_FOREIGN_KEYS = {
    "orders": {(("customer_id",), "customers", ("id",))},
    "order_items": {(("order_id",), "orders", ("id",)), (("product_id",), "products", ("id",))},
}
SHOP_TABLE_COMMENTS = {
    "customers": "People who have an account in the shop",
    "products": "The catalogue",
    "orders": "One row per order placed in 2025-2026",
    "order_items": "Order lines",
    "events": "Audit events; column names are reserved words on purpose",
    "secrets": "Must never be exposed to the model",
}
SHOP_COLUMN_COMMENTS = {
    ("customers", "email"): "Contact e-mail; NULL when unknown",
    ("customers", "country"): "ISO 3166-1 alpha-2 country code",
    ("products", "price"): "List price in EUR",
    ("orders", "status"): "pending, paid, shipped, delivered, cancelled or refunded",
    ("orders", "total"): "Order total in EUR; NULL while the order is not priced yet",
    ("events", "comment"): "Free text typed by the user",
}
DEFAULT_SCHEMA = {"sqlite": None, "duckdb": "main", "postgres": "public", "mysql": "shop"}


@contextmanager
def connected(url: str | sa.URL, **engine_kw) -> Iterator[sa.Connection]:
    engine = sa.create_engine(url, poolclass=NullPool, **engine_kw)
    try:
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


def read(url: str | sa.URL, **kw) -> Catalog:
    with connected(url) as conn:
        return introspect(conn, **kw)


def count_statements(conn: sa.Connection, **kw) -> tuple[Catalog, int]:
    """Introspect and count the statements that reached the driver."""
    executed: list[str] = []

    def listener(conn_, cursor, statement, parameters, context, executemany):
        executed.append(statement)

    sa.event.listen(conn, "before_cursor_execute", listener)
    try:
        catalog = introspect(conn, **kw)
    finally:
        sa.event.remove(conn, "before_cursor_execute", listener)
    return catalog, len(executed)


def logical(table: TableInfo) -> dict:
    """What must agree across dialects and readers (a view column's nullability need not:
    databases derive it differently, and nothing downstream relies on it)."""
    view = table.kind == "view"
    return {
        "kind": table.kind,
        "columns": [(c.name, None if view else c.nullable, c.primary_key) for c in table.columns],
        "foreign_keys": {(fk.columns, fk.ref_table, fk.ref_columns) for fk in table.foreign_keys},
    }


# -- the shop schema, four dialects -----------------------------------------------------------


@pytest.fixture
def shop_catalog(shop_db) -> Catalog:
    return read(shop_db.ro_url)


def test_same_logical_catalog_in_every_dialect(shop_catalog: Catalog):
    catalog = shop_catalog
    assert catalog.default_schema == DEFAULT_SCHEMA[catalog.dialect]
    by_name = {t.name: t for t in catalog.tables}
    # a superset: the servers are shared, and a stray table another test leaves behind is
    # that test's failure to report, not this one's
    assert set(by_name) >= {*SHOP_TABLES, "customer_revenue"}
    assert {t.schema_name for t in catalog.tables} == {catalog.default_schema}
    for name, columns in SHOP_TABLES.items():
        assert logical(by_name[name]) == {
            "kind": "table",
            "columns": columns,
            "foreign_keys": SHOP_FOREIGN_KEYS.get(name, set()),
        }, name
    view = by_name["customer_revenue"]
    assert view.kind == "view"
    assert [c.name for c in view.columns] == ["customer_id", "revenue"]
    assert not view.foreign_keys


def test_comments_where_the_database_keeps_them(shop_catalog: Catalog):
    by_name = {t.name: t for t in shop_catalog.tables}
    if shop_catalog.dialect == "sqlite":  # SQLite has no COMMENT
        assert all(t.comment is None for t in shop_catalog.tables)
        return
    assert {n: by_name[n].comment for n in SHOP_TABLE_COMMENTS} == SHOP_TABLE_COMMENTS
    found = {
        (t.name, c.name): c.comment for t in shop_catalog.tables for c in t.columns if c.comment
    }
    assert found == SHOP_COLUMN_COMMENTS
    assert by_name["customer_revenue"].comment is None  # MySQL's literal 'VIEW' is dropped


def test_types_are_the_databases_own_compact_names(shop_catalog: Catalog):
    types = {(t.name, c.name): c.type for t in shop_catalog.tables for c in t.columns}
    expected = {
        "sqlite": ("integer", "varchar(80)", "numeric(10,2)", "timestamp", "char(2)"),
        "postgres": ("integer", "varchar(80)", "numeric(10,2)", "timestamp", "char(2)"),
        "mysql": ("int", "varchar(80)", "decimal(10,2)", "datetime", "char(2)"),
        "duckdb": ("integer", "varchar", "decimal(10,2)", "timestamp", "varchar"),
    }[shop_catalog.dialect]
    got = (
        types["orders", "id"],
        types["customers", "name"],
        types["orders", "total"],
        types["orders", "ordered_at"],
        types["customers", "country"],
    )
    assert got == expected


def test_reading_twice_gives_an_equal_catalog(shop_db):
    with connected(shop_db.ro_url) as conn:
        assert introspect(conn) == introspect(conn)


def test_tables_restricts_by_bare_or_qualified_name(shop_db):
    backend = sa.make_url(shop_db.ro_url).get_backend_name()
    default = {"postgresql": "public", "mysql": "shop", "mariadb": "shop"}.get(backend, "main")
    catalog = read(shop_db.ro_url, tables=["ORDERS", f"{default}.customers", "customer_revenue"])
    assert [t.name for t in catalog.tables] == ["customer_revenue", "customers", "orders"]
    assert catalog.find("orders") is not None and catalog.find("secrets") is None


def test_unknown_table_names_raise_with_close_matches(shop_db):
    with pytest.raises(ConfigurationError) as excinfo:
        read(shop_db.ro_url, tables=["orders", "ordrs", "custmers", "nothing_like_it"])
    message = str(excinfo.value)
    assert "'ordrs'" in message and "'orders'" in message
    assert "'custmers'" in message and "'customers'" in message
    assert "'nothing_like_it'" in message and "no close match" in message


def test_a_string_instead_of_a_list_is_refused(sqlite_shop):
    with pytest.raises(ConfigurationError, match="list of names"):
        read(f"sqlite:///{sqlite_shop}", tables="orders")  # type: ignore[arg-type]


@pytest.mark.parametrize("schema", ["information_schema", "pg_catalog", "mysql", "sys"])
def test_system_schemas_are_never_read(shop_db, schema):
    with pytest.raises(ConfigurationError, match="never exposed"):
        read(shop_db.ro_url, schemas=[schema])


def test_system_objects_never_appear(shop_catalog: Catalog):
    names = {t.qualified_name.lower() for t in shop_catalog.tables}
    assert not any(n.startswith(("sqlite_", "pg_", "information_schema.")) for n in names)


# -- PostgreSQL schemas, kinds and privileges -------------------------------------------------


def test_pg_schema_qualified_catalog(pg_urls):
    catalog = read(pg_urls.ro, schemas=["public", "internal"])
    names = [t.qualified_name for t in catalog.tables]
    assert names[0] == "internal.audit"  # sorted by (schema, name)
    assert set(names) == {"internal.audit", *(f"public.{t}" for t in SHOP_TABLES)} | {
        "public.customer_revenue"
    }
    audit = catalog.find("internal.audit")
    assert audit is not None and audit.comment == "Back-office notes"
    assert [(c.name, c.type) for c in audit.columns] == [("id", "integer"), ("note", "text")]
    assert catalog.find("orders") is catalog.find("public.orders") is not None


def test_pg_a_qualified_table_pulls_in_its_schema(pg_urls):
    catalog = read(pg_urls.ro, tables=["internal.audit", "orders"])
    assert [t.qualified_name for t in catalog.tables] == ["internal.audit", "public.orders"]


def test_pg_unknown_schema_is_a_configuration_error(pg_urls):
    with pytest.raises(ConfigurationError, match=r"internl.*did you mean 'internal'"):
        read(pg_urls.ro, schemas=["public", "internl"])


@pytest.fixture(scope="module")
def pg_scratch(request) -> Iterator[SimpleNamespace]:
    """A throwaway database, so the shared ``shop`` catalog (and its fingerprints) never move."""
    pg_urls = request.getfixturevalue("pg_urls")
    with scratch_database(pg_urls.admin, "relay_introspect") as url:
        admin = sa.make_url(url)
        yield SimpleNamespace(admin=admin, ro=sa.make_url(pg_urls.ro).set(database=admin.database))


def test_pg_lists_views_materialized_views_and_partitioned_parents(pg_scratch):
    with connected(pg_scratch.admin) as conn, conn.begin():
        conn.exec_driver_sql(
            """
            CREATE SCHEMA kinds;
            CREATE TABLE kinds.measures (id int, taken date) PARTITION BY RANGE (taken);
            CREATE TABLE kinds.measures_2025 PARTITION OF kinds.measures
                FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
            CREATE MATERIALIZED VIEW kinds.summary AS SELECT 1 AS n;
            CREATE VIEW kinds.latest AS SELECT * FROM kinds.measures;
            CREATE TABLE kinds.stamped (at timestamptz(3), span interval, ok boolean,
                                        ratio double precision, tags text[]);
            """
        )
    catalog = read(pg_scratch.admin, schemas=["kinds"])
    assert [(t.name, t.kind) for t in catalog.tables] == [
        ("latest", "view"),
        ("measures", "table"),
        ("stamped", "table"),
        ("summary", "view"),
    ]
    stamped = catalog.find("kinds.stamped")
    assert stamped is not None
    assert [c.type for c in stamped.columns] == [
        "timestamptz(3)",
        "interval",
        "boolean",
        "float8",
        "text[]",
    ]


def test_pg_lists_only_what_the_role_may_select(pg_scratch):
    with connected(pg_scratch.admin) as conn, conn.begin():
        conn.exec_driver_sql(
            f"""
            CREATE SCHEMA priv;
            CREATE TABLE priv.visible (a int, b int);
            CREATE TABLE priv.hidden (a int);
            CREATE TABLE priv.partial (a int, b int);
            GRANT USAGE ON SCHEMA priv TO {pg_scratch.ro.username};
            GRANT SELECT ON priv.visible TO {pg_scratch.ro.username};
            GRANT SELECT (a) ON priv.partial TO {pg_scratch.ro.username};
            """
        )
    catalog = read(pg_scratch.ro, schemas=["priv"])
    assert {t.name: [c.name for c in t.columns] for t in catalog.tables} == {
        "partial": ["a"],
        "visible": ["a", "b"],
    }


def test_pg_same_name_in_two_schemas_must_be_qualified(pg_scratch):
    with connected(pg_scratch.admin) as conn, conn.begin():
        conn.exec_driver_sql(
            "CREATE SCHEMA north; CREATE SCHEMA south; "
            "CREATE TABLE north.sales (id int); CREATE TABLE south.sales (id int)"
        )
    with pytest.raises(ConfigurationError, match=r"'sales' is ambiguous.*qualify"):
        read(pg_scratch.admin, schemas=["north", "south"], tables=["sales"])
    catalog = read(pg_scratch.admin, schemas=["north", "south"], tables=["south.sales"])
    assert [t.qualified_name for t in catalog.tables] == ["south.sales"]


# -- a constant number of statements ----------------------------------------------------------


def _create_chain(conn: sa.Connection, n: int, schema: str | None, quote: str = '"') -> None:
    """``n`` tables t000… each with a pk, a comment-free FK to the previous one, and a view."""
    prefix = f"{quote}{schema}{quote}." if schema else ""
    for i in range(n):
        fk = f", FOREIGN KEY (prev_id) REFERENCES {prefix}t{i - 1:03d} (id)" if i else ""
        conn.exec_driver_sql(
            f"CREATE TABLE {prefix}t{i:03d} (id INTEGER PRIMARY KEY, prev_id INTEGER, "
            f"label VARCHAR(40) NOT NULL, amount NUMERIC(10,2){fk})"
        )
    conn.exec_driver_sql(f"CREATE VIEW {prefix}v_all AS SELECT id FROM {prefix}t000")


def _assert_constant(small: tuple[Catalog, int], large: tuple[Catalog, int], limit: int):
    (small_catalog, small_count), (large_catalog, large_count) = small, large
    assert len(small_catalog.tables) == 6 and len(large_catalog.tables) == 61
    assert sum(len(t.foreign_keys) for t in large_catalog.tables) == 59
    assert small_count == large_count <= limit


def test_statement_count_is_constant_sqlite(tmp_path):
    counts = []
    for n in (5, 60):
        url = f"sqlite:///{tmp_path}/chain{n}.db"
        with connected(url) as conn, conn.begin():
            _create_chain(conn, n, None)
        with connected(url) as conn:
            counts.append(count_statements(conn))
    _assert_constant(*counts, limit=2)


def test_statement_count_is_constant_duckdb(tmp_path):
    counts = []
    for n in (5, 60):
        url = f"duckdb:///{tmp_path}/chain{n}.duckdb"
        with connected(url) as conn, conn.begin():
            _create_chain(conn, n, None)
        with connected(url) as conn:
            counts.append(count_statements(conn))
    _assert_constant(*counts, limit=3)


def test_statement_count_is_constant_postgres(pg_scratch):
    with connected(pg_scratch.admin) as conn, conn.begin():
        for n in (5, 60):
            conn.exec_driver_sql(f"CREATE SCHEMA chain{n}")
            _create_chain(conn, n, f"chain{n}")
    with connected(pg_scratch.admin) as conn:
        counts = [count_statements(conn, schemas=[f"chain{n}"]) for n in (5, 60)]
        both = count_statements(conn, schemas=["chain5", "chain60"])
    _assert_constant(*counts, limit=3)
    assert both[1] == counts[0][1] and len(both[0].tables) == 67


@pytest.fixture
def mariadb_scratch(mariadb_urls) -> Iterator[tuple[sa.URL, list[str]]]:
    admin = sa.make_url(mariadb_urls.admin)
    names = [f"relay_introspect_{uuid.uuid4().hex[:8]}_{n}" for n in (5, 60)]
    try:
        yield admin, names
    finally:
        with connected(admin) as conn:
            for name in names:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{name}`")


def test_statement_count_is_constant_mariadb(mariadb_scratch):
    admin, names = mariadb_scratch
    with connected(admin) as conn:
        for name, n in zip(names, (5, 60), strict=True):
            conn.exec_driver_sql(f"CREATE DATABASE `{name}`")
            _create_chain(conn, n, name, quote="`")
    with connected(admin) as conn:
        counts = [count_statements(conn, schemas=[name]) for name in names]
    _assert_constant(*counts, limit=3)


# -- SQLite specifics, the generic fallback, helpers ------------------------------------------


def test_sqlite_attached_database_is_a_schema(tmp_path, sqlite_shop):
    aux = tmp_path / "aux.db"
    with connected(f"sqlite:///{aux}") as conn, conn.begin():
        conn.exec_driver_sql("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    with connected(f"sqlite:///{sqlite_shop}") as conn:
        conn.exec_driver_sql(f"ATTACH DATABASE '{aux}' AS aux")
        catalog = introspect(conn, schemas=["main", "aux"])
        with pytest.raises(ConfigurationError, match="unknown schema"):
            introspect(conn, schemas=["auxx"])
    assert catalog.find("aux.notes") is not None
    assert catalog.find("orders") is not None and catalog.find("orders").schema_name is None


def test_sqlite_implicit_foreign_key_target_and_name_case(tmp_path):
    url = f"sqlite:///{tmp_path}/fk.db"
    with connected(url) as conn, conn.begin():
        conn.exec_driver_sql("CREATE TABLE Parent (code TEXT PRIMARY KEY, x INT)")
        conn.exec_driver_sql(
            "CREATE TABLE child (id INTEGER PRIMARY KEY, p TEXT REFERENCES parent)"
        )
    child = read(url).find("child")
    assert child is not None
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in child.foreign_keys] == [
        (("p",), "Parent", ("code",))
    ]


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
def test_a_broken_view_does_not_hide_the_rest(tmp_path, kind):
    url = f"{kind}:///{tmp_path}/stale.db"
    with connected(url) as conn, conn.begin():
        for statement in (
            "CREATE TABLE gone (x INTEGER)",
            "CREATE VIEW stale AS SELECT x FROM gone",
            "CREATE VIEW fine AS SELECT 1 AS one",
            "CREATE TABLE kept (y INTEGER PRIMARY KEY)",
            "DROP TABLE gone",
        ):
            conn.exec_driver_sql(statement)
    names = {t.name for t in read(url).tables}
    assert {"kept", "fine"} <= names and "gone" not in names


def _generic(url: str | sa.URL) -> tuple[TableInfo, ...]:
    with connected(url) as conn:
        builder = CatalogBuilder()
        introspect_generic.read(conn, [introspect_generic.default_schema(conn)], builder)
        return builder.build()


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql", "mariadb"])
def test_generic_fallback_reads_the_same_logical_catalog(request, dialect):
    if dialect == "sqlite":
        url = f"sqlite:///{request.getfixturevalue('sqlite_shop')}"
    else:  # MariaDB's inspector needs SHOW VIEW, which the read-only role lacks
        urls = request.getfixturevalue("pg_urls" if dialect == "postgresql" else "mariadb_urls")
        url = urls.ro if dialect == "postgresql" else urls.admin
    native = {t.name: logical(t) for t in read(url).tables}
    generic = {t.name: logical(t) for t in _generic(url)}
    assert generic.keys() >= native.keys()
    assert {n: generic[n] for n in native} == native


@pytest.mark.parametrize(
    ("raw", "dialect", "compact"),
    [
        ("character varying(80)", "postgres", "varchar(80)"),
        ("timestamp(6) without time zone", "postgres", "timestamp(6)"),
        ("time with time zone", "postgres", "timetz"),
        ("NUMERIC(10, 2)", "sqlite", "numeric(10,2)"),
        ("int(11)", "mysql", "int"),
        ("int(10) unsigned", "mysql", "int unsigned"),
        ("tinyint(1)", "mysql", "tinyint(1)"),
        ("DECIMAL(18,3)", "duckdb", "decimal(18,3)"),
        (None, "sqlite", ""),
    ],
)
def test_compact_type(raw, dialect, compact):
    assert compact_type(raw, dialect) == compact
