"""Private, WRITABLE seeded shop databases for the SQL fuzz properties.

Why writable, and why private: "the database is unchanged after anything the guard accepted"
only means something if a write *could* have happened. So the guarded SQL runs here over a
plain owner connection in autocommit — no read-only transaction, no ``query_only`` — on a
copy nobody else reads (fresh SQLite/DuckDB files; a scratch database on the PostgreSQL and
MariaDB services, dropped afterwards). The read-only execution layer is tested elsewhere; here
the guard is the only wall.

:meth:`FuzzDatabase.state` is the before/after evidence: the fingerprint parts of this
database only (its tables, catalog, sequences, large objects) plus the listing of the
directories a file-writing attack would touch. Server-wide parts (roles, settings, the list
of databases) are left out, because other test sessions change them concurrently.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.testing.fingerprint import fingerprint_parts
from relay_nb.testing.seed import ALLOWED_TABLES, SEED_TABLES, drop_scratch_database, seed_database

__all__ = ["DIALECTS", "FuzzDatabase", "open_file_database", "open_server_database"]

DIALECTS = ("sqlite", "duckdb", "postgres", "mysql")
"""sqlglot's names; ``mysql`` is the MariaDB service."""
STATEMENT_TIMEOUT_S = 10
# server-wide fingerprint parts: other sessions change them while we run
_SHARED_PARTS = ("roles", "memberships", "role_settings", "databases", "settings", "schemata")


_CATALOG_SQL = {
    "sqlite": lambda schema: "SELECT type, name, sql FROM sqlite_master",
    "duckdb": lambda schema: (
        "SELECT database_name, schema_name, table_name FROM duckdb_tables() UNION ALL "
        "SELECT database_name, schema_name, view_name FROM duckdb_views() WHERE NOT internal "
        "UNION ALL SELECT database_name, schema_name, sequence_name FROM duckdb_sequences() "
        "UNION ALL SELECT 'secret', type, name FROM duckdb_secrets()"  # macros: see state()
    ),
    "postgres": lambda schema: (
        "SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') "
        "AND n.nspname NOT LIKE 'pg\\_%' UNION ALL SELECT 'lo', oid::text, '' "
        "FROM pg_largeobject_metadata"
    ),
    "mysql": lambda schema: (
        "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES "
        f"WHERE TABLE_SCHEMA = '{schema}' UNION ALL SELECT ROUTINE_NAME, ROUTINE_TYPE "
        f"FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = '{schema}'"
    ),
}


_CONTENT_SQL = {
    "duckdb": "SELECT "
    + ", ".join(f'(SELECT count(*) || sum(hash(t)) FROM "{t}" t)' for t in SEED_TABLES),
    "postgres": "SELECT "
    + ", ".join(
        f"(SELECT count(*) || md5(string_agg(t::text, ',' ORDER BY t::text)) FROM \"{t}\" t)"
        for t in SEED_TABLES
    ),
    "mysql": "CHECKSUM TABLE " + ", ".join(f"`{t}`" for t in SEED_TABLES) + " EXTENDED",
}


@dataclass
class FuzzDatabase:
    """One writable seeded shop; ``schema`` is what the guard's allowlist qualifies with."""

    dialect: str
    schema: str | None
    connection: Any
    admin_url: str
    paths: tuple[str, ...] = ()

    @property
    def allowed_tables(self) -> frozenset[tuple[str | None, str]]:
        return frozenset((self.schema, table) for table in ALLOWED_TABLES)

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        """All rows of one statement, sent as is (no driver %-formatting: no parameters)."""
        if self.dialect == "sqlite":
            deadline = time.monotonic() + STATEMENT_TIMEOUT_S
            self.connection.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
            try:
                return [tuple(r) for r in self.connection.execute(sql).fetchall()]
            finally:
                self.connection.set_progress_handler(None, 0)
        if self.dialect == "duckdb":
            return [tuple(r) for r in self.connection.execute(sql).fetchall()]
        with self.connection.cursor() as cursor:
            cursor.execute(sql)
            return [tuple(r) for r in cursor.fetchall()] if cursor.description else []

    def changes(self) -> int | None:
        """Rows written through this connection so far, where the driver counts them."""
        return self.connection.total_changes if self.dialect == "sqlite" else None

    def quick_state(self) -> str:
        """A cheap digest, for a check after every accepted statement: the content of every
        seeded table (one round trip on a server), the names of the schema's objects, and the
        watched directories. The full fingerprint (:meth:`state`) is taken less often."""
        h = hashlib.sha256()
        if self.dialect == "sqlite":
            for table in SEED_TABLES:
                rows = self.run(f'SELECT * FROM "{table}"')
                h.update(repr(sorted(map(repr, rows))).encode())
        else:
            h.update(repr(self.run(_CONTENT_SQL[self.dialect])).encode())
        catalog = self.run(_CATALOG_SQL[self.dialect](self.schema))
        h.update(repr(sorted(map(repr, catalog))).encode())
        for path in self.paths:
            h.update(repr(sorted(os.listdir(path))).encode())
        return h.hexdigest()

    def state(self) -> dict[str, str]:
        """This database's fingerprint parts (see the module docstring)."""
        if self.dialect == "duckdb":
            # DuckDB refuses a second in-process connection to the file with another
            # configuration: close ours (that checkpoints it), fingerprint, reopen
            import duckdb

            self.connection.close()
            try:
                parts = fingerprint_parts(self.admin_url, paths=self.paths)
            finally:
                self.connection = duckdb.connect(sa.make_url(self.admin_url).database)
            return {k: v for k, v in parts.items() if k.removeprefix("db:") not in _SHARED_PARTS}
        parts = fingerprint_parts(self.admin_url, paths=self.paths)
        if self.dialect == "mysql":
            mine = f"db:data:{self.schema}."
            return {k: v for k, v in parts.items() if k.startswith((mine, "path:"))}
        return {k: v for k, v in parts.items() if k.removeprefix("db:") not in _SHARED_PARTS}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()


@contextlib.contextmanager
def open_file_database(dialect: str, directory: Path) -> Iterator[FuzzDatabase]:
    """A fresh seeded SQLite or DuckDB file, alone in ``directory`` (whose listing is part of
    the state: ``ATTACH``, ``COPY TO`` or ``VACUUM INTO`` would create files there)."""
    path = directory / f"shop.{dialect}"
    url = f"{dialect}:///{path}"
    seed_database(url)
    if dialect == "sqlite":
        connection: Any = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        database = FuzzDatabase("sqlite", None, connection, url, (str(directory),))
    else:
        import duckdb

        connection = duckdb.connect(str(path))
        database = FuzzDatabase("duckdb", "main", connection, url, (str(directory),))
    try:
        yield database
    finally:
        database.close()


@contextlib.contextmanager
def open_server_database(
    dialect: str, admin_url: str, paths: Sequence[str] = ()
) -> Iterator[FuzzDatabase]:
    """A scratch database on the PostgreSQL or MariaDB service, seeded, owned by the admin
    login (so writes would succeed), dropped afterwards."""
    name = f"relay_fuzz_{uuid.uuid4().hex[:10]}"
    server = sa.create_engine(admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = sa.make_url(admin_url).set(database=name)
    database: FuzzDatabase | None = None
    try:
        seed_database(url)
        if dialect == "postgres":
            import psycopg

            conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
            connection: Any = psycopg.connect(conninfo, autocommit=True)
            connection.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT_S}s'")
            schema = "public"
        else:
            import pymysql

            connection = pymysql.connect(
                host=url.host,
                port=url.port or 3306,
                user=url.username,
                password=url.password,
                database=name,
                autocommit=True,
                charset="utf8mb4",
            )
            with connection.cursor() as cursor:
                cursor.execute(f"SET SESSION max_statement_time = {STATEMENT_TIMEOUT_S}")
            schema = name
        rendered = url.render_as_string(hide_password=False)
        database = FuzzDatabase(dialect, schema, connection, rendered, tuple(paths))
        yield database
    finally:
        if database is not None:
            database.close()
        with server.connect() as conn:
            drop_scratch_database(conn, name)
        server.dispose()
