"""Fuzzing the SQL guard with random valid SELECTs: accepted, and equivalent when run.

For every drawn query (``sql_strategies.select_queries``) on SQLite, DuckDB, PostgreSQL and
MariaDB:

1. the guard accepts it (a refusal of valid read-only SQL is a false positive);
2. the guard's re-serialised SQL returns what the original returns on the real database.
   The guard may bound the result (LIMIT injected, or clamped to the row limit), so the
   reference is the same query without its outer LIMIT/OFFSET: the guarded rows are a
   sub-multiset of it, there are exactly ``min(rows - offset, limit)`` of them, and when
   ORDER BY is total they are exactly that slice, in order. When nothing was cut, the
   guarded rows equal the original's (as a multiset, or as a list under a total order);
3. it ran over a plain *writable* owner connection (``fuzz_databases``) and the database is
   unchanged afterwards: whatever the guard accepted was read-only on its own.

The generator is checked too: it must produce every construct in ``FEATURES`` (and each
dialect's property run its dialect-only ones), so a generator change that silently stops
producing joins or CTEs fails here instead of quietly weakening the fuzzing.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import pytest
from fuzz_databases import FuzzDatabase
from fuzz_support import PROFILE, fuzz_settings, normalise_rows
from hypothesis import Phase, example, find, given, note, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample
from sql_strategies import (
    FEATURES,
    GeneratedQuery,
    compact_expressions,
    select_queries,
    sql_dialect,
)

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard.query import GuardedQuery, guard_query

# CI budget per dialect: the file databases are fast, the servers cost a round trip or three
EXAMPLES = {"sqlite": 80, "duckdb": 60, "postgres": 40, "mysql": 40}
ROW_LIMITS = st.sampled_from([3, 50, 1000])
# constructs only some dialects have (everything else in FEATURES is drawn for all four)
DIALECT_ONLY = {
    "limit_comma": ("mysql", "sqlite"),
    "fetch_first": ("postgres",),
    "dollar_quote": ("postgres", "duckdb"),
    "parenthesized": ("duckdb", "postgres", "mysql"),
    "string_escape": ("postgres", "mysql"),
}


def _guard(db: FuzzDatabase, sql: str, row_limit: int) -> GuardedQuery:
    try:
        return guard_query(
            sql,
            dialect=db.dialect,
            allowed_tables=db.allowed_tables,
            default_schema=db.schema,
            row_limit=row_limit,
        )
    except UnsafeQueryError as error:  # valid read-only SQL: a refusal is a false positive
        pytest.fail(f"the guard refused a valid SELECT: {error.rule}: {error.message}")


def _multiset_le(small: list[Any], large: list[Any]) -> bool:
    return not collections.Counter(small) - collections.Counter(large)


def check_equivalent(db: FuzzDatabase, query: GeneratedQuery, row_limit: int) -> None:
    """Properties 1-3 for one query on one database."""
    note(f"submitted: {query.sql}")
    original = normalise_rows(db.run(query.sql))  # the generator writes valid SQL only
    reference = normalise_rows(db.run(query.unbounded_sql))
    changes = db.changes()

    guarded = _guard(db, query.sql, row_limit)
    note(f"guarded: {guarded.sql}")
    assert guarded.limit <= row_limit
    got = normalise_rows(db.run(guarded.sql))

    assert db.changes() == changes, "the guarded SQL wrote to the database"
    expected_count = min(max(0, len(reference) - query.offset), guarded.limit)
    assert len(got) == expected_count
    assert _multiset_le(got, reference), "the guarded SQL returned rows the query never does"
    # MariaDB compares text case- and accent-insensitively: a "total" ORDER BY still ties
    ordered = query.total_order and db.dialect != "mysql"
    if ordered:
        assert got == reference[query.offset : query.offset + guarded.limit]
    kept_own_limit = query.limit is not None and query.limit <= guarded.limit
    if kept_own_limit:  # same LIMIT/OFFSET on both sides
        assert len(got) == len(original)
    cut_nothing = query.offset == 0 and len(reference) <= guarded.limit
    if cut_nothing or (ordered and kept_own_limit):
        assert collections.Counter(got) == collections.Counter(original)
        if ordered:
            assert got == original


# --------------------------------------------------------------------------------------------
# The properties, one test per dialect (each with its own example budget)


def _minimal(*sqls: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """``@example``s for minimal failing queries a property found: valid in every dialect."""

    def apply(test: Callable[..., None]) -> Callable[..., None]:
        for sql in sqls:
            query = GeneratedQuery(sql, sql, None, 0, False, frozenset())
            test = example(query=query, row_limit=3)(test)
        return test

    return apply


def _property(dialect: str) -> Callable[..., None]:
    def test(unchanged: Callable[[str], FuzzDatabase]) -> None:
        db = unchanged(dialect)
        strategy = select_queries(sql_dialect(dialect, db.schema))

        @fuzz_settings(EXAMPLES[dialect])
        @given(query=strategy, row_limit=ROW_LIMITS)
        @_minimal(  # found by this property: a comment inside ORDER BY / GROUP BY / PARTITION
            "SELECT id FROM orders ORDER /* newest first */ BY id DESC",  # BY was refused
            "SELECT status, COUNT(*) AS n FROM orders GROUP -- per status\n BY status",
            "SELECT id, SUM(id) OVER (PARTITION /**/ BY status) AS s FROM orders ORDER BY 1",
        )
        def run(query: GeneratedQuery, row_limit: int) -> None:
            check_equivalent(db, query, row_limit)

        run()
        # that the generator draws every construct (the dialect's own ones too) is checked
        # without a database, over more examples: test_the_generator_covers_every_construct

    test.__name__ = f"test_random_selects_are_accepted_and_equivalent_{dialect}"
    return test


test_random_selects_are_accepted_and_equivalent_sqlite = _property("sqlite")
test_random_selects_are_accepted_and_equivalent_duckdb = _property("duckdb")
test_random_selects_are_accepted_and_equivalent_postgres = _property("postgres")
test_random_selects_are_accepted_and_equivalent_mysql = _property("mysql")


# --------------------------------------------------------------------------------------------
# Arithmetic written without spaces: where "--" is a comment and where it is minus minus


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres", "mysql"])
def test_compact_arithmetic_means_the_same_after_the_guard(
    dialect: str, unchanged: Callable[[str], FuzzDatabase]
) -> None:
    db = unchanged(dialect)

    @fuzz_settings(40 if dialect in ("sqlite", "duckdb") else 20)
    @given(expression=compact_expressions(mysql=dialect == "mysql"))
    @example(expression="1--1")
    @example(expression="1-/**/-1")
    def run(expression: str) -> None:
        sql = f"SELECT {expression}"
        original = db.run(sql)
        guarded = _guard(db, sql, 10)
        assert db.run(guarded.sql) == original, guarded.sql

    run()


# --------------------------------------------------------------------------------------------
# The fix for the comment-inside-a-keyword refusal must not read anything else differently


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres", "mysql"])
def test_a_comment_inside_a_two_word_keyword_is_whitespace(dialect: str) -> None:
    schema = {"sqlite": None, "duckdb": "main", "postgres": "public", "mysql": "shop"}[dialect]

    def guarded(sql: str) -> str:
        allowed = {(schema, "orders")}
        return guard_query(
            sql, dialect=dialect, allowed_tables=allowed, default_schema=schema, row_limit=5
        ).sql

    assert guarded("SELECT id FROM orders ORDER /* c */ BY id") == (
        guarded("SELECT id FROM orders ORDER BY id")
    )
    for sql in (
        "SELECT id FROM orders ORDER /* c */ BY id; DELETE FROM orders",  # still two statements
        "SELECT id FROM orders ORDER /*! BY */ BY id",  # an executable comment is no comment
    ):
        with pytest.raises(UnsafeQueryError):
            guarded(sql)
    if dialect == "mysql":  # dropping the comment would turn "--" + "1" into "-- 1": refused
        with pytest.raises(UnsafeQueryError) as error:
            guarded("SELECT 1--/**/1 FROM orders ORDER /**/ BY 1")
        assert error.value.rule == "parse_error"


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres", "mysql"])
def test_the_generator_covers_every_construct(dialect: str) -> None:
    """The generator keeps producing everything in ``FEATURES`` for each dialect (its own
    constructs included): drawn until each has shown up (deterministically, no shrinking),
    so a change that silently stops generating joins or CTEs fails here instead of quietly
    weakening the fuzzing. Without a database: the per-dialect properties draw too few
    examples in CI to promise that every rare construct appears in them."""
    seen: set[str] = set()
    wanted = {f for f in FEATURES if f not in DIALECT_ONLY or dialect in DIALECT_ONLY[f]}

    def covered(query: GeneratedQuery) -> bool:
        seen.update(query.features)
        return wanted <= seen

    try:
        find(
            select_queries(sql_dialect(dialect, None if dialect == "sqlite" else "shop")),
            covered,
            settings=settings(
                settings.get_profile(PROFILE), max_examples=500, phases=[Phase.generate]
            ),
        )
    except NoSuchExample:
        pytest.fail(f"never generated in 500 queries: {sorted(wanted - seen)}")
