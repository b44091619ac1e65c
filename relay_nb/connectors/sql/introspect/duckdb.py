"""DuckDB catalog reader: two statements for all requested schemas together.

``duckdb_tables()`` and ``duckdb_views()`` (unioned) joined with ``duckdb_columns()`` give
relations, columns, types and comments; ``duckdb_constraints()`` gives primary and foreign
keys. Only the current database (catalog) is read; internal and temporary objects are skipped.
DuckDB foreign keys can only reference tables of the same schema.
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

_COLUMNS_SQL = sa.text(
    """
    WITH rel AS (
        SELECT database_name, schema_name, table_name AS name, 'table' AS kind, comment
        FROM duckdb_tables() WHERE NOT internal AND NOT temporary
        UNION ALL
        SELECT database_name, schema_name, view_name, 'view', comment
        FROM duckdb_views() WHERE NOT internal AND NOT temporary
    )
    SELECT r.schema_name, r.name, r.kind, r.comment,
           c.column_index, c.column_name, c.data_type, c.is_nullable, c.comment
    FROM rel AS r
    LEFT JOIN duckdb_columns() AS c
      ON c.database_name = r.database_name AND c.schema_name = r.schema_name
     AND c.table_name = r.name
    WHERE r.database_name = current_database() AND r.schema_name IN :schemas
    """
).bindparams(sa.bindparam("schemas", expanding=True))

_KEYS_SQL = sa.text(
    """
    SELECT schema_name, table_name, constraint_type, constraint_index,
           constraint_column_names, referenced_table, referenced_column_names
    FROM duckdb_constraints()
    WHERE database_name = current_database() AND schema_name IN :schemas
      AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')
    """
).bindparams(sa.bindparam("schemas", expanding=True))


def default_schema(conn: sa.Connection) -> str | None:
    return conn.execute(sa.text("SELECT current_schema()")).scalar()


def names(conn: sa.Connection) -> tuple[str | None, str | None]:
    """(the default schema, the current database) in one statement."""
    row = conn.execute(sa.text("SELECT current_schema(), current_database()")).one()
    return row[0], row[1]


def schema_names(conn: sa.Connection) -> list[str]:
    rows = conn.execute(
        sa.text(
            "SELECT DISTINCT schema_name FROM duckdb_schemas() "
            "WHERE database_name = current_database() AND NOT internal"
        )
    )
    return sorted(name for (name,) in rows if not is_system_schema(name, "duckdb"))


_FINGERPRINT_SQL = sa.text(
    """
    SELECT concat_ws(':',
      (SELECT count(*) || '.' || coalesce(sum(hash(schema_name, table_name, column_index,
              column_name, data_type, is_nullable, comment)), 0)
         FROM duckdb_columns()
        WHERE database_name = current_database() AND schema_name IN :schemas),
      (SELECT count(*) || '.' || coalesce(sum(hash(schema_name, table_name, comment)), 0)
         FROM duckdb_tables()
        WHERE database_name = current_database() AND schema_name IN :schemas),
      (SELECT count(*) || '.' || coalesce(sum(hash(schema_name, view_name, comment)), 0)
         FROM duckdb_views()
        WHERE database_name = current_database() AND schema_name IN :schemas),
      (SELECT count(*) || '.' || coalesce(sum(hash(schema_name, table_name, constraint_type,
              constraint_column_names::VARCHAR, constraint_text)), 0)
         FROM duckdb_constraints()
        WHERE database_name = current_database() AND schema_name IN :schemas))
    """
).bindparams(sa.bindparam("schemas", expanding=True))
"""DuckDB keeps its catalog in memory and keeps no schema version: one statement sums a hash
of every column, relation and constraint the read depends on, without sending them."""


def fingerprint(conn: sa.Connection, schemas: Sequence[str | None]) -> str:
    return schema_fingerprint(conn, _FINGERPRINT_SQL, schemas)


def read(conn: sa.Connection, schemas: Sequence[str | None], builder: CatalogBuilder) -> None:
    """Fill ``builder`` for every schema in ``schemas`` with two statements in total."""
    names = [s for s in schemas if s is not None]
    for row in conn.execute(_COLUMNS_SQL, {"schemas": names}).all():
        schema, table, kind, table_comment, index, column, type_, nullable, comment = row
        builder.add_relation(schema, table, kind, table_comment)
        if column is not None:
            builder.add_column(
                schema,
                table,
                index,
                column,
                compact_type(type_, "duckdb"),
                nullable=bool(nullable),
                comment=comment,
            )
    for schema, table, ctype, index, columns, ref_table, ref_columns in conn.execute(
        _KEYS_SQL, {"schemas": names}
    ):
        if ctype == "PRIMARY KEY":
            builder.add_primary_key(schema, table, columns)
            continue
        for position, (column, ref_column) in enumerate(zip(columns, ref_columns, strict=False)):
            builder.add_foreign_key_column(
                schema, table, f"fk{index}", position, column, schema, ref_table, ref_column
            )
