"""Read a database's catalog into a :class:`Catalog` in one pass per schema.

Per-table reflection (what SQLAlchemy's inspector and the agent toolkits built on it do) costs
three or more round trips per table: seconds on a 1,000-table warehouse. Each dialect module
issues a constant number of catalog statements, whatever the table count:

- SQLite: 2 per database (``sqlite_master`` joined with the ``pragma_table_info`` and
  ``pragma_foreign_key_list`` table-valued functions), +1 when attached databases are named;
- PostgreSQL: 2 for all schemas together (``pg_class``/``pg_attribute``/``format_type``/
  ``pg_description``; ``pg_constraint``);
- MySQL/MariaDB: 2 for all schemas together (``information_schema`` tables x columns;
  ``key_column_usage``);
- DuckDB: 2 for all schemas together (``duckdb_tables/views`` x ``duckdb_columns``;
  ``duckdb_constraints``);
- ClickHouse (a server or chDB): 1 for all databases together (``system.tables`` x
  ``system.columns``: metadata, never a table's rows);
- anything else: SQLAlchemy's ``Inspector.get_multi_*`` per schema, batched where the dialect
  implements them;

plus one statement for the default schema (none on SQLite). ``tables=`` is the connector's
allowlist: it restricts the result, and a name that matches nothing is a configuration error
that lists close matches, so a typo cannot silently hide a table from the model.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Sequence
from types import ModuleType

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from relay_nb.connectors.sql.introspect.common import CatalogBuilder, is_system_schema
from relay_nb.errors import ConfigurationError
from relay_nb.sql import Catalog, TableInfo, sqlglot_dialect

__all__ = ["current_database", "fingerprint", "introspect"]

_READERS = frozenset({"sqlite", "postgres", "mysql", "duckdb", "clickhouse"})
"""Engines with a reader of their own in this package; the rest use ``generic``."""


def introspect(
    conn: sa.Connection,
    *,
    schemas: Sequence[str] | None = None,
    tables: Sequence[str] | None = None,
) -> Catalog:
    """The tables and views of ``schemas`` (default: the connection's default schema).

    ``tables`` holds names or ``schema.name`` entries; only those are returned, and a schema
    named there is read even when ``schemas`` does not list it. The result is sorted by
    (schema, name) so two reads of the same database compare equal.

    Raises :class:`ConfigurationError` for a system schema, a named schema that does not
    exist, and a ``tables`` entry that matches no table (or several), with close matches.
    """
    for option, value in (("schemas", schemas), ("tables", tables)):
        if isinstance(value, str):  # a bare string would be read as a list of letters
            raise ConfigurationError(f"{option} must be a list of names, not the string {value!r}")
    dialect = sqlglot_dialect(conn.dialect.name)
    reader = _reader(dialect)
    if hasattr(reader, "names"):  # both in one statement
        default, database = reader.names(conn)
    else:
        default, database = reader.default_schema(conn), current_database(conn, dialect)
    if default is None and dialect == "bigquery":  # its dialect leaves the URL's dataset out
        default = conn.engine.url.database or None
    wanted = _schemas_to_read(dialect, default, schemas, tables)
    builder = CatalogBuilder()
    reader.read(conn, wanted, builder)
    found = builder.build()
    _check_schemas_exist(conn, reader, dialect, wanted, found, explicit=schemas)
    if tables is not None:
        found = _restrict(found, tables, default, dialect)
    return Catalog(
        dialect=dialect,
        default_schema=default,
        tables=found,
        database=database,
        complete_schemas=() if tables is not None else tuple(s for s in wanted if s),
    )


def current_database(conn: sa.Connection, dialect: str) -> str | None:
    """The connection's own catalog, which a three-part table name may spell out: from the
    URL where it says (BigQuery's project, Trino's catalog), else one cheap statement; None
    where the engine has no such level (MySQL, SQLite, ClickHouse) or will not say."""
    url = conn.engine.url
    if dialect == "bigquery":
        return getattr(conn.dialect, "project_id", None) or url.host or None
    if dialect in ("trino", "presto", "athena"):
        return (url.database or "").split("/")[0] or None
    statement = _CURRENT_DATABASE.get(dialect)
    if statement is None:
        return None
    try:
        name = conn.exec_driver_sql(statement).scalar()
    except DBAPIError:
        conn.rollback()
        return None
    return str(name) if name else None


_CURRENT_DATABASE = {
    "redshift": "SELECT current_database()",
    "snowflake": "SELECT CURRENT_DATABASE()",
    "tsql": "SELECT DB_NAME()",
    "databricks": "SELECT current_catalog()",
}


def fingerprint(
    conn: sa.Connection,
    *,
    schemas: Sequence[str] | None = None,
    tables: Sequence[str] | None = None,
) -> str | None:
    """A token that changes whenever what :func:`introspect` would read changes, in one
    statement and without reading it (None: the engine offers no cheap way; read it all).

    SQLite reads its ``schema_version``; PostgreSQL, MySQL/MariaDB, DuckDB and ClickHouse sum
    a hash or the row versions of the catalog rows the read depends on, server-side. Taken
    before the read, so a change between the two makes the next token differ, never hides it.
    """
    dialect = sqlglot_dialect(conn.dialect.name)
    reader = _reader(dialect)
    if not hasattr(reader, "fingerprint"):
        return None
    wanted = _schemas_to_read(dialect, reader.default_schema(conn), schemas, tables)
    return f"{dialect}:{reader.fingerprint(conn, wanted)}"


def _reader(dialect: str) -> ModuleType:
    module = dialect if dialect in _READERS else "generic"
    return importlib.import_module(f"relay_nb.connectors.sql.introspect.{module}")


def _label(dialect: str, schema: str | None) -> str | None:
    """SQLite's main database carries no schema name; every other schema keeps its own."""
    if dialect == "sqlite" and (schema is None or schema.lower() == "main"):
        return None
    return schema


def _schemas_to_read(
    dialect: str,
    default: str | None,
    schemas: Sequence[str] | None,
    tables: Sequence[str] | None,
) -> list[str | None]:
    requested = list(schemas) if schemas is not None else [default]
    for name in tables or ():
        if "." in name:
            requested.append(name.split(".", 1)[0])
    wanted: list[str | None] = []
    for schema in requested:
        if schema is not None and is_system_schema(schema, dialect):
            raise ConfigurationError(
                f"schema {schema!r} is the database's own catalog and is never exposed; "
                "name the schemas that hold your data"
            )
        label = _label(dialect, schema)
        if label not in wanted:  # None: the main database (SQLite) or no default schema
            wanted.append(label)
    return wanted


def _check_schemas_exist(
    conn: sa.Connection,
    reader: ModuleType,
    dialect: str,
    wanted: list[str | None],
    found: tuple[TableInfo, ...],
    *,
    explicit: Sequence[str] | None,
) -> None:
    """An explicitly named schema that yielded nothing may be a typo: check, and say so.

    Runs only when a requested schema came back empty, so the normal path costs no extra
    statement.
    """
    if not explicit:
        return
    seen = {t.schema_name for t in found}
    empty = [s for s in wanted if s is not None and s not in seen]
    if not empty:
        return
    existing = reader.schema_names(conn)
    unknown = [s for s in empty if s not in existing]
    if unknown:
        hints = "; ".join(_did_you_mean(s, existing) for s in unknown)
        raise ConfigurationError(
            f"unknown schema(s) {unknown} for {dialect}: {hints}; available: {existing}"
        )


def _restrict(
    found: tuple[TableInfo, ...],
    requested: Sequence[str],
    default: str | None,
    dialect: str,
) -> tuple[TableInfo, ...]:
    """Keep the tables named in ``requested``; unknown or ambiguous names raise."""
    chosen: dict[str, TableInfo] = {}
    problems: list[str] = []
    for name in requested:
        try:
            table = _match(found, name, default, dialect)
        except LookupError as exc:
            problems.append(str(exc))
            continue
        chosen[table.qualified_name] = table
    if problems:
        raise ConfigurationError("tables=: " + "; ".join(problems))
    return tuple(t for t in found if t.qualified_name in chosen)


def _match(found: tuple[TableInfo, ...], name: str, default: str | None, dialect: str) -> TableInfo:
    """Resolve ``name`` or ``schema.name``: exact case first, then case-insensitively."""
    if "." in name:
        schema, bare = name.split(".", 1)
        label = _label(dialect, schema)
        candidates = [t for t in found if (t.schema_name or "").lower() == (label or "").lower()]
    else:
        bare, candidates = name, list(found)
    for same in (lambda t: t.name == bare, lambda t: t.name.lower() == bare.lower()):
        hits = [t for t in candidates if same(t)]
        if len(hits) > 1:
            hits = [t for t in hits if t.schema_name == default] or hits
        if len(hits) == 1:
            return hits[0]
        if hits:
            options = ", ".join(t.qualified_name for t in hits)
            raise LookupError(f"{name!r} is ambiguous ({options}); qualify it with its schema")
    names = [t.name if t.schema_name == default else t.qualified_name for t in found]
    raise LookupError(f"unknown table {name!r}: {_did_you_mean(name, names)}")


def _did_you_mean(name: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, options, n=3, cutoff=0.5)
    if not close and "." not in name:
        bare = {o.rsplit(".", 1)[-1]: o for o in options}
        close = [bare[c] for c in difflib.get_close_matches(name, list(bare), n=3, cutoff=0.5)]
    return f"did you mean {', '.join(repr(c) for c in close)}?" if close else "no close match"
