"""MySQL / MariaDB catalog reader: two statements for all requested schemas together.

``information_schema.tables`` left-joined with ``columns`` gives relations, columns, types
(``COLUMN_TYPE`` keeps lengths and precision), nullability, ``COLUMN_KEY = 'PRI'`` and both
kinds of comments; ``key_column_usage`` gives the foreign keys. The server only lists objects
the connected user holds a privilege on, which is what a prompt should advertise.
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

__all__ = ["default_schema", "fingerprint", "read", "schema_names"]

_COLUMNS_SQL = sa.text(
    """
    SELECT t.TABLE_SCHEMA, t.TABLE_NAME, t.TABLE_TYPE, t.TABLE_COMMENT,
           c.ORDINAL_POSITION, c.COLUMN_NAME, c.COLUMN_TYPE, c.IS_NULLABLE, c.COLUMN_KEY,
           c.COLUMN_COMMENT
    FROM information_schema.TABLES AS t
    LEFT JOIN information_schema.COLUMNS AS c
      ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
    WHERE t.TABLE_SCHEMA IN :schemas AND t.TABLE_TYPE IN ('BASE TABLE', 'VIEW')
    """
).bindparams(sa.bindparam("schemas", expanding=True))

_FOREIGN_KEYS_SQL = sa.text(
    """
    SELECT TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION, COLUMN_NAME,
           REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME
    FROM information_schema.KEY_COLUMN_USAGE
    WHERE TABLE_SCHEMA IN :schemas AND REFERENCED_TABLE_NAME IS NOT NULL
    """
).bindparams(sa.bindparam("schemas", expanding=True))


def default_schema(conn: sa.Connection) -> str | None:
    return conn.execute(sa.text("SELECT DATABASE()")).scalar()


def schema_names(conn: sa.Connection) -> list[str]:
    rows = conn.execute(sa.text("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA"))
    return sorted(name for (name,) in rows if not is_system_schema(name, "mysql"))


def _table_comment(kind: str, comment: str | None) -> str | None:
    # MySQL fills TABLE_COMMENT of every view with the literal word 'VIEW'
    return None if kind == "view" and comment == "VIEW" else comment


_FINGERPRINT_SQL = sa.text(
    """
    SELECT CONCAT_WS(':',
      (SELECT CONCAT(COUNT(*), '.', COALESCE(SUM(CRC32(CONCAT_WS('|', TABLE_SCHEMA,
              TABLE_NAME, ORDINAL_POSITION, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY,
              COLUMN_COMMENT))), 0))
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA IN :schemas),
      (SELECT CONCAT(COUNT(*), '.', COALESCE(SUM(CRC32(CONCAT_WS('|', TABLE_SCHEMA,
              TABLE_NAME, TABLE_TYPE, TABLE_COMMENT))), 0))
         FROM information_schema.TABLES WHERE TABLE_SCHEMA IN :schemas),
      (SELECT CONCAT(COUNT(*), '.', COALESCE(SUM(CRC32(CONCAT_WS('|', TABLE_SCHEMA,
              TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION, COLUMN_NAME,
              REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME))), 0))
         FROM information_schema.KEY_COLUMN_USAGE
        WHERE TABLE_SCHEMA IN :schemas AND REFERENCED_TABLE_NAME IS NOT NULL))
    """
).bindparams(sa.bindparam("schemas", expanding=True))
"""MySQL and MariaDB keep no schema version a client can read: one statement sums a
checksum of every column, relation and foreign key the read depends on, server-side."""


def fingerprint(conn: sa.Connection, schemas: Sequence[str | None]) -> str:
    return schema_fingerprint(conn, _FINGERPRINT_SQL, schemas)


def read(conn: sa.Connection, schemas: Sequence[str | None], builder: CatalogBuilder) -> None:
    """Fill ``builder`` for every schema in ``schemas`` with two statements in total."""
    names = [s for s in schemas if s is not None]
    for row in conn.execute(_COLUMNS_SQL, {"schemas": names}).all():
        schema, table, table_type, table_comment = row[:4]
        position, column, type_, is_nullable, column_key, comment = row[4:]
        kind = "view" if table_type == "VIEW" else "table"
        builder.add_relation(schema, table, kind, _table_comment(kind, table_comment))
        if column is not None:
            builder.add_column(
                schema,
                table,
                position,
                column,
                compact_type(_text(type_), "mysql"),
                nullable=is_nullable == "YES",
                primary_key=column_key == "PRI",
                comment=comment,
            )
    for row in conn.execute(_FOREIGN_KEYS_SQL, {"schemas": names}).all():
        schema, table, constraint, position, column, ref_schema, ref_table, ref_column = row
        builder.add_foreign_key_column(
            schema, table, constraint, position, column, ref_schema, ref_table, ref_column
        )


def _text(value: object) -> str:
    """Some server/driver pairs return ``COLUMN_TYPE`` as bytes."""
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)
