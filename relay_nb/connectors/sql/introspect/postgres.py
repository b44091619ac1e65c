"""PostgreSQL catalog reader: two statements for all requested schemas together.

One statement reads relations and columns straight from ``pg_class`` / ``pg_attribute`` with
``format_type`` for the type and ``pg_description`` for comments (joined, not called per row
through ``obj_description``/``col_description``, which would run a lookup per column); a
second reads primary and foreign keys from ``pg_constraint``. ``information_schema`` is avoided
on purpose: its views are slow on large catalogs.

Only relations and columns the role may ``SELECT`` are listed (as MySQL's catalog does by
itself): advertising a table to the model that every query would fail on helps no one.

Tables, views, materialized views, partitioned tables and foreign tables are listed; the
partitions of a partitioned table are not (the parent is what queries should name).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from relay_nb.connectors.sql.introspect.common import (
    CatalogBuilder,
    compact_type,
    is_system_schema,
    schema_fingerprint,
)

__all__ = ["default_schema", "fingerprint", "names", "read", "schema_names"]

_KINDS = {"r": "table", "p": "table", "f": "table", "v": "view", "m": "view"}

_COLUMNS_SQL = """
    WITH rel AS (
        SELECT c.oid, n.nspname, c.relname, c.relkind,
               has_table_privilege(c.oid, 'SELECT') AS whole
        FROM pg_catalog.pg_class AS c
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY(:schemas)
          AND c.relkind IN ('r', 'p', 'f', 'v', 'm')
          AND NOT c.relispartition
          AND has_any_column_privilege(c.oid, 'SELECT')
    )
    SELECT r.nspname, r.relname, r.relkind, td.description,
           a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
           cd.description
    FROM rel AS r
    LEFT JOIN pg_catalog.pg_description AS td
      ON td.objoid = r.oid AND td.classoid = 'pg_catalog.pg_class'::regclass AND td.objsubid = 0
    LEFT JOIN pg_catalog.pg_attribute AS a
      ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
     AND (r.whole OR has_column_privilege(r.oid, a.attnum, 'SELECT'))
    LEFT JOIN pg_catalog.pg_description AS cd
      ON cd.objoid = r.oid AND cd.classoid = 'pg_catalog.pg_class'::regclass
     AND cd.objsubid = a.attnum
"""
"""No ORDER BY (the builder sorts; on 20,000 rows the sort spills to disk). Column privileges
are checked only on tables the role cannot read as a whole."""

_KEYS_SQL = """
    SELECT n.nspname, c.relname, con.contype, con.conname, k.ord,
           (SELECT a.attname FROM pg_catalog.pg_attribute AS a
             WHERE a.attrelid = con.conrelid AND a.attnum = k.attnum),
           rn.nspname, rc.relname,
           (SELECT ra.attname FROM pg_catalog.pg_attribute AS ra
             WHERE ra.attrelid = con.confrelid AND ra.attnum = con.confkey[k.ord])
    FROM pg_catalog.pg_constraint AS con
    JOIN pg_catalog.pg_class AS c ON c.oid = con.conrelid
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    CROSS JOIN LATERAL unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
    LEFT JOIN pg_catalog.pg_class AS rc ON rc.oid = con.confrelid
    LEFT JOIN pg_catalog.pg_namespace AS rn ON rn.oid = rc.relnamespace
    WHERE n.nspname = ANY(:schemas) AND con.contype IN ('p', 'f')
      AND NOT c.relispartition
"""
"""Key columns are looked up by (attrelid, attnum) in scalar subqueries: a join lets the
planner hash every attribute of each table, several times slower on wide catalogs."""


def default_schema(conn: sa.Connection) -> str | None:
    return conn.execute(sa.text("SELECT current_schema()")).scalar()


def names(conn: sa.Connection) -> tuple[str | None, str | None]:
    """(the default schema, the current database) in one statement."""
    row = conn.execute(sa.text("SELECT current_schema(), current_database()")).one()
    return row[0], row[1]


def schema_names(conn: sa.Connection) -> list[str]:
    rows = conn.execute(sa.text("SELECT nspname FROM pg_catalog.pg_namespace ORDER BY nspname"))
    return [name for (name,) in rows if not is_system_schema(name, "postgres")]


_FINGERPRINT_SQL = sa.text(
    """
    WITH ns AS (SELECT oid, xmin FROM pg_catalog.pg_namespace WHERE nspname IN :schemas),
    rel AS (SELECT oid, xmin FROM pg_catalog.pg_class WHERE relnamespace IN (SELECT oid FROM ns)),
    att AS (SELECT xmin FROM pg_catalog.pg_attribute WHERE attrelid IN (SELECT oid FROM rel)),
    con AS (SELECT confrelid, xmin FROM pg_catalog.pg_constraint
             WHERE connamespace IN (SELECT oid FROM ns)),
    target AS (SELECT oid, relnamespace, xmin FROM pg_catalog.pg_class
                WHERE oid IN (SELECT confrelid FROM con))
    SELECT concat_ws(':',
      (SELECT count(*) || '.' || coalesce(sum(xmin::text::bigint), 0) FROM rel),
      (SELECT count(*) || '.' || coalesce(sum(xmin::text::bigint), 0) FROM att),
      (SELECT count(*) || '.' || coalesce(sum(xmin::text::bigint), 0) FROM con),
      (SELECT count(*) || '.' || coalesce(sum(d.xmin::text::bigint), 0)
         FROM pg_catalog.pg_description d WHERE d.objoid IN (SELECT oid FROM rel)),
      (SELECT count(*) || '.' || coalesce(sum(t.xmin::text::bigint), 0)
         FROM pg_catalog.pg_type t
        WHERE t.oid >= 16384 AND t.typtype <> 'c' AND t.typcategory <> 'A'),
      (SELECT count(*) || '.' || coalesce(sum(xmin::text::bigint), 0) FROM target),
      (SELECT count(*) || '.' || coalesce(sum(n.xmin::text::bigint), 0)
         FROM pg_catalog.pg_namespace n
        WHERE n.oid IN (SELECT oid FROM ns) OR n.oid IN (SELECT relnamespace FROM target)),
      (SELECT count(*) || '.' || coalesce(sum(m.xmin::text::bigint), 0)
         FROM pg_catalog.pg_auth_members m))
    """
).bindparams(sa.bindparam("schemas", expanding=True))
"""Every catalog row the read depends on gets a new ``xmin`` (the writing transaction) when
DDL, ``COMMENT`` or ``GRANT`` changes it, and rows come and go with tables, columns and
keys: the relations, their columns and keys and comments, the database's own types (a
renamed enum or domain; 16384 is PostgreSQL's first user object id, and tables' row and
array types are left out, so a table made elsewhere changes nothing), the tables foreign
keys point to and their schemas (a renamed target), and role memberships (what
``has_table_privilege`` answers). ANALYZE and VACUUM update ``pg_class``
in place and leave it alone. Counts and sums of ``xmin`` therefore change with anything the
read shows, in one statement over the catalog's indexes."""


def fingerprint(conn: sa.Connection, schemas: Sequence[str | None]) -> str:
    return schema_fingerprint(conn, _FINGERPRINT_SQL, schemas)


def read(conn: sa.Connection, schemas: Sequence[str | None], builder: CatalogBuilder) -> None:
    """Fill ``builder`` for every schema in ``schemas`` with two statements in total."""
    names = [s for s in schemas if s is not None]
    for row in conn.execute(sa.text(_COLUMNS_SQL), {"schemas": names}).all():
        schema, table, relkind, table_comment, attnum, column, type_, notnull, comment = row
        builder.add_relation(schema, table, _KINDS[relkind], table_comment)
        if column is not None:
            builder.add_column(
                schema,
                table,
                attnum,
                column,
                compact_type(type_, "postgres"),
                nullable=not notnull,
                comment=comment,
            )
    for row in conn.execute(sa.text(_KEYS_SQL), {"schemas": names}).all():
        schema, table, contype, conname, ordinal, column, ref_schema, ref_table, ref_column = row
        if contype == "p":
            builder.add_primary_key(schema, table, [column])
        else:
            builder.add_foreign_key_column(
                schema, table, conname, ordinal, column, ref_schema, ref_table, ref_column
            )
