"""Reading what a Spark session can query: databases, tables and views, columns.

On a classic session the tables and their columns come from the session catalog in a few
calls (:mod:`.metastore`). Otherwise — Spark Connect, another catalog — the tables are listed
through the catalog API (``listTables``, per database) and each one's ``DESCRIBE TABLE`` is
read by a few threads at once (each Python thread drives its own JVM thread); temporary views
are always described. ``DESCRIBE`` rather than the catalog API's ``listColumns``, which costs
about five times more per table (benchmarks/spark.py measures them); it gives column
comments and the partition columns too. The read is bounded by the caller's deadline and by
the allowlist the analyst gives (``databases``, ``tables``): a catalog that cannot be read in
time says so, with the fix, instead of hanging the connect. Temporary views
(``df.createOrReplaceTempView``) are tables with no database, as SQLite's are; a partition
column says so in its comment, since filtering on it prunes whole files.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from relay_nb.connectors.spark.jobs import once_more_if_pool_shut
from relay_nb.connectors.spark.metastore import Listed, classic_listing
from relay_nb.errors import QueryExecutionError
from relay_nb.sql import Catalog, ColumnInfo, TableInfo

__all__ = ["read_spark_catalog"]

logger = logging.getLogger("relay_nb.connectors")
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_READERS = 8
"""Threads reading columns at once: Spark's catalog answers them concurrently."""


def read_spark_catalog(
    session: Any,
    *,
    databases: Sequence[str] | None,
    tables: Sequence[str] | None,
    timeout_s: float,
) -> Catalog:
    """The tables ``session`` can query, within ``timeout_s`` (raises when it cannot)."""
    deadline = time.monotonic() + timeout_s
    wanted = {t.lower() for t in tables} if tables is not None else None
    # not a with-block: its exit would wait for a metastore that stopped answering
    pool = ThreadPoolExecutor(max_workers=_READERS, thread_name_prefix="relay-spark-catalog")
    try:
        listing = pool.submit(
            once_more_if_pool_shut, lambda: _listed(session, databases, tables, wanted)
        )
        listed: list[Listed] = _within(listing, deadline, timeout_s, "listing the tables")
        pending = {  # the tables whose columns the listing did not give
            index: pool.submit(
                once_more_if_pool_shut,
                functools.partial(_columns, session, entry.schema, entry.name),
            )
            for index, entry in enumerate(listed)
            if entry.columns is None
        }
        found = []
        for index, entry in enumerate(listed):
            try:
                columns = (
                    entry.columns
                    if entry.columns is not None
                    else _within(
                        pending[index],
                        deadline,
                        timeout_s,
                        f"{len(found)} of {len(listed)} tables read",
                    )
                )
            except QueryExecutionError:
                raise
            except Exception as exc:  # one unreadable table (no permission) costs only itself
                logger.info("Spark table %s.%s left out: %r", entry.schema, entry.name, exc)
                continue
            found.append(
                TableInfo(
                    schema_name=entry.schema,
                    name=entry.name,
                    kind=entry.kind,
                    columns=tuple(columns),
                    comment=entry.comment,
                )
            )
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    # no default database: a one-part name is what Spark resolves to a temporary view first,
    # so only temporary views (no database here) may be named bare; every table is written
    # database.table, and a `USE` elsewhere changes nothing
    return Catalog(
        dialect="spark", default_schema=None, tables=tuple(found), database=_current(session)
    )


def _current(session: Any) -> str | None:
    """The session's catalog (``spark_catalog``, a Unity Catalog), which a three-part name
    ``catalog.database.table`` may spell out; None when the session will not say."""
    try:
        return str(session.catalog.currentCatalog()) or None
    except Exception:  # an older Spark, a catalog that does not answer: three-part names refused
        logger.info("the Spark session's current catalog is not known", exc_info=True)
        return None


def _within(future: Future[Any], deadline: float, timeout_s: float, done: str) -> Any:
    try:
        return future.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        raise QueryExecutionError(
            f"reading the Spark catalog took over {timeout_s:g} s ({done}); connect with "
            "tables=[...] or databases=[...] to read fewer"
        ) from None


def _listed(
    session: Any,
    databases: Sequence[str] | None,
    tables: Sequence[str] | None,
    wanted: set[str] | None,
) -> list[Listed]:
    """Each table and view to read (temporary views with no database): from the session
    catalog in this process when there is one (:mod:`.metastore`, with the columns), else
    from the catalog API (columns to describe)."""
    catalog = session.catalog
    if databases is None:  # the current database, and those that `tables` names
        named = [t.rsplit(".", 1)[0] for t in tables or () if "." in t]
        databases = list(dict.fromkeys([catalog.currentDatabase(), *named]))

    def keep(schema: str | None, name: str) -> bool:
        return _wanted(wanted, schema, name)

    classic = classic_listing(session, databases, keep)
    if classic is not None:
        return classic
    listed: list[Listed] = []
    seen: set[tuple[str | None, str]] = set()
    for database in databases:
        for table in catalog.listTables(database):
            schema = None if table.isTemporary else (table.namespace or [database])[-1]
            key = (schema, table.name)
            if key not in seen and keep(schema, table.name):
                seen.add(key)
                kind = "view" if (table.tableType or "").upper().endswith("VIEW") else "table"
                listed.append(Listed(schema, table.name, kind, table.description or None))
    return listed


def _wanted(wanted: set[str] | None, schema: str | None, name: str) -> bool:
    if wanted is None:
        return True
    return name.lower() in wanted or f"{schema}.{name}".lower() in wanted


def _columns(session: Any, schema: str | None, name: str) -> list[ColumnInfo]:
    """``DESCRIBE TABLE``'s columns, their comments, and which are partition columns (the
    rows after ``# Partition Information``)."""
    qualified = ".".join(_quoted(part) for part in (schema, name) if part is not None)
    rows = session.sql(f"DESCRIBE TABLE {qualified}").collect()
    columns: list[tuple[str, str, str | None]] = []
    partitions: set[str] = set()
    section = "columns"
    for row in rows:
        column, kind, comment = row[0] or "", row[1] or "", row[2]
        if not column.strip() and not kind.strip():
            section = "other"  # a blank row ends a section
        elif column.startswith("#") and not kind.strip():  # a section's title, not a column
            section = {
                "# Partition Information": "partitions",
                "# Partitioning": "partitioning",
            }.get(column.strip(), "other")
        elif column == "# col_name":
            continue  # the header of the partition section
        elif section == "columns":
            columns.append((column, kind, comment))
        elif section == "partitions":
            partitions.add(column)
        elif section == "partitioning" and _PLAIN_NAME.fullmatch(kind.strip()):
            partitions.add(kind.strip())  # DSv2 (Iceberg, Delta): "Part 0 | day"
    found = []
    for column, kind, comment in columns:
        note = comment or None
        if column in partitions:
            note = f"{note} (partition column)" if note else "partition column"
        found.append(ColumnInfo(name=column, type=kind, comment=note))
    return found


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
