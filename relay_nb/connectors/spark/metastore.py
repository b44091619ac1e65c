"""A classic session's tables, read from its session catalog in a few calls.

On a classic session the JVM is in this process, and its session catalog lists a database's
tables (``SessionCatalog.listTables``) and fetches them all at once
(``getTablesByName``: one metastore round trip): each table's schema comes back as JSON
(names, types, column comments) with its partition columns, kind and comment. Only instance
calls cross Py4J per table — about 20 µs each — where the catalog API's ``listTables`` costs
milliseconds per table and ``DESCRIBE TABLE`` a Spark query (benchmarks/spark.py measures
them). Spark Connect sessions and catalogs this path cannot read (an older Spark, Unity
Catalog's) give None, and the caller lists through the catalog API and describes each table;
temporary views (and tables whose schema the metastore does not hold, Delta's) are listed
here without columns, for the caller to describe.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from relay_nb.sql import ColumnInfo

__all__ = ["Listed", "classic_listing", "spark_type"]

logger = logging.getLogger("relay_nb.connectors.spark")
_SEPARATOR = "\u0001"


class Listed(NamedTuple):
    """One table or view to read: its database (None for a temporary view), name, kind and
    comment, and its columns when the listing already has them."""

    schema: str | None
    name: str
    kind: str
    comment: str | None
    columns: tuple[ColumnInfo, ...] | None = None


def classic_listing(
    session: Any, databases: Sequence[str], keep: Callable[[str | None, str], bool]
) -> list[Listed] | None:
    """The tables ``keep`` wants in ``databases``, with their columns (temporary views
    without); None where there is no session catalog in this process to read."""
    jsession = getattr(session, "_jsparkSession", None)
    if jsession is None:
        return None
    try:
        return _read(session, jsession, databases, keep)
    except Exception as exc:  # another catalog implementation, an older Spark
        logger.info("Spark session catalog unavailable (%r); using the catalog API", exc)
        return None


def _read(
    session: Any, jsession: Any, databases: Sequence[str], keep: Callable[[str | None, str], bool]
) -> list[Listed]:
    jvm = session.sparkContext._jvm
    converters = jvm.scala.jdk.javaapi.CollectionConverters
    catalog = jsession.sessionState().catalog()
    listed: list[Listed] = []
    seen: set[tuple[str | None, str]] = set()
    for database in databases:
        persistent = jvm.java.util.ArrayList()
        for ident in converters.asJava(catalog.listTables(database)):
            schema = ident.database().get() if ident.database().isDefined() else None
            name = ident.table()
            if (schema, name) in seen or not keep(schema, name):
                continue
            seen.add((schema, name))
            if schema is None:  # a temporary view: described by the caller
                listed.append(Listed(None, name, "view", None))
            else:
                persistent.add(ident)
        if persistent.size():
            found = catalog.getTablesByName(converters.asScala(persistent).toSeq())
            listed.extend(_table(table) for table in converters.asJava(found))
    return listed


def _table(table: Any) -> Listed:
    ident = table.identifier()
    partitions = set(
        filter(None, table.partitionColumnNames().mkString(_SEPARATOR).split(_SEPARATOR))
    )
    fields = json.loads(table.schema().json())["fields"]
    comment = table.comment()
    return Listed(
        schema=ident.database().get(),
        name=ident.table(),
        kind="view" if table.tableType().name().upper().endswith("VIEW") else "table",
        comment=(comment.get() or None) if comment.isDefined() else None,
        # Delta keeps its schema in its log, not in the metastore (an empty schema here):
        # such a table is described like a temporary view
        columns=tuple(_column(field, partitions) for field in fields) if fields else None,
    )


def _column(field: dict[str, Any], partitions: set[str]) -> ColumnInfo:
    comment = (field.get("metadata") or {}).get("comment") or None
    if field["name"] in partitions:
        comment = f"{comment} (partition column)" if comment else "partition column"
    return ColumnInfo(name=field["name"], type=spark_type(field["type"]), comment=comment)


_SIMPLE = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}


def spark_type(kind: Any) -> str:
    """A schema JSON type as ``DESCRIBE`` writes it: ``long`` -> ``bigint``, an array of
    strings -> ``array<string>``, a struct -> ``struct<a:int,b:string>``."""
    if isinstance(kind, str):
        return _SIMPLE.get(kind, kind)
    shape = kind.get("type")
    if shape == "array":
        return f"array<{spark_type(kind['elementType'])}>"
    if shape == "map":
        return f"map<{spark_type(kind['keyType'])},{spark_type(kind['valueType'])}>"
    if shape == "struct":
        inner = ",".join(f"{f['name']}:{spark_type(f['type'])}" for f in kind["fields"])
        return f"struct<{inner}>"
    if shape == "udt":
        return str(kind.get("sqlType", "udt"))
    return str(shape)
