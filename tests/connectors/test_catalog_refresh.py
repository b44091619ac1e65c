"""Schema change detection on real engines: ``refresh()`` of an unchanged catalog is one
statement and keeps the same object; every kind of change the catalog shows is seen.

Each engine gets a scratch database of its own (files for SQLite and DuckDB, a database on
the PostgreSQL and MariaDB servers), so the shared seeded shop is never altered.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.connectors.sql.introspect import fingerprint, introspect
from relay_nb.sql.prompt.render import render_catalog
from relay_nb.testing.seed import scratch_database

# (what changes, the DDL per engine, how the new catalog shows it); None: not expressible
CHANGES: list[tuple[str, dict[str, str | None]]] = [
    (
        "a new table",
        dict.fromkeys(
            ("sqlite", "duckdb", "postgres", "mysql"), "CREATE TABLE refunds (id INTEGER)"
        ),
    ),
    (
        "a new column",
        dict.fromkeys(
            ("sqlite", "duckdb", "postgres", "mysql"),
            "ALTER TABLE orders ADD COLUMN note VARCHAR(20)",
        ),
    ),
    (
        "a column's type",
        {
            "sqlite": None,
            "duckdb": "ALTER TABLE orders ALTER COLUMN amount TYPE DOUBLE",
            "postgres": "ALTER TABLE orders ALTER COLUMN amount TYPE DOUBLE PRECISION",
            "mysql": "ALTER TABLE orders MODIFY amount DOUBLE",
        },
    ),
    (
        "a renamed column",
        dict.fromkeys(
            ("sqlite", "duckdb", "postgres", "mysql"),
            "ALTER TABLE orders RENAME COLUMN amount TO total",
        ),
    ),
    (
        "a comment",
        {
            "sqlite": None,
            "duckdb": "COMMENT ON COLUMN orders.amount IS 'in euros'",
            "postgres": "COMMENT ON COLUMN orders.amount IS 'in euros'",
            "mysql": "ALTER TABLE orders MODIFY amount INTEGER COMMENT 'in euros'",
        },
    ),
    (
        "a new view",
        dict.fromkeys(
            ("sqlite", "duckdb", "postgres", "mysql"),
            "CREATE VIEW big AS SELECT id FROM orders WHERE amount > 10",
        ),
    ),
    (
        "a renamed key target",
        {
            "sqlite": "ALTER TABLE customers RENAME TO clients",
            "duckdb": None,  # DuckDB refuses to rename a table a key points to
            "postgres": "ALTER TABLE customers RENAME TO clients",
            "mysql": "RENAME TABLE customers TO clients",
        },
    ),
    (
        "a dropped table",
        dict.fromkeys(("sqlite", "duckdb", "postgres", "mysql"), "DROP TABLE extra"),
    ),
]
SETUP = (
    "CREATE TABLE extra (id INTEGER)",
    "CREATE TABLE customers (id INTEGER PRIMARY KEY)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, amount INTEGER, customer_id INTEGER "
    "REFERENCES customers (id))",
)
DATA_ONLY = ("INSERT INTO customers VALUES (1)", "INSERT INTO orders VALUES (1, 5, 1)")


@pytest.fixture(params=["sqlite", "duckdb", "postgres", "mysql"])
def scratch(request: pytest.FixtureRequest, tmp_path) -> Iterator[tuple[str, str]]:
    """``(dialect, url)`` of an empty database of the test's own."""
    kind = request.param
    if kind in ("sqlite", "duckdb"):
        yield kind, f"{kind}:///{tmp_path / ('db.' + kind)}"
        return
    urls = request.getfixturevalue("pg_urls" if kind == "postgres" else "mariadb_urls")
    with scratch_database(urls.admin, "relay_refresh") as url:
        yield kind, url


def run(url: str, *statements: str, reader: SQLConnector | None = None) -> None:
    """Change the database as another client would. DuckDB lets no writer in beside the
    connector's read-only connection, so that one is released first (the pool reopens it)."""
    if reader is not None and url.startswith("duckdb"):
        reader.engine.dispose()
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        engine.dispose()


def token(url: str) -> str | None:
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return fingerprint(conn)
    finally:
        engine.dispose()


@pytest.mark.parametrize(("change", "ddl"), CHANGES, ids=[c for c, _ in CHANGES])
def test_refresh_sees_each_change_and_keeps_an_unchanged_catalog(
    scratch, change, ddl, monkeypatch
) -> None:
    from relay_nb.connectors.sql import connector as connector_module

    reads: list[str] = []

    def counted(conn, **options):  # the real read, counted
        reads.append(conn.dialect.name)
        return introspect(conn, **options)

    monkeypatch.setattr(connector_module, "introspect", counted)
    dialect, url = scratch
    statement = ddl[dialect]
    if statement is None:
        pytest.skip(f"{dialect} cannot express {change}")
    run(url, *SETUP)
    shop = SQLConnector("shop", url)
    try:
        before = shop.catalog
        run(url, *DATA_ONLY, reader=shop)  # rows are not schema: nothing to read again
        assert token(url) == shop._fingerprint
        assert shop.refresh() is before and shop.refresh_if_changed() is False
        assert len(reads) == 1  # the first read only: the checks read no catalog
        run(url, statement, reader=shop)
        assert token(url) != shop._fingerprint, change
        after = shop.refresh()
        assert len(reads) == 2
        assert after is not before and after != before, change
        assert shop.refresh() is after  # and now that is the catalog it keeps
        assert shop.refresh(force=True) == after
    finally:
        shop.close()


def test_a_check_that_fails_falls_back_to_a_full_read(tmp_path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    run(url, *SETUP)
    shop = SQLConnector("shop", url)
    try:
        shop.catalog  # noqa: B018 - read once

        def broken(*_: object, **__: object) -> str:
            raise sa.exc.OperationalError("PRAGMA", {}, Exception("no"))

        monkeypatch.setattr("relay_nb.connectors.sql.connector.fingerprint", broken)
        run(url, "CREATE TABLE refunds (id INTEGER)")
        assert "refunds" in shop.refresh().allowlist().__repr__()
        assert shop._fingerprint is None  # no token: every refresh reads it all
    finally:
        shop.close()


def test_profiles_older_than_their_age_are_read_again(tmp_path, monkeypatch) -> None:
    """Value profiles follow the data: past PROFILE_AGE_S an unchanged schema is read and
    profiled again (and kept as the same object when nothing it shows changed)."""
    from relay_nb.connectors.sql import connector as connector_module

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    run(url, *SETUP, *DATA_ONLY)
    shop = SQLConnector("shop", url)
    try:
        before = shop.catalog
        assert shop.refresh() is before  # young: the check alone
        monkeypatch.setattr(connector_module, "PROFILE_AGE_S", 0.0)
        assert shop.refresh() is before  # read again, equal: the same object kept
        run(url, "INSERT INTO orders VALUES (2, 7000, 1)")
        after = shop.refresh()
        assert after is not before  # the new amount is in the profile's range
        amounts = next(t for t in after.tables if t.name == "orders").columns[1].profile
        assert amounts is not None and amounts.high == "7000"
    finally:
        shop.close()


def test_a_render_is_kept_for_the_same_question_until_the_catalog_changes(
    tmp_path, monkeypatch
) -> None:
    """Every model step of a turn renders the schema for the same question: once is enough,
    until a refresh finds a change."""
    from relay_nb.connectors.sql import connector as connector_module

    renders: list[str | None] = []

    def counted(catalog, **options):
        renders.append(options.get("question"))
        return render_catalog(catalog, **options)

    monkeypatch.setattr(connector_module, "render_catalog", counted)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    run(url, *SETUP)
    shop = SQLConnector("shop", url)
    try:
        first = shop.prompt_context(max_tokens=500, question="orders by amount")
        assert shop.prompt_context(max_tokens=500, question="orders by amount") == first
        assert renders == ["orders by amount"]
        shop.prompt_context(max_tokens=500, question="customers")  # another question
        shop.prompt_context(max_tokens=200, question="customers")  # another budget
        assert len(renders) == 3
        shop.refresh()  # unchanged: what was rendered still holds
        shop.prompt_context(max_tokens=500, question="orders by amount")
        assert len(renders) == 3
        run(url, "CREATE TABLE refunds (id INTEGER)")
        shop.refresh()
        assert "refunds" in shop.prompt_context(max_tokens=500, question="orders by amount")
        assert len(renders) == 4
    finally:
        shop.close()


def test_a_renamed_postgres_type_is_seen(request) -> None:
    """A column's type is shown by its name, which lives in pg_type, not in the table's rows."""
    urls = request.getfixturevalue("pg_urls")
    with scratch_database(urls.admin, "relay_refresh") as url:
        run(url, "CREATE TYPE mood AS ENUM ('ok', 'sad')", "CREATE TABLE notes (m mood)")
        shop = SQLConnector("shop", url)
        try:
            before = shop.catalog
            run(url, "ALTER TYPE mood RENAME TO feeling")
            after = shop.refresh()
            assert after is not before
            assert [c.type for c in after.tables[0].columns] == ["feeling"]
        finally:
            shop.close()


def test_a_changed_schema_that_cannot_be_read_leaves_no_stale_allowlist(tmp_path) -> None:
    """The reviewer's case: a re-read that fails must not leave the old catalog (the guard's
    allowlist) behind a new fingerprint, where no later check would see the change."""
    import pytest

    from relay_nb.errors import ConfigurationError, RelayError

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    run(url, *SETUP)
    shop = SQLConnector("shop", url, tables=["orders"])
    try:
        assert [t.name for t in shop.catalog.tables] == ["orders"]
        run(url, "DROP TABLE orders")
        with pytest.raises(ConfigurationError):
            shop.refresh()
        assert shop._catalog is None  # forgotten, not kept
        with pytest.raises(RelayError):
            shop.query("SELECT * FROM orders")  # fails closed: no catalog, no allowlist
        run(url, "CREATE TABLE orders (id INTEGER)")
        assert [t.name for t in shop.refresh().tables] == ["orders"]
    finally:
        shop.close()
