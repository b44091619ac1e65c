"""Spark SQL, Databricks and Hive: plain reads, and Spark's own side doors shut.

Their own data: ``reflect`` and ``java_method`` call Java methods by name, ``try_secret``
returns a Databricks secret in clear (``secret`` too: sqlglot models it, and the shared
denylist refuses it in every family), so they are refused whatever the strictness.
``CACHE``, ``ADD JAR``, ``SET``, ``INSERT OVERWRITE`` and path tables (``parquet.`/data/x```)
are refused by the shared command, statement and file rules.

Their own rules:

- ``SELECT TRANSFORM(…) USING 'script'`` runs a program through ``/bin/bash`` on the
  executors (Spark 4 runs it without Hive): refused as a statement, whatever the script.
- ``${…}`` anywhere in the text: ``spark.sql`` substitutes variables *before* parsing
  (``${env:AWS_SECRET_ACCESS_KEY}``, ``${spark.hadoop.fs.s3a.secret.key}``) — in a string,
  in a name, even escaped — so what would run is not what the guard checked, and could
  carry the driver's environment or settings to the model. Refused in every literal and name.
- ``_metadata`` (the hidden column of a file-based table: its files' paths and sizes) is file
  metadata, refused like ``input_file_name()``.
"""

from __future__ import annotations

from sqlglot import exp

from relay_nb.connectors.sql.policies.base import Findings, GuardPolicy, PlainReadPolicy

__all__ = ["SparkPolicy"]

_SUBSTITUTED = "${"


def refuse_transform(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``TRANSFORM … USING``: a program on the cluster, not a query."""
    found.add(
        1,
        "forbidden_statement",
        "TRANSFORM … USING runs a program on the cluster; use SQL functions instead",
    )


def refuse_substitution(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``${…}`` in a string or a name: Spark would replace it before running the query."""
    text = node.this if isinstance(node.this, str) else ""
    if _SUBSTITUTED in text:
        found.add(
            2,
            "server_variable",
            "${…} is replaced by Spark before the query runs (variables, the environment, "
            "settings); write the value itself",
        )


def refuse_file_metadata(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``_metadata``: the hidden column of file-based tables (paths, sizes)."""
    refuse_substitution(node, policy, found)
    if isinstance(node.this, str) and node.this.lower() == "_metadata":
        found.add(2, "file_access", "_metadata describes the table's files; query its columns")


class SparkPolicy(PlainReadPolicy):
    name = "spark"
    dialects = ("spark", "spark2", "databricks", "hive")
    denied_functions = frozenset(
        {"reflect", "java_method", "assert_true", "raise_error", "try_secret"}
    )
    rules = (
        *PlainReadPolicy.rules,
        ("transform", refuse_transform),
        ("literal", refuse_substitution),
        ("identifier", refuse_file_metadata),
    )
