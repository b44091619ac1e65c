"""PostgreSQL and the engines that answer to its SQL: Redshift, Materialize, RisingWave.

Its own: the set-returning functions analysts use in ``FROM`` (JSON expansion, regex splits,
``generate_subscripts``), ``TABLE name`` as a statement, and the search path pinned per query
(a same-named table earlier on a role's path must not win over the one the guard resolved).
Redshift is a PostgreSQL dialect here until the warehouse corpus gives it rules of its own.
"""

from __future__ import annotations

from relay_nb.connectors.sql import guard_rules as shared
from relay_nb.connectors.sql.policies.base import GuardPolicy

__all__ = ["PostgresPolicy"]


class PostgresPolicy(GuardPolicy):
    name = "postgres"
    dialects = ("postgres", "redshift", "materialize", "risingwave")
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
