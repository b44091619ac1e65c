"""One guard policy per SQL dialect family (see :mod:`.base` for what a policy holds).

A family is a class in a module of its own: a rule or a name that holds for Snowflake alone
is a change to ``snowflake.py``. :func:`policy_for` picks the family of a sqlglot dialect; a
dialect no family claims gets :class:`~.base.PlainReadPolicy` (plain reads only).
"""

from __future__ import annotations

from relay_nb.connectors.sql.policies.base import Findings, GuardPolicy, PlainReadPolicy, Rule
from relay_nb.connectors.sql.policies.bigquery import BigQueryPolicy
from relay_nb.connectors.sql.policies.clickhouse import ClickHousePolicy
from relay_nb.connectors.sql.policies.duckdb import DuckDBPolicy
from relay_nb.connectors.sql.policies.mysql import MySQLPolicy
from relay_nb.connectors.sql.policies.oracle import OraclePolicy
from relay_nb.connectors.sql.policies.postgres import PostgresPolicy
from relay_nb.connectors.sql.policies.redshift import RedshiftPolicy
from relay_nb.connectors.sql.policies.snowflake import SnowflakePolicy
from relay_nb.connectors.sql.policies.spark import DatabricksPolicy, SparkPolicy
from relay_nb.connectors.sql.policies.sqlite import SQLitePolicy
from relay_nb.connectors.sql.policies.trino import TrinoPolicy
from relay_nb.connectors.sql.policies.tsql import TSQLPolicy

__all__ = ["FAMILIES", "Findings", "GuardPolicy", "PlainReadPolicy", "Rule", "policy_for"]

FAMILIES: tuple[type[GuardPolicy], ...] = (
    PostgresPolicy,
    MySQLPolicy,
    SQLitePolicy,
    DuckDBPolicy,
    SnowflakePolicy,
    BigQueryPolicy,
    TrinoPolicy,
    RedshiftPolicy,
    SparkPolicy,
    DatabricksPolicy,
    ClickHousePolicy,
    TSQLPolicy,
    OraclePolicy,
)

_BY_DIALECT = {dialect: family for family in FAMILIES for dialect in family.dialects}


def policy_for(dialect: str) -> type[GuardPolicy]:
    """The family of a sqlglot dialect name (``"postgres"``, ``"redshift"``, ``"snowflake"``);
    plain reads only for one no family claims."""
    return _BY_DIALECT.get(dialect.lower(), PlainReadPolicy)
