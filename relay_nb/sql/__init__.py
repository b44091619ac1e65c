"""The SQL library every SQL-speaking connector shares: the guard, the catalog, the prompt.

A layer of its own, below :mod:`relay_nb.connectors` (which holds the connectors that run
SQL: SQLAlchemy databases, DataFrames through DuckDB, Spark) and above ``knowledge/``,
``runtime/`` and the shared errors. Nothing here opens a connection or runs a statement:
what needs a database (profiling, sample values) takes a ``run`` callable from its caller.

- :mod:`relay_nb.sql.guard` — parse, check per dialect family, clamp, re-serialise
  (:func:`guard_query`); its rules as data (``guard/rules.py``), one policy per dialect
  family (``guard/policies/``), the bound on the values a query can build (``guard/sizes/``);
- :mod:`relay_nb.sql.catalog` — the catalog model (:class:`Catalog`, :class:`TableInfo`,
  :class:`ColumnInfo`) and value profiles;
- :mod:`relay_nb.sql.prompt` — a catalog as prompt context within a token budget, the
  ranking of tables by a question, and what the ``describe_<id>`` tool answers;
- :mod:`relay_nb.sql.dialects` — SQLAlchemy dialect names to sqlglot's, and MariaDB.

The names below are its public face: connectors and plugins import them from here. They load
on first use, so importing this package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from relay_nb._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    # the guard
    "RULES": "relay_nb.sql.guard.query",
    "GuardedQuery": "relay_nb.sql.guard.query",
    "guard_query": "relay_nb.sql.guard.query",
    "GuardPolicy": "relay_nb.sql.guard.policies",
    "policy_for": "relay_nb.sql.guard.policies",
    # dialects
    "guard_dialect": "relay_nb.sql.dialects",
    "sqlglot_dialect": "relay_nb.sql.dialects",
    # the catalog
    "Catalog": "relay_nb.sql.catalog.model",
    "ColumnInfo": "relay_nb.sql.catalog.model",
    "ColumnProfile": "relay_nb.sql.catalog.model",
    "ForeignKey": "relay_nb.sql.catalog.model",
    "TableInfo": "relay_nb.sql.catalog.model",
    "ProfileSettings": "relay_nb.sql.catalog.profile",
    "profile_catalog": "relay_nb.sql.catalog.profile",
    "sample_text_values": "relay_nb.sql.catalog.profile",
    # the prompt
    "RenderCache": "relay_nb.sql.prompt.render",
    "RenderedSchema": "relay_nb.sql.prompt.render",
    "render_catalog": "relay_nb.sql.prompt.render",
    "LexicalRanker": "relay_nb.sql.prompt.ranking",
    "SchemaRanker": "relay_nb.sql.prompt.ranking",
    "describe_request": "relay_nb.sql.prompt.describe",
}

__all__ = [
    "Catalog",
    "ColumnInfo",
    "ColumnProfile",
    "ForeignKey",
    "GuardPolicy",
    "GuardedQuery",
    "LexicalRanker",
    "ProfileSettings",
    "RULES",
    "RenderCache",
    "RenderedSchema",
    "SchemaRanker",
    "TableInfo",
    "describe_request",
    "guard_dialect",
    "guard_query",
    "policy_for",
    "profile_catalog",
    "render_catalog",
    "sample_text_values",
    "sqlglot_dialect",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from relay_nb.sql.catalog.model import Catalog, ColumnInfo, ColumnProfile, ForeignKey, TableInfo
    from relay_nb.sql.catalog.profile import ProfileSettings, profile_catalog, sample_text_values
    from relay_nb.sql.dialects import guard_dialect, sqlglot_dialect
    from relay_nb.sql.guard.policies import GuardPolicy, policy_for
    from relay_nb.sql.guard.query import RULES, GuardedQuery, guard_query
    from relay_nb.sql.prompt.describe import describe_request
    from relay_nb.sql.prompt.ranking import LexicalRanker, SchemaRanker
    from relay_nb.sql.prompt.render import RenderCache, RenderedSchema, render_catalog
