"""One guard policy per SQL dialect family (see :mod:`.base` for what a policy holds).

A family is a class in a module of its own: a rule or a name that holds for Snowflake alone
is a change to ``snowflake.py``. :func:`policy_for` picks the family of a sqlglot dialect; a
dialect no family claims gets :class:`~.base.PlainReadPolicy` (plain reads only).
"""

from __future__ import annotations

from relay_nb.sql.guard.policies.base import Findings, GuardPolicy, PlainReadPolicy, Rule
from relay_nb.sql.guard.policies.bigquery import BigQueryPolicy
from relay_nb.sql.guard.policies.clickhouse import ClickHousePolicy
from relay_nb.sql.guard.policies.duckdb import DuckDBPolicy
from relay_nb.sql.guard.policies.mysql import MySQLPolicy
from relay_nb.sql.guard.policies.oracle import OraclePolicy
from relay_nb.sql.guard.policies.postgres import PostgresPolicy
from relay_nb.sql.guard.policies.redshift import RedshiftPolicy
from relay_nb.sql.guard.policies.snowflake import SnowflakePolicy
from relay_nb.sql.guard.policies.spark import DatabricksPolicy, SparkPolicy
from relay_nb.sql.guard.policies.sqlite import SQLitePolicy
from relay_nb.sql.guard.policies.trino import TrinoPolicy
from relay_nb.sql.guard.policies.tsql import TSQLPolicy

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
