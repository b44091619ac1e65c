"""The ``spark`` connector kind: a PySpark ``SparkSession`` (classic or Spark Connect), or
a Spark Connect URL.

``relay.connect("lake", spark)`` or ``relay.connect("lake", "sc://host:15002")``; options are
:class:`~relay_nb.connectors.spark.connector.SparkConnector`'s (``databases``, ``tables``,
``row_limit``, ``statement_timeout_s``, ``catalog_timeout_s``, ``max_result_bytes`` …).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relay_nb.connectors.spark.session import is_spark_session
from relay_nb.connectors.types import ConnectorType, LazyFactory

__all__ = ["SPARK_TYPE", "is_spark_session"]


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
    builtin=True,
)
