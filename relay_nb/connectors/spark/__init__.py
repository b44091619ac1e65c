"""Spark: a ``SparkSession`` as a guarded, read-only connector.

``SparkConnector`` is in :mod:`.connector`, the kind's record (what ``relay.connect`` asks
whether it takes a target, its options) in :mod:`.kind`; both load on first use, so listing
the kinds stays cheap and pyspark is never imported by relay_nb itself.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["SPARK_TYPE", "SparkConnector", "SparkKeywords", "SparkOptions", "is_spark_session"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = "connector" if name == "SparkConnector" else "kind"
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


if TYPE_CHECKING:
    from relay_nb.connectors.spark.connector import SparkConnector
    from relay_nb.connectors.spark.kind import (
        SPARK_TYPE,
        SparkKeywords,
        SparkOptions,
        is_spark_session,
    )
