"""Database addresses as analysts paste them, read as the SQLAlchemy URLs they mean.

- ``postgres://…`` (Heroku, Supabase, Render, cloud consoles) and a ``postgresql://…`` that
  names no driver become ``postgresql+psycopg://…``: psycopg 3 is the driver relay_nb
  bounds rows with on the server; SQLAlchemy's own default, psycopg2, is seldom installed.
- ``mysql://…`` and ``mariadb://…`` without a driver become ``…+pymysql://…``, the driver
  whose packets relay_nb measures.
- A plain file path (``chinook.sqlite``, ``~/data/shop.db``, ``lake.duckdb``) becomes
  ``sqlite:///`` or ``duckdb:///`` and its absolute path, when the file is there.

A driver named in the URL is kept as written; anything else is left for SQLAlchemy to read
(and :func:`~relay_nb.connectors.sql.readonly.parse_url` to explain).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["DATA_FILE_SUFFIXES", "data_file", "database_url", "missing_file"]

_SQLITE_SUFFIXES = frozenset({".sqlite", ".sqlite3", ".db", ".db3", ".sqlitedb"})
_DUCKDB_SUFFIXES = frozenset({".duckdb", ".ddb"})
DATA_FILE_SUFFIXES = frozenset({".csv", ".tsv", ".parquet"})
"""Files ``relay.connect`` reads into a DataFrame (a table named after the file)."""

_DEFAULT_DRIVERS = {
    "postgres": ("postgresql", "psycopg"),
    "postgresql": ("postgresql", "psycopg"),
    "mysql": ("mysql", "pymysql"),
    "mariadb": ("mariadb", "pymysql"),
}


def database_url(text: str) -> str:
    """``text`` as the SQLAlchemy URL it means (see the module docstring)."""
    stripped = text.strip()
    if "://" not in stripped:
        path = Path(stripped).expanduser()
        suffix = path.suffix.lower()
        if suffix in _SQLITE_SUFFIXES | _DUCKDB_SUFFIXES and path.is_file():
            scheme = "duckdb" if suffix in _DUCKDB_SUFFIXES else "sqlite"
            return f"{scheme}:///{path.resolve()}"
        return text
    scheme, rest = stripped.split("://", 1)
    default = _DEFAULT_DRIVERS.get(scheme.lower())
    if default is None:
        return text
    dialect, driver = default
    if importlib.util.find_spec(driver) is None and scheme.lower() != "postgres":
        return text  # SQLAlchemy's own default, or its "not installed" that names the extra
    return f"{dialect}+{driver}://{rest}"


def data_file(text: object) -> Path | None:
    """The CSV, TSV or Parquet file ``text`` names, when it is one and it is there."""
    if not isinstance(text, str) or "://" in text or "\n" in text:
        return None
    path = Path(text.strip()).expanduser()
    return path if path.suffix.lower() in DATA_FILE_SUFFIXES and path.is_file() else None


def missing_file(text: str) -> str | None:
    """What to say when ``text`` is the path of a database or data file that is not there."""
    stripped = text.strip()
    if "://" in stripped:
        return None
    path = Path(stripped).expanduser()
    suffixes = _SQLITE_SUFFIXES | _DUCKDB_SUFFIXES | DATA_FILE_SUFFIXES
    if path.suffix.lower() not in suffixes or path.is_file():
        return None
    return f"there is no file {stripped!r} (relative paths start in {Path.cwd()})"
