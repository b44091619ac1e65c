"""The ``spark`` connector kind: a PySpark ``SparkSession`` (classic or Spark Connect), or
a Spark Connect URL.

``relay.connect("lake", spark)`` or ``relay.connect("lake", "sc://host:15002")``; its options
are declared once below, with the defaults
:class:`~relay_nb.connectors.spark.connector.SparkConnector` takes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from relay_nb.connectors.spark.session import is_spark_session
from relay_nb.connectors.types import ConnectorType, LazyFactory

if TYPE_CHECKING:
    from relay_nb.sql import SchemaRanker

__all__ = ["SPARK_TYPE", "SparkKeywords", "SparkOptions", "is_spark_session"]


class SparkOptions(BaseModel):
    """Every ``relay.connect`` / ``SparkConnector`` keyword (only Python builds one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session: Any = required(
        "a ``SparkSession`` (classic or Spark Connect), or a Spark Connect URL "
        "``sc://host:15002`` (``relay.connect``'s target)"
    )
    databases: list[str] = option(
        None, "the databases to read; None: the current one and those ``tables`` names"
    )
    tables: list[str] = option(
        None, "the only tables the model sees and may query (``database.table``); None: all"
    )
    row_limit: int = option(200, "rows a query returns at most (its LIMIT is injected or clamped)")
    statement_timeout_s: float = option(
        120.0, "seconds a query may run before its jobs are cancelled"
    )
    catalog_timeout_s: float = option(30.0, "seconds reading the catalog may take")
    preview_chars: int = option(
        4000, "characters of a result the model reads (the DataFrame keeps all)"
    )
    ranker: Any = option(
        None, "a ``SchemaRanker`` ordering tables by the question when the schema does not fit"
    )
    max_value_bytes: int = max_value_bytes()
    max_result_bytes: int = max_result_bytes()
    preflight: bool | None = option(
        None, "read the plan's estimate before each query (None: on; it costs no job)"
    )
    approve_above: int | str | None = approve_above()
    approve_above_rows: int | None = approve_above_rows()
    price_per_tb: float | None = price_per_tb()
    dialect: str | None = option(
        None,
        "``'spark'`` or ``'databricks'`` SQL; None: Databricks SQL on a Databricks runtime",
    )


class SparkKeywords(TypedDict, total=False):
    """``relay.connect(id, spark, **options)``'s options, typed as ``SparkConnector`` takes
    them (checked against its signature and :class:`SparkOptions` by the tests)."""

    databases: Sequence[str] | None
    tables: Sequence[str] | None
    row_limit: int
    statement_timeout_s: float
    catalog_timeout_s: float
    name: str | None
    description: str | None
    preview_chars: int
    ranker: SchemaRanker | None
    max_value_bytes: int
    max_result_bytes: int
    preflight: bool | None
    approve_above: int | str | None
    approve_above_rows: int | None
    price_per_tb: float | None
    dialect: str | None


def _from_target(target: Any) -> Mapping[str, Any]:
    return {"session": target}


SPARK_TYPE = ConnectorType(
    name="spark",
    factory=LazyFactory("relay_nb.connectors.spark.connector:SparkConnector"),
    url_schemes=("sc",),
    accepts=is_spark_session,
    from_url=_from_target,
    description="a PySpark SparkSession or a Spark Connect URL: relay.connect(id, spark)",
    in_config=False,
    python_keywords=True,
    keywords_model=SparkOptions,
    builtin=True,
)
