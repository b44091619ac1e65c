"""Hypothesis strategies: random *valid* read-only SELECTs over the seeded shop, per dialect.

Valid means valid for the real database: every query drawn here runs on SQLite, DuckDB,
PostgreSQL and MariaDB as written for that dialect, so "the guard refused it" or "the guarded
SQL returned other rows" is always a finding, never noise. That takes a typed generator:
expressions carry a type (int, num, text, date, ts) so PostgreSQL never sees ``text = int``,
GROUP BY queries select only keys and aggregates, scalar subqueries always aggregate, window
functions whose result depends on tie order (ROW_NUMBER, LAG) only order by a unique key.

What it draws, to stress the guard's tokenizer, parser, walker, limit and generator:
projections, arithmetic, CASE, COALESCE, string functions, comparisons, IN lists, BETWEEN,
LIKE, IS NULL, AND/OR/NOT, EXISTS and IN subqueries (correlated too), scalar subqueries,
joins on the foreign keys, derived tables, CTEs (also recursive and unused ones, and names
that shadow real tables), UNION/INTERSECT/EXCEPT, aggregates with GROUP BY and HAVING,
DISTINCT, window functions, ORDER BY (ordinals, aliases, NULLS FIRST), LIMIT/OFFSET
(MySQL/SQLite ``LIMIT m, n``, PostgreSQL FETCH FIRST) above and below the row limit; string
literals full of SQL (``'; DELETE FROM orders; --'``, ``/*``, ``--``, ``$$``, backslashes)
written in every quoting style the dialect has (MySQL backslash escapes and double-quoted
strings, PostgreSQL ``E''`` and dollar quotes); quoted identifiers made of keywords and
punctuation; comments of every kind between any two tokens; odd whitespace and case.

Each drawn :class:`GeneratedQuery` also carries the oracle's reference text: the same query
without its outermost LIMIT/OFFSET, and whether its ORDER BY is total.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from sql_schema import (
    DATES,
    FEATURES,
    IDENT_PIECES,
    JOINS,
    KEYS,
    RESERVED_COLUMNS,
    SMALL_TABLES,
    TABLES,
    TEXT_VALUES,
    VALUE_TYPES,
    SQLDialect,
    sql_dialect,
    string_contents,
)

__all__ = [
    "FEATURES",
    "GeneratedQuery",
    "SQLDialect",
    "compact_expressions",
    "select_queries",
    "sql_dialect",
]

# --------------------------------------------------------------------------------------------
# The generator


@functools.cache
def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    """Strategies built once: hypothesis validates every new strategy object it draws from,
    and a query takes a few hundred draws."""
    return st.integers(low, high)


_IDENT_SUFFIX = st.lists(st.sampled_from(IDENT_PIECES), max_size=4).map("".join)
_STRINGS = st.one_of(st.sampled_from(TEXT_VALUES), string_contents())
_COMMENT_TEXT = st.lists(
    st.sampled_from(("a", "b", " ", "DELETE FROM orders", ";", "'", '"', "`", "LIMIT 1", "-", "é")),
    max_size=4,
).map("".join)
_LIKE_PATTERN = st.lists(st.sampled_from("ab%_ eD'"), max_size=5).map("".join)


@dataclass(frozen=True)
class Ref:
    """A value in scope: its rendered reference and its type."""

    sql: str
    type: str


@dataclass
class Source:
    """One FROM item: its tokens and the columns it puts in scope."""

    tokens: list[str]
    refs: list[Ref]
    keys: list[str] = field(default_factory=list)  # refs that are a unique key together
    single_table: bool = False


@dataclass
class Select:
    """A query body and what it outputs."""

    tokens: list[str]
    types: list[str]
    aliases: list[str | None]


@dataclass(frozen=True)
class GeneratedQuery:
    """A drawn query, as submitted, and the oracle's reference for it."""

    sql: str
    unbounded_sql: str
    """The same query without its outermost LIMIT/OFFSET (ORDER BY kept)."""
    limit: int | None
    offset: int
    total_order: bool
    """ORDER BY covers every output column: the row order is fully determined."""
    features: frozenset[str]

    def __repr__(self) -> str:  # hypothesis prints this for a failing example
        return f"GeneratedQuery(sql={self.sql!r})"


class _Gen:
    """One query being drawn: ``draw`` is hypothesis's, names are numbered to stay unique."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any], dialect: SQLDialect):
        self.draw = draw
        self.d = dialect
        self.counter = 0
        self.features: set[str] = set()
        self.cte_sources: list[tuple[str, list[tuple[str, str]]]] = []  # (rendered, columns)
        self.shadowed: set[str] = set()  # tables a CTE of the same name hides

    # ---------------------------------------------------------------- small draws
    def coin(self, p: float = 0.5) -> bool:
        return self.draw(_ints(0, 999)) < p * 1000

    # hypothesis draws boundary values (0, the maximum) far more often than others; taken
    # modulo a small range they spread evenly, and still shrink towards the first option
    def pick(self, options: Sequence[Any]) -> Any:
        choices = options if isinstance(options, list | tuple) else list(options)
        return choices[self.draw(_ints(0, 9999)) % len(choices)]

    def between(self, low: int, high: int) -> int:
        return low + self.draw(_ints(0, 9999)) % (high - low + 1)

    def fresh(self, prefix: str, *, quotable: bool = True) -> str:
        """A new unique name, rendered: plain, quoted, or a quoted name full of SQL."""
        self.counter += 1
        base = f"{prefix}{self.counter}"
        style = self.pick(("plain", "plain", "quoted", "weird")) if quotable else "plain"
        if style == "plain":
            return base
        self.features.add("quoted_identifier")
        if style == "quoted":
            return self.d.quote(base)
        suffix = self.draw(_IDENT_SUFFIX)
        name = (base + suffix)[:40]
        if self.d.mysql:
            name = name.rstrip(" ")  # MySQL names cannot end in a space
        return self.d.quote(name)

    # ---------------------------------------------------------------- literals
    def int_literal(self) -> list[str]:
        value = self.between(-3, 60) if self.coin(0.7) else self.between(-1000, 1000)
        return [str(value)] if value >= 0 else ["-", str(-value)]

    def num_literal(self) -> list[str]:
        cents = self.between(0, 60_000)
        return [f"{cents // 100}.{cents % 100:02d}"]

    def text_literal(self, text: str | None = None) -> list[str]:
        if text is None:
            text = self.draw(_STRINGS)
        return [self.string(text)]

    def string(self, text: str, *, plain: bool = False) -> str:
        """``text`` as a literal in one of the dialect's quoting styles."""
        styles = ["standard"]
        if not plain:
            if self.d.mysql:
                styles += ["backslash", "double"]
            if self.d.name == "postgres":
                styles += ["escape", "dollar", "tagged"]
            if self.d.name == "duckdb":
                styles += ["dollar", "tagged"]
        style = self.pick(styles)
        if style == "standard":
            body = text.replace("\\", "\\\\") if self.d.mysql else text
            return "'" + body.replace("'", "''") + "'"
        self.features.add("dollar_quote" if style in ("dollar", "tagged") else "string_escape")
        if style == "backslash":
            escaped = text.replace("\\", "\\\\").replace("'", "\\'")
            return "'" + escaped.replace("\n", "\\n").replace("\t", "\\t") + "'"
        if style == "double":
            return '"' + text.replace("\\", "\\\\").replace('"', '""') + '"'
        if style == "escape":
            return "E'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
        tag = "" if style == "dollar" else "q" + str(self.between(0, 9))
        if f"${tag}$" in text or text.endswith("$"):
            return "'" + text.replace("'", "''") + "'"
        return f"${tag}${text}${tag}$"

    def literal(self, type_: str) -> list[str]:
        if type_ == "int":
            return self.int_literal()
        if type_ == "num":
            return self.num_literal()
        if type_ == "text":
            return self.text_literal()
        return [self.string(self.pick(DATES), plain=True)]

    # ---------------------------------------------------------------- expressions
    def expr(self, scope: list[Ref], type_: str, depth: int) -> list[str]:
        """A value of ``type_`` over ``scope``; ``depth`` bounds nesting."""
        columns = [r for r in scope if r.type == type_]
        kinds = ["column"] * 3 if columns else []
        kinds += ["literal"]
        if depth > 0 and type_ in VALUE_TYPES:
            kinds += ["compound"] * 3 + ["case", "coalesce"]
            if type_ != "text":
                kinds += ["scalar"]
        kind = self.pick(kinds)
        if kind == "column":
            return [self.pick(columns).sql]
        if kind == "literal":
            return self.literal(type_)
        if kind == "case":
            self.features.add("case")
            out = ["CASE"]
            for _ in range(self.between(1, 2)):
                out += ["WHEN", *self.pred(scope, depth - 1), "THEN"]
                out += self.expr(scope, type_, depth - 1)
            if self.coin():
                out += ["ELSE", *self.expr(scope, type_, depth - 1)]
            return [*out, "END"]
        if kind == "coalesce":
            inner = self.expr(scope, type_, depth - 1)
            return ["COALESCE(", *inner, ",", *self.literal(type_), ")"]
        if kind == "scalar":
            return self.scalar_subquery(scope, type_, depth - 1)
        return self.compound(scope, type_, depth - 1)

    def compound(self, scope: list[Ref], type_: str, depth: int) -> list[str]:
        if type_ == "text":
            choice = self.pick(("lower", "upper", "concat", "substr", "trim", "replace"))
            inner = self.expr(scope, "text", depth)
            if choice == "concat":
                other = self.expr(scope, "text", depth)
                if self.d.mysql:
                    return ["CONCAT(", *inner, ",", *other, ")"]
                return ["(", *inner, "||", *other, ")"]
            if choice == "substr":
                start = str(self.between(1, 4))
                return ["SUBSTR(", *inner, ",", start, ",", str(self.between(0, 6)), ")"]
            if choice == "replace":
                old, new = self.text_literal("a"), self.text_literal()
                return ["REPLACE(", *inner, ",", *old, ",", *new, ")"]
            return [f"{choice.upper()}(", *inner, ")"]
        if type_ == "int":
            choice = self.pick(("+", "-", "*", "neg", "abs", "length", "paren"))
        else:
            choice = self.pick(("+", "-", "*", "abs", "round", "paren", "mixed"))
        if choice in ("+", "-", "*"):
            right_type = "int" if choice == "*" or type_ == "int" else self.pick(("int", "num"))
            left = self.expr(scope, type_, depth)
            right = self.expr(scope, right_type, min(depth, 0 if choice == "*" else depth))
            return ["(", *left, choice, *right, ")"]
        if choice == "neg":
            return ["-", "(", *self.expr(scope, type_, depth), ")"]
        if choice == "abs":
            return ["ABS(", *self.expr(scope, type_, depth), ")"]
        if choice == "length":
            return ["LENGTH(", *self.expr(scope, "text", depth), ")"]
        if choice == "round":
            return ["ROUND(", *self.expr(scope, "num", depth), ",", str(self.pick((0, 1, 2))), ")"]
        if choice == "mixed":
            return ["(", *self.expr(scope, "int", depth), "+", *self.num_literal(), ")"]
        return ["(", *self.expr(scope, type_, depth), ")"]

    # ---------------------------------------------------------------- predicates
    def pred(self, scope: list[Ref], depth: int) -> list[str]:
        kinds = ["compare"] * 4 + ["null", "in_list", "between", "like"]
        if depth > 0:
            kinds += ["and", "or", "not", "exists", "in_subquery"]
        kind = self.pick(kinds)
        if kind in ("null", "in_list", "between", "like", "not", "or", "exists", "in_subquery"):
            self.features.add("is_null" if kind == "null" else kind)
        temporal = [r for r in scope if r.type in ("date", "ts")]
        if kind == "compare":
            if temporal and self.coin(0.15):
                column = self.pick(temporal)
                return [
                    column.sql,
                    self.pick(("<", ">=")),
                    self.string(self.pick(DATES), plain=True),
                ]
            type_ = self.pick(VALUE_TYPES)
            op = self.pick(("=", "<>", "<", "<=", ">", ">=", "!="))
            return [*self.expr(scope, type_, depth), op, *self.expr(scope, type_, depth)]
        if kind == "null":
            type_ = self.pick(VALUE_TYPES)
            return [
                *self.expr(scope, type_, depth),
                "IS",
                *(["NOT"] if self.coin() else []),
                "NULL",
            ]
        if kind == "in_list":
            type_ = self.pick(VALUE_TYPES)
            items: list[str] = []
            for i in range(self.between(1, 4)):
                items += ([","] if i else []) + self.literal(type_)
            negate = ["NOT"] if self.coin(0.3) else []
            return [*self.expr(scope, type_, depth), *negate, "IN", "(", *items, ")"]
        if kind == "between":
            type_ = self.pick(("int", "num"))
            low, high = self.literal(type_), self.literal(type_)
            return [*self.expr(scope, type_, depth), "BETWEEN", *low, "AND", *high]
        if kind == "like":
            pattern = self.draw(_LIKE_PATTERN)
            negate = ["NOT"] if self.coin(0.3) else []
            target = self.expr(scope, "text", depth)
            return [*target, *negate, "LIKE", self.string(pattern, plain=True)]
        if kind in ("and", "or"):
            left, right = self.pred(scope, depth - 1), self.pred(scope, depth - 1)
            return ["(", *left, kind.upper(), *right, ")"]
        if kind == "not":
            return ["NOT", "(", *self.pred(scope, depth - 1), ")"]
        # subqueries read the small tables and hold no further subqueries: correlated ones
        # run once per outer row, and SQLite has no index on the foreign keys
        if kind == "exists":
            source = self.table_source(self.pick(SMALL_TABLES))
            inner = [*scope, *source.refs]
            where = ["WHERE", *self.pred(inner, 0)] if self.coin(0.8) else []
            negate = ["NOT"] if self.coin(0.3) else []
            return [*negate, "EXISTS", "(", "SELECT", "1", "FROM", *source.tokens, *where, ")"]
        # in_subquery
        source = self.table_source(self.pick(SMALL_TABLES))
        ints = [r for r in source.refs if r.type == "int"]
        where = ["WHERE", *self.pred([*scope, *source.refs], 0)] if self.coin() else []
        body = ["SELECT", self.pick(ints).sql, "FROM", *source.tokens, *where]
        return [*self.expr(scope, "int", 0), "IN", "(", *body, ")"]

    def scalar_subquery(self, scope: list[Ref], type_: str, depth: int) -> list[str]:
        """Always an aggregate without GROUP BY: exactly one row, whatever the data."""
        self.features.add("scalar_subquery")
        table = "products" if type_ == "num" else self.pick(SMALL_TABLES)
        source = self.table_source(table)
        inner = [*scope, *source.refs]
        if type_ == "int":
            value = ["COUNT(", "*", ")"]
        else:
            nums = [r for r in source.refs if r.type == "num"]
            value = [f"{self.pick(('MAX', 'MIN', 'SUM'))}(", self.pick(nums).sql, ")"]
        where = ["WHERE", *self.pred(inner, 0)] if self.coin(0.7) else []
        return ["(", "SELECT", *value, "FROM", *source.tokens, *where, ")"]

    # ---------------------------------------------------------------- FROM
    def table_name(self, table: str) -> str:
        style = self.pick(("plain", "plain", "plain", "quoted", "schema", "upper"))
        if table in self.shadowed:
            style = "schema"  # the plain name now means the CTE
        if style == "quoted":
            self.features.add("quoted_identifier")
            return self.d.quote(table)
        if style == "schema":
            self.features.add("schema_qualified")
            return f"{self.d.quote(self.d.schema)}.{table}"
        if style == "upper" and not self.d.mysql:  # MySQL table names are case-sensitive
            return table.upper()
        return table

    def column_name(self, column: str) -> str:
        if column in RESERVED_COLUMNS or self.coin(0.1):
            return self.d.quote(column)
        return column.upper() if self.coin(0.1) else column

    def table_source(self, table: str, *, alias: bool = True) -> Source:
        name = self.table_name(table)
        if alias:
            qualifier = self.fresh("t")
            tokens = [name, *(["AS"] if self.coin() else []), qualifier]
        else:
            qualifier, tokens = table, [name]
        refs = [Ref(f"{qualifier}.{self.column_name(c.name)}", c.type) for c in TABLES[table]]
        by_name = {c.name: r for c, r in zip(TABLES[table], refs, strict=True)}
        keys = [by_name[k].sql for k in KEYS[table]]
        return Source(tokens, refs, keys, single_table=True)

    def from_clause(self, depth: int) -> Source:
        kinds = ["table"] * 4 + ["join"] * 2
        if depth > 0:
            kinds += ["derived", "derived", "numbers"]
        if self.cte_sources:
            kinds += ["cte"] * 2
        kind = self.pick(kinds)
        if kind == "table":
            table = self.pick(TABLES)
            return self.table_source(table, alias=self.coin(0.7))
        if kind == "join":
            self.features.add("join")
            child, child_col, parent, parent_col = self.pick(JOINS)
            child_source, parent_source = self.table_source(child), self.table_source(parent)
            cond = [
                self._column_of(child_source, child, child_col),
                "=",
                self._column_of(parent_source, parent, parent_col),
            ]
            left, right = child_source, parent_source
            if self.coin(0.3):
                left, right = right, left
            if self.coin(0.3):
                cond += ["AND", *self.pred(left.refs + right.refs, 0)]
            join = self.pick((["JOIN"], ["INNER", "JOIN"], ["LEFT", "JOIN"]))
            if join[0] == "LEFT":
                self.features.add("left_join")
            return Source([*left.tokens, *join, *right.tokens, "ON", *cond], left.refs + right.refs)
        if kind == "derived":
            self.features.add("derived_table")
            body = self.select(depth - 1, aliased=True, allow_inner_limit=True)
            alias = self.fresh("d")
            refs = [Ref(f"{alias}.{a}", t) for a, t in zip(body.aliases, body.types, strict=True)]
            return Source(["(", *body.tokens, ")", *(["AS"] if self.coin() else []), alias], refs)
        if kind == "numbers":
            values = ["SELECT", "1", "AS", "n", "UNION", "ALL", "SELECT", "2", "UNION", "ALL",
                      "SELECT", "3"]  # fmt: skip
            alias = self.fresh("v", quotable=False)
            return Source(["(", *values, ")", "AS", alias], [Ref(f"{alias}.n", "int")])
        # a CTE defined in this query
        name, columns = self.pick(self.cte_sources)
        alias = self.fresh("r") if self.coin(0.5) else None
        qualifier = alias or name
        refs = [Ref(f"{qualifier}.{c}", t) for c, t in columns]
        return Source([name, *([alias] if alias else [])], refs)

    @staticmethod
    def _column_of(source: Source, table: str, column: str) -> str:
        index = [c.name for c in TABLES[table]].index(column)
        return source.refs[index].sql

    # ---------------------------------------------------------------- SELECT bodies
    def select(self, depth: int, *, aliased: bool, allow_inner_limit: bool = False) -> Select:
        """One SELECT (no set operation, no outer ORDER BY/LIMIT)."""
        # a LIMIT inside a subquery only with ORDER BY a unique key: otherwise which rows
        # it keeps is the database's choice, and could differ between two runs
        limited = allow_inner_limit and self.coin(0.3)
        if limited:
            source = self.table_source(self.pick(TABLES), alias=self.coin(0.7))
        else:
            source = self.from_clause(depth)
        if not limited and self.coin(0.3):
            return self.grouped(source, depth, aliased=aliased)
        items: list[list[str]] = []
        types: list[str] = []
        if not aliased and source.single_table and self.coin(0.3):
            self.features.add("star")
            tokens = ["SELECT", "*", "FROM", *source.tokens]
            types = [r.type for r in source.refs]
            tokens += self.where(source.refs, depth)
            return Select(tokens, types, [None] * len(types))
        for _ in range(self.between(1, 4)):
            type_ = self.pick(("int", "num", "text", "text", "any"))
            if type_ == "any":
                ref = self.pick(source.refs)
                items.append([ref.sql])
                types.append(ref.type)
            else:
                items.append(self.expr(source.refs, type_, depth))
                types.append(type_)
        if self.coin(0.3):
            items.append(self.window(source))
            types.append("num")
        aliases = [self.fresh("c") if aliased or self.coin(0.7) else None for _ in items]
        distinct = ["DISTINCT"] if not limited and self.coin(0.15) else []
        if distinct:
            self.features.add("distinct")
        tokens = ["SELECT", *distinct, *self._items(items, aliases), "FROM", *source.tokens]
        tokens += self.where(source.refs, depth)
        if limited:
            self.features.add("inner_limit")
            tokens += ["ORDER", "BY", ",".join(source.keys), "LIMIT", str(self.pick((1, 5, 30)))]
        return Select(tokens, types, [a for a in aliases])

    def where(self, scope: list[Ref], depth: int) -> list[str]:
        if not self.coin(0.7):
            return []
        return ["WHERE", *self.pred(scope, min(depth + 1, 2))]

    def window(self, source: Source) -> list[str]:
        self.features.add("window")
        partition = self.pick(source.refs).sql
        order = self.pick(source.refs).sql
        over_partition = ["PARTITION", "BY", partition] if self.coin(0.7) else []
        direction = [self.pick(("ASC", "DESC"))] if self.coin() else []
        kinds = ["rank", "dense_rank", "count", "sum", "max"]
        if source.single_table:
            kinds += ["row_number"]
        kind = self.pick(kinds)
        if kind in ("rank", "dense_rank"):
            head = [f"{kind.upper()}(", ")"]
            over = [*over_partition, "ORDER", "BY", order, *direction]
        elif kind == "row_number":
            head = ["ROW_NUMBER(", ")"]
            over = [*over_partition, "ORDER", "BY", ",".join(source.keys)]
        elif kind == "count":
            head = ["COUNT(", "*", ")"]
            over = over_partition
        else:
            numbers = [r for r in source.refs if r.type in ("int", "num")]
            value = self.pick(numbers).sql if numbers else "1"
            head = [f"{kind.upper()}(", value, ")"]
            over = [*over_partition, *(["ORDER", "BY", order, *direction] if self.coin() else [])]
        return [*head, "OVER", "(", *over, ")"]

    def grouped(self, source: Source, depth: int, *, aliased: bool) -> Select:
        self.features.add("aggregate")
        keys = list(
            {id(r): r for r in (self.pick(source.refs) for _ in range(self.between(0, 2)))}.values()
        )
        items = [[k.sql] for k in keys]
        types = [k.type for k in keys]
        for _ in range(self.between(1, 3)):
            tokens, type_ = self.aggregate(source.refs)
            items.append(tokens)
            types.append(type_)
        aliases = [self.fresh("g") if aliased or self.coin(0.7) else None for _ in items]
        body = ["SELECT", *self._items(items, aliases), "FROM", *source.tokens]
        body += self.where(source.refs, depth)
        if keys:
            self.features.add("group_by")
            by_position = self.coin(0.3)
            group = [str(i + 1) if by_position else k.sql for i, k in enumerate(keys)]
            body += ["GROUP", "BY", *self._commas([[g] for g in group])]
        if self.coin(0.4):
            self.features.add("having")
            aggregate, type_ = self.aggregate(source.refs)
            literal = self.literal("int" if type_ == "int" else "num")
            comparison = [*aggregate, self.pick(("<", ">", ">=", "<>")), *literal]
            if keys and self.coin(0.3):
                comparison = ["(", *comparison, "OR", keys[0].sql, "IS", "NULL", ")"]
            body += ["HAVING", *comparison]
        return Select(body, types, aliases)

    def aggregate(self, scope: list[Ref]) -> tuple[list[str], str]:
        numbers = [r for r in scope if r.type in ("int", "num")]
        kind = self.pick(("count", "count", "count_col", "count_distinct", "sum", "avg", "minmax"))
        if kind == "count" or (kind in ("sum", "avg") and not numbers):
            return ["COUNT(", "*", ")"], "int"
        if kind in ("count_col", "count_distinct"):
            distinct = ["DISTINCT"] if kind == "count_distinct" else []
            return ["COUNT(", *distinct, self.pick(scope).sql, ")"], "int"
        if kind == "sum":
            column = self.pick(numbers)
            inner = ["COALESCE(", "SUM(", column.sql, ")", ",", "0", ")"]
            return (inner if self.coin() else ["SUM(", column.sql, ")"]), column.type
        if kind == "avg":
            avg = ["AVG(", self.pick(numbers).sql, ")"]
            return (["ROUND(", *avg, ",", "2", ")"] if self.coin() else avg), "num"
        column = self.pick(scope)
        if column.type not in ("int", "num"):
            return ["COUNT(", column.sql, ")"], "int"
        return [f"{self.pick(('MIN', 'MAX'))}(", column.sql, ")"], column.type

    def _items(self, items: list[list[str]], aliases: list[str | None]) -> list[str]:
        rendered = []
        for item, alias in zip(items, aliases, strict=True):
            rendered.append(
                item if alias is None else [*item, *(["AS"] if self.coin(0.8) else []), alias]
            )
        return self._commas(rendered)

    @staticmethod
    def _commas(parts: list[list[str]]) -> list[str]:
        out: list[str] = []
        for i, part in enumerate(parts):
            out += ([","] if i else []) + part
        return out

    def typed_select(self, types: list[str], depth: int) -> list[str]:
        """A SELECT whose output has exactly these types (a set operation's later branch)."""
        source = self.from_clause(0)
        items = [self.expr(source.refs, t, depth) for t in types]
        body = ["SELECT", *self._commas(items), "FROM", *source.tokens]
        return body + self.where(source.refs, depth)

    # ---------------------------------------------------------------- the whole query
    def query(self) -> tuple[list[str], list[str], list[str], int | None, int, bool]:
        """(prefix tokens, ORDER BY tokens, LIMIT tokens, limit, offset, total order)."""
        with_tokens = self.with_clause()
        shape = self.pick(("select", "select", "select", "set_operation"))
        if shape == "set_operation":
            self.features.add("set_operation")
            first = self.select(1, aliased=self.coin(), allow_inner_limit=False)
            while "*" in first.tokens[:3] or any(t not in VALUE_TYPES for t in first.types):
                first = self._retyped(first)
            body = list(first.tokens)
            operators = [["UNION"], ["UNION", "ALL"], ["INTERSECT"], ["EXCEPT"]]
            if self.d.name in ("postgres", "duckdb"):
                operators += [["INTERSECT", "ALL"], ["EXCEPT", "ALL"]]
            for _ in range(self.between(1, 2)):
                body += [*self.pick(operators), *self.typed_select(first.types, 1)]
            main = Select(body, first.types, first.aliases)
        else:
            main = self.select(2, aliased=False, allow_inner_limit=False)
        prefix = [*with_tokens, *main.tokens]
        # SQLite has no parenthesized query; MariaDB none that starts with WITH
        if self.d.name != "sqlite" and not (self.d.mysql and with_tokens) and self.coin(0.1):
            self.features.add("parenthesized")
            prefix = ["(", *prefix, ")"]
        order, total = self.order_by(main)
        limit_tokens, limit, offset = self.limit_clause()
        return prefix, order, limit_tokens, limit, offset, total

    def _retyped(self, select: Select) -> Select:
        """A replacement first branch with value types only (set operations compare them)."""
        types = [self.pick(VALUE_TYPES) for _ in range(self.between(1, 3))]
        aliases: list[str | None] = [self.fresh("u") for _ in types]
        source = self.from_clause(0)
        items = [self.expr(source.refs, t, 1) for t in types]
        tokens = ["SELECT", *self._items(items, aliases), "FROM", *source.tokens]
        return Select(tokens + self.where(source.refs, 1), types, aliases)

    def with_clause(self) -> list[str]:
        if not self.coin(0.3):
            return []
        self.features.add("cte")
        out: list[str] = ["WITH"]
        recursive = self.coin(0.25)
        if recursive:
            self.features.add("recursive_cte")
            out.append("RECURSIVE")
        definitions: list[list[str]] = []
        if recursive:
            name = self.fresh("rc")
            limit = str(self.between(1, 12))
            body = ["SELECT", "1", "UNION", "ALL", "SELECT", "n", "+", "1", "FROM", name,
                    "WHERE", "n", "<", limit]  # fmt: skip
            definitions.append([name, "(", "n", ")", "AS", "(", *body, ")"])
            self.cte_sources.append((name, [("n", "int")]))
        names: list[str] = []
        if self.coin(0.15):
            self.features.add("shadowing_cte")
            names.append(self.pick(("orders", "customers")))  # first, so no body precedes it
            self.shadowed.add(names[0])
        names += [self.fresh("w") for _ in range(self.between(0 if names else 1, 2))]
        for name in names:
            body = self.select(1, aliased=True, allow_inner_limit=True)
            definitions.append([name, "AS", "(", *body.tokens, ")"])
            columns = [(a or "", t) for a, t in zip(body.aliases, body.types, strict=True)]
            self.cte_sources.append((name, columns))
        if self.coin(0.2):
            self.features.add("unused_cte")
            unused = self.fresh("z")
            definitions.append([unused, "AS", "(", "SELECT", "1", "AS", "x", ")"])
        return out + self._commas(definitions)

    def order_by(self, main: Select) -> tuple[list[str], bool]:
        if not self.coin(0.6):
            return [], False
        self.features.add("order_by")
        count = len(main.types)
        positions = list(range(count))
        for i in range(count - 1, 0, -1):  # Fisher-Yates on cached integer strategies
            j = self.between(0, i)
            positions[i], positions[j] = positions[j], positions[i]
        chosen = positions[: self.between(1, count)]
        items = []
        for position in chosen:
            alias = main.aliases[position]
            key = alias if alias is not None and self.coin(0.3) else str(position + 1)
            direction = [self.pick(("ASC", "DESC"))] if self.coin() else []
            nulls = []
            if not self.d.mysql and self.coin(0.2):
                nulls = ["NULLS", self.pick(("FIRST", "LAST"))]
            items.append([key, *direction, *nulls])
        total = len(chosen) == count
        if total:
            self.features.add("total_order")
        return ["ORDER", "BY", *self._commas(items)], total

    def limit_clause(self) -> tuple[list[str], int | None, int]:
        if not self.coin(0.5):
            return [], None, 0
        self.features.add("limit")
        limit = self.pick((0, 1, 2, 7, 40, 150, 600, 100_000))
        offset = self.pick((0, 0, 1, 5, 40)) if self.coin(0.4) else 0
        if offset:
            self.features.add("offset")
        if self.d.name in ("mysql", "sqlite") and offset and self.coin(0.4):
            self.features.add("limit_comma")
            return ["LIMIT", f"{offset},", str(limit)], limit, offset
        if self.d.name == "postgres" and self.coin(0.25):
            self.features.add("fetch_first")
            skip = ["OFFSET", str(offset), "ROWS"] if offset else []
            return [*skip, "FETCH", "FIRST", str(limit), "ROWS", "ONLY"], limit, offset
        tokens = ["LIMIT", str(limit)]
        return tokens + (["OFFSET", str(offset)] if offset else []), limit, offset

    # ---------------------------------------------------------------- joining tokens
    def render(self, tokens: list[str]) -> str:
        """Tokens joined by whitespace, with comments drawn between a few of them."""
        space = self.pick((" ", " ", "\n", "\t", "  \n\t"))
        gaps = [space] * (len(tokens) + 1)
        gaps[0] = gaps[-1] = ""
        for _ in range(self.between(0, 3)):
            gaps[self.between(0, len(tokens))] = self.comment()
        out = []
        for gap, token in zip(gaps, tokens, strict=False):
            out += [gap, token]
        return "".join(out) + gaps[-1]

    def comment(self) -> str:
        text = self.draw(_COMMENT_TEXT)
        kinds = ["block", "line"] + (["hash"] if self.d.mysql else [])
        kind = self.pick(kinds)
        self.features.add("comment" if kind == "block" else "line_comment")
        if kind == "block":
            return f" /* {text} */ "
        if kind == "hash":
            return f" # {text}\n"
        return f" -- {text}\n"


@st.composite
def select_queries(draw: Callable[[st.SearchStrategy[Any]], Any], dialect: SQLDialect) -> Any:
    """One :class:`GeneratedQuery` for ``dialect``."""
    gen = _Gen(draw, dialect)
    prefix, order, limit_tokens, limit, offset, total = gen.query()
    sql = gen.render([*prefix, *order, *limit_tokens])
    if gen.coin(0.1):
        gen.features.add("trailing_semicolon")
        sql += ";"
    unbounded = " ".join([*prefix, *order])
    return GeneratedQuery(sql, unbounded, limit, offset, total, frozenset(gen.features))


@st.composite
def compact_expressions(draw: Callable[[st.SearchStrategy[Any]], Any], mysql: bool) -> str:
    """Integer arithmetic written with no spaces at all: ``1--2``, ``3-/**/-4``, ``-(-5)``.

    Where the tokenizer decides between "minus minus" and "comment" the dialects disagree
    (MySQL needs a space after ``--``; ``#`` starts a comment only there).
    """
    parts = [str(draw(st.integers(0, 9)))]
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["+", "-", "*", "--", "-/**/-", "+-", "- -"]))
        operand = str(draw(st.integers(0, 9)))
        if draw(st.booleans()):
            operand = f"({draw(st.sampled_from(['-', '+', '']))}{operand})"
        parts += [op, operand]
    text = "".join(parts)
    if mysql and draw(st.booleans()):
        text += "#" + str(draw(st.integers(0, 9)))
    return text
