"""The guard's cost is bounded by the size of its input (DESIGN §11).

Each shape is built as large as the guard accepts (near ``MAX_SQL_CHARS`` characters, or the
token bound for the densest ones) and guarded twice: under ``tracemalloc`` for the peak of
memory, and plainly for the time. The peak is taken with the cyclic collector off: sqlglot's
trees hold parent links, so a dropped tree waits for a collection, and in a long-running
kernel (or this long suite) with many live objects the full collections that free it are
deferred; off, the measure is the worst case and does not depend on what ran before (with it
on, the same query peaked at 39 MB alone and 68 MB late in the suite). Both bounds are coarse
on purpose (a loaded 2-core machine runs them); what they catch is growth that is not
linear: 3,900 CTEs once cost 390 MB, chained array subscripts minutes, nested ``GREATEST`` on
SQLite time exponential in the depth.
A shape may be accepted or refused, but only ever with an ``UnsafeQueryError`` whose rule is
stable, never a ``RecursionError`` or a crash.
"""

from __future__ import annotations

import gc
import sys
import time
import tracemalloc
from collections.abc import Callable

import pytest
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard import rules as guard_rules
from relay_nb.sql.guard.policies import FAMILIES
from relay_nb.sql.guard.query import RULES, guard_query
from relay_nb.sql.guard.rules import ITERATED_CHAINS

PEAK_MB = 128
SECONDS = 10.0
SCHEMAS = {"postgres": "public", "duckdb": "main", "mysql": "shop", "sqlite": None}


def _nest(template: str, depth: int, base: str) -> str:
    for _ in range(depth):
        base = template.format(base)
    return base


def _cte(i: int) -> str:
    return f"c{i} AS (SELECT * FROM c{i - 1})" if i else "c0 AS (SELECT 1 AS x)"


Shape = Callable[[int], str]
SHAPES: dict[str, Shape] = {
    # the case: thousands of CTEs (the old scoping kept a set of names per CTE)
    "many-ctes": lambda n: "WITH " + ", ".join(f"c{i} AS (SELECT 1 AS x)" for i in range(n))
    + " SELECT 1 AS y",
    "chained-ctes": lambda n: "WITH " + ", ".join(_cte(i) for i in range(n))
    + f" SELECT * FROM c{n - 1}",
    "recursive-ctes": lambda n: "WITH RECURSIVE "
    + ", ".join(f"c{i}(x) AS (SELECT 1 UNION ALL SELECT x FROM c{i})" for i in range(n))
    + " SELECT 1 AS y",
    "cte-references": lambda n: "WITH a AS (SELECT 1 AS x) SELECT 1 AS y FROM "
    + ", ".join(f"a a{i}" for i in range(n)),
    "union-branches": lambda n: " UNION ALL ".join("SELECT id FROM orders" for _ in range(n)),
    "in-list": lambda n: "SELECT id FROM orders WHERE id IN ("
    + ", ".join(str(i) for i in range(n))
    + ")",
    "joins": lambda n: "SELECT 1 AS x FROM orders o0 "
    + " ".join(f"JOIN orders o{i} ON o{i}.id = o0.id" for i in range(1, n)),
    "long-identifier": lambda n: 'SELECT 1 AS "' + "a" * n + '"',
    "long-string": lambda n: "SELECT '" + "a" * n + "' AS s",
    "comments": lambda n: "SELECT 1 AS x " + " ".join("/* c */" for _ in range(n)),
    "and-chain": lambda n: "SELECT id FROM orders WHERE "
    + " AND ".join(f"id <> {i}" for i in range(n)),
    "dense-plus": lambda n: "SELECT " + "+".join("id" for _ in range(n)) + " AS x FROM orders",
    "case-whens": lambda n: "SELECT CASE "
    + " ".join(f"WHEN id = {i} THEN 1" for i in range(n))
    + " END AS x FROM orders",
    "values": lambda n: "SELECT * FROM (VALUES " + ", ".join("(1)" for _ in range(n)) + ") v(x)",
    "windows": lambda n: "SELECT "
    + ", ".join(f"SUM(id) OVER (PARTITION BY id ORDER BY id) AS w{i}" for i in range(n))
    + " FROM orders",
    "scalar-subqueries": lambda n: "SELECT " + ", ".join(f"(SELECT 1) AS s{i}" for i in range(n)),
    "many-casts": lambda n: "SELECT " + ", ".join("id::int" for _ in range(n)) + " FROM orders",
    # nesting: refused on tokens before the parser recurses, whatever the recursion limit
    "nested-parens": lambda n: "SELECT " + "(" * n + "1" + ")" * n + " AS x",
    "nested-subqueries": lambda n: "SELECT * FROM "
    + "(SELECT * FROM " * n
    + "orders"
    + ") t" * n,
    "nested-case": lambda n: "SELECT " + "CASE WHEN " * n + "true" + " THEN 1 END" * n + " AS x",
    "nested-not": lambda n: "SELECT " + "NOT " * n + "true AS x",
    "nested-minus": lambda n: "SELECT " + "- " * n + "1 AS x",
    "nested-ctes": lambda n: "".join(f"WITH c{i} AS (" for i in range(n))
    + "SELECT 1 AS x"
    + "".join(f") SELECT * FROM c{i}" for i in reversed(range(n))),
    # postfix chains nest without brackets: refused on the tree's depth
    "chained-casts": lambda n: "SELECT 1" + "::int" * n + " AS x",
    "chained-fields": lambda n: "SELECT a" + ".b" * n + " AS x FROM orders",
    # array subscripts, which sqlglot's parser types one by one in 1-based dialects
    "chained-subscripts": lambda n: "SELECT a" + "[1]" * n + " AS x FROM orders",
    "many-subscripts": lambda n: "SELECT " + ", ".join("a[1]" for _ in range(n)) + " FROM orders",
    "subscripts-over-a-large-operand": lambda n: "SELECT "
    + "(" * 16
    + " + ".join(["1"] * n)
    + ")[1]" * 16
    + " AS x",
    # rewrites that repeat their arguments, nested: exponential without the budget
    "nested-greatest": lambda n: "SELECT "
    + ", ".join(_nest("GREATEST({}, 1)", 40, "id") for _ in range(n))
    + " FROM orders",
    "nested-between-symmetric": lambda n: "SELECT "
    + ", ".join(_nest("({} BETWEEN SYMMETRIC true AND false)", 40, "true") for _ in range(n))
    + " AS x",
    "nested-months-between": lambda n: "SELECT "
    + ", ".join(_nest("MONTHS_BETWEEN({}, DATE '2021-01-01')", 30, "x") for _ in range(n))
    + " AS x",
    "nested-date-trunc": lambda n: "SELECT "
    + ", ".join(_nest("DATE_TRUNC('month', {})", 40, "DATE '2020-01-01'") for _ in range(n))
    + " AS x",
    "nested-like-any": lambda n: "SELECT "
    + ", ".join(_nest("({} LIKE ANY ('a', 'b', 'c'))", 40, "'a'") for _ in range(n))
    + " AS x",
}  # fmt: skip

EVERY_DIALECT = ("many-ctes", "cte-references", "nested-parens", "chained-casts")
EXPANDING = {  # where sqlglot's generator repeats the arguments
    "nested-greatest": ("sqlite",),
    "nested-between-symmetric": ("sqlite", "duckdb", "mysql"),
    "nested-months-between": ("duckdb",),
    "nested-date-trunc": ("mysql",),
    "nested-like-any": ("duckdb",),
}
REFUSED_BY_A_BOUND = {
    "nested-parens", "nested-subqueries", "nested-case", "nested-not", "nested-minus",
    "nested-ctes", "chained-casts", "chained-fields", "chained-subscripts", "many-subscripts",
    "subscripts-over-a-large-operand",
}  # fmt: skip
"""Refused with ``parse_error`` by MAX_NESTING, MAX_TREE_DEPTH or MAX_SUBSCRIPT_TOKENS."""


def _cases() -> list:
    cases = []
    for name in SHAPES:
        dialects = ["postgres"]
        if name in EVERY_DIALECT:
            dialects = list(SCHEMAS)
        dialects += [d for d in EXPANDING.get(name, ()) if d not in dialects]
        cases += [pytest.param(name, d, id=f"{name}-{d}") for d in dialects]
    return cases


def _largest(shape: Shape, dialect: str) -> str:
    """The shape at the largest size the guard reads: characters, then tokens, within bounds
    (a binary search on the cheap length, then one or two steps down on tokens)."""
    low, high = 1, 2
    while len(shape(high)) <= guard_rules.MAX_SQL_CHARS:
        low, high = high, high * 2
    while low < high - 1:
        middle = (low + high) // 2
        low, high = (
            (middle, high) if len(shape(middle)) <= guard_rules.MAX_SQL_CHARS else (low, middle)
        )
    engine = Dialect.get_or_raise(dialect)
    while (tokens := len(engine.tokenize(shape(low)))) > guard_rules.MAX_TOKENS:
        low = int(low * guard_rules.MAX_TOKENS / tokens * 0.99)
    return shape(low)


def _guard(sql: str, dialect: str) -> str:
    """``"accepted"`` or the rule of the refusal; anything else than UnsafeQueryError fails."""
    schema = SCHEMAS[dialect]
    refusal: UnsafeQueryError | None = None
    try:
        guard_query(
            sql,
            dialect=dialect,
            allowed_tables={(schema, "orders")},
            default_schema=schema,
            row_limit=200,
        )
    except UnsafeQueryError as error:
        refusal = error
    if refusal is None:
        return "accepted"
    assert refusal.rule in RULES
    assert "Recursion" not in refusal.message, refusal.message
    return refusal.rule


@pytest.mark.slow  # four minutes on two cores: every shape at the limit, on every dialect
@pytest.mark.parametrize(("name", "dialect"), _cases())
def test_guard_memory_and_time_stay_bounded_at_the_size_limit(name: str, dialect: str) -> None:
    sql = _largest(SHAPES[name], dialect)
    assert len(sql) > 0.4 * guard_rules.MAX_SQL_CHARS

    started = time.perf_counter()
    outcome = _guard(sql, dialect)
    elapsed = time.perf_counter() - started
    assert elapsed < SECONDS, f"{name}: {elapsed:.1f} s"
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        assert _guard(sql, dialect) == outcome
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        gc.enable()
    assert peak < PEAK_MB * 2**20, f"{name}: peak {peak / 2**20:.0f} MB"
    if name in REFUSED_BY_A_BOUND:
        assert outcome == "parse_error"
    elif name in EXPANDING and dialect in EXPANDING[name]:
        # the generator's budget (parse_error) or, on DuckDB, the value-size rule that sees
        # the same growth in the tree first (value_too_large): a refusal, not the clock
        assert outcome in ("parse_error", "value_too_large"), outcome
    else:
        assert outcome == "accepted", name


def test_the_cte_case_that_cost_390_mb_now_costs_a_few() -> None:
    """The issue's measurement, kept as a number: 3,900 CTEs in 100 KB."""
    sql = _largest(SHAPES["many-ctes"], "postgres")
    assert sql.count(" AS (SELECT") > 3_500
    tracemalloc.start()
    try:
        assert _guard(sql, "postgres") == "accepted"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * 2**20


def test_a_shallow_expanding_rewrite_still_passes() -> None:
    """The budget stops compounding, not the rewrite itself: SQLite spells GREATEST out."""
    assert _guard("SELECT GREATEST(GREATEST(id, 1), 2) AS g FROM orders", "sqlite") == "accepted"
    deep = "SELECT " + _nest("GREATEST({}, 1)", 14, "id") + " AS g FROM orders"
    started = time.perf_counter()
    assert _guard(deep, "sqlite") == "parse_error"
    assert time.perf_counter() - started < SECONDS


def test_nesting_is_refused_the_same_way_whatever_the_recursion_limit() -> None:
    """A raised recursion limit let sqlglot recurse until the C stack overflowed (a crashed
    kernel); the token bound refuses first, so the limit no longer matters."""
    sql = "SELECT " + "(" * 40_000 + "1" + ")" * 40_000 + " AS x"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        assert _guard(sql, "postgres") == "parse_error"
    finally:
        sys.setrecursionlimit(limit)
    just_inside = "SELECT " + "(" * 60 + "1" + ")" * 60 + " AS x"
    assert _guard(just_inside, "postgres") == "accepted"


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_the_chains_the_walk_does_not_count_are_generated_in_a_loop(family) -> None:
    """``ITERATED_CHAINS`` add no tree depth because sqlglot writes them iteratively; a
    chain longer than the recursion limit shows it, in every family's generator."""
    engine = Dialect.get_or_raise(family.dialects[0])
    links = sys.getrecursionlimit() + 200
    kinds = [c for c in ITERATED_CHAINS if c is not exp.SetOperation]
    for kind in kinds:
        node: exp.Expr = exp.column("a")
        for _ in range(links):
            node = kind(this=node, expression=exp.column("b"))
        engine.generate(node, unsupported_level=ErrorLevel.IGNORE)
    for operation in (exp.Union, exp.Except, exp.Intersect):
        query: exp.Expr = exp.select("1")
        for _ in range(links):
            query = operation(this=query, expression=exp.select("1"), distinct=False)
        engine.generate(query, unsupported_level=ErrorLevel.IGNORE)
