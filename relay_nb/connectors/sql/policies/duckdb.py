"""DuckDB: an analytical database in the kernel's process (also behind the DataFrame
connector).

Its own: ``json_each`` / ``json_tree`` in ``FROM`` and ``FROM``-first queries. Everything that
reads files or the network (``read_csv``, ``'x.parquet'`` as a table, ``httpfs``) is refused
by the shared file rules, and engines that allow external access are refused outright.
"""

from __future__ import annotations

from relay_nb.connectors.sql import guard_rules as shared
from relay_nb.connectors.sql.policies.base import GuardPolicy

__all__ = ["DuckDBPolicy"]


class DuckDBPolicy(GuardPolicy):
    name = "duckdb"
    dialects = ("duckdb",)
    table_functions = shared.COMMON_TABLE_FUNCTIONS | frozenset({"json_each", "json_tree"})
    embedded = True
