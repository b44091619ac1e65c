"""Map SQLAlchemy dialect names to sqlglot's, so the guard parses in the database's own SQL.

Parsing in the wrong dialect is a security bug, not a cosmetic one: MySQL's backtick
identifiers or PostgreSQL's ``$$`` strings read differently elsewhere. An unknown dialect is
refused rather than parsed as generic SQL.
"""

from __future__ import annotations

from relay_nb.errors import ConfigurationError

__all__ = ["sqlglot_dialect"]

_SQLALCHEMY_TO_SQLGLOT = {
    "sqlite": "sqlite",
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "duckdb": "duckdb",
    "mssql": "tsql",
    "oracle": "oracle",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "redshift": "redshift",
    "trino": "trino",
    "presto": "presto",
    "databricks": "databricks",
    "clickhouse": "clickhouse",
    "hive": "hive",
    "awsathena": "athena",
}


def sqlglot_dialect(sqlalchemy_name: str) -> str:
    """``"postgresql"`` -> ``"postgres"``; also accepts names sqlglot already uses."""
    name = sqlalchemy_name.lower()
    if name in _SQLALCHEMY_TO_SQLGLOT:
        return _SQLALCHEMY_TO_SQLGLOT[name]
    from sqlglot.dialects.dialect import Dialect

    try:
        Dialect.get_or_raise(name)
    except ValueError:
        raise ConfigurationError(
            f"relay_nb cannot guard SQL for the {sqlalchemy_name!r} dialect: sqlglot does not "
            "know it, so queries could not be parsed safely"
        ) from None
    return name
