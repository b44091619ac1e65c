"""PostgreSQL and the engines that answer to its SQL: Redshift, Materialize, RisingWave.

Its own: the set-returning functions analysts use in ``FROM`` (JSON expansion, regex splits,
``generate_subscripts``), ``TABLE name`` as a statement, the search path pinned per query
(a same-named table earlier on a role's path must not win over the one the guard resolved),
and ``pg_typeof`` kept where its catalog-typed result cannot meet a string.
Redshift's own rules are in :mod:`.redshift`, which builds on these.
"""

from __future__ import annotations

from sqlglot import exp

from relay_nb.sql.guard import rules as shared
from relay_nb.sql.guard.policies.base import Findings, GuardPolicy, function_names

__all__ = ["PostgresPolicy", "pg_typeof_as_text"]


def pg_typeof_as_text(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``pg_typeof(x)`` returns ``regtype``: a string it meets in ``UNION``, ``COALESCE``,
    ``CASE``, ``ARRAY[…]`` or ``VALUES`` is cast to ``regtype``, i.e. looked up in the catalog
    (``COALESCE(pg_typeof(1), 'secrets')`` succeeds for a hidden table, fails for no table).

    It stays allowed where its value meets nothing: an output column of the outermost SELECT,
    a GROUP BY or ORDER BY key, or the operand of a cast (``pg_typeof(x)::text = 'integer'``,
    the form to compare it). Anywhere else the model is told to write that cast.
    """
    if function_names(node)[0] != "pg_typeof":  # type: ignore[arg-type]
        return
    if _meets_nothing(node):
        return
    found.add(
        4,
        "forbidden_function",
        "pg_typeof() returns a catalog type that looks strings up as type names; write "
        "pg_typeof(x)::text to compare or combine it",
    )


def _meets_nothing(node: exp.Expr) -> bool:
    parent = node.parent
    if isinstance(parent, exp.Cast | exp.Group):
        return True
    if isinstance(parent, exp.Ordered) and isinstance(parent.parent, exp.Order):
        return True
    column = parent if isinstance(parent, exp.Alias) else node
    select = column.parent
    if not isinstance(select, exp.Select) or column.arg_key != "expressions":
        return False
    outer = select.parent
    while isinstance(outer, exp.Subquery) and not any(
        value for key, value in outer.args.items() if key != "this"
    ):
        outer = outer.parent
    return outer is None


class PostgresPolicy(GuardPolicy):
    name = "postgres"
    dialects = ("postgres", "materialize", "risingwave")
    table_functions = shared.COMMON_TABLE_FUNCTIONS | frozenset(
        {
            "generate_subscripts", "json_array_elements", "json_array_elements_text",
            "jsonb_array_elements", "jsonb_array_elements_text", "json_each", "json_each_text",
            "jsonb_each", "jsonb_each_text", "json_to_record", "json_to_recordset",
            "jsonb_to_record", "jsonb_to_recordset", "json_populate_record",
            "json_populate_recordset", "jsonb_populate_record", "jsonb_populate_recordset",
            "jsonb_path_query", "regexp_matches", "regexp_split_to_table", "string_to_table",
            "json_object_keys", "jsonb_object_keys",
        }
    )  # fmt: skip
    pins_search_path = True
    rules = (*GuardPolicy.rules, ("function", pg_typeof_as_text))
