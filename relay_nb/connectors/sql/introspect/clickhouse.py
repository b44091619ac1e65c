"""ClickHouse catalog reader (a server, or chDB in the kernel): one statement for all requested
databases together, whatever the number of tables.

``system.tables`` left-joined with ``system.columns`` gives relations, their engines, columns,
types and both kinds of comments; both are metadata, so reading them never reads a table's
rows (SQLAlchemy's inspector would ask per table: three statements each). ClickHouse calls a
schema a *database*; the default one is ``currentDatabase()``.

- Types are shown exactly as ClickHouse writes them (``LowCardinality(String)``,
  ``DateTime64(3, 'UTC')``, ``Enum8('paid' = 1, 'refunded' = 2)``): an enum's values are
  case-sensitive data, and lowercasing them would teach the model the wrong spelling.
  A column is nullable when its type is ``Nullable(…)`` (also inside ``LowCardinality``).
- No column is marked a primary key: ClickHouse's primary key is the sorting key's prefix,
  not a unique identifier (``ORDER BY (status, created_at)`` would otherwise make ``status``
  an identifier, never profiled). There are no foreign keys.
- Left out: temporary tables, a materialized view's inner tables (``.inner…``), and
  dictionaries (``Dictionary`` engine), whose reads may load from other databases or URLs —
  the guard refuses ``dictGet`` for the same reason.
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

_RELATIONS = """
    database IN :schemas AND NOT is_temporary AND engine != 'Dictionary'
    AND NOT startsWith(name, '.inner')
"""

_COLUMNS_SQL = sa.text(
    f"""
    SELECT t.database, t.name, t.engine, t.comment,
           c.position, c.name, c.type, c.comment
    FROM (SELECT database, name, engine, comment FROM system.tables WHERE {_RELATIONS}) AS t
    LEFT JOIN (
        SELECT database, table, position, name, type, comment
        FROM system.columns WHERE database IN :schemas
    ) AS c ON c.database = t.database AND c.table = t.name
    """
).bindparams(sa.bindparam("schemas", expanding=True))

_FINGERPRINT_SQL = sa.text(
    f"""
    SELECT concat(
      (SELECT concat(toString(count()), '.', toString(sum(cityHash64(database, name, engine,
              comment, toString(metadata_modification_time)))))
         FROM system.tables WHERE {_RELATIONS}),
      ':',
      (SELECT concat(toString(count()), '.', toString(sum(cityHash64(database, table,
              position, name, type, comment))))
         FROM system.columns WHERE database IN :schemas))
    """
).bindparams(sa.bindparam("schemas", expanding=True))
"""One statement: a count and a sum of hashes of every relation (with its metadata's
modification time) and every column the read depends on, computed by the engine."""

_VIEW_ENGINES = frozenset({"View", "MaterializedView", "LiveView", "WindowView"})


def default_schema(conn: sa.Connection) -> str | None:
    return conn.execute(sa.text("SELECT currentDatabase()")).scalar()


def schema_names(conn: sa.Connection) -> list[str]:
    rows = conn.execute(sa.text("SELECT name FROM system.databases"))
    return sorted(name for (name,) in rows if not is_system_schema(name, "clickhouse"))


def fingerprint(conn: sa.Connection, schemas: Sequence[str | None]) -> str:
    return schema_fingerprint(conn, _FINGERPRINT_SQL, schemas)


def read(conn: sa.Connection, schemas: Sequence[str | None], builder: CatalogBuilder) -> None:
    """Fill ``builder`` for every database in ``schemas`` with one statement."""
    names = [s for s in schemas if s is not None]
    for row in conn.execute(_COLUMNS_SQL, {"schemas": names}).all():
        schema, table, engine, table_comment, position, column, type_, comment = row
        kind = "view" if engine in _VIEW_ENGINES else "table"
        builder.add_relation(schema, table, kind, table_comment)
        if position:  # 0: the join's default for a relation without columns (positions start at 1)
            builder.add_column(
                schema,
                table,
                int(position),
                column,
                compact_type(type_, "clickhouse"),
                nullable=_nullable(type_),
                comment=comment,
            )


def _nullable(type_: str) -> bool:
    inner = type_.removeprefix("LowCardinality(")
    return inner.startswith("Nullable(")
