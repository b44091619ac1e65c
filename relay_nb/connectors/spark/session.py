"""What a Spark session is, told without importing pyspark (relay_nb never does)."""

from __future__ import annotations

__all__ = ["is_spark_session"]


def is_spark_session(value: object) -> bool:
    """A PySpark ``SparkSession`` (classic or Spark Connect)."""
    cls = type(value)
    return cls.__name__ == "SparkSession" and cls.__module__.startswith("pyspark")
