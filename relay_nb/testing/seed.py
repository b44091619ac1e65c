"""The seeded ``shop`` database every SQL connector test runs against, in four dialects.

Why one seeder for SQLite, DuckDB, PostgreSQL and MariaDB: the adversarial and benign corpora
run the *same* queries everywhere, and "result correctness against the direct driver" is only
meaningful if every database holds byte-for-byte the same data. The rows are generated here,
in Python, from a fixed random seed (no faker, no network), so they are identical on every
machine and every run; :func:`seed_digest` proves it by hashing the content read back from a
database in a dialect-neutral form and comparing with :func:`expected_seed_digest`.

``relay_nb.testing.fingerprint`` is the other half of the security tests: a SHA-256 over
everything an attack could change (every table's content including ``secrets``, the catalog,
grants and roles, server settings, and the files in chosen directories).

``scripts/services`` calls ``python -m relay_nb.testing.seed ensure ADMIN_URL...``, which
re-seeds only when the content differs from the expected digest, so a second
``scripts/services start`` is fast and never disturbs tests that are using the data.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import random
import sys
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

__all__ = [
    "ALLOWED_TABLES",
    "PG_ONLY_ROW_COUNTS",
    "SECRET_TABLES",
    "SEED_ROW_COUNTS",
    "SEED_TABLES",
    "expected_rows",
    "drop_scratch_database",
    "expected_seed_digest",
    "scratch_database",
    "seed_database",
    "seed_digest",
]

_RANDOM_SEED = 20250101
_CENT = Decimal("0.01")

# --------------------------------------------------------------------------------------------
# Schema: one neutral description, rendered per dialect.
# Column kinds: int, str (varchar/char/text), dec (numeric(10,2)), date, ts (timestamp).


@dataclass(frozen=True)
class _Col:
    name: str
    sql_type: str  # neutral SQL type; "TIMESTAMP" becomes DATETIME on MySQL
    kind: str
    not_null: bool = False
    comment: str | None = None


@dataclass(frozen=True)
class _Table:
    name: str
    columns: tuple[_Col, ...]
    primary_key: tuple[str, ...]
    foreign_keys: tuple[tuple[str, str, str], ...] = ()  # (column, ref_table, ref_column)
    comment: str | None = None


_TABLES: tuple[_Table, ...] = (
    _Table(
        "customers",
        (
            _Col("id", "INTEGER", "int", True),
            _Col("name", "VARCHAR(80)", "str", True),
            _Col("email", "VARCHAR(120)", "str", comment="Contact e-mail; NULL when unknown"),
            _Col("country", "CHAR(2)", "str", comment="ISO 3166-1 alpha-2 country code"),
            _Col("signed_up", "DATE", "date", True),
        ),
        ("id",),
        comment="People who have an account in the shop",
    ),
    _Table(
        "products",
        (
            _Col("id", "INTEGER", "int", True),
            _Col("name", "VARCHAR(80)", "str", True),
            _Col("category", "VARCHAR(40)", "str"),
            _Col("price", "NUMERIC(10,2)", "dec", True, comment="List price in EUR"),
        ),
        ("id",),
        comment="The catalogue",
    ),
    _Table(
        "orders",
        (
            _Col("id", "INTEGER", "int", True),
            _Col("customer_id", "INTEGER", "int", True),
            _Col("ordered_at", "TIMESTAMP", "ts", True),
            _Col(
                "status",
                "VARCHAR(20)",
                "str",
                True,
                comment="pending, paid, shipped, delivered, cancelled or refunded",
            ),
            _Col(
                "total",
                "NUMERIC(10,2)",
                "dec",
                comment="Order total in EUR; NULL while the order is not priced yet",
            ),
        ),
        ("id",),
        (("customer_id", "customers", "id"),),
        comment="One row per order placed in 2025-2026",
    ),
    _Table(
        "order_items",
        (
            _Col("order_id", "INTEGER", "int", True),
            _Col("product_id", "INTEGER", "int", True),
            _Col("quantity", "INTEGER", "int", True),
            _Col("unit_price", "NUMERIC(10,2)", "dec", True),
        ),
        ("order_id", "product_id"),
        (("order_id", "orders", "id"), ("product_id", "products", "id")),
        comment="Order lines",
    ),
    _Table(
        "events",
        (
            _Col("id", "INTEGER", "int", True),
            _Col("user", "VARCHAR(40)", "str"),
            _Col("comment", "TEXT", "str", comment="Free text typed by the user"),
            _Col("replace", "VARCHAR(40)", "str"),
            _Col("set", "VARCHAR(40)", "str"),
            _Col("occurred_at", "TIMESTAMP", "ts"),
        ),
        ("id",),
        comment="Audit events; column names are reserved words on purpose",
    ),
    _Table(
        "secrets",
        (_Col("id", "INTEGER", "int", True), _Col("api_key", "VARCHAR(80)", "str")),
        ("id",),
        comment="Must never be exposed to the model",
    ),
)
_TABLE_BY_NAME = {t.name: t for t in _TABLES}

SEED_TABLES: tuple[str, ...] = tuple(t.name for t in _TABLES)
"""Base tables present in every dialect, parents before children."""
SECRET_TABLES: tuple[str, ...] = ("secrets",)
"""Tables the database holds but connector tests keep out of the allowlist."""
ALLOWED_TABLES: tuple[str, ...] = (
    *(t for t in SEED_TABLES if t not in SECRET_TABLES),
    "customer_revenue",
)
"""A sensible connector allowlist: every seeded table and view except the secrets."""

_VIEW_SQL = (
    "CREATE VIEW customer_revenue AS "
    "SELECT customer_id, SUM(total) AS revenue FROM orders GROUP BY customer_id"
)

# --------------------------------------------------------------------------------------------
# Deterministic data.

# word lists read better as text than as 25 one-per-line literals (hence SIM905 off)
_FIRST = (  # noqa: SIM905
    "Ada Alan Grace Edsger Barbara Donald Margaret Ken Frances Linus Radia John Hedy Dennis "
    "Karen Tim Sophie Niklaus Shafi Leslie Anita Guido Bjarne Yukihiro Ruth"
).split()
_LAST = (  # noqa: SIM905
    "Lovelace Turing Hopper Dijkstra Liskov Knuth Hamilton Thompson Allen Torvalds Perlman "
    "McCarthy Lamarr Ritchie Jones Berners-Lee Wilson Wirth Goldwasser Lamport Borg van-Rossum "
    "Stroustrup Matsumoto Teitelbaum"
).split()
_COUNTRIES = ("US", "GB", "DE", "FR", "NL", "SE", "JP", "BR", "IN", "CA")
_PRODUCTS = (
    ("Espresso beans 1kg", "coffee"),
    ("Filter coffee 500g", "coffee"),
    ("Decaf beans 250g", "coffee"),
    ("Green tea 100g", "tea"),
    ("Earl Grey 200g", "tea"),
    ("Rooibos 100g", "tea"),
    ("Pour-over kettle", "equipment"),
    ("Burr grinder", "equipment"),
    ("French press", "equipment"),
    ("Espresso machine", "equipment"),
    ("Milk frother", "equipment"),
    ("Ceramic mug", "tableware"),
    ("Glass teapot", "tableware"),
    ("Travel tumbler", "tableware"),
    ("Paper filters x100", "supplies"),
    ("Descaler", "supplies"),
    ("Cleaning tablets", "supplies"),
    ("Gift card 25", None),
    ("Gift card 50", None),
    ("Barista course", "services"),
)
_STATUSES = ("pending", "paid", "shipped", "delivered", "cancelled", "refunded")
_STATUS_WEIGHTS = (10, 20, 15, 45, 6, 4)
# strings that must survive a guard untouched (benign corpus) and look like attacks
_TRICKY_COMMENTS = (
    "first; second",
    "-- not a comment",
    "DROP TABLE customers",
    "show me LIMIT 5",
    "it's quoted",
    "/* not a block comment */",
    "SELECT * FROM secrets",
    "semicolon at end;",
    'double "quotes"',
    "café ☕ naïve",
    "'; DROP TABLE customers; --",
    "UNION SELECT api_key FROM secrets",
)
_PLAIN_COMMENTS = (
    "viewed product page",
    "added to basket",
    "checked out",
    "asked for a refund",
    "changed address",
    "subscribed to newsletter",
    None,
)
_SETTINGS = ("theme", "language", "currency", "newsletter", None)
_REPLACE = ("none", "partial", "full", None)


def _generate() -> dict[str, list[tuple[Any, ...]]]:
    """Build every table's rows from one fixed-seed RNG; order of draws is part of the data."""
    rng = random.Random(_RANDOM_SEED)
    rows: dict[str, list[tuple[Any, ...]]] = {}

    customers = []
    for cid in range(1, 51):
        first, last = rng.choice(_FIRST), rng.choice(_LAST)
        email = None if rng.random() < 0.12 else f"{first}.{last}{cid}@example.com".lower()
        country = None if rng.random() < 0.04 else rng.choice(_COUNTRIES)
        signed_up = dt.date(2023, 1, 1) + dt.timedelta(days=rng.randrange(0, 1095))
        customers.append((cid, f"{first} {last}", email, country, signed_up))
    rows["customers"] = customers

    products = []
    prices: dict[int, Decimal] = {}
    for pid, (name, category) in enumerate(_PRODUCTS, start=1):
        price = (Decimal(rng.randrange(299, 49999)) / 100).quantize(_CENT)
        prices[pid] = price
        products.append((pid, name, category, price))
    rows["products"] = products

    start = dt.datetime(2025, 1, 1)
    span_s = int((dt.datetime(2027, 1, 1) - start).total_seconds())
    orders, items = [], []
    for oid in range(1, 301):
        customer_id = rng.randint(1, 50)
        ordered_at = start + dt.timedelta(seconds=rng.randrange(span_s))
        status = rng.choices(_STATUSES, _STATUS_WEIGHTS)[0]
        total = Decimal("0.00")
        for pid in sorted(rng.sample(range(1, 21), rng.randint(1, 5))):
            quantity = rng.randint(1, 4)
            discount = Decimal(rng.choice((100, 100, 100, 90, 75))) / 100
            unit_price = (prices[pid] * discount).quantize(_CENT)
            items.append((oid, pid, quantity, unit_price))
            total += unit_price * quantity
        unpriced = status == "pending" and rng.random() < 0.5
        orders.append((oid, customer_id, ordered_at, status, None if unpriced else total))
    rows["orders"] = orders
    rows["order_items"] = items

    events = []
    for eid in range(1, 101):
        user = None if rng.random() < 0.05 else f"user_{rng.randint(1, 50)}"
        tricky = _TRICKY_COMMENTS[(eid // 4) % len(_TRICKY_COMMENTS)]
        comment = tricky if eid % 4 == 0 else rng.choice(_PLAIN_COMMENTS)
        occurred = start + dt.timedelta(seconds=rng.randrange(span_s))
        events.append((eid, user, comment, rng.choice(_REPLACE), rng.choice(_SETTINGS), occurred))
    rows["events"] = events

    rows["secrets"] = [
        (1, "sk-test-" + "a1" * 16),
        (2, "sk-test-" + "b2" * 16),
        (3, "sk-test-" + "c3" * 16),
    ]
    return rows


_ROWS = _generate()
_AUDIT_ROWS = [(i, f"internal note {i}") for i in range(1, 6)]

SEED_ROW_COUNTS: dict[str, int] = {name: len(_ROWS[name]) for name in SEED_TABLES}
"""Rows per seeded base table, identical in every dialect."""
PG_ONLY_ROW_COUNTS: dict[str, int] = {"internal.audit": len(_AUDIT_ROWS)}
"""PostgreSQL also has schema ``internal`` (for schema-qualification tests)."""


def expected_rows(table: str) -> list[tuple[Any, ...]]:
    """The seeded rows of ``table`` as Python values (Decimal, date, datetime), by key."""
    return list(_ROWS[table])


# --------------------------------------------------------------------------------------------
# Engines and dialects.


@contextlib.contextmanager
def _engine(url_or_engine: str | sa.URL | Engine) -> Iterator[Engine]:
    """Borrow a caller's engine, or own (and dispose) one built from a URL."""
    if isinstance(url_or_engine, Engine):
        yield url_or_engine
        return
    url = sa.make_url(url_or_engine)
    connect_args: dict[str, Any] = {}
    if url.get_backend_name() in ("postgresql", "mysql", "mariadb"):
        connect_args["connect_timeout"] = 10
    engine = sa.create_engine(url, poolclass=NullPool, connect_args=connect_args)
    try:
        yield engine
    finally:
        engine.dispose()


def _family(engine: Engine) -> str:
    name = engine.dialect.name
    if name in ("mysql", "mariadb"):
        return "mysql"
    if name in ("sqlite", "duckdb", "postgresql"):
        return name
    raise ValueError(f"seed_database supports sqlite, duckdb, postgresql, mysql; not {name!r}")


def _q(family: str, ident: str) -> str:
    """Quote every identifier: ``user``, ``comment``, ``replace`` and ``set`` need it."""
    if family == "mysql":
        return "`" + ident.replace("`", "``") + "`"
    return '"' + ident.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _column_type(family: str, col: _Col) -> str:
    if col.sql_type == "TIMESTAMP" and family == "mysql":
        return "DATETIME"  # MySQL TIMESTAMP converts time zones and auto-updates
    return col.sql_type


def _create_table_sql(family: str, table: _Table) -> str:
    q = lambda ident: _q(family, ident)  # noqa: E731
    parts = []
    for col in table.columns:
        line = f"{q(col.name)} {_column_type(family, col)}"
        if col.not_null:
            line += " NOT NULL"
        if family == "mysql" and col.comment:
            line += f" COMMENT {_lit(col.comment)}"
        parts.append(line)
    parts.append(f"PRIMARY KEY ({', '.join(q(c) for c in table.primary_key)})")
    for column, ref_table, ref_column in table.foreign_keys:
        parts.append(f"FOREIGN KEY ({q(column)}) REFERENCES {q(ref_table)} ({q(ref_column)})")
    sql = f"CREATE TABLE {q(table.name)} (\n  " + ",\n  ".join(parts) + "\n)"
    if family == "mysql":
        sql += " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
        if table.comment:
            sql += f" COMMENT={_lit(table.comment)}"
    return sql


def _comment_sql(family: str) -> list[str]:
    if family not in ("postgresql", "duckdb"):
        return []  # MySQL comments are inline; SQLite has none
    out = []
    for table in _TABLES:
        if table.comment:
            out.append(f"COMMENT ON TABLE {_q(family, table.name)} IS {_lit(table.comment)}")
        for col in table.columns:
            if col.comment:
                target = f"{_q(family, table.name)}.{_q(family, col.name)}"
                out.append(f"COMMENT ON COLUMN {target} IS {_lit(col.comment)}")
    return out


def _to_db(family: str, kind: str, value: Any) -> Any:
    """SQLite stores dates as ISO text (its date functions expect that), seconds precision."""
    if value is None or family != "sqlite":
        return value
    if kind == "date":
        return value.isoformat()
    if kind == "ts":
        return value.isoformat(sep=" ")
    if kind == "dec":
        return str(value)  # NUMERIC affinity turns it into 12.34, without float noise
    return value


def _insert(conn: Connection, family: str, table: _Table, rows: Sequence[tuple[Any, ...]]) -> None:
    # quoted_name(..., True) forces quoting, so reserved words are safe in every dialect
    cols = [sa.column(sa.sql.quoted_name(c.name, True)) for c in table.columns]
    target = sa.table(sa.sql.quoted_name(table.name, True), *cols)
    kinds = [c.kind for c in table.columns]
    for start in range(0, len(rows), 250):
        batch = [
            {
                c.name: _to_db(family, k, v)
                for c, k, v in zip(table.columns, kinds, row, strict=True)
            }
            for row in rows[start : start + 250]
        ]
        conn.execute(sa.insert(target).values(batch))


def seed_database(url_or_engine: str | sa.URL | Engine) -> None:
    """(Re)create the shop schema and fill it; existing shop objects are dropped first.

    Runs in one transaction where the dialect allows it (PostgreSQL, SQLite, DuckDB), so a
    failed seed leaves the previous state. The ``relay_ro`` grants are the services
    script's job (they need a superuser), not this function's.
    """
    with _engine(url_or_engine) as engine:
        family = _family(engine)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP VIEW IF EXISTS {_q(family, 'customer_revenue')}")
            for table in reversed(_TABLES):
                conn.exec_driver_sql(f"DROP TABLE IF EXISTS {_q(family, table.name)}")
            if family == "postgresql":
                conn.exec_driver_sql("DROP SCHEMA IF EXISTS internal CASCADE")
            for table in _TABLES:
                conn.exec_driver_sql(_create_table_sql(family, table))
            conn.exec_driver_sql(_VIEW_SQL)
            for statement in _comment_sql(family):
                conn.exec_driver_sql(statement)
            for table in _TABLES:
                _insert(conn, family, table, _ROWS[table.name])
            if family == "postgresql":
                conn.exec_driver_sql("CREATE SCHEMA internal")
                conn.exec_driver_sql("CREATE TABLE internal.audit (id integer, note text)")
                conn.exec_driver_sql("COMMENT ON TABLE internal.audit IS 'Back-office notes'")
                conn.execute(
                    sa.text("INSERT INTO internal.audit (id, note) VALUES (:id, :note)"),
                    [{"id": i, "note": n} for i, n in _AUDIT_ROWS],
                )


# --------------------------------------------------------------------------------------------
# Dialect-neutral content digest: proves the four databases hold the same data.


def _normalise(kind: str, value: Any) -> str:
    if value is None:
        return "NULL"
    if kind == "int":
        return str(int(value))
    if kind == "dec":
        return str(Decimal(str(value)).quantize(_CENT))
    if kind == "date":
        if isinstance(value, str):
            value = dt.date.fromisoformat(value)
        if isinstance(value, dt.datetime):
            value = value.date()
        return value.isoformat()
    if kind == "ts":
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value)
        return value.replace(tzinfo=None).isoformat(sep=" ")
    return str(value)


def _digest_rows(table: _Table, rows: Sequence[Sequence[Any]]) -> str:
    kinds = [c.kind for c in table.columns]
    lines = sorted(
        "\x1f".join(_normalise(k, v) for k, v in zip(kinds, row, strict=True)) for row in rows
    )
    h = hashlib.sha256(table.name.encode())
    for line in lines:
        h.update(b"\x1e" + line.encode())
    return h.hexdigest()


def expected_seed_digest() -> str:
    """What :func:`seed_digest` returns for a correctly seeded database of any dialect."""
    h = hashlib.sha256()
    for table in _TABLES:
        h.update(_digest_rows(table, _ROWS[table.name]).encode())
    return h.hexdigest()


def seed_digest(url_or_engine: str | sa.URL | Engine) -> str | None:
    """Digest of the seeded tables' content as stored; None when a table is missing."""
    with _engine(url_or_engine) as engine, engine.connect() as conn:
        family = _family(engine)
        h = hashlib.sha256()
        for table in _TABLES:
            cols = ", ".join(_q(family, c.name) for c in table.columns)
            try:
                rows = conn.exec_driver_sql(f"SELECT {cols} FROM {_q(family, table.name)}").all()
            except DBAPIError:
                return None
            h.update(_digest_rows(table, rows).encode())
        return h.hexdigest()


# --------------------------------------------------------------------------------------------
# CLI for scripts/services.


def _ensure(url: str) -> str:
    """Seed unless the database already holds exactly the expected data."""
    if seed_digest(url) == expected_seed_digest():
        return "verified"
    seed_database(url)
    if seed_digest(url) != expected_seed_digest():
        raise RuntimeError("seeded data does not read back identically")
    return "seeded"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m relay_nb.testing.seed ensure|seed|verify URL...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] not in ("ensure", "seed", "verify"):
        print("usage: python -m relay_nb.testing.seed ensure|seed|verify URL...", file=sys.stderr)
        return 2
    status = 0
    for url in args[1:]:
        shown = sa.make_url(url).render_as_string(hide_password=True)
        if args[0] == "ensure":
            print(f"{shown}: {_ensure(url)}")
        elif args[0] == "seed":
            seed_database(url)
            print(f"{shown}: seeded")
        else:
            ok = seed_digest(url) == expected_seed_digest()
            print(f"{shown}: {'ok' if ok else 'DIFFERS from the expected seed'}")
            status |= 0 if ok else 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())


def drop_scratch_database(conn: Connection, name: str) -> None:
    """Drop a test's private database on an AUTOCOMMIT admin connection, whatever holds it.

    PostgreSQL's ``WITH (FORCE)`` terminates the sessions our tests left open, but refuses a
    non-superuser when an autovacuum worker (a superuser process, busy with freshly seeded
    rows) is connected; a plain ``DROP DATABASE`` tells autovacuum to exit and waits for it.
    """
    if conn.dialect.name != "postgresql":
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        return
    try:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    except DBAPIError:
        conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")


@contextlib.contextmanager
def scratch_database(admin_url: str | sa.URL, prefix: str) -> Iterator[str]:
    """A new, empty database ``<prefix>_<8 hex>`` on the server of ``admin_url`` (PostgreSQL
    or MariaDB), as a URL with the same login; dropped afterwards, whatever holds it."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
        try:
            yield sa.make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                drop_scratch_database(conn, name)
    finally:
        admin.dispose()
