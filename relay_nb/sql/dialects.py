"""Map SQLAlchemy dialect names to sqlglot's, so the guard parses in the database's own SQL,
and define the one dialect sqlglot lacks: MariaDB.

Parsing in the wrong dialect is a security bug, not a cosmetic one: MySQL's backtick
identifiers or PostgreSQL's ``$$`` strings read differently elsewhere. An unknown dialect is
refused rather than parsed as generic SQL. Writing in the wrong dialect is a correctness bug:
sqlglot 30 writes MySQL 8, whose ``REGEXP_LIKE`` MariaDB does not have, so ``name REGEXP 'x'``
came back from the guard as a call MariaDB refuses. Importing this module registers
:class:`MariaDB` with sqlglot under the name ``"mariadb"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from sqlglot import exp, transforms
from sqlglot.dialects.bigquery import BigQuery
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.mysql import MySQL
from sqlglot.generator import Generator
from sqlglot.generators import bigquery as bigquery_generator

from relay_nb.errors import ConfigurationError

__all__ = ["GUARD_DIALECTS", "MariaDB", "guard_dialect", "sqlglot_dialect"]

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
    "chdb": "clickhouse",  # chDB: ClickHouse embedded in the process (chdb-sqlalchemy)
    "hive": "hive",
    "awsathena": "athena",
}
"""What the catalog is read as: MariaDB's catalog is MySQL's (introspect/mysql.py)."""


def sqlglot_dialect(sqlalchemy_name: str) -> str:
    """``"postgresql"`` -> ``"postgres"``; also accepts names sqlglot already uses."""
    name = sqlalchemy_name.lower()
    if name in _SQLALCHEMY_TO_SQLGLOT:
        return _SQLALCHEMY_TO_SQLGLOT[name]
    try:
        Dialect.get_or_raise(name)
    except ValueError:
        raise ConfigurationError(
            f"relay_nb cannot guard SQL for the {sqlalchemy_name!r} dialect: sqlglot does not "
            "know it, so queries could not be parsed safely"
        ) from None
    return name


def guard_dialect(sqlalchemy_dialect: Any) -> str:
    """The sqlglot dialect to guard and write queries in, for a connected SQLAlchemy dialect.

    SQLAlchemy calls a ``mysql+pymysql://`` server ``"mysql"`` whatever it is, and learns
    ``is_mariadb`` only on the first connection: ask after connecting.
    """
    if getattr(sqlalchemy_dialect, "is_mariadb", False):
        return "mariadb"
    return sqlglot_dialect(sqlalchemy_dialect.name)


# --------------------------------------------------------------------------------------------
# MariaDB

Write = Callable[[Generator, Any], str]


def _regexp(self: Generator, expression: exp.RegexpLike) -> str:
    """``a REGEXP b``: MariaDB has the operator (and RLIKE), not MySQL 8's REGEXP_LIKE."""
    if expression.args.get("flag"):
        self.unsupported("MariaDB has no REGEXP_LIKE(…, flags); write (?i) in the pattern")
    return self.binary(expression, "REGEXP")


def _is_ascii(self: Generator, expression: exp.IsAscii) -> str:
    return f"{self.sql(expression, 'this')} REGEXP '^[[:ascii:]]*$'"


def _chr(mysql: Write) -> Write:
    """``CHR(n)`` stays CHR (a character string; ``CHAR(n)`` is a binary one). sqlglot reads
    both spellings into one node, so a one-argument ``CHAR(n)`` comes back as ``CHR(n)``:
    the same bytes, typed as text. Several codes or ``USING`` are MySQL's ``CHAR(…)``."""

    def write(self: Generator, expression: exp.Chr) -> str:
        arguments = expression.expressions
        if len(arguments) == 1 and not expression.args.get("charset"):
            return self.func("CHR", arguments[0])
        return mysql(self, expression)

    return write


_WRITES: dict[type[exp.Expr], Write] = {
    exp.RegexpLike: _regexp,
    exp.IsAscii: _is_ascii,
    # sqlglot writes MEDIAN as PERCENTILE_CONT(x, 0.5), which is no MariaDB syntax
    exp.Median: lambda self, e: self.func("MEDIAN", e.this),
    # TIMESTAMPADD as DATE_ADD(x, INTERVAL 36 HOUR) reads back as INTERVAL '36' HOUR: the
    # guard's second pass refused it as unfaithful; MariaDB has TIMESTAMPADD itself
    exp.TimestampAdd: lambda self, e: self.func("TIMESTAMPADD", e.unit, e.expression, e.this),
    # MariaDB 10.6+ has Oracle's TO_CHAR(value, format); sqlglot's MySQL cannot write a format
    exp.ToChar: lambda self, e: self.func("TO_CHAR", e.this, e.args.get("format")),
}
"""What MariaDB writes differently from MySQL 8, found by running analytic queries in MariaDB
idioms through the guard and on MariaDB 10.11 (benign.yaml, ids ``mariadb-*``)."""


class MariaDB(MySQL):
    """MariaDB: MySQL's tokenizer and parser, MySQL's generator with :data:`_WRITES` on top.

    sqlglot's generator classes are compiled (sqlglotc) and cannot be subclassed from Python,
    so the generator is MySQL's with the per-instance handler table extended; the class name
    registers the dialect as ``"mariadb"``.
    """

    _dispatch: ClassVar[dict[type[exp.Expr], Write] | None] = None

    def generator(self, **opts: Any) -> Generator:
        generator = super().generator(**opts)
        if MariaDB._dispatch is None:  # built once: MySQL's table is shared, never changed
            mysql = generator._dispatch
            MariaDB._dispatch = {**mysql, **_WRITES, exp.Chr: _chr(mysql[exp.Chr])}
        generator._dispatch = MariaDB._dispatch
        return generator


# --------------------------------------------------------------------------------------------
# Warehouses: written back as the model wrote them


def _rewritten(base: type[Dialect], writes: dict[type[exp.Expr], Write], doc: str) -> type[Dialect]:
    """``base`` with ``writes`` on top of its generator's handler table (built once)."""
    built: dict[type[exp.Expr], Write] = {}

    def generator(self: Dialect, **opts: Any) -> Generator:
        generator = base.generator(self, **opts)
        if not built:
            built.update({**generator._dispatch, **writes})
        generator._dispatch = built
        return generator

    return type(f"{base.__name__}AsWritten", (base,), {"generator": generator, "__doc__": doc})


_BIGQUERY_SELECT = transforms.preprocess(
    [
        bigquery_generator._unnest_explode_generate_series,
        transforms.explode_projection_to_unnest(),
        transforms.unqualify_unnest,
        transforms.eliminate_distinct_on,
        transforms.eliminate_semi_and_anti_joins,
    ]
)

GUARD_DIALECTS: dict[str, type[Dialect]] = {
    "bigquery": _rewritten(
        BigQuery,
        {exp.Select: _BIGQUERY_SELECT},
        "BigQuery, with GROUP BY kept as written: sqlglot replaces a grouped expression by "
        "its SELECT alias when the query also has ORDER BY (a workaround for an old BigQuery "
        "bug), and an alias that is also a column's name then groups by the column.",
    ),
}
"""Dialects the guard parses and writes in instead of sqlglot's own (same tokenizer and
parser; a generator handler or two replaced), found by the warehouse corpora
(``tests/connectors/corpus/dialects``): sqlglot transpiles a few calls into another form
that the engine reads differently, and the guard must write back what the model wrote."""
