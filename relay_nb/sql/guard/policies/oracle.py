"""Oracle: ``DUAL`` is no table; ``dbms_*`` and ``utl_*`` packages are refused by the shared
prefixes. Plain reads only until it has a corpus of its own."""

from __future__ import annotations

from relay_nb.sql.guard.policies.base import PlainReadPolicy

__all__ = ["OraclePolicy"]


class OraclePolicy(PlainReadPolicy):
    name = "oracle"
    dialects = ("oracle",)
    pseudo_tables = frozenset({"dual"})
