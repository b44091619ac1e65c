"""Spark: a ``SparkSession`` as a guarded, read-only connector.

``SparkConnector`` is in :mod:`.connector`, the kind's record (what ``relay.connect`` asks
whether it takes a target, its options) in :mod:`.kind`; both load on first use, so listing
the kinds stays cheap and pyspark is never imported by relay_nb itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relay_nb._lazy import lazy_exports

__all__ = ["SPARK_TYPE", "SparkConnector", "SparkKeywords", "SparkOptions", "is_spark_session"]

_EXPORTS = {
    "SPARK_TYPE": "relay_nb.connectors.spark.kind",
    "SparkConnector": "relay_nb.connectors.spark.connector",
    "SparkKeywords": "relay_nb.connectors.spark.kind",
    "SparkOptions": "relay_nb.connectors.spark.kind",
    "is_spark_session": "relay_nb.connectors.spark.kind",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from relay_nb.connectors.spark.connector import SparkConnector
    from relay_nb.connectors.spark.kind import (
        SPARK_TYPE,
        SparkKeywords,
        SparkOptions,
        is_spark_session,
    )
