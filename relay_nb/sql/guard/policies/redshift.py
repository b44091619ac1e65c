"""Redshift: PostgreSQL's rules, with Redshift's own surface.

- **Functions**: only ones sqlglot knows or Redshift documents as plain (:data:`_KNOWN`). An
  unknown name may be a Lambda UDF or a Redshift ML function, which send the rows they are
  given out of the database (to AWS Lambda, to SageMaker), so it is refused, not trusted.
- **``ADD_MONTHS``** is written back as written (:mod:`.as_written`): sqlglot reads it as
  ``DATEADD(MONTH, …)``, which differs at month ends.
- **SUPER navigation in ``FROM``** (``FROM events e, e.tags AS t``) is refused: sqlglot reads
  a path whose first part is an earlier alias as navigating that alias, where Redshift may
  read the same text as the table ``schema.table`` (``FROM orders AS finance,
  finance.salaries``) — and no list of the server's schemas is at hand to tell them apart.
  Navigate SUPER values in the select list (``e.tags[0]``) or with JSON functions.
- ``UNLOAD``, ``COPY``, ``CANCEL``, ``SHOW`` are commands or no query; system tables (``stl_``,
  ``svv_``, ``pg_catalog``) are outside any allowlist.
"""

from __future__ import annotations

from sqlglot import exp

from relay_nb.sql.guard.functions import documented_functions
from relay_nb.sql.guard.policies.as_written import AsWritten, plain_call
from relay_nb.sql.guard.policies.base import Findings, GuardPolicy
from relay_nb.sql.guard.policies.postgres import PostgresPolicy

__all__ = ["RedshiftPolicy"]

_KNOWN = documented_functions("redshift") | {
    # on the guide's leader-node page, in prose rather than a list
    "current_time", "current_timestamp", "localtimestamp",
    # DATE_PART's documented synonym; functions documented after April 2023
    "datepart", "h3_fromlonglat", "object_transform",
}  # fmt: skip
"""Redshift's documented functions (:mod:`relay_nb.sql.guard.functions`, ``redshift.txt``)."""

_ADD_MONTHS = AsWritten(
    node=exp.TsOrDsAdd,
    spellings=frozenset({"ADD_MONTHS", "DATEADD", "DATE_ADD"}),
    kept=lambda name, arity: name == "ADD_MONTHS",
    write=plain_call("ADD_MONTHS", "this", "expression"),
    mixed=(
        "ADD_MONTHS and DATEADD read alike to the guard, so it cannot keep both in one query; "
        "write the month arithmetic with one of them"
    ),
)


def refuse_from_paths(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``FROM t AS a, a.items``: a SUPER path in ``FROM``, which Redshift may read as a table."""
    if isinstance(node, exp.Unnest):
        found.add(
            3,
            "table_not_allowed",
            "a path in FROM (alias.column) may be read as a schema's table on Redshift; "
            "navigate SUPER values in the select list (e.tags[0]) or with JSON functions",
        )


class RedshiftPolicy(PostgresPolicy):
    name = "redshift"
    dialects = ("redshift",)
    unknown_functions = False
    known_functions = _KNOWN
    as_written = (_ADD_MONTHS,)
    pins_search_path = True
    rules = (*PostgresPolicy.rules, ("function", refuse_from_paths))
