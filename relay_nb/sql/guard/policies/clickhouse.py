"""ClickHouse: plain reads, its functions and their combinators, and its side doors shut.

- **Functions**: those sqlglot knows and the ones ClickHouse documents
  (:data:`_KNOWN`), with an aggregate's combinators (``sumIf``, ``uniqExactIf``,
  ``groupArrayDistinct``, ``avgOrNull``); any other name is refused: ``dictGet`` reads
  dictionaries (which may load from other databases), ``getSetting`` the server's settings.
- ``url()``, ``file()``, ``s3()``, ``remote()``, ``executable()`` and their kin are refused by
  the shared file rules; ``SETTINGS`` (which can lift the statement's limits) and ``FORMAT``
  by the shared clause rules; ``INTO OUTFILE`` as ``SELECT … INTO``.
- ``LIMIT n BY cols`` (at most n rows per group) is no row cap: the guard caps the whole
  result around it (see :func:`relay_nb.sql.guard.limit.wrap_uncounted_limit`);
  ``WITH 100 AS n`` names a value, never a table.
"""

from __future__ import annotations

from relay_nb.sql.guard.functions import documented_functions
from relay_nb.sql.guard.policies.base import PlainReadPolicy

__all__ = ["ClickHousePolicy"]

_MAP_AGGREGATES = frozenset({"summap", "minmap", "maxmap"})
"""Documented aggregates that system.functions does not list (sum, min, max with -Map)."""
_KNOWN = documented_functions("clickhouse") | _MAP_AGGREGATES | {"uniqtheta", "untuple"}
"""ClickHouse's documented functions (:mod:`relay_nb.sql.guard.functions`, ``clickhouse.txt``),
and three the documentation has that system.functions leaves out: the -Map aggregates,
``uniqTheta`` (absent from builds without DataSketches) and ``untuple`` (special syntax)."""

_AGGREGATES = documented_functions("clickhouse_aggregates") | _MAP_AGGREGATES | {"uniqtheta"}
"""Aggregates a combinator may follow (``clickhouse_aggregates.txt``)."""
_COMBINATORS = ("if", "distinct", "ornull", "ordefault", "array", "foreach", "state", "merge")


class ClickHousePolicy(PlainReadPolicy):
    name = "clickhouse"
    dialects = ("clickhouse",)
    known_functions = _KNOWN
    per_group_limit = True

    @classmethod
    def knows(cls, name: str) -> bool:
        """Also an aggregate with combinators: ``uniqExactIf`` is ``uniqExact`` + ``If``."""
        if super().knows(name):
            return True
        base = name
        while True:
            stripped = next((base[: -len(c)] for c in _COMBINATORS if base.endswith(c)), None)
            if not stripped:
                return False
            base = stripped
            if base in _AGGREGATES:
                return True
