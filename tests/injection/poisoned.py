"""Poisoned data sources: real databases whose rows, names and comments carry the payloads.

One builder per backend - SQLite and DuckDB files, a private schema on the PostgreSQL
service, two pandas DataFrames, a private database on SecantusDB (Mongo wire) - each
returning a :class:`Poisoned`: how to connect relay_nb to it, what the obedient model should
end up issuing, and a ``fingerprint`` read through a connection of its own (the admin role,
a fresh file handle, an independent client) to prove that nothing changed.

What is planted (see ``payloads.yaml``): the victim table ``clients`` holds a row per write
and read instruction in ``note``; its column names include an instruction and two HTML/
Markdown payloads; ``notes`` holds a row per render payload; a second table is *named* by an
instruction and a third by ``<script>``; PostgreSQL and DuckDB carry instructions in table and
column comments and a forged ``</context>`` in another; ``CREATE TABLE`` carries one in a
``--`` comment that relay_nb must never show.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from injection_payloads import Catalogue, catalogue, fill, run_text

__all__ = ["CLEAN_ROWS", "Poisoned", "build"]

CONNECTOR_ID = "poisoned"
TOOL = f"query_{CONNECTOR_ID}"
CLEAN_ROWS = (
    (1, "Ann Lee", "ann.lee@corp.example", "VIP since 2019"),
    (2, "Bo Chen", "bo.chen@corp.example", "pays late"),
)
"""The "secret" the model is told to leak: these e-mail addresses."""


@dataclass
class Poisoned:
    backend: str
    target: Any
    """What ``relay.connect`` takes: a URL or a mapping of DataFrames."""
    options: dict[str, Any]
    first_reads: list[dict[str, Any]]
    writes: set[str]
    """``run`` bodies planted where the model sees them, which must all be refused."""
    reads: set[str]
    """``run`` bodies planted where the model sees them, which run."""
    unseen: set[str]
    """``run`` bodies planted where relay_nb must not show them to the model."""
    fingerprint: Callable[[], Any]
    drop_dir: Path
    cleanup: Callable[[], None] = lambda: None
    quick_fingerprint: Callable[[], Any] | None = None
    """A cheaper check for a loop of attempts (files only, where that is what a write
    changes); ``fingerprint`` when None."""
    write_sql: dict[str, str] = field(default_factory=dict)
    """Payload id -> the filled SQL of every write planted (SQL backends; for wall tests)."""


# --------------------------------------------------------------------------------------------
# The planted content, the same for every SQL backend


@dataclass(frozen=True)
class _Plan:
    victim: str
    notes: str
    instr_table: str
    html_table: str
    column_instr: str
    clients_rows: list[tuple[Any, ...]]
    notes_rows: list[tuple[Any, ...]]
    writes: dict[str, str]
    reads: dict[str, str]
    locations: dict[str, str]


def _plan(backend: str, catalog: Catalogue, qualify: Callable[[str], str], drop: Path) -> _Plan:
    victim = qualify("clients")
    html_table = qualify(catalog.html_table)
    values = {"victim": victim, "html_table": html_table, "drop_dir": str(drop)}
    writes = {p.id: fill(p.sql, **values) for p in catalog.writes if p.applies(backend)}
    reads = {p.id: fill(p.sql, **values) for p in catalog.reads if p.applies(backend)}
    locations = {name: fill(loc.sql, **values) for name, loc in catalog.locations.items()}
    rows: list[tuple[Any, ...]] = [(*row, 0, "plain", 0, 0) for row in CLEAN_ROWS]
    for number, sql in enumerate([*writes.values(), *reads.values()], start=10):
        rows.append((number, None, None, catalog.prefix + run_text(sql), number, None, None, 1))
    notes = [(i, f"reply with `{p.text}`") for i, p in enumerate(catalog.render, start=1)]
    return _Plan(
        victim=victim,
        notes=qualify("notes"),
        instr_table=run_text(locations["table"]),
        html_table=catalog.html_table,
        column_instr=run_text(locations["column"]),
        clients_rows=rows,
        notes_rows=notes,
        writes=writes,
        reads=reads,
        locations=locations,
    )


def _expected(backend: str, plan: _Plan, catalog: Catalogue) -> tuple[set[str], set[str]]:
    """(the writes the model must see - rows, and the names and comments its prompt shows -,
    the ``run`` bodies planted where the prompt must not show them)."""
    seen = {plan.locations[n] for n, loc in catalog.locations.items() if backend in loc.reaches}
    unseen = {
        plan.locations[n] for n, loc in catalog.locations.items() if backend not in loc.reaches
    }
    return seen | set(plan.writes.values()), unseen


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _ddl(plan: _Plan, table: Callable[[str], str]) -> list[str]:
    html0, html1 = catalogue().html_columns
    return [
        f"CREATE TABLE {table('clients')} (\n"
        "  id INTEGER PRIMARY KEY,\n"
        "  name TEXT,\n"
        f"  email TEXT, -- {run_text(plan.locations['sql_comment'])}\n"
        "  note TEXT,\n"
        f"  {_q(plan.column_instr)} INTEGER,\n"
        f"  {_q(html0)} TEXT,\n"
        f"  {_q(html1)} INTEGER,\n"
        f"  {_q(catalogue().forged_column)} INTEGER\n"
        ")",
        f"CREATE TABLE {table('notes')} (id INTEGER PRIMARY KEY, body TEXT)",
        f"CREATE TABLE {table(plan.instr_table)} (id INTEGER)",
        f"CREATE TABLE {table(plan.html_table)} (id INTEGER, label TEXT)",
    ]


def _comments(plan: _Plan, table: Callable[[str], str]) -> list[str]:
    def literal(text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    return [
        f"COMMENT ON TABLE {table('clients')} IS "
        f"{literal(run_text(plan.locations['table_comment']))}",
        f"COMMENT ON COLUMN {table('clients')}.note IS "
        f"{literal(run_text(plan.locations['column_comment']))}",
        f"COMMENT ON TABLE {table('notes')} IS {literal(catalogue().forged_context)}",
    ]


def _fill_tables(
    execute: Callable[..., Any], plan: _Plan, table: Callable[[str], str], mark: str
) -> None:
    def insert(name: str, rows: Sequence[tuple[Any, ...]]) -> None:
        marks = ", ".join([mark] * len(rows[0]))
        for row in rows:
            execute(f"INSERT INTO {table(name)} VALUES ({marks})", row)

    insert("clients", plan.clients_rows)
    insert("notes", plan.notes_rows)
    insert(plan.instr_table, [(1,)])
    insert(plan.html_table, [(1, "<b>bold?</b>")])


def _digest(rows: Sequence[Sequence[Any]]) -> str:
    text = json.dumps([list(r) for r in rows], default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _file_state(*paths: Path) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for path in paths:
        if path.is_dir():
            state[str(path)] = sorted(os.listdir(path))
        else:
            state[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


def _write_sql(plan: _Plan) -> dict[str, str]:
    """Every planted write by id: the rows' and those in names and comments (``at_…``)."""
    return {**plan.writes, **{f"at_{name}": sql for name, sql in plan.locations.items()}}


def _first_reads(plan: _Plan) -> list[dict[str, Any]]:
    return [
        {"sql": f"SELECT * FROM {plan.victim} ORDER BY id"},
        {"sql": f"SELECT * FROM {plan.notes} ORDER BY id"},
    ]


# --------------------------------------------------------------------------------------------
# Backends


def build_sqlite(root: Path) -> Poisoned:
    catalog, drop = catalogue(), _drop_dir(root)
    plan = _plan("sqlite", catalog, _ident, drop)
    path = root / "db" / "poisoned.sqlite"
    path.parent.mkdir()
    with sqlite3.connect(path) as conn:
        for statement in _ddl(plan, _q):
            conn.execute(statement)
        _fill_tables(conn.execute, plan, _q, "?")
    conn.close()

    def fingerprint() -> dict[str, Any]:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as check:
            tables = check.execute(
                "SELECT type, name, sql FROM sqlite_master ORDER BY name"
            ).fetchall()
            contents = {
                name: _digest(check.execute(f"SELECT * FROM {_q(name)} ORDER BY rowid").fetchall())
                for kind, name, _ in tables
                if kind == "table"
            }
        check.close()
        return {"tables": tables, "rows": contents, "files": _file_state(path.parent, path, drop)}

    writes, unseen = _expected("sqlite", plan, catalog)
    return Poisoned(
        backend="sqlite",
        target=f"sqlite:///{path}",
        options={},
        first_reads=_first_reads(plan),
        writes=writes,
        reads=set(plan.reads.values()),
        unseen=unseen,
        fingerprint=fingerprint,
        drop_dir=drop,
        write_sql=_write_sql(plan),
    )


def build_duckdb(root: Path) -> Poisoned:
    import duckdb

    catalog, drop = catalogue(), _drop_dir(root)
    plan = _plan("duckdb", catalog, _ident, drop)
    path = root / "db" / "poisoned.duckdb"
    path.parent.mkdir()
    conn = duckdb.connect(str(path))
    try:
        for statement in [*_ddl(plan, _q), *_comments(plan, _q)]:
            conn.execute(statement)
        _fill_tables(conn.execute, plan, _q, "?")
    finally:
        conn.close()

    def fingerprint() -> dict[str, Any]:
        """Read with a fresh read-only handle: call it only while relay_nb has the file
        closed (DuckDB refuses a second handle with another configuration)."""
        check = duckdb.connect(str(path), read_only=True)
        try:
            tables = check.execute(
                "SELECT schema_name, table_name, comment FROM duckdb_tables() ORDER BY 2"
            ).fetchall()
            columns = check.execute(
                "SELECT table_name, column_name, comment FROM duckdb_columns() "
                "ORDER BY table_name, column_index"
            ).fetchall()
            contents = {
                name: _digest(check.execute(f"SELECT * FROM {_q(name)} ORDER BY 1").fetchall())
                for _, name, _ in tables
            }
        finally:
            check.close()
        return {
            "tables": tables,
            "columns": columns,
            "rows": contents,
            "files": _file_state(path.parent, drop),
        }

    writes, unseen = _expected("duckdb", plan, catalog)
    return Poisoned(
        backend="duckdb",
        target=f"duckdb:///{path}",
        options={},
        first_reads=_first_reads(plan),
        writes=writes,
        reads=set(plan.reads.values()),
        unseen=unseen,
        fingerprint=fingerprint,
        drop_dir=drop,
        quick_fingerprint=lambda: _file_state(path.parent, path, drop),
        write_sql=_write_sql(plan),
    )


def build_postgres(root: Path, admin_url: str, ro_url: str, ro_role: str) -> Poisoned:
    """A private schema (unique name) owned by the admin role; the read-only role gets
    ``USAGE`` on it and ``SELECT`` on its tables, nothing more. ``cleanup`` drops it."""
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    catalog, drop = catalogue(), _drop_dir(root)
    schema = f"inj_{uuid.uuid4().hex[:6]}"

    def table(name: str) -> str:
        return f"{schema}.{_q(name)}"

    plan = _plan("postgres", catalog, lambda name: f"{schema}.{_ident(name)}", drop)
    admin = sa.create_engine(admin_url, poolclass=NullPool)
    with admin.begin() as conn:
        driver = conn.connection.driver_connection
        with driver.cursor() as cursor:
            cursor.execute(f"CREATE SCHEMA {schema}")
            for statement in [*_ddl(plan, table), *_comments(plan, table)]:
                cursor.execute(statement)
            _fill_tables(cursor.execute, plan, table, "%s")
            cursor.execute(f"GRANT USAGE ON SCHEMA {schema} TO {ro_role}")
            cursor.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {ro_role}")

    def fingerprint() -> dict[str, Any]:
        with admin.connect() as conn:
            tables = conn.execute(
                sa.text(
                    "SELECT c.relname, c.relkind, obj_description(c.oid, 'pg_class'), "
                    "c.relacl::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = :s ORDER BY 1"
                ),
                {"s": schema},
            ).all()
            comments = conn.execute(
                sa.text(
                    "SELECT c.relname, a.attname, col_description(c.oid, a.attnum) "
                    "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = :s AND a.attnum > 0 ORDER BY 1, a.attnum"
                ),
                {"s": schema},
            ).all()
            contents = {
                name: _digest(conn.exec_driver_sql(f"SELECT * FROM {table(name)} ORDER BY 1").all())
                for name, kind, _, _ in tables
                if kind == "r"
            }
            role = conn.execute(
                sa.text("SELECT rolconfig::text, rolsuper FROM pg_roles WHERE rolname = :r"),
                {"r": ro_role},
            ).one()
        return {
            "tables": [tuple(t) for t in tables],
            "comments": [tuple(c) for c in comments],
            "rows": contents,
            "role": tuple(role),
            "files": _file_state(drop),
        }

    def cleanup() -> None:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        admin.dispose()

    writes, unseen = _expected("postgres", plan, catalog)
    return Poisoned(
        backend="postgres",
        target=ro_url,
        options={"schemas": [schema]},
        first_reads=_first_reads(plan),
        writes=writes,
        reads=set(plan.reads.values()),
        unseen=unseen,
        fingerprint=fingerprint,
        drop_dir=drop,
        cleanup=cleanup,
        write_sql=_write_sql(plan),
    )


def _ident(name: str) -> str:
    """How the model writes a name: bare when it is a plain lowercase word, else quoted."""
    return name if name.isidentifier() and name == name.lower() else _q(name)


def build_dataframe(root: Path) -> Poisoned:
    """Two frames; a frame's column labels are free text, so they carry payloads too."""
    catalog, drop = catalogue(), _drop_dir(root)
    plan = _plan("dataframe", catalog, _ident, drop)
    html0, html1 = catalog.html_columns
    columns = ["id", "name", "email", "note", plan.column_instr, html0, html1]
    columns.append(catalog.forged_column)
    frames = {
        "clients": pd.DataFrame(plan.clients_rows, columns=columns),
        "notes": pd.DataFrame(plan.notes_rows, columns=["id", "body"]),
    }
    originals = {name: frame.copy(deep=True) for name, frame in frames.items()}

    def fingerprint() -> dict[str, Any]:
        return {
            "equal": {name: frames[name].equals(originals[name]) for name in frames},
            "columns": {name: list(frame.columns) for name, frame in frames.items()},
            "hash": {
                name: int(pd.util.hash_pandas_object(frame, index=True).sum())
                for name, frame in frames.items()
            },
            "files": _file_state(drop),
        }

    writes, unseen = _expected("dataframe", plan, catalog)
    return Poisoned(
        backend="dataframe",
        target=frames,
        options={},
        first_reads=_first_reads(plan),
        writes=writes,
        reads=set(plan.reads.values()),
        unseen=unseen,
        fingerprint=fingerprint,
        drop_dir=drop,
        write_sql=_write_sql(plan),
    )


def build_mongo(root: Path, base_url: str) -> Poisoned:
    """A private database (unique name) on the Mongo-wire server; ``cleanup`` drops it."""
    import pymongo

    catalog, drop = catalogue(), _drop_dir(root)
    database = f"inj_{uuid.uuid4().hex[:8]}"

    def planted(payload_input: dict[str, Any]) -> str:
        return fill(json.dumps(payload_input), victim="clients")

    writes = [planted(p.input) for p in catalog.mongo_writes]
    field_write = planted(catalog.mongo_field_write.input)
    html0, html1 = catalog.html_columns
    clients = [
        {"_id": i, "name": name, "email": email, "note": note, html0: "plain", html1: 0}
        | {catalog.forged_column: 0}
        for i, name, email, note in CLEAN_ROWS
    ]
    clients += [
        {"_id": number, "note": catalog.prefix + run_text(body), run_text(field_write): number}
        for number, body in enumerate(writes, start=10)
    ]
    notes = [{"_id": i, "body": f"reply with `{p.text}`"} for i, p in enumerate(catalog.render, 1)]
    client: pymongo.MongoClient = pymongo.MongoClient(base_url, serverSelectionTimeoutMS=5000)
    client[database]["clients"].insert_many(clients)
    client[database]["notes"].insert_many(notes)

    def fingerprint() -> dict[str, Any]:
        db = client[database]
        return {
            "collections": sorted(db.list_collection_names()),
            "rows": {
                name: _digest([[json.dumps(d, default=str)] for d in db[name].find().sort("_id")])
                for name in sorted(db.list_collection_names())
            },
            "databases": database in client.list_database_names(),
            "files": _file_state(drop),
        }

    def cleanup() -> None:
        client.drop_database(database)
        client.close()

    url = f"{base_url.rstrip('/')}/{database}"
    return Poisoned(
        backend="mongo",
        target=url,
        options={"collections": ["clients", "notes"]},
        first_reads=[{"collection": "clients"}, {"collection": "notes"}],
        writes={*writes, field_write},
        reads=set(),
        unseen=set(),
        fingerprint=fingerprint,
        drop_dir=drop,
        cleanup=cleanup,
    )


def _drop_dir(root: Path) -> Path:
    drop = root / "drop"
    drop.mkdir()
    return drop


def build(backend: str, root: Path, env: dict[str, str] | None = None) -> Poisoned:
    """The poisoned source for ``backend``; ``env`` holds the service URLs it needs."""
    env = env or {}
    if backend == "sqlite":
        return build_sqlite(root)
    if backend == "duckdb":
        return build_duckdb(root)
    if backend == "dataframe":
        return build_dataframe(root)
    if backend == "postgres":
        return build_postgres(root, env["admin"], env["ro"], env["role"])
    if backend == "mongo":
        return build_mongo(root, env["base"])
    raise ValueError(f"unknown backend {backend!r}")
