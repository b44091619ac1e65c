"""Helpers for the value-size rule's tests: the rule alone, and the guard as it will be wired.

Until ``bound_value_sizes`` is wired into ``guard.py`` (``policy.check(tree, "tree", found)``
after the walk), :func:`guarded` runs ``guard_query`` for the other rules and then the rule on
the parsed output, twice, as the wired guard's fixed-point check will.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from relay_nb.connectors.sql.guard import guard_query
from relay_nb.connectors.sql.guard_sizes import RULE, bound_value_sizes
from relay_nb.connectors.sql.policies import Findings, GuardPolicy
from relay_nb.connectors.sql.policies.duckdb import DuckDBPolicy
from relay_nb.errors import UnsafeQueryError
from relay_nb.testing.seed import ALLOWED_TABLES

__all__ = ["GENERATE", "ROW_LIMIT", "accepted", "guarded", "refusal", "sized"]

ROW_LIMIT = 200
ALLOWED = frozenset(("main", table) for table in ALLOWED_TABLES)
GENERATE = {"comments": False, "normalize_functions": False}
"""How the guard serialises a tree (``guard._generate``)."""


def sized(sql: str, policy: type[GuardPolicy] = DuckDBPolicy) -> tuple[exp.Expr, Findings]:
    """Parse in the family's dialect and run the rule on the root, as ``policy.check(tree,
    "tree", found)`` will; returns the (possibly rewritten) tree and the findings."""
    tree = sqlglot.parse_one(sql, read=policy.dialects[0] if policy.dialects else "duckdb")
    found = Findings()
    bound_value_sizes(tree, policy, found)
    return tree, found


def refusal(sql: str, policy: type[GuardPolicy] = DuckDBPolicy) -> str:
    _, found = sized(sql, policy)
    assert found.violations, f"not refused: {sql}"
    violation = min(found.violations)
    assert violation.rule == RULE
    return violation.message


def accepted(sql: str, policy: type[GuardPolicy] = DuckDBPolicy) -> str:
    """The SQL the rule lets run (rewritten or not); fails if it is refused."""
    tree, found = sized(sql, policy)
    assert not found.violations, found.violations[0].message
    return tree.sql(dialect="duckdb", **GENERATE)


def guarded(sql: str) -> str:
    """The whole guard for DuckDB with the rule after the walk: the SQL that would run.

    Guarding the output again must change nothing (the guard's own fixed-point check), so
    the rewritten counts must read back as bounded.
    """
    first = _guard_then_size(sql)
    assert _guard_then_size(first) == first, f"not a fixed point:\n{first}"
    return first


def _guard_then_size(sql: str) -> str:
    result = guard_query(
        sql, dialect="duckdb", allowed_tables=ALLOWED, default_schema="main", row_limit=ROW_LIMIT
    )
    tree, found = sized(result.sql)
    if found.violations:
        raise UnsafeQueryError(RULE, min(found.violations).message)
    return tree.sql(dialect="duckdb", **GENERATE)
