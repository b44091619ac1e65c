"""The ``sql`` connector kind: its options and its :class:`ConnectorType`.

One record says what a SQL connector is to ``relay.connect`` and ``relay.config.json``: the
config spellings (``sql``, ``postgres``, ``sqlite``…), the URL schemes it claims (and, as the
fallback, any URL no other type claims, since SQLAlchemy reads most schemes as a database),
SQLAlchemy engines as targets, and its options — each declared once below, with the default
:class:`~relay_nb.connectors.sql.connector.SQLConnector` takes (see
:mod:`relay_nb.connectors.options`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.options import (
    approve_above,
    approve_above_rows,
    max_result_bytes,
    max_value_bytes,
    option,
    price_per_tb,
    required,
)
from relay_nb.connectors.types import ConnectorType, LazyFactory

if TYPE_CHECKING:
    from relay_nb.sql import SchemaRanker

__all__ = [
    "SQL_SCHEMES",
    "SQL_TYPE",
    "SQLKeywords",
    "SQLOptions",
    "SQLPythonOptions",
    "is_engine",
]

SQL_SCHEMES = ("postgresql", "postgres", "mysql", "mariadb", "sqlite", "duckdb", "mssql", "oracle")
"""The base dialects (before ``+driver``) a SQL URL usually names."""


class SQLOptions(BaseModel):
    """A ``sql`` config entry's ``config`` (snake_case, or the Relay-E camelCase spellings)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = required("the database's SQLAlchemy URL (``relay.connect``'s target)")
    tables: list[str] = option(
        None,
        "the only tables the model sees and may query (``schema.table`` allowed); None: all",
        "tables",
        "tableAllowlist",
        "table_allowlist",
    )
    schemas: list[str] = option(None, "the schemas to read; None: the default schema")
    row_limit: int = option(
        200,
        "rows a query returns at most (its LIMIT is injected or clamped)",
        "row_limit",
        "rowLimit",
    )
    statement_timeout_s: float = option(
        30.0,
        "seconds a statement may run before it is cancelled",
        "statement_timeout_s",
        "statementTimeoutS",
    )
    sample_values: int = option(
        0, "example values shown per text column in the schema (0: none, at most 20)"
    )
    profile: bool = option(
        True, "profile the columns' values (ranges, the few values of a category) with the schema"
    )
    profile_exclude: list[str] = option(
        (), "columns never profiled, as patterns (``customers.email``, ``*.notes``)"
    )
    profile_time_s: float = option(5.0, "seconds the value profiling may take")
    max_value_bytes: int = max_value_bytes()
    max_result_bytes: int = max_result_bytes()


class SQLPythonOptions(SQLOptions):
    """Every ``relay.connect`` / :class:`~relay_nb.connectors.sql.connector.SQLConnector`
    keyword: the config file's options, and those only Python passes."""

    preview_chars: int = option(
        4000, "characters of a result the model reads (the DataFrame keeps all)"
    )
    ranker: Any = option(
        None, "a ``SchemaRanker`` ordering tables by the question when the schema does not fit"
    )
    preflight: bool | None = option(
        None,
        "ask the database what a query scans before it runs (None: on when ``approve_above``, "
        "``approve_above_rows`` or ``price_per_tb`` is set)",
    )
    approve_above: int | str | None = approve_above()
    approve_above_rows: int | None = approve_above_rows()
    price_per_tb: float | None = price_per_tb()


class SQLKeywords(TypedDict, total=False):
    """``relay.connect(id, engine, **options)``'s options, typed as ``SQLConnector`` takes
    them (checked against its signature and :class:`SQLPythonOptions` by the tests)."""

    tables: Sequence[str] | None
    schemas: Sequence[str] | None
    row_limit: int
    statement_timeout_s: float
    name: str | None
    description: str | None
    preview_chars: int
    sample_values: int
    profile: bool
    profile_exclude: Sequence[str]
    profile_time_s: float
    ranker: SchemaRanker | None
    max_value_bytes: int
    max_result_bytes: int
    preflight: bool | None
    approve_above: int | str | None
    approve_above_rows: int | None
    price_per_tb: float | None


def is_engine(value: object) -> bool:
    """A SQLAlchemy engine, without importing SQLAlchemy when the caller has not."""
    cls = type(value)
    return cls.__name__ == "Engine" and cls.__module__.startswith("sqlalchemy")


SQL_TYPE = ConnectorType(
    name="sql",
    aliases=("postgres", "postgresql", "mysql", "mariadb", "sqlite", "duckdb"),
    factory=LazyFactory("relay_nb.connectors.sql.connector:SQLConnector"),
    config_model=SQLOptions,
    keywords_model=SQLPythonOptions,
    url_schemes=SQL_SCHEMES,
    accepts=is_engine,
    description="a SQL database (any SQLAlchemy URL): guarded read-only SQL",
    factory_defaults=True,
    python_keywords=True,
    builtin=True,
)
