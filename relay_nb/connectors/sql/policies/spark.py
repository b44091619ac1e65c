"""Spark SQL, Databricks and Hive: plain reads only until the warehouse corpus gives them a
full policy.

Their own data: ``reflect`` and ``java_method`` call Java methods by name, so they are refused
whatever the strictness. ``CACHE``, ``ADD JAR``, ``SET``, ``INSERT OVERWRITE`` and path tables
(``parquet.`/data/x```) are refused by the shared command, statement and file rules.
"""

from __future__ import annotations

from relay_nb.connectors.sql.policies.base import PlainReadPolicy

__all__ = ["SparkPolicy"]


class SparkPolicy(PlainReadPolicy):
    name = "spark"
    dialects = ("spark", "spark2", "databricks", "hive")
    denied_functions = frozenset({"reflect", "java_method", "assert_true", "raise_error"})
