"""Trino, Presto and Athena: plain reads only until the warehouse corpus gives them a full
policy. ``TABLE(system.query(…))`` pass-through queries are refused as prefixed table
functions; ``system.*`` tables are outside any allowlist."""

from __future__ import annotations

from relay_nb.connectors.sql.policies.base import PlainReadPolicy

__all__ = ["TrinoPolicy"]


class TrinoPolicy(PlainReadPolicy):
    name = "trino"
    dialects = ("trino", "presto", "athena")
