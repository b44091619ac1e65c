"""SQLite catalog reader: two statements per database, whatever the number of tables.

``sqlite_master`` joined with the ``pragma_table_info`` / ``pragma_foreign_key_list``
table-valued functions gives every column and key of every table and view in one statement
each, where SQLAlchemy's inspector (and the tools built on it) issue three PRAGMAs per table.
The main database has no schema name (``schema_name=None``); attached databases use theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any

import sqlalchemy as sa

from relay_nb.connectors.sql.introspect.common import CatalogBuilder, compact_type, paused_gc

__all__ = ["default_schema", "fingerprint", "read", "schema_names"]

_NOT_INTERNAL = r"m.name NOT LIKE 'sqlite\_%' ESCAPE '\'"


def default_schema(conn: sa.Connection) -> str | None:
    """The main database is addressed without a schema name."""
    return None


def schema_names(conn: sa.Connection) -> list[str]:
    """Attached database names (``main`` first); ``temp`` is never offered."""
    rows = conn.execute(sa.text("SELECT name FROM pragma_database_list ORDER BY seq"))
    return [name for (name,) in rows if name != "temp"]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read(conn: sa.Connection, schemas: Sequence[str | None], builder: CatalogBuilder) -> None:
    """Fill ``builder`` with the tables, views, columns and keys of ``schemas``.

    A database that is not attached contributes nothing (the caller reports it); only when
    one other than ``main`` is asked for does that cost a ``pragma_database_list`` read.
    """
    attached = schema_names(conn) if any(s not in (None, "main") for s in schemas) else ["main"]
    for schema in schemas:
        database = schema or "main"
        if database not in attached:
            continue
        label = None if database == "main" else database
        with paused_gc():  # 20,000 surviving row tuples: see paused_gc
            _read_columns(conn, database, label, builder)
            _read_foreign_keys(conn, database, label, builder)


def fingerprint(conn: sa.Connection, schemas: Sequence[str | None]) -> str:
    """Each database's ``schema_version``: SQLite bumps it on every change to its schema."""
    attached = schema_names(conn) if any(s not in (None, "main") for s in schemas) else ["main"]
    versions = []
    for schema in schemas:
        database = schema or "main"
        if database in attached:
            (version,) = _fetch(conn, f"PRAGMA {_quote(database)}.schema_version")[0]
            versions.append(f"{database}={version}")
    return ",".join(versions)


def _read_columns(
    conn: sa.Connection, database: str, label: str | None, builder: CatalogBuilder
) -> None:
    """One statement for every table and view; a broken view falls back to per-view reads.

    ``pragma_table_info`` on a view whose definition no longer compiles (it names a dropped
    table) fails the whole statement. Then tables are read in one statement and views one by
    one, skipping the broken ones: they cannot be queried anyway, and one stale view must not
    hide the rest of the database.
    """
    failure = _driver_error(conn)
    rows: Sequence[Any]
    try:
        rows = _columns(conn, database, "('table', 'view')")
    except failure:  # the slow path: a broken view (rows become a list to extend)
        rows = list(_columns(conn, database, "('table')"))
        views = _fetch(
            conn, f"SELECT name FROM {_quote(database)}.sqlite_master WHERE type = 'view'"
        )
        for (view,) in views:
            try:
                rows.extend(_columns(conn, database, "('view')", view))
            except failure:
                continue
    # a catalog repeats a handful of declared types thousands of times: compact each once
    types = {type_: compact_type(type_, "sqlite") for type_ in {row[4] for row in rows}}
    # rows arrive relation by relation (the join walks sqlite_master, then each pragma), so
    # one builder call per relation; the builder orders columns by cid (no ORDER BY: a
    # 20,000-row sort costs ~15 ms here)
    for (kind, table), group in groupby(rows, key=_RELATION):
        group = list(group)
        builder.add_relation(label, table, kind)
        builder.add_columns(
            label,
            table,
            [
                (cid, column, types[type_], not notnull, None)
                for _, _, cid, column, type_, notnull, _ in group
                if column is not None
            ],
            primary_key=[column for _, _, _, column, _, _, pk in group if pk],
        )


_RELATION = itemgetter(0, 1)


def _driver_error(conn: sa.Connection) -> type[Exception]:
    """The driver's OperationalError (statements here run on its cursor, not SQLAlchemy's)."""
    return conn.dialect.loaded_dbapi.OperationalError


def _fetch(conn: sa.Connection, sql: str, params: Sequence[str] = ()) -> Sequence[Any]:
    """Run on the driver's own cursor: SQLAlchemy's Row wrapping of 20,000 catalog rows costs
    more than the catalog query itself (~25 ms of ~75 ms at 1,000 x 20). Same connection, so
    its connect-time settings (``mode=ro``, ``query_only``) apply as for any statement; the
    catalog read has no time bound of its own (the progress handler is set per query)."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql, tuple(params))
        return cursor.fetchall()
    finally:
        cursor.close()


def _columns(
    conn: sa.Connection, database: str, kinds: str, name: str | None = None
) -> Sequence[Any]:
    sql = f"""
        SELECT m.type, m.name, p.cid, p.name, p.type, p."notnull", p.pk
        FROM {_quote(database)}.sqlite_master AS m
        LEFT JOIN pragma_table_info(m.name, ?) AS p
        WHERE m.type IN {kinds} AND {_NOT_INTERNAL}
    """
    if name is None:
        return _fetch(conn, sql, (database,))
    return _fetch(conn, sql + " AND m.name = ?", (database, name))


def _read_foreign_keys(
    conn: sa.Connection, database: str, label: str | None, builder: CatalogBuilder
) -> None:
    sql = f"""
        SELECT m.name, f.id, f.seq, f."table", f."from", f."to"
        FROM {_quote(database)}.sqlite_master AS m
        JOIN pragma_foreign_key_list(m.name, ?) AS f
        WHERE m.type = 'table' AND {_NOT_INTERNAL}
    """
    # SQLite matches names case-insensitively; report the referenced table as it was created
    known = {name.lower(): name for schema, name in builder.names() if schema == label}
    for table, fk_id, seq, ref_table, column, ref_column in _fetch(conn, sql, (database,)):
        builder.add_foreign_key_column(
            label,
            table,
            f"fk{fk_id}",
            seq,
            column,
            label,
            known.get(ref_table.lower()) or ref_table,
            ref_column,
        )
