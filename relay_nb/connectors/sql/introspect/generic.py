"""Fallback reader for dialects without a hand-written catalog query (SQL Server, Oracle, …).

SQLAlchemy 2's ``Inspector.get_multi_*`` methods read a whole schema per call; dialects that
implement them natively (Oracle, PostgreSQL, SQL Server for some) do so in one statement,
others fall back to SQLAlchemy's per-table loop. Either way the result is the same catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine.reflection import ObjectKind

from relay_nb.connectors.sql.introspect.common import (
    CatalogBuilder,
    compact_type,
    is_system_schema,
)
from relay_nb.sql import sqlglot_dialect

__all__ = ["default_schema", "read", "schema_names"]


def default_schema(conn: sa.Connection) -> str | None:
    return sa.inspect(conn).default_schema_name


def schema_names(conn: sa.Connection) -> list[str]:
    names = sa.inspect(conn).get_schema_names()
    dialect = sqlglot_dialect(conn.dialect.name)
    return sorted(n for n in names if not is_system_schema(n, dialect))


def read(conn: sa.Connection, schemas: Sequence[str | None], builder: CatalogBuilder) -> None:
    """Fill ``builder`` through the inspector, one batch of calls per schema."""
    inspector = sa.inspect(conn)
    for schema in schemas:
        _read_schema(conn, inspector, schema, builder)


def _read_schema(
    conn: sa.Connection, inspector: sa.Inspector, schema: str | None, builder: CatalogBuilder
) -> None:
    views = set(_optional(lambda: inspector.get_view_names(schema), []))
    views |= set(_optional(lambda: inspector.get_materialized_view_names(schema), []))
    columns = inspector.get_multi_columns(schema=schema, kind=ObjectKind.ANY)
    dialect = sqlglot_dialect(conn.dialect.name)
    comments = _optional(
        lambda: inspector.get_multi_table_comment(schema=schema, kind=ObjectKind.ANY), {}
    )
    for key, cols in columns.items():
        table = key[1]
        comment = (comments.get(key) or {}).get("text")
        builder.add_relation(schema, table, "view" if table in views else "table", comment)
        for position, col in enumerate(cols):
            builder.add_column(
                schema,
                table,
                position,
                col["name"],
                compact_type(_type_name(conn, col["type"]), dialect),
                nullable=bool(col.get("nullable", True)),
                comment=col.get("comment"),
            )
    pks = _optional(lambda: inspector.get_multi_pk_constraint(schema=schema), {})
    for (_, table), pk in pks.items():
        builder.add_primary_key(schema, table, pk.get("constrained_columns") or [])
    fks = _optional(lambda: inspector.get_multi_foreign_keys(schema=schema), {})
    for (_, table), keys in fks.items():
        for index, fk in enumerate(keys):
            _add_foreign_key(builder, schema, table, fk.get("name") or f"fk{index}", fk)


def _add_foreign_key(
    builder: CatalogBuilder, schema: str | None, table: str, name: str, fk: Any
) -> None:
    pairs = zip(fk["constrained_columns"], fk["referred_columns"], strict=False)
    for position, (column, ref_column) in enumerate(pairs):
        builder.add_foreign_key_column(
            schema,
            table,
            name,
            position,
            column,
            fk.get("referred_schema") or schema,
            fk["referred_table"],
            ref_column,
        )


def _type_name(conn: sa.Connection, type_: Any) -> str:
    try:
        return str(type_.compile(dialect=conn.dialect))
    except Exception:  # NullType and dialect-specific types that do not compile stand-alone
        return str(type_) if not isinstance(type_, sa.types.NullType) else ""


def _optional(call: Callable[[], Any], default: Any) -> Any:
    """Dialects may not implement comments or materialized views; that is not an error."""
    try:
        return call()
    except NotImplementedError:
        return default
