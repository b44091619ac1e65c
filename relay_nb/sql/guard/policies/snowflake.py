"""Snowflake: plain reads, its functions, and its side doors shut.

Functions: those sqlglot knows and Snowflake's own plain ones it does not (:data:`_KNOWN`);
any other name may be an external function (rows sent to a remote service) or a UDF, and is
refused. Its own rule: a stage (``@my_stage``, ``@~``, ``@%table``) in ``FROM`` reads staged
files, so it is refused as file access, with that said to the model. ``SYSTEM$…`` functions,
``CALL``, ``EXECUTE IMMEDIATE``, ``PUT``/``GET``/``LIST`` and ``COPY INTO`` are refused by the
shared prefixes and command rules; ``FLATTEN`` may expand semi-structured values in ``FROM``.
"""

from __future__ import annotations

from sqlglot import exp

from relay_nb.sql.guard import rules as shared
from relay_nb.sql.guard.policies.base import Findings, GuardPolicy, PlainReadPolicy

__all__ = ["SnowflakePolicy", "refuse_stages"]

_KNOWN = frozenset(
    {
        "as_double", "as_integer", "as_varchar", "conditional_change_event",
        "conditional_true_event", "h3_latlng_to_cell", "hash", "haversine", "is_decimal",
        "is_integer", "ratio_to_report", "st_x", "st_y", "to_object", "to_timestamp",
        "to_timestamp_ltz", "to_timestamp_ntz", "to_timestamp_tz", "try_to_timestamp"
    }
)  # fmt: skip


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
