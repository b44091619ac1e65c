"""Fingerprint a database and the files around it, to prove an attack changed nothing.

A fingerprint is a SHA-256 over every table's content (all non-system schemas, the secrets
table included), the catalog (tables, views, functions, roles), server settings and the
listing of chosen directories. Tests take one before and after each adversarial payload;
:func:`fingerprint_parts` says *which* part changed when they differ.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from relay_nb.testing.seed import _engine, _family, _lit, _q

__all__ = ["fingerprint", "fingerprint_parts"]

_PG_SYSTEM_SCHEMA = (
    "n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') "
    "AND n.nspname NOT LIKE 'pg\\_temp\\_%' AND n.nspname NOT LIKE 'pg\\_toast\\_temp\\_%'"
)
_MYSQL_SYSTEM_SCHEMAS = ("information_schema", "performance_schema", "mysql", "sys")


def _rows_digest(rows: Sequence[Sequence[Any]]) -> str:
    """Order-independent digest of a result set (sorted in Python: no ORDER BY pitfalls)."""
    h = hashlib.sha256()
    for line in sorted(repr(tuple(row)) for row in rows):
        h.update(line.encode() + b"\n")
    return h.hexdigest()


def _query(conn: Connection, sql: str) -> list[Sequence[Any]]:
    # psycopg and PyMySQL apply %-formatting even without parameters
    if conn.dialect.paramstyle in ("format", "pyformat"):
        sql = sql.replace("%", "%%")
    return list(conn.exec_driver_sql(sql).all())


def _pg_parts(conn: Connection) -> dict[str, str]:
    parts: dict[str, str] = {}
    catalog = {
        "schemas": "SELECT n.nspname, pg_get_userbyid(n.nspowner), n.nspacl::text "
        f"FROM pg_namespace n WHERE {_PG_SYSTEM_SCHEMA}",
        "relations": "SELECT n.nspname, c.relname, c.relkind, pg_get_userbyid(c.relowner), "
        "c.relacl::text, obj_description(c.oid, 'pg_class') FROM pg_class c "
        f"JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {_PG_SYSTEM_SCHEMA}",
        "columns": "SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, "
        "a.atttypmod), a.attnotnull, col_description(c.oid, a.attnum), a.attacl::text "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n "
        f"ON n.oid = c.relnamespace WHERE a.attnum > 0 AND NOT a.attisdropped "
        f"AND {_PG_SYSTEM_SCHEMA}",
        "views": "SELECT schemaname, viewname, definition FROM pg_views "
        "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
        "functions": "SELECT n.nspname, p.proname, pg_get_function_identity_arguments(p.oid), "
        "md5(p.prosrc), p.proacl::text FROM pg_proc p JOIN pg_namespace n "
        f"ON n.oid = p.pronamespace WHERE {_PG_SYSTEM_SCHEMA}",
        "triggers": "SELECT tgrelid::regclass::text, tgname, tgenabled FROM pg_trigger "
        "WHERE NOT tgisinternal",
        "sequences": "SELECT schemaname, sequencename, last_value FROM pg_sequences",
        "extensions": "SELECT extname, extversion FROM pg_extension",
        "roles": "SELECT rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, "
        "rolcanlogin, rolreplication, rolbypassrls, rolconnlimit, rolvaliduntil::text, "
        "rolconfig::text FROM pg_roles",
        "memberships": "SELECT roleid::regrole::text, member::regrole::text, admin_option "
        "FROM pg_auth_members",
        "role_settings": "SELECT setdatabase, setrole, setconfig::text FROM pg_db_role_setting",
        "databases": "SELECT datname, pg_get_userbyid(datdba), datacl::text, datallowconn, "
        "datconnlimit FROM pg_database",
        "settings": "SELECT name, setting FROM pg_settings WHERE context IN "
        "('user', 'superuser', 'sighup', 'superuser-backend', 'backend', 'postmaster')",
        "large_objects": "SELECT oid::text FROM pg_largeobject_metadata",
    }
    for key, sql in catalog.items():
        parts[key] = _rows_digest(_query(conn, sql))
    tables = _query(
        conn,
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n "
        f"ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p', 'm') AND {_PG_SYSTEM_SCHEMA}",
    )
    for schema, name in tables:
        ident = f"{_q('postgresql', schema)}.{_q('postgresql', name)}"
        parts[f"data:{schema}.{name}"] = _rows_digest(_query(conn, f"SELECT * FROM {ident}"))
    return parts


def _mysql_parts(conn: Connection) -> dict[str, str]:
    system = ", ".join(_lit(s) for s in _MYSQL_SYSTEM_SCHEMAS)
    parts: dict[str, str] = {}
    catalog = {
        "schemata": "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME "
        "FROM information_schema.SCHEMATA",
        "tables": "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ENGINE, TABLE_COMMENT "
        f"FROM information_schema.TABLES WHERE TABLE_SCHEMA NOT IN ({system})",
        "columns": "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, "
        "COLUMN_DEFAULT, COLUMN_COMMENT FROM information_schema.COLUMNS "
        f"WHERE TABLE_SCHEMA NOT IN ({system})",
        "views": "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS",
        "routines": "SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE, ROUTINE_DEFINITION "
        "FROM information_schema.ROUTINES",
        "triggers": "SELECT TRIGGER_SCHEMA, TRIGGER_NAME, ACTION_STATEMENT "
        "FROM information_schema.TRIGGERS",
        "events": "SELECT EVENT_SCHEMA, EVENT_NAME, STATUS FROM information_schema.EVENTS",
        "settings": "SHOW GLOBAL VARIABLES",
    }
    for key, sql in catalog.items():
        parts[key] = _rows_digest(_query(conn, sql))
    # users, roles and every grant live in the mysql schema
    for name in (
        "global_priv",
        "db",
        "tables_priv",
        "columns_priv",
        "procs_priv",
        "proxies_priv",
        "roles_mapping",
        "servers",
        "plugin",
    ):
        parts[f"grants:mysql.{name}"] = _rows_digest(_query(conn, f"SELECT * FROM mysql.{name}"))
    tables = _query(
        conn,
        "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
        f"WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN ({system})",
    )
    for schema, name in tables:
        ident = f"{_q('mysql', schema)}.{_q('mysql', name)}"
        parts[f"data:{schema}.{name}"] = _rows_digest(_query(conn, f"SELECT * FROM {ident}"))
    return parts


def _sqlite_parts(conn: Connection) -> dict[str, str]:
    parts = {
        "master": _rows_digest(_query(conn, "SELECT type, name, tbl_name, sql FROM sqlite_master"))
    }
    pragmas = [
        (p, _query(conn, f"PRAGMA {p}"))
        for p in ("user_version", "application_id", "journal_mode", "schema_version", "page_size")
    ]
    parts["settings"] = _rows_digest([(p, repr(v)) for p, v in pragmas])
    for (name,) in _query(conn, "SELECT name FROM sqlite_master WHERE type = 'table'"):
        parts[f"data:{name}"] = _rows_digest(_query(conn, f"SELECT * FROM {_q('sqlite', name)}"))
    return parts


def _duckdb_parts(conn: Connection) -> dict[str, str]:
    internal = "database_name NOT IN ('system', 'temp') AND NOT internal"
    parts = {
        "schemas": _rows_digest(
            _query(
                conn,
                f"SELECT database_name, schema_name, sql FROM duckdb_schemas() WHERE {internal}",
            )
        ),
        "tables": _rows_digest(
            _query(
                conn,
                "SELECT schema_name, table_name, sql, comment FROM duckdb_tables() "
                f"WHERE {internal}",
            )
        ),
        "views": _rows_digest(
            _query(conn, f"SELECT schema_name, view_name, sql FROM duckdb_views() WHERE {internal}")
        ),
        "columns": _rows_digest(
            _query(
                conn,
                "SELECT schema_name, table_name, column_name, data_type, comment "
                f"FROM duckdb_columns() WHERE {internal}",
            )
        ),
        "functions": _rows_digest(
            _query(
                conn,
                "SELECT schema_name, function_name, function_type, macro_definition "
                "FROM duckdb_functions() WHERE NOT internal",
            )
        ),
        "sequences": _rows_digest(
            _query(conn, "SELECT schema_name, sequence_name, last_value FROM duckdb_sequences()")
        ),
        "indexes": _rows_digest(
            _query(conn, "SELECT schema_name, index_name, sql FROM duckdb_indexes()")
        ),
    }
    tables = _query(conn, f"SELECT schema_name, table_name FROM duckdb_tables() WHERE {internal}")
    for schema, name in tables:
        ident = f"{_q('duckdb', schema)}.{_q('duckdb', name)}"
        parts[f"data:{schema}.{name}"] = _rows_digest(_query(conn, f"SELECT * FROM {ident}"))
    return parts


def _listing(path: str | os.PathLike[str]) -> str:
    """Names, sizes and mtimes of a directory's entries (not recursive).

    Sub-directories contribute their name only: a server's own sub-directories (WAL,
    checkpoints) change on their own, while the top-level files (postgresql.auto.conf, a
    dropped ``OUTFILE``, a database file and its journal) are exactly what an attack touches.
    """
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except FileNotFoundError:
        return f"{path}: <missing>"
    except PermissionError:
        return f"{path}: <unreadable>"
    lines = [str(path)]
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            lines.append(f"{entry.name}/")
        else:
            st = entry.stat(follow_symlinks=False)
            lines.append(f"{entry.name}\t{st.st_size}\t{st.st_mtime_ns}")
    return "\n".join(lines)


@contextlib.contextmanager
def _fingerprint_engine(url_or_engine: str | sa.URL | Engine) -> Iterator[Engine]:
    """Open file databases without touching them.

    SQLite is opened ``mode=ro``. A DuckDB file is copied to a private temp dir first:
    DuckDB refuses a second in-process connection with a different configuration, and the
    connector under test may hold the file open read-only with its own settings.
    """
    if isinstance(url_or_engine, Engine):
        yield url_or_engine
        return
    url = sa.make_url(url_or_engine)
    backend = url.get_backend_name()
    database = url.database or ""
    if (
        backend == "sqlite"
        and database not in ("", ":memory:")
        and not database.startswith("file:")
    ):
        uri = Path(database).resolve().as_uri() + "?mode=ro"
        engine = sa.create_engine(
            "sqlite://", poolclass=NullPool, creator=lambda: _sqlite_connect_ro(uri)
        )
        try:
            yield engine
        finally:
            engine.dispose()
        return
    if backend == "duckdb" and database not in ("", ":memory:"):
        tmp = tempfile.mkdtemp(prefix="relay_fp_")
        try:
            copy = Path(tmp) / Path(database).name
            shutil.copy2(database, copy)
            if os.path.exists(database + ".wal"):
                shutil.copy2(database + ".wal", str(copy) + ".wal")
            with _engine(url.set(database=str(copy))) as engine:
                yield engine
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    with _engine(url) as engine:
        yield engine


def _sqlite_connect_ro(uri: str) -> Any:
    import sqlite3

    return sqlite3.connect(uri, uri=True)


def fingerprint_parts(
    admin_url_or_engine: str | sa.URL | Engine, *, paths: Sequence[str | os.PathLike[str]] = ()
) -> dict[str, str]:
    """Per-component digests (catalog, settings, each table, each path) for diagnostics.

    Compare two of these to see *what* an attack changed; :func:`fingerprint` folds them.
    Use the admin URL: the read-only role may not see everything (other roles' tables).
    """
    with _fingerprint_engine(admin_url_or_engine) as engine, engine.connect() as conn:
        family = _family(engine)
        collect = {
            "postgresql": _pg_parts,
            "mysql": _mysql_parts,
            "sqlite": _sqlite_parts,
            "duckdb": _duckdb_parts,
        }[family]
        parts = {f"db:{k}": v for k, v in collect(conn).items()}
        conn.rollback()
    for path in paths:
        parts[f"path:{path}"] = hashlib.sha256(_listing(path).encode()).hexdigest()
    return parts


def fingerprint(
    admin_url_or_engine: str | sa.URL | Engine, *, paths: Sequence[str | os.PathLike[str]] = ()
) -> str:
    """SHA-256 over all content, catalog, roles, settings and the listing of ``paths``."""
    h = hashlib.sha256()
    for key, value in sorted(fingerprint_parts(admin_url_or_engine, paths=paths).items()):
        h.update(f"{key}={value}\n".encode())
    return h.hexdigest()
