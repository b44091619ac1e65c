"""Private databases holding secrets in their data, for ``test_secrets_in_data.py``.

One :class:`Store` per engine — SQLite and DuckDB in a temporary file, PostgreSQL and MariaDB
as a private database created by the admin role (``RELAY_TEST_*_ADMIN_URL``), readable by the
read-only role relay_nb connects as, and dropped afterwards. Every store has the same tables
(one per form the secret takes, so a connector given ``tables=[one]`` shows nothing else in
its prompt) and reads back through the raw driver, as the read-only role: a clean scan must
not come from a secret that never reached the table.

The tables (``token`` is a plain secret, ``hostile`` one holding a quote, a backslash,
non-ASCII and HTML specials):

=====================  ================================================================
``vault_cell``         ``v`` text: the token whole (row 1), ``plain`` (row 2)
``vault_text``         ``v`` text: both secrets inside a sentence
``vault_json``         ``v`` JSON/jsonb: the token as a value and as a key
``vault_json_escaped`` ``v`` JSON/jsonb: the hostile secret (JSON text escapes it)
``vault_blob``         ``v`` BLOB/bytea: the token's bytes between non-text bytes
``vault_long``         ``v`` text: a long value whose token straddles ``CLIP_AT``
``vault_columns``      a column named by the token
``vault_comment``      ``v`` with a column comment holding the token (not SQLite)
``vault_nested``       arrays/structs/maps holding the token (PostgreSQL, DuckDB only)
=====================  ================================================================
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from relay_nb.connectors.bounds import CLIP_MARK, clip_value

__all__ = [
    "CLIP_AT",
    "ENGINES",
    "MAX_VALUE_BYTES",
    "DataSecrets",
    "Readback",
    "Store",
    "holds",
    "mongo_url",
    "open_store",
    "service_url",
]

ENGINES = ("sqlite", "duckdb", "postgresql", "mariadb")
MAX_VALUE_BYTES = 256
"""The connectors' ``max_value_bytes`` in the clip scenarios."""
PREFIX_SHOWN = 18
"""How much of the token the clip keeps: ``CANARY`` and the run's 12-digit marker."""
KEPT = len(clip_value("x" * 4 * MAX_VALUE_BYTES, MAX_VALUE_BYTES)) - len(CLIP_MARK)
"""How many characters of a long ASCII value a clip at ``MAX_VALUE_BYTES`` keeps (measured,
so the scenario follows the clip's own arithmetic)."""
CLIP_AT = KEPT - PREFIX_SHOWN
"""Where the token starts in ``vault_long``: the clip cuts it right after its marker."""


@dataclass(frozen=True)
class DataSecrets:
    token: str
    """``SHOP_API_TOKEN``'s value (the suite's canary): plain characters."""
    hostile: str
    """``SHOP_EXPORT_PASSWORD``'s value: a quote, a backslash, é, ``<&>``."""

    def long_text(self) -> str:
        return "x" * CLIP_AT + self.token + " and the rest of a long note"

    def sentence(self) -> str:
        return f"rotate {self.token} monthly; the old one was {self.hostile}"

    def json_text(self) -> str:
        return json.dumps({"api": {"token": self.token}, self.token: "its key"}, ensure_ascii=False)

    def json_escaped_text(self) -> str:
        return json.dumps({"export": {"password": self.hostile}}, ensure_ascii=False)

    def blob(self) -> bytes:
        return b"\x00\x01" + self.token.encode() + b"\xfe\xff"


@dataclass
class Readback:
    """What the raw driver returned: column names and rows, or the error it raised."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    error: str | None = None


@dataclass
class Store:
    engine: str
    url: str
    """What relay_nb connects to, as the read-only role (holds the service's password)."""
    read: Callable[[str], Readback]
    comment: Callable[[str, str], str | None]
    """The comment of ``table.column``, read from the catalog."""
    drop: Callable[[], None]
    quote: str = '"'

    def ident(self, name: str) -> str:
        return f"{self.quote}{name}{self.quote}"


def open_store(engine: str, values: DataSecrets, directory: Path) -> Store:
    return {
        "sqlite": _sqlite,
        "duckdb": _duckdb,
        "postgresql": _postgres,
        "mariadb": _mariadb,
    }[engine](values, directory)


# ------------------------------------------------------------------------------- the tables


def _tables(values: DataSecrets, types: dict[str, str], q: str) -> list[tuple[str, list[Any]]]:
    """(DDL, [rows]) for the tables every engine has; rows are inserted with parameters."""
    text, js, blob = types["text"], types["json"], types["blob"]
    return [
        (f"CREATE TABLE vault_cell (id INTEGER, v {text})", [(1, values.token), (2, "plain")]),
        (f"CREATE TABLE vault_text (id INTEGER, v {text})", [(1, values.sentence())]),
        (f"CREATE TABLE vault_json (id INTEGER, v {js})", [(1, values.json_text())]),
        (
            f"CREATE TABLE vault_json_escaped (id INTEGER, v {js})",
            [(1, values.json_escaped_text())],
        ),
        (f"CREATE TABLE vault_blob (id INTEGER, v {blob})", [(1, values.blob())]),
        (f"CREATE TABLE vault_long (id INTEGER, v {text})", [(1, values.long_text())]),
        (f"CREATE TABLE vault_columns (id INTEGER, {q}{values.token}{q} {text})", [(1, "x")]),
    ]


def _fill(execute: Callable[..., Any], tables: list[tuple[str, list[Any]]], mark: str) -> None:
    for ddl, rows in tables:
        execute(ddl)
        table = ddl.split()[2]
        for row in rows:
            execute(f"INSERT INTO {table} VALUES ({', '.join([mark] * len(row))})", row)


def service_url(name: str) -> str:
    value = os.environ.get(name)
    if value:
        return value
    import pytest

    message = f"{name} is not set: run scripts/services start and source its env file"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: the secrets suite must run whole)", pytrace=False)
    pytest.skip(message)


def _private_name() -> str:
    # never the run's marker: the scan would find it in every message naming the database
    return "relay_sid_" + secrets.token_hex(4)


def _rows(cursor: Any) -> Readback:
    return Readback([d[0] for d in cursor.description or ()], [tuple(r) for r in cursor.fetchall()])


# ------------------------------------------------------------------------------- SQLite


def _sqlite(values: DataSecrets, directory: Path) -> Store:
    path = directory / "vault.sqlite"
    con = sqlite3.connect(path)
    types = {"text": "TEXT", "json": "TEXT", "blob": "BLOB"}
    _fill(con.execute, _tables(values, types, '"'), "?")
    con.commit()
    con.close()

    def read(sql: str) -> Readback:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as ro:
            try:
                return _rows(ro.execute(sql))
            except sqlite3.Error as exc:
                return Readback(error=str(exc))

    return Store("sqlite", f"sqlite:///{path}", read, lambda t, c: None, lambda: None)


# ------------------------------------------------------------------------------- DuckDB


def _duckdb(values: DataSecrets, directory: Path) -> Store:
    import duckdb

    path = directory / "vault.duckdb"
    con = duckdb.connect(str(path))
    types = {"text": "VARCHAR", "json": "JSON", "blob": "BLOB"}
    _fill(con.execute, _tables(values, types, '"'), "?")
    con.execute("CREATE TABLE vault_comment (id INTEGER, v VARCHAR)")
    con.execute("INSERT INTO vault_comment VALUES (1, 'x')")
    con.execute(f"COMMENT ON COLUMN vault_comment.v IS 'rotated from {values.token}'")
    con.execute(
        "CREATE TABLE vault_nested (id INTEGER, lst VARCHAR[], st STRUCT(token VARCHAR), "
        "mp MAP(VARCHAR, INTEGER))"
    )
    con.execute(
        "INSERT INTO vault_nested VALUES (1, [?], {'token': ?}, MAP([?], [1]))",
        [values.token] * 3,
    )
    con.close()

    def read(sql: str) -> Readback:
        with duckdb.connect(str(path), read_only=True) as ro:
            try:
                return _rows(ro.execute(sql))
            except duckdb.Error as exc:
                return Readback(error=str(exc))

    def comment(table: str, column: str) -> str | None:
        found = read(
            "SELECT comment FROM duckdb_columns() "
            f"WHERE table_name = '{table}' AND column_name = '{column}'"
        )
        return found.rows[0][0] if found.rows else None

    return Store("duckdb", f"duckdb:///{path}", read, comment, lambda: None)


# ------------------------------------------------------------------------------- PostgreSQL


def _postgres(values: DataSecrets, directory: Path) -> Store:
    import psycopg
    from sqlalchemy import make_url

    admin = make_url(service_url("RELAY_TEST_PG_ADMIN_URL"))
    ro = make_url(service_url("RELAY_TEST_PG_URL"))
    name = _private_name()
    server = {"host": admin.host, "port": admin.port}
    as_admin = {**server, "user": admin.username, "password": admin.password}
    with psycopg.connect(dbname=admin.database, autocommit=True, **as_admin) as con:
        con.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(dbname=admin.database, autocommit=True, **as_admin) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    try:
        with psycopg.connect(dbname=name, autocommit=True, **as_admin) as con:
            types = {"text": "text", "json": "jsonb", "blob": "bytea"}
            _fill(con.execute, _tables(values, types, '"'), "%s")
            con.execute("CREATE TABLE vault_comment (id integer, v text)")
            con.execute("INSERT INTO vault_comment VALUES (1, 'x')")
            con.execute(f"COMMENT ON COLUMN vault_comment.v IS 'rotated from {values.token}'")
            con.execute("CREATE TABLE vault_nested (id integer, arr text[])")
            con.execute("INSERT INTO vault_nested VALUES (1, %s)", ([values.token, "old"],))
            con.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {ro.username}")
    except BaseException:
        drop()
        raise

    def read(sql: str) -> Readback:
        with psycopg.connect(
            dbname=name, user=ro.username, password=ro.password, autocommit=True, **server
        ) as con:
            try:
                return _rows(con.execute(sql))
            except psycopg.Error as exc:
                return Readback(error=str(exc))

    def comment(table: str, column: str) -> str | None:
        found = read(
            f"SELECT col_description('{table}'::regclass, attnum) FROM pg_attribute "
            f"WHERE attrelid = '{table}'::regclass AND attname = '{column}'"
        )
        return found.rows[0][0] if found.rows else None

    url = ro.set(database=name).render_as_string(hide_password=False)
    return Store("postgresql", url, read, comment, drop)


# ------------------------------------------------------------------------------- MariaDB


def _mariadb(values: DataSecrets, directory: Path) -> Store:
    import pymysql
    from sqlalchemy import make_url

    admin = make_url(service_url("RELAY_TEST_MARIADB_ADMIN_URL"))
    ro = make_url(service_url("RELAY_TEST_MARIADB_URL"))
    name = _private_name()
    server = {"host": admin.host, "port": admin.port, "charset": "utf8mb4", "autocommit": True}

    def admin_connection(database: str | None = None) -> Any:
        return pymysql.connect(
            user=admin.username, password=admin.password, database=database, **server
        )

    with admin_connection() as con, con.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        cur.execute("SELECT host FROM mysql.user WHERE user = %s", (ro.username,))
        hosts = [row[0] for row in cur.fetchall()]

    def drop() -> None:
        with admin_connection() as con, con.cursor() as cur:
            for host in hosts:  # a grant outlives its database: take it back first
                cur.execute(f"REVOKE SELECT ON `{name}`.* FROM %s@%s", (ro.username, host))
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")

    try:
        with admin_connection(name) as con, con.cursor() as cur:
            types = {"text": "LONGTEXT", "json": "JSON", "blob": "LONGBLOB"}
            _fill(cur.execute, _tables(values, types, "`"), "%s")
            cur.execute(
                "CREATE TABLE vault_comment (id INTEGER, "
                f"v LONGTEXT COMMENT 'rotated from {values.token}')"
            )
            cur.execute("INSERT INTO vault_comment VALUES (1, 'x')")
            for host in hosts:
                cur.execute(f"GRANT SELECT ON `{name}`.* TO %s@%s", (ro.username, host))
    except BaseException:
        drop()
        raise

    def read(sql: str) -> Readback:
        with (
            pymysql.connect(user=ro.username, password=ro.password, database=name, **server) as con,
            con.cursor() as cur,
        ):
            try:
                cur.execute(sql)
                return _rows(cur)
            except pymysql.Error as exc:
                return Readback(error=str(exc))

    def comment(table: str, column: str) -> str | None:
        found = read(
            "SELECT column_comment FROM information_schema.columns WHERE table_schema = "
            f"DATABASE() AND table_name = '{table}' AND column_name = '{column}'"
        )
        return found.rows[0][0] if found.rows else None

    url = ro.set(database=name).render_as_string(hide_password=False)
    return Store("mariadb", url, read, comment, drop, quote="`")


# ------------------------------------------------------------------------------- checks


def holds(value: Any, secret: str) -> bool:
    """Whether a raw driver value carries ``secret``: in text (or in the text a JSON value
    decodes to), in bytes, in a container's keys or items."""
    if isinstance(value, str):
        if secret in value:
            return True
        try:
            decoded = json.loads(value)
        except ValueError:
            return False
        return not isinstance(decoded, str) and holds(decoded, secret)
    if isinstance(value, bytes | bytearray | memoryview):
        return secret.encode() in bytes(value)
    if isinstance(value, dict):
        return any(holds(k, secret) or holds(v, secret) for k, v in value.items())
    if isinstance(value, Sequence):
        return any(holds(item, secret) for item in value)
    return False


def mongo_url(base: str, database: str) -> str:
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, ""))
