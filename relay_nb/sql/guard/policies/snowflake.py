"""Snowflake: plain reads, its functions, and its side doors shut.

Functions: those sqlglot knows and the ones Snowflake documents (:data:`_KNOWN`);
any other name may be an external function (rows sent to a remote service) or a UDF, and is
refused. Its own rule: a stage (``@my_stage``, ``@~``, ``@%table``) in ``FROM`` reads staged
files, so it is refused as file access, with that said to the model. ``SYSTEM$…`` functions,
``CALL``, ``EXECUTE IMMEDIATE``, ``PUT``/``GET``/``LIST`` and ``COPY INTO`` are refused by the
shared prefixes and command rules; ``FLATTEN`` may expand semi-structured values in ``FROM``.
"""

from __future__ import annotations

from sqlglot import exp

from relay_nb.sql.guard import rules as shared
from relay_nb.sql.guard.functions import documented_functions
from relay_nb.sql.guard.policies.base import Findings, GuardPolicy, PlainReadPolicy

__all__ = ["SnowflakePolicy", "refuse_stages"]

_KNOWN = documented_functions("snowflake")
"""Snowflake's documented functions (:mod:`relay_nb.sql.guard.functions`, ``snowflake.txt``)."""


def refuse_stages(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``FROM @stage``: the rows of files in a stage, not a table the allowlist names."""
    name = node.this
    if isinstance(name, exp.Var | exp.Literal) and str(name.name).startswith("@"):
        found.add(2, "file_access", "@stages hold files; query the tables of the schema instead")


class SnowflakePolicy(PlainReadPolicy):
    name = "snowflake"
    dialects = ("snowflake",)
    table_functions = shared.COMMON_TABLE_FUNCTIONS | frozenset({"flatten"})
    known_functions = _KNOWN
    rules = (*PlainReadPolicy.rules, ("table", refuse_stages))
