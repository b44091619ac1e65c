"""Snowflake: plain reads, its functions, and its side doors shut.

Functions: those sqlglot knows and the ones Snowflake documents (:data:`_KNOWN`);
any other name may be an external function (rows sent to a remote service) or a UDF, and is
refused. Its own rule: a stage (``@my_stage``, ``@~``, ``@%table``) in ``FROM`` reads staged
files, so it is refused as file access, with that said to the model. ``SYSTEM$…`` functions,
``CALL``, ``EXECUTE IMMEDIATE``, ``PUT``/``GET``/``LIST`` and ``COPY INTO`` are refused by the
shared prefixes and command rules. In ``FROM``, ``FLATTEN`` may expand semi-structured values,
``SPLIT_TO_TABLE`` / ``STRTOK_SPLIT_TO_TABLE`` strings, and ``TABLE(GENERATOR(ROWCOUNT => n))``
make up to :data:`~relay_nb.sql.guard.rules.MAX_GENERATED_ROWS` rows.
"""

from __future__ import annotations

from sqlglot import exp

from relay_nb.sql.guard import rules as shared
from relay_nb.sql.guard.functions import documented_functions
from relay_nb.sql.guard.policies.base import Findings, GuardPolicy, PlainReadPolicy

__all__ = ["SnowflakePolicy", "bound_generator", "refuse_stages"]

_LATER = frozenset({"st_union_agg"})
"""Documented after the 2024 capture ``snowflake.txt`` is made from, each checked on its page
(docs.snowflake.com/en/sql-reference/functions/<name>, 2026-12-06); Spider 2.0 uses it."""
_KNOWN = documented_functions("snowflake") | _LATER
"""Snowflake's documented functions (:mod:`relay_nb.sql.guard.functions`, ``snowflake.txt``)."""


def refuse_stages(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``FROM @stage``: the rows of files in a stage, not a table the allowlist names."""
    name = node.this
    if isinstance(name, exp.Var | exp.Literal) and str(name.name).startswith("@"):
        found.add(2, "file_access", "@stages hold files; query the tables of the schema instead")


def bound_generator(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``GENERATOR(ROWCOUNT => n)`` with a constant n up to
    :data:`~relay_nb.sql.guard.rules.MAX_GENERATED_ROWS`; ``TIMELIMIT`` (rows for as long as
    it allows) is refused."""
    if not isinstance(node, exp.Generator):
        return
    count = node.args.get("rowcount")
    if node.args.get("timelimit") is not None or not shared.small_count(count):
        found.add(
            4,
            "table_function_not_allowed",
            f"GENERATOR makes at most {shared.MAX_GENERATED_ROWS:,} rows: write ROWCOUNT => a "
            "number up to that (no TIMELIMIT)",
        )


class SnowflakePolicy(PlainReadPolicy):
    name = "snowflake"
    dialects = ("snowflake",)
    implicit_recursion = True
    table_functions = shared.COMMON_TABLE_FUNCTIONS | frozenset(
        {"flatten", "generator", "split_to_table", "strtok_split_to_table"}
    )
    known_functions = _KNOWN
    rules = (*PlainReadPolicy.rules, ("table", refuse_stages), ("function", bound_generator))
