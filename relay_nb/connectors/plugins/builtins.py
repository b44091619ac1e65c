"""What the built-in connectors mean — the names and URL schemes no plugin may take.

The one source :mod:`relay_nb.connectors.specs`, :mod:`relay_nb.facade.targets` and the plugin
registry check against, so that what ``relay.connect("w", "tavily")``, ``{"type": "sql"}`` or
``snowflake://…`` builds never depends on what else is installed:

- the config-file types and their aliases, and the kinds built only from Python;
- the web-search provider names, which ``relay.connect`` reads as a bare word;
- the URL schemes of the built-ins, and every scheme SQLAlchemy may read as a dialect (its
  own, well-known third-party ones, and the ones installed under ``sqlalchemy.dialects``),
  since ``relay.connect`` hands any other URL to SQLAlchemy.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

__all__ = [
    "BUILTINS",
    "BUILTIN_SCHEMES",
    "BUILTIN_TYPE_NAMES",
    "CONFIG_TYPE_NAMES",
    "RESERVED_TYPE_NAMES",
    "SCHEME",
    "SQL_DIALECT_SCHEMES",
    "TYPE_NAME",
    "WEB_SEARCH_PROVIDERS",
    "is_builtin_scheme",
    "is_sql_dialect_scheme",
]

TYPE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]{0,39}$")


@dataclass(frozen=True)
class Builtin:
    name: str
    aliases: tuple[str, ...]
    url_schemes: tuple[str, ...]
    description: str
    in_config: bool = True


BUILTINS = (
    Builtin(
        "sql",
        ("postgres", "postgresql", "mysql", "mariadb", "sqlite", "duckdb"),
        ("postgresql", "postgres", "mysql", "mariadb", "sqlite", "duckdb", "mssql", "oracle"),
        "a SQL database (any SQLAlchemy URL): guarded read-only SQL",
    ),
    Builtin("mongo", ("mongodb",), ("mongodb", "mongodb+srv"), "MongoDB: find and aggregate"),
    Builtin("http", (), ("http", "https"), "an HTTP API under a fixed base URL"),
    Builtin("websearch", ("web_search",), (), "web search (tavily, brave, serper)"),
    Builtin("dataframe", (), (), "pandas DataFrames as SQL tables: relay.connect(id, df)", False),
    Builtin("mcp", (), (), "an MCP server (stdio or streamable HTTP): relay_nb.MCP(...)"),
)

WEB_SEARCH_PROVIDERS = ("tavily", "brave", "serper")
"""What ``relay.connect(id, NAME)`` builds a web-search connector from."""
BUILTIN_TYPE_NAMES = frozenset(n for b in BUILTINS for n in (b.name, *b.aliases))
"""The config-file types and the kinds built only from Python."""
RESERVED_TYPE_NAMES = BUILTIN_TYPE_NAMES | frozenset(WEB_SEARCH_PROVIDERS)
"""Names no plugin may take: the built-in types and the web-search provider names."""
BUILTIN_SCHEMES = frozenset(s for b in BUILTINS for s in b.url_schemes)
"""URL schemes of the built-ins (a SQL URL's base dialect, before ``+driver``)."""
CONFIG_TYPE_NAMES = sorted(n for b in BUILTINS if b.in_config for n in (b.name, *b.aliases))

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


def is_builtin_scheme(scheme: str) -> bool:
    """Whether a built-in connector owns ``scheme`` (``postgresql+psycopg`` included)."""
    scheme = scheme.lower()
    return scheme in BUILTIN_SCHEMES or scheme.split("+", 1)[0] in BUILTIN_SCHEMES


def is_sql_dialect_scheme(scheme: str, *, installed: bool = True) -> bool:
    """Whether SQLAlchemy may read ``scheme`` as a database dialect: a known one, or (with
    ``installed``) one a package registers under ``sqlalchemy.dialects`` here (that group
    is read once per process)."""
    base = scheme.lower().split("+", 1)[0]
    if base in SQL_DIALECT_SCHEMES or is_builtin_scheme(base):
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
