"""The built-in connector kinds, and what they mean to ``relay.connect`` and config files.

Each built-in kind is a :class:`~relay_nb.connectors.types.ConnectorType` declared beside its
connector class (its ``kind.py``: options model, config spellings, URL schemes, the Python
targets it accepts), the same record a plugin registers. This module lists them, in the order
``relay.connect`` tries them, and derives what :mod:`relay_nb.connectors.specs`,
:mod:`relay_nb.facade.targets` and the plugin registry (:mod:`relay_nb.connectors.plugins`,
which keeps a plugin from taking any of it) check against, so that what
``relay.connect("w", "tavily")``, ``{"type": "sql"}`` or ``snowflake://…`` builds never depends
on what else is installed:

- the config-file types and their aliases, and the kinds built only from Python;
- the web-search provider names, which ``relay.connect`` reads as a bare word;
- the URL schemes of the built-ins, and every scheme SQLAlchemy may read as a dialect (its
  own, well-known third-party ones, and the ones installed under ``sqlalchemy.dialects``),
  since ``relay.connect`` hands any other URL to SQLAlchemy.

A new built-in kind is its package (connector class, ``kind.py`` with its options model) and
one line in :data:`BUILTIN_TYPES`; the option tables of ``docs/connectors.md`` are then
regenerated (``tests/connectors/test_kind_options.py`` prints them).
"""

from __future__ import annotations

import threading

from relay_nb.connectors.dataframe.kind import DATAFRAME_TYPE
from relay_nb.connectors.http.kind import HTTP_TYPE
from relay_nb.connectors.mcp.kind import MCP_TYPE
from relay_nb.connectors.mongo.kind import MONGO_TYPE
from relay_nb.connectors.spark.kind import SPARK_TYPE
from relay_nb.connectors.sql.kind import SQL_TYPE
from relay_nb.connectors.types import ConnectorType
from relay_nb.connectors.websearch.kind import WEB_SEARCH_PROVIDERS, WEBSEARCH_TYPE

__all__ = [
    "BUILTIN_SCHEMES",
    "BUILTIN_TYPES",
    "BUILTIN_TYPE_NAMES",
    "CONFIG_TYPE_NAMES",
    "RESERVED_TYPE_NAMES",
    "SQL_DIALECT_SCHEMES",
    "SQL_TYPE",
    "WEB_SEARCH_PROVIDERS",
    "builtin_type",
    "is_builtin_scheme",
    "is_sql_dialect_scheme",
]

BUILTIN_TYPES: tuple[ConnectorType, ...] = (
    SQL_TYPE,
    MONGO_TYPE,
    HTTP_TYPE,
    WEBSEARCH_TYPE,
    DATAFRAME_TYPE,
    SPARK_TYPE,
    MCP_TYPE,
)
"""Every built-in kind; ``relay.connect`` asks them in this order whether they accept a
target (SQL also takes every URL no other type claims)."""

BUILTIN_TYPE_NAMES = frozenset(name for ctype in BUILTIN_TYPES for name in ctype.names)
"""The config-file types and the kinds built only from Python."""
RESERVED_TYPE_NAMES = BUILTIN_TYPE_NAMES | frozenset(WEB_SEARCH_PROVIDERS)
"""Names no plugin may take: the built-in types and the web-search provider names."""
BUILTIN_SCHEMES = frozenset(scheme for ctype in BUILTIN_TYPES for scheme in ctype.url_schemes)
"""URL schemes of the built-ins (a SQL URL's base dialect, before ``+driver``)."""
CONFIG_TYPE_NAMES = sorted(n for ctype in BUILTIN_TYPES if ctype.in_config for n in ctype.names)
_BY_NAME = {name: ctype for ctype in BUILTIN_TYPES for name in ctype.names}

SQL_DIALECT_SCHEMES = frozenset(
    {
        # SQLAlchemy's own and the common third-party dialects (installed or not: a URL
        # naming one must mean a database whatever else is installed)
        *("mssql", "oracle", "postgresql", "mysql", "mariadb", "sqlite"),
        *("snowflake", "redshift", "bigquery", "trino", "presto", "clickhouse", "databricks"),
        *("cockroachdb", "hana", "db2", "ibm_db_sa", "teradatasql", "vertica", "exa"),
        *("firebird", "sybase", "access", "awsathena", "hive", "impala", "druid", "pinot"),
        *("crate", "spanner", "singlestoredb", "starrocks", "doris", "dremio", "kylin"),
        *("elasticsearch", "iris", "yugabytedb"),
    }
)
"""Schemes ``relay.connect`` hands to SQLAlchemy, which no plugin may claim."""

_lock = threading.Lock()
_installed_dialects: frozenset[str] | None = None


def builtin_type(name: str) -> ConnectorType | None:
    """The built-in type a config spelling names (``postgres`` is ``sql``), or None."""
    return _BY_NAME.get(name) if isinstance(name, str) else None


def is_builtin_scheme(scheme: str) -> bool:
    """Whether a built-in connector owns ``scheme`` (``postgresql+psycopg`` included)."""
    scheme = scheme.lower()
    return scheme in BUILTIN_SCHEMES or scheme.split("+", 1)[0] in BUILTIN_SCHEMES


def is_sql_dialect_scheme(scheme: str, *, installed: bool = True) -> bool:
    """Whether SQLAlchemy may read ``scheme`` as a database dialect: a known one, or (with
    ``installed``) one a package registers under ``sqlalchemy.dialects`` here (that group
    is read once per process)."""
    base = scheme.lower().split("+", 1)[0]
    if base in SQL_DIALECT_SCHEMES or base in SQL_TYPE.url_schemes:
        return True
    return installed and base in _dialect_entry_points()


def _dialect_entry_points() -> frozenset[str]:
    """``sqlalchemy.dialects`` entry point names (``name`` or ``name.driver``), by name."""
    global _installed_dialects
    with _lock:
        if _installed_dialects is None:
            from importlib.metadata import entry_points

            try:
                found = entry_points(group="sqlalchemy.dialects")
            except Exception:  # unreadable metadata: the known dialects still apply
                found = ()
            _installed_dialects = frozenset(ep.name.split(".", 1)[0].lower() for ep in found)
        return _installed_dialects
