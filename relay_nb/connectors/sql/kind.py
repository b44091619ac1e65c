"""The ``sql`` connector kind: its config options and its :class:`ConnectorType`.

One record says what a SQL connector is to ``relay.connect`` and ``relay.config.json``: the
config spellings (``sql``, ``postgres``, ``sqlite``…), the URL schemes it claims (and, as the
fallback, any URL no other type claims, since SQLAlchemy reads most schemes as a database),
SQLAlchemy engines as targets, and the options a config entry may hold. Defaults are the
constructor's (:class:`~relay_nb.connectors.sql.connector.SQLConnector`), stated once.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from relay_nb.connectors.types import ConnectorType, LazyFactory

__all__ = ["SQL_SCHEMES", "SQL_TYPE", "SQLOptions", "is_engine"]

SQL_SCHEMES = ("postgresql", "postgres", "mysql", "mariadb", "sqlite", "duckdb", "mssql", "oracle")
"""The base dialects (before ``+driver``) a SQL URL usually names."""


def _unset(*aliases: str) -> Any:
    """An optional option: left out, the connector's own default applies."""
    return Field(default=None, validation_alias=AliasChoices(*aliases) if aliases else None)


class SQLOptions(BaseModel):
    """A ``sql`` config entry's ``config`` (snake_case, or the Relay-E camelCase spellings)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    tables: list[str] = _unset("tables", "tableAllowlist", "table_allowlist")
    schemas: list[str] = _unset()
    row_limit: int = _unset("row_limit", "rowLimit")
    statement_timeout_s: float = _unset("statement_timeout_s", "statementTimeoutS")
    sample_values: int = _unset()
    profile: bool = _unset()
    profile_exclude: list[str] = _unset()
    profile_time_s: float = _unset()
    max_value_bytes: int = _unset()
    max_result_bytes: int = _unset()


def is_engine(value: object) -> bool:
    """A SQLAlchemy engine, without importing SQLAlchemy when the caller has not."""
    cls = type(value)
    return cls.__name__ == "Engine" and cls.__module__.startswith("sqlalchemy")


SQL_TYPE = ConnectorType(
    name="sql",
    aliases=("postgres", "postgresql", "mysql", "mariadb", "sqlite", "duckdb"),
    factory=LazyFactory("relay_nb.connectors.sql.connector:SQLConnector"),
    config_model=SQLOptions,
    url_schemes=SQL_SCHEMES,
    accepts=is_engine,
    description="a SQL database (any SQLAlchemy URL): guarded read-only SQL",
    factory_defaults=True,
    python_keywords=True,
    builtin=True,
)
