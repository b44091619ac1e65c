"""Catalog introspection of a 1,000-table x 20-column schema vs per-table reflection.

The baseline is what an analyst's tool does to learn a schema without relay_nb (LangChain's
``SQLDatabase`` and most agent toolkits sit on the same SQLAlchemy inspector): for every
table, ``get_columns`` + ``get_pk_constraint`` + ``get_foreign_keys`` on
``sqlalchemy.inspect(conn)`` — the least an agent needs (columns, types, keys), no indexes,
comments or sample rows, which would only add to its time. Both sides produce the same
information; relay_nb's also builds its frozen pydantic ``Catalog`` (20,000 ``ColumnInfo``),
the baseline stops at SQLAlchemy's dicts. Measured on SQLite (a temp file) and PostgreSQL
(``RELAY_TEST_PG_ADMIN_URL``; a throwaway database, or a throwaway schema when the role
cannot create databases, dropped afterwards).

- cold: a fresh engine each sample (connect + read), as on a kernel's first question;
- warm: the same open connection, read again. ``introspect()`` itself has no cache (the
  connector caches the Catalog; a cache hit is a dict lookup), so the raw figure is reported
  as is; per-table reflection gets a fresh ``Inspector`` each time so its cache does not count.

Samples alternate between the two readers, so load from other processes hits both alike.
relay_nb's SQLite reader pauses the cyclic garbage collector while it creates the catalog's
objects (``introspect_common.paused_gc``: about half of its time otherwise); the baseline
runs as SQLAlchemy ships it. SQLAlchemy 2's ``MetaData.reflect`` (batched ``get_multi_*``
where the dialect supports it) is reported too, cold only, for context.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.connectors.sql.introspect import introspect

TABLES = 1000
COLUMNS = 20
_TYPES = ("INTEGER", "VARCHAR(80)", "NUMERIC(12,2)", "TIMESTAMP", "TEXT", "DATE", "BOOLEAN")


def _ddl(schema: str | None) -> Iterator[str]:
    """1,000 tables: a pk, an FK to the previous table, 18 typed columns; every 10th a view."""
    prefix = f'"{schema}".' if schema else ""
    for i in range(TABLES):
        columns = ["id INTEGER PRIMARY KEY", "parent_id INTEGER"]
        columns += [f"c{j:02d} {_TYPES[j % len(_TYPES)]}" for j in range(COLUMNS - 2)]
        if i:
            columns.append(f"FOREIGN KEY (parent_id) REFERENCES {prefix}t{i - 1:04d} (id)")
        yield f"CREATE TABLE {prefix}t{i:04d} ({', '.join(columns)})"


def _per_table(conn: sa.Connection, schema: str | None) -> int:
    """LangChain-style reflection: three inspector calls per table."""
    inspector = sa.inspect(conn)
    names = inspector.get_table_names(schema=schema)
    for name in names:
        inspector.get_columns(name, schema=schema)
        inspector.get_pk_constraint(name, schema=schema)
        inspector.get_foreign_keys(name, schema=schema)
    return len(names)


Reader = Callable[[sa.Connection, str | None], int]


def _metadata_reflect(conn: sa.Connection, schema: str | None) -> int:
    metadata = sa.MetaData()
    metadata.reflect(bind=conn, schema=schema)
    return len(metadata.tables)


def _relay(conn: sa.Connection, schema: str | None) -> int:
    return len(introspect(conn, schemas=[schema] if schema else None).tables)


_COMPARED: dict[str, Reader] = {"relay": _relay, "per_table": _per_table}
_REFLECT_REPEAT = 2


def _cold_once(url: sa.URL | str, read: Reader, schema: str | None) -> float:
    """A fresh engine and connection, then one read: the kernel's first question."""
    started = time.perf_counter()
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            count = read(conn, schema)
    finally:
        engine.dispose()
    if count != TABLES:
        raise RuntimeError(f"{read.__name__} saw {count} tables, not {TABLES}")
    return (time.perf_counter() - started) * 1000


def _warm_once(conn: sa.Connection, read: Reader, schema: str | None) -> float:
    started = time.perf_counter()
    read(conn, schema)
    return (time.perf_counter() - started) * 1000


def _measure(label: str, url: sa.URL | str, schema: str | None, repeat: int) -> dict:
    """Medians of ``repeat`` samples, interleaved reader by reader (relay, per-table, relay …)
    so that load from other processes hits every reader alike."""
    samples: dict[str, list[float]] = {}
    for _ in range(repeat):
        for name, read in _COMPARED.items():
            samples.setdefault(f"{name}_cold_ms", []).append(_cold_once(url, read, schema))
    for _ in range(_REFLECT_REPEAT):
        samples.setdefault("metadata_reflect_cold_ms", []).append(
            _cold_once(url, _metadata_reflect, schema)
        )
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            for read in _COMPARED.values():
                read(conn, schema)  # warm: this connection has read the catalog once
            for _ in range(repeat):
                for name, read in _COMPARED.items():
                    samples.setdefault(f"{name}_warm_ms", []).append(_warm_once(conn, read, schema))
    finally:
        engine.dispose()
    result = {key: statistics.median(values) for key, values in samples.items()}
    result["cold_speedup_vs_per_table"] = result["per_table_cold_ms"] / result["relay_cold_ms"]
    result["warm_speedup_vs_per_table"] = result["per_table_warm_ms"] / result["relay_warm_ms"]
    result["cold_speedup_vs_metadata_reflect"] = (
        result["metadata_reflect_cold_ms"] / result["relay_cold_ms"]
    )
    _print(label, result)
    return result


def _print(label: str, r: dict[str, float]) -> None:
    print(f"-- {label}: {TABLES} tables x {COLUMNS} columns (median ms)")
    print(f"{'reader':<28} {'cold':>10} {'warm':>10}")
    for name, title in (
        ("relay", "relay introspect()"),
        ("per_table", "per-table reflection"),
        ("metadata_reflect", "SQLAlchemy MetaData.reflect"),
    ):
        warm = r.get(f"{name}_warm_ms")
        warm_text = f"{warm:>10.1f}" if warm is not None else f"{'-':>10}"
        print(f"{title:<28} {r[f'{name}_cold_ms']:>10.1f} {warm_text}")
    print(
        f"cold: {r['cold_speedup_vs_per_table']:.1f}x faster than per-table (target >= 4x), "
        f"{r['cold_speedup_vs_metadata_reflect']:.1f}x vs MetaData.reflect; warm "
        f"{r['warm_speedup_vs_per_table']:.1f}x (raw re-read {r['relay_warm_ms']:.1f} ms; the "
        "connector caches the catalog, so a warm turn costs a dict lookup)"
    )


def _execute(url: sa.URL | str, statements) -> None:
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
    finally:
        engine.dispose()


def _sqlite(repeat: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="relay_bench_") as tmp:
        url = f"sqlite:///{Path(tmp) / 'wide.db'}"
        _execute(url, _ddl(None))
        return _measure("SQLite", url, None, repeat)


@contextmanager
def _pg_target(admin_url: str) -> Iterator[tuple[sa.URL, str]]:
    """A throwaway database (or schema, without CREATEDB), always dropped afterwards."""
    admin = sa.make_url(admin_url)
    name = f"relay_bench_{uuid.uuid4().hex[:8]}"
    server = sa.create_engine(admin, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with server.connect() as conn:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
        own_database = True
    except sa.exc.DBAPIError:
        own_database = False
    target = admin.set(database=name) if own_database else admin
    try:
        _execute(target, [f"CREATE SCHEMA {name}"])
        yield target, name
    finally:
        with server.connect() as conn:
            if own_database:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            else:
                conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        server.dispose()


def _postgres(admin_url: str, repeat: int) -> dict:
    with _pg_target(admin_url) as (url, schema):
        _execute(url, _ddl(schema))
        return _measure("PostgreSQL", url, schema, repeat)


def run(repeat: int = 7, pg_repeat: int = 3) -> dict:
    """Medians of ``repeat`` samples (``pg_repeat`` on PostgreSQL: per-table reflection there
    takes seconds per sample); ``MetaData.reflect`` (context only) cold, twice."""
    results: dict[str, object] = {"tables": TABLES, "columns": COLUMNS}
    results["sqlite"] = _sqlite(repeat)
    admin_url = os.environ.get("RELAY_TEST_PG_ADMIN_URL")
    if admin_url:
        results["postgres"] = _postgres(admin_url, pg_repeat)
    else:
        print("-- PostgreSQL skipped: RELAY_TEST_PG_ADMIN_URL is not set (scripts/services start)")
        results["postgres"] = None
    return results


if __name__ == "__main__":
    run()
