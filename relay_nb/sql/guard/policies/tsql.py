"""T-SQL (SQL Server, Azure SQL, Fabric): plain reads only until the warehouse corpus gives it
a full policy. ``TOP`` is clamped like ``LIMIT``; ``OPENROWSET``, ``xp_`` and ``sp_``
procedures, ``WAITFOR``, ``EXEC`` and an ``OPTION (…)`` clause are refused by the shared
rules."""

from __future__ import annotations

from relay_nb.sql.guard.functions import documented_functions
from relay_nb.sql.guard.policies.base import PlainReadPolicy

__all__ = ["TSQLPolicy"]


class TSQLPolicy(PlainReadPolicy):
    name = "tsql"
    dialects = ("tsql", "fabric")
    known_functions = documented_functions("tsql")
