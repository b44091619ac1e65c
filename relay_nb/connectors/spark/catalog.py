"""Reading what a Spark session can query: databases, tables and views, columns.

Spark's catalog API answers per table (``listColumns``), so the read is bounded by the
caller's deadline and by the allowlist the analyst gives (``databases``, ``tables``): a
catalog that cannot be read in time says so, with the fix, instead of hanging the connect.
Temporary views (``df.createOrReplaceTempView``) are tables with no database, as SQLite's
are; a partition column says so in its comment, since filtering on it prunes whole files.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from relay_nb.connectors.sql.schema import Catalog, ColumnInfo, TableInfo
from relay_nb.errors import QueryExecutionError

__all__ = ["read_spark_catalog"]


def read_spark_catalog(
    session: Any,
    *,
    databases: Sequence[str] | None,
    tables: Sequence[str] | None,
    timeout_s: float,
) -> Catalog:
    """The tables ``session`` can query, within ``timeout_s`` (raises when it cannot)."""
    deadline = time.monotonic() + timeout_s
    catalog = session.catalog
    current = catalog.currentDatabase()
    wanted = {t.lower() for t in tables} if tables is not None else None
    found: list[TableInfo] = []
    seen: set[tuple[str | None, str]] = set()
    for database in list(databases) if databases is not None else [current]:
        for table in catalog.listTables(database):
            schema = None if table.isTemporary else (table.namespace or [database])[-1]
            key = (schema, table.name)
            if key in seen or not _wanted(wanted, schema, table.name):
                continue
            seen.add(key)
            if time.monotonic() > deadline:
                raise QueryExecutionError(
                    f"reading the Spark catalog took over {timeout_s:g} s ({len(found)} tables "
                    "read); connect with tables=[...] or databases=[...] to read fewer"
                )
            qualified = table.name if schema is None else f"{schema}.{table.name}"
            found.append(
                TableInfo(
                    schema_name=schema,
                    name=table.name,
                    kind="view" if (table.tableType or "").upper().endswith("VIEW") else "table",
                    columns=tuple(_columns(catalog, qualified)),
                    comment=table.description or None,
                )
            )
    return Catalog(dialect="spark", default_schema=current, tables=tuple(found))


def _wanted(wanted: set[str] | None, schema: str | None, name: str) -> bool:
    if wanted is None:
        return True
    return name.lower() in wanted or f"{schema}.{name}".lower() in wanted


def _columns(catalog: Any, qualified: str) -> list[ColumnInfo]:
    columns = []
    for column in catalog.listColumns(qualified):
        comment = column.description or None
        if column.isPartition:
            comment = f"{comment} (partition column)" if comment else "partition column"
        columns.append(
            ColumnInfo(
                name=column.name,
                type=str(column.dataType),
                nullable=bool(column.nullable),
                comment=comment,
            )
        )
    return columns
