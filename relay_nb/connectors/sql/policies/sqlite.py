"""SQLite: a database in a file, in the kernel's own process.

Its own: ``json_each`` / ``json_tree`` in ``FROM``, ``main`` as the name of the default schema,
dates and times stored and returned as text (results parse declared date columns back), and
connection advice that names the file rather than a server.
"""

from __future__ import annotations

from relay_nb.connectors.sql import guard_rules as shared
from relay_nb.connectors.sql.policies.base import GuardPolicy

__all__ = ["SQLitePolicy"]


class SQLitePolicy(GuardPolicy):
    name = "sqlite"
    dialects = ("sqlite",)
    table_functions = shared.COMMON_TABLE_FUNCTIONS | frozenset({"json_each", "json_tree"})
    default_schema_aliases = frozenset({"main"})
    embedded = True
    dates_as_text = True
