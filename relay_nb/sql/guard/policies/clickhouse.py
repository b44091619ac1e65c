"""ClickHouse: plain reads, its functions and their combinators, and its side doors shut.

- **Functions**: those sqlglot knows and the ones ClickHouse documents
  (:data:`_KNOWN`), with an aggregate's combinators (``sumIf``, ``uniqExactIf``,
  ``groupArrayDistinct``, ``avgOrNull``); any other name is refused: ``dictGet`` reads
  dictionaries (which may load from other databases), ``getSetting`` the server's settings.
- ``url()``, ``file()``, ``s3()``, ``remote()``, ``executable()`` and their kin are refused by
  the shared file rules; ``SETTINGS`` (which can lift the statement's limits) and ``FORMAT``
  by the shared clause rules; ``INTO OUTFILE`` as ``SELECT … INTO``.
- ``x IN users`` reads the table ``users``: the name is checked as a table
  (:func:`tables_after_in`).
- ``numbers(n)`` may make rows in ``FROM``, up to 10M of them (:func:`bound_numbers`).
- ``LIMIT n BY cols`` (at most n rows per group) is no row cap: the guard caps the whole
  result around it (see :func:`relay_nb.sql.guard.limit.wrap_uncounted_limit`);
  ``WITH 100 AS n`` names a value, never a table.
"""

from __future__ import annotations

from sqlglot import exp

from relay_nb.sql.guard import rules as shared
from relay_nb.sql.guard.functions import documented_functions
from relay_nb.sql.guard.policies.base import Findings, GuardPolicy, PlainReadPolicy

__all__ = ["ClickHousePolicy", "bound_numbers", "tables_after_in"]

_MAP_AGGREGATES = frozenset({"summap", "minmap", "maxmap"})
"""Documented aggregates that system.functions does not list (sum, min, max with -Map)."""
_KNOWN = documented_functions("clickhouse") | _MAP_AGGREGATES | {"uniqtheta", "untuple"}
"""ClickHouse's documented functions (:mod:`relay_nb.sql.guard.functions`, ``clickhouse.txt``),
and three the documentation has that system.functions leaves out: the -Map aggregates,
``uniqTheta`` (absent from builds without DataSketches) and ``untuple`` (special syntax)."""

_AGGREGATES = documented_functions("clickhouse_aggregates") | _MAP_AGGREGATES | {"uniqtheta"}
"""Aggregates a combinator may follow (``clickhouse_aggregates.txt``)."""
_COMBINATORS = ("if", "distinct", "ornull", "ordefault", "array", "foreach", "state", "merge")


_ROW_MAKERS = frozenset({"numbers", "numbers_mt"})


def bound_numbers(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``numbers(n)``, ``numbers(offset, n)``, ``numbers(offset, n, step)`` in ``FROM``: its
    count a constant up to :data:`~relay_nb.sql.guard.rules.MAX_GENERATED_ROWS`."""
    if not (isinstance(node, exp.Anonymous) and node.name.lower() in _ROW_MAKERS):
        return
    args = node.expressions
    count = args[0] if len(args) == 1 else args[1] if len(args) in (2, 3) else None
    if not shared.small_count(count) or not all(
        isinstance(a, exp.Literal) and not a.is_string for a in args
    ):
        found.add(
            4,
            "table_function_not_allowed",
            f"numbers() makes at most {shared.MAX_GENERATED_ROWS:,} rows here: write numbers(n) "
            "with a number up to that",
        )


def tables_after_in(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``x IN users`` and ``x IN (users)``: ClickHouse reads the table ``users`` (when no
    column has that name; the guard cannot know the columns); the name is checked against
    the allowlist as a table, like one in ``FROM``."""
    name = node.args.get("field")
    listed = node.expressions
    if name is None and len(listed) == 1 and isinstance(listed[0], exp.Column):
        name = listed[0]
    if isinstance(name, exp.Column) and isinstance(name.this, exp.Identifier):
        db = name.args.get("table")
        found.tables.append(exp.Table(this=name.this.copy(), db=db.copy() if db else None))
    elif name is not None and not isinstance(name, exp.Subquery | exp.Tuple | exp.Paren):
        found.add(2, "table_not_allowed", "write x IN (…) with a list or a subquery")


class ClickHousePolicy(PlainReadPolicy):
    name = "clickhouse"
    dialects = ("clickhouse",)
    known_functions = _KNOWN
    table_functions = shared.COMMON_TABLE_FUNCTIONS | _ROW_MAKERS
    per_group_limit = True
    rules = (
        *PlainReadPolicy.rules,
        ("function", bound_numbers),
        ("membership", tables_after_in),
    )

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
