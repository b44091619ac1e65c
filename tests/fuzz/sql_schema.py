"""The seeded shop schema as typed data, and how each dialect spells names and text.

Data for ``sql_strategies`` (the SELECT generator), kept apart so a reviewer sees at a glance
what the fuzzer knows about the database: the tables of ``relay_nb.testing.seed`` with a type
per column, their keys and foreign keys, the constructs the generator must keep producing
(``FEATURES``), and the SQL-looking text pieces string literals and names are made of.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

__all__ = [
    "DATES",
    "FEATURES",
    "IDENT_PIECES",
    "JOINS",
    "KEYS",
    "RESERVED_COLUMNS",
    "SMALL_TABLES",
    "TABLES",
    "TEXT_VALUES",
    "VALUE_TYPES",
    "Column",
    "SQLDialect",
    "sql_dialect",
    "string_contents",
]

# --------------------------------------------------------------------------------------------
# The schema (relay_nb.testing.seed), typed


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # int | num | text | date | ts


def _cols(spec: str) -> tuple[Column, ...]:
    return tuple(Column(*item.split(":")) for item in spec.split())


TABLES: dict[str, tuple[Column, ...]] = {
    "customers": _cols("id:int name:text email:text country:text signed_up:date"),
    "products": _cols("id:int name:text category:text price:num"),
    "orders": _cols("id:int customer_id:int ordered_at:ts status:text total:num"),
    "order_items": _cols("order_id:int product_id:int quantity:int unit_price:num"),
    "events": _cols("id:int user:text comment:text replace:text set:text occurred_at:ts"),
    "customer_revenue": _cols("customer_id:int revenue:num"),
}
KEYS: dict[str, tuple[str, ...]] = {
    "customers": ("id",),
    "products": ("id",),
    "orders": ("id",),
    "order_items": ("order_id", "product_id"),
    "events": ("id",),
    "customer_revenue": ("customer_id",),
}
# (table, column) -> (table, column): the foreign keys joins follow
JOINS: tuple[tuple[str, str, str, str], ...] = (
    ("orders", "customer_id", "customers", "id"),
    ("order_items", "order_id", "orders", "id"),
    ("order_items", "product_id", "products", "id"),
    ("customer_revenue", "customer_id", "customers", "id"),
)
RESERVED_COLUMNS = frozenset({"user", "comment", "replace", "set"})
SMALL_TABLES = ("customers", "products", "customer_revenue")
VALUE_TYPES = ("int", "num", "text")
TEXT_VALUES = ("paid", "pending", "shipped", "delivered", "DE", "US", "coffee", "tea", "")
DATES = ("2024-01-01", "2025-06-30", "2026-01-01")

FEATURES = frozenset(
    {
        "join", "left_join", "derived_table", "cte", "recursive_cte", "unused_cte",
        "shadowing_cte", "set_operation", "group_by", "having", "aggregate", "distinct",
        "window", "order_by", "total_order", "limit", "offset", "limit_comma", "fetch_first",
        "exists", "in_subquery", "scalar_subquery", "case", "like", "between", "in_list",
        "not", "or", "is_null", "comment", "line_comment", "quoted_identifier",
        "string_escape", "dollar_quote", "parenthesized", "star", "trailing_semicolon",
        "schema_qualified", "inner_limit",
    }
)  # fmt: skip
"""Constructs the generator must keep producing (a test checks each shows up)."""

# --------------------------------------------------------------------------------------------
# Dialects


@dataclass(frozen=True)
class SQLDialect:
    """How one database spells things; ``schema`` qualifies tables (``main`` for SQLite)."""

    name: str
    schema: str

    @property
    def mysql(self) -> bool:
        return self.name == "mysql"

    def quote(self, name: str) -> str:
        if self.mysql:
            return "`" + name.replace("`", "``") + "`"
        return '"' + name.replace('"', '""') + '"'


def sql_dialect(name: str, schema: str | None) -> SQLDialect:
    return SQLDialect(name, schema or "main")


# --------------------------------------------------------------------------------------------
# Text pieces: string contents, identifiers, comments

_PIECES = (
    *"abcXYZ019 ;'\"-/*#%_\\$`\n\té☕.,()=!@?",
    "DELETE", "DROP TABLE orders", "--", "/*", "*/", "; ", "LIMIT 5", "/*!50000 ", "$$",
    "'; DELETE FROM orders; --", "\\'", "UNION SELECT api_key FROM secrets", "$1", "@@x",
    "INTO OUTFILE", "pg_sleep(1)", "\r\n",
)  # fmt: skip


def string_contents(max_pieces: int = 6) -> st.SearchStrategy[str]:
    """Text that looks like SQL, quotes, comments and escapes: the data of string literals."""
    return st.lists(st.sampled_from(_PIECES), max_size=max_pieces).map("".join)


IDENT_PIECES = (
    *"abcXYZ09 ;-/*'\"`é☕.#$()",
    "select",
    "DELETE",
    "from",
    "--",
    "/*",
    "*/",
    "order",
    "LIMIT",
)
