"""Trino, Presto and Athena: plain reads and their functions.

Functions: those sqlglot knows and the ones Trino documents (:data:`_KNOWN`); any
other name may be a connector's function or a user's, and is refused.
``TABLE(system.query(…))`` pass-through queries are refused as prefixed table functions;
``system.*`` tables are outside any allowlist.
"""

from __future__ import annotations

from relay_nb.sql.guard.functions import documented_functions
from relay_nb.sql.guard.policies.base import PlainReadPolicy

__all__ = ["TrinoPolicy"]

_KNOWN = documented_functions("trino")
"""Trino's documented functions (:mod:`relay_nb.sql.guard.functions`, ``trino.txt``)."""


class TrinoPolicy(PlainReadPolicy):
    name = "trino"
    dialects = ("trino", "presto", "athena")
    known_functions = _KNOWN
