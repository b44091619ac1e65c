"""SQLite catalog reader: two statements per database, whatever the number of tables.

``sqlite_master`` joined with the ``pragma_table_info`` / ``pragma_foreign_key_list``
table-valued functions gives every column and key of every table and view in one statement
each, where SQLAlchemy's inspector (and the tools built on it) issue three PRAGMAs per table.
The main database has no schema name (``schema_name=None``); attached databases use theirs.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from relay_nb.connectors.sql.introspect_common import CatalogBuilder, compact_type

__all__ = ["default_schema", "read", "schema_names"]

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
        _read_columns(conn, database, label, builder)
        _read_foreign_keys(conn, database, label, builder)


def _read_columns(
    conn: sa.Connection, database: str, label: str | None, builder: CatalogBuilder
) -> None:
    """One statement for every table and view; a broken view falls back to per-view reads.

    ``pragma_table_info`` on a view whose definition no longer compiles (it names a dropped
    table) fails the whole statement. Then tables are read in one statement and views one by
    one, skipping the broken ones: they cannot be queried anyway, and one stale view must not
    hide the rest of the database.
    """
    try:
        rows = _columns(conn, database, "('table', 'view')")
    except sa.exc.OperationalError:
        rows = _columns(conn, database, "('table')")
        for (view,) in conn.execute(
            sa.text(f"SELECT name FROM {_quote(database)}.sqlite_master WHERE type = 'view'")
        ).all():
            try:
                rows += _columns(conn, database, "('view')", view)
            except sa.exc.OperationalError:
                continue
    # no ORDER BY: the builder orders columns by cid (a 20,000-row sort here costs ~15 ms)
    for kind, table, cid, column, type_, notnull, pk in rows:
        builder.add_relation(label, table, kind)
        if column is not None:
            builder.add_column(
                label,
                table,
                cid,
                column,
                compact_type(type_, "sqlite"),
                nullable=not notnull,
                primary_key=bool(pk),
            )


def _columns(
    conn: sa.Connection, database: str, kinds: str, name: str | None = None
) -> list[sa.Row]:
    sql = f"""
        SELECT m.type, m.name, p.cid, p.name, p.type, p."notnull", p.pk
        FROM {_quote(database)}.sqlite_master AS m
        LEFT JOIN pragma_table_info(m.name, :db) AS p
        WHERE m.type IN {kinds} AND {_NOT_INTERNAL}
    """
    params = {"db": database}
    if name is not None:
        sql += " AND m.name = :name"
        params["name"] = name
    return list(conn.execute(sa.text(sql), params).all())


def _read_foreign_keys(
    conn: sa.Connection, database: str, label: str | None, builder: CatalogBuilder
) -> None:
    sql = f"""
        SELECT m.name, f.id, f.seq, f."table", f."from", f."to"
        FROM {_quote(database)}.sqlite_master AS m
        JOIN pragma_foreign_key_list(m.name, :db) AS f
        WHERE m.type = 'table' AND {_NOT_INTERNAL}
    """
    # SQLite matches names case-insensitively; report the referenced table as it was created
    known = {name.lower(): name for schema, name in builder.names() if schema == label}
    for table, fk_id, seq, ref_table, column, ref_column in conn.execute(
        sa.text(sql), {"db": database}
    ):
        builder.add_foreign_key_column(
            label,
            table,
            f"fk{fk_id}",
            seq,
            column,
            label,
            known.get(ref_table.lower(), ref_table),
            ref_column,
        )
