"""The guard's value-size rule (``value_too_large``): queries may not build huge values.

DuckDB runs in the analyst's kernel; ``SELECT repeat('x', 2000000000)`` would allocate 4 GB in
one scalar call that no memory limit or interrupt stops. The rule bounds every value a query
builds from the parsed tree (:mod:`relay_nb.sql.guard.sizes.sizer`). Here:

* every payload of ``corpus/value_sizes.yaml`` and the unit cases are refused;
* counts that are not literals are rewritten so that results under the bound are unchanged,
  and the rewritten SQL reads back as bounded (guarding it again changes nothing);
* a benign corpus of analytics that use these functions normally passes, and returns the
  same rows through the guard as directly, on a real DuckDB opened read-only as
  ``readonly.py`` opens it.

The engine-derived checks (the size table against ``duckdb_functions()``, payloads shown
harmful live before they are refused) are in ``test_guard_sizes_engine.py``; the helpers that
run the rule the way the guard will are in ``size_support.py``.
"""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlglot
import yaml
from size_support import GENERATE, ROW_LIMIT, accepted, guarded, refusal, sized

from relay_nb.connectors.sql.readonly import build_engine, run_read_only
from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard.policies.clickhouse import ClickHousePolicy
from relay_nb.sql.guard.policies.duckdb import DuckDBPolicy
from relay_nb.sql.guard.sizes.counts import count_bound
from relay_nb.sql.guard.sizes.kinds import KINDS
from relay_nb.sql.guard.sizes.model import Quadratic, Size, SizeLimits, Val
from relay_nb.sql.guard.sizes.sizer import RULE

CORPUS = Path(__file__).with_name("corpus") / "value_sizes.yaml"


# --------------------------------------------------------------------------------------------
# The adversarial corpus and unit refusals


CORPUS_ENTRIES = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
ENTRIES = [entry for entry in CORPUS_ENTRIES if "duckdb" in entry["dialects"]]
"""DuckDB's payloads (SQLite's are tested in test_guard_sizes_sqlite.py)."""


def test_corpus_is_well_formed():
    ids = [entry["id"] for entry in CORPUS_ENTRIES]
    assert len(ids) == len(set(ids)) and len(ENTRIES) >= 40
    for entry in CORPUS_ENTRIES:
        assert set(entry) == {"id", "dialects", "sql", "rule"}
        assert set(entry["dialects"]) <= {"duckdb", "sqlite"} and entry["rule"] == RULE


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry["id"] for entry in ENTRIES])
def test_corpus_payload_is_refused_through_the_guard(entry: dict[str, Any]):
    with pytest.raises(UnsafeQueryError) as info:
        guarded(entry["sql"])
    assert info.value.rule == RULE, info.value.message
    message = info.value.message
    assert 10 < len(message) < 300
    assert entry["sql"] not in message


REFUSED = {
    # method calls and spellings the corpus cannot carry (the guard refuses method calls as
    # forbidden_function first; the rule still sizes them)
    "method-call-repeat": "SELECT 'x'.repeat(100000000)",
    "method-call-list-resize": "SELECT [1, 2].list_resize(100000000)",
    "array-resize-alias": "SELECT array_resize([1], 100000000)",
    "lambda-arrow-syntax": "SELECT list_transform(range(10000), x -> repeat('x', 60000))",
    "nested-lambdas": (
        "SELECT list_transform(range(100), lambda i: list_transform(range(100), "
        "lambda j: repeat('x', 1000)))"
    ),
    "lambda-adds-data-to-data-list": (
        "SELECT list_transform(string_split(comment, ' '), lambda w: w || comment) FROM events"
    ),
    "repeat-count-from-data-and-value-from-data-list": (
        "SELECT repeat(list_value(comment), length(comment)) FROM events"
    ),
    "invoke-lambda": "SELECT invoke(lambda s: repeat(s, 100000), 'xy')",
    "json-serialize-sql": (
        "SELECT json_serialize_sql(repeat('SELECT 1 UNION ALL ', 1000) || 'SELECT 1')"
    ),
    "reduce-doubling-old-arrow": "SELECT list_reduce(range(40), (a, x) -> a || a)",
    "recursive-cte-mutual-growth": (
        "WITH RECURSIVE r(a, b, n) AS (SELECT 'x', 'y', 0 UNION ALL "
        "SELECT a || b, a, n + 1 FROM r WHERE n < 60) SELECT max(length(a)) FROM r"
    ),
    "subquery-value-reused": ("SELECT s || s FROM (SELECT repeat('x', 40000) AS s) AS t"),
    "union-branch": (
        "SELECT length(s || s) FROM (SELECT 'a' AS s UNION ALL SELECT repeat('x', 40000)) AS t"
    ),
    "second-unaliased-subquery": (
        "SELECT a || a FROM (SELECT repeat('x', 40000) AS a), (SELECT 'y' AS b)"
    ),
    "values-row": "SELECT s || s FROM (VALUES ('a'), (repeat('x', 40000))) AS t(s)",
    "struct-field": "SELECT {'f': repeat('x', 40000)}.f || {'f': repeat('x', 40000)}.f",
    "case-branch": "SELECT CASE WHEN random() > 2 THEN repeat('x', 100000) ELSE 'a' END",
    "coalesce-branch": "SELECT coalesce(NULL, repeat('x', 100000))",
    "cast-of-list-to-text": "SELECT CAST(range(4000) AS VARCHAR) || CAST(range(4000) AS VARCHAR)",
    "printf-positional-repeats": (
        "SELECT printf('%1$s%1$s%1$s%1$s%1$s%1$s%1$s%1$s', repeat('x', 10000))"
    ),
    "format-repeats-argument": "SELECT format('{0}{0}{0}{0}{0}{0}{0}{0}', repeat('x', 10000))",
    "concat-ws-list-separators": (
        "SELECT concat_ws(repeat(',', 1000), range(1000)::VARCHAR[], 'x')"
    ),
    "translate-to-multibyte": "SELECT translate(repeat('a', 30000), 'a', '€')",
    "url-encode-chain": "SELECT url_encode(url_encode(url_encode(repeat('é', 10000))))",
    "json-transform-many-fields": (
        'SELECT from_json(repeat(\'[{}]\', 10000), \'[{"a":"VARCHAR","b":"VARCHAR"}]\')'
    ),
    "stored-value-64-times": "SELECT " + " || ".join(["name"] * 9) + " FROM customers",
    "aggregate-repeated": "SELECT repeat(string_agg(name, ','), 1000) FROM customers",
    "query-total-of-many-values": ("SELECT " + ", ".join(f"repeat('{c}', 60000)" for c in "abcde")),
    "series-step-from-data": "SELECT range(0, 10, step) FROM (SELECT 1 AS step)",
    "series-bound-from-random": "SELECT range(0, (random() * 1e9)::BIGINT)",
    "count-from-random": "SELECT repeat('x', (random() * 1e9)::BIGINT)",
    "count-from-subquery": "SELECT repeat('x', (SELECT max(id) FROM orders) * 1000000)",
    "json-pretty-from-data": "SELECT json_pretty(comment) FROM events",
}


@pytest.mark.parametrize("sql", REFUSED.values(), ids=REFUSED.keys())
def test_unit_payload_is_refused(sql: str):
    message = refusal(sql)
    assert 10 < len(message) < 300


def test_messages_say_what_to_write_instead():
    assert "smaller count" in refusal("SELECT repeat('x', 2000000000)")
    assert "FROM range" in refusal("SELECT range(0, 500000000)")
    assert "literal format" in refusal("SELECT printf(name, 1) FROM customers")
    assert "write the width into the format" in refusal("SELECT printf('%*d', 9, 1)")
    assert "only add to it" in refusal(
        "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT s FROM r"
    )
    assert "space() runs as repeat" in refusal("SELECT space(n) FROM (SELECT 5 AS n)")


# --------------------------------------------------------------------------------------------
# Counts that are not literals: rewritten, results kept, read back as bounded

REWRITES = {
    "bar-of-a-count": (
        "SELECT repeat('█', (cnt / 10)::INT) FROM (SELECT 55 AS cnt)",
        "CASE WHEN CAST((cnt / 10) AS INT) > 5461 THEN 5461 ELSE CAST((cnt / 10) AS INT) END",
    ),
    "pad-to-a-width": (
        "SELECT lpad(name, w, ' ') FROM (SELECT 'x' AS name, 8 AS w)",
        "CASE WHEN w > 4096 THEN 4096 ELSE w END",
    ),
    "repeat-a-stored-string": (
        "SELECT repeat(name, n) FROM customers, (SELECT 3 AS n) AS k",
        "CASE WHEN n > 16384 // GREATEST(strlen(name), 1) THEN 16384 // "
        "GREATEST(strlen(name), 1) ELSE n END",
    ),
    "series-per-row": (
        "SELECT generate_series(a, b, INTERVAL 1 DAY) FROM (SELECT DATE '2025-01-01' AS a, "
        "DATE '2025-01-05' AS b)",
        "CASE WHEN b > a + 1023 * INTERVAL '1' DAY THEN error('value_too_large: ",
    ),
    "series-counting-down": (
        "SELECT range(n, 0, -1) FROM (SELECT 5 AS n)",
        "CASE WHEN 0 < n + 1023 * -1 THEN error(",
    ),
    "resize-to-a-count": (
        "SELECT list_resize([1, 2], n) FROM (SELECT 4 AS n)",
        "CASE WHEN n > 1024 THEN error('value_too_large: list_resize()",
    ),
    "lambda-count": (
        "SELECT list_transform([1, 2], lambda x: repeat('*', x * n)) FROM (SELECT 3 AS n)",
        "CASE WHEN (x * n) > 16384 THEN 16384 ELSE (x * n) END",
    ),
}


@pytest.mark.parametrize(("sql", "fragment"), REWRITES.values(), ids=REWRITES.keys())
def test_counts_that_are_not_literals_are_rewritten(sql: str, fragment: str):
    out = accepted(sql)
    assert fragment in out, out
    again = accepted(out)  # the rewritten form reads back as bounded: no second rewrite
    assert again == out
    reparsed = sqlglot.parse_one(out, read="duckdb")
    rewritten, _ = sized(sql)
    assert reparsed == rewritten  # the generated SQL parses back to the rewritten tree


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT repeat('-', length(name)) FROM customers",  # bounded by the data: 1 copy/byte
        "SELECT lpad(name, 20 + id % 5, ' ') FROM customers",  # at most 24
        "SELECT repeat('*', id % 10) FROM customers",
        "SELECT list_transform(range(1, 6), lambda i: repeat('*', i))",  # elements ≤ 5
        "SELECT [repeat('a', x) FOR x IN [1, 2, 3]]",
        "SELECT repeat('x', CASE WHEN id > 3 THEN 10 ELSE 2 END) FROM customers",
        "SELECT repeat('x', LEAST(id, 40)) FROM customers",
    ],
)
def test_counts_bounded_by_the_tree_are_not_rewritten(sql: str):
    assert accepted(sql) == sqlglot.parse_one(sql, read="duckdb").sql("duckdb", **GENERATE)


def test_a_recursive_cte_may_add_to_a_value_per_step():
    accepted(
        "WITH RECURSIVE r(path, id) AS (SELECT name, id FROM customers UNION ALL "
        "SELECT r.path || ' / ' || c.name, c.id FROM r JOIN customers AS c ON c.id = r.id + 1 "
        "WHERE length(r.path) < 200) SELECT * FROM r"
    )


def test_literal_counts_are_refused_not_rewritten():
    assert "smaller count" in refusal("SELECT repeat('x', 70000)")
    assert accepted("SELECT repeat('x', 65536)") == "SELECT REPEAT('x', 65536)"


def test_nulls_and_negative_counts_survive_the_clamp():
    sql = accepted("SELECT repeat('x', n) FROM (VALUES (NULL), (-3), (4)) AS t(n)")
    import duckdb

    assert duckdb.sql(sql).fetchall() == [(None,), ("",), ("xxxx",)]


# --------------------------------------------------------------------------------------------
# The size model itself


def test_size_algebra():
    a, b = Size(10, {"a": 1}), Size(4, {"a": 3, "b": 1})
    assert (a + b) == Size(14, {"a": 4, "b": 1})
    assert a.join(b) == Size(10, {"a": 3, "b": 1})
    assert a.scale(3) == Size(30, {"a": 3})
    assert Size(5).times(b) == b.scale(5)
    with pytest.raises(Quadratic):
        a.times(b)  # a value from the data, as many times as another value from the data says
    assert Size(7).ceil_div(2) == Size(4) and Size(0, {"a": 1}).ceil_div(16).multiple == 1
    assert Size(10, {"λ": 2}).substitute("λ", Size(3, {"a": 1})) == Size(16, {"a": 2})
    assert SizeLimits().value_bytes == 64 * 1024


def test_count_bounds_follow_the_tree():
    def bound(sql: str) -> Size | None:
        node = sqlglot.parse_one(f"SELECT {sql}", read="duckdb").expressions[0]
        return count_bound(node, lambda _: Val(Size(0, {"x": 1})))

    assert bound("5") == Size(5) and bound("-5") == Size(0) and bound("'7'") == Size(7)
    assert bound("id % 10") == Size(9)
    assert bound("LEAST(n, 40)") == Size(40)
    assert bound("GREATEST(n, 40)") is None
    assert bound("CASE WHEN n > 8 THEN 8 ELSE n END") == Size(8)
    assert bound("CASE WHEN n > 8 THEN error('no') ELSE n END") == Size(8)
    assert bound("CAST(2 * 3 + 1 AS BIGINT)") == Size(7)
    assert bound("length(s)") == Size(0, {"x": 1})
    assert bound("n") is None and bound("n * -1") is None


def test_every_kind_in_the_table_exists():
    kinds = {rule[0] for rule in DuckDBPolicy.size_functions.values()}
    kinds |= {rule[0] for rule in DuckDBPolicy.size_prefixes.values()}
    assert kinds <= set(KINDS)
    assert all(name == name.lower() for name in DuckDBPolicy.size_functions)


def test_another_family_reuses_the_rule_with_its_own_table():
    class EmbeddedClickHouse(ClickHousePolicy):
        dialects = ("clickhouse",)
        size_functions = {"repeat": ("repeat",), "leftpad": ("pad",), "pad": ("pad",)}  # noqa: RUF012

    assert "smaller count" in refusal("SELECT repeat('x', 2000000000)", EmbeddedClickHouse)
    assert "smaller width" in refusal("SELECT leftPad('x', 2000000000, ' ')", EmbeddedClickHouse)
    # without a table, a family still gets the generic constructs: doubling aliases, casts
    doubling = "SELECT 'xxxxxxxx' AS a0, " + ", ".join(
        f"a{i} || a{i} AS a{i + 1}" for i in range(24)
    )
    refusal(doubling, ClickHousePolicy)


def test_the_whole_tree_is_sized_even_where_no_scope_reaches():
    # a VALUES list nested where the scoped pass does not look is still swept
    assert "smaller count" in refusal(
        "SELECT 1 FROM orders WHERE id IN (SELECT length(repeat('x', 2000000000)))"
    )
    assert "smaller count" in refusal(
        "SELECT 1 FROM orders ORDER BY length(repeat('x', 2000000000))"
    )
    assert "smaller count" in refusal(
        "SELECT sum(total) OVER (PARTITION BY repeat(status, 200000)) FROM orders"
    )


def test_the_analysis_is_bounded_by_the_size_of_the_query():
    # long operator chains nest as deep as they are long: sized in a loop, not by recursion
    accepted("SELECT 1 FROM orders WHERE " + " AND ".join(f"id <> {i}" for i in range(3000)))
    accepted("SELECT " + " + ".join(f"c{i}" for i in range(1500)) + " FROM orders")
    # a reducer's body is sized twice (a probe, then the check): nesting is capped
    nested = "list_reduce(range(3), lambda a, x: " * 14 + "a + x" + ")" * 14
    assert "too deeply" in refusal(f"SELECT {nested}")


def test_the_existing_benign_corpus_passes_unchanged():
    corpus = yaml.safe_load((CORPUS.parent / "benign.yaml").read_text(encoding="utf-8"))
    for entry in corpus:
        if entry["dialects"] != "all" and "duckdb" not in entry["dialects"]:
            continue
        before = sqlglot.parse_one(entry["sql"], read="duckdb")
        tree, found = sized(entry["sql"])
        assert not found.violations, (entry["id"], found.violations[0].message)
        assert tree == before, entry["id"]


# --------------------------------------------------------------------------------------------
# Benign analytics that use these functions: pass, and return the same rows

BENIGN = [
    "SELECT status, count(*) AS n, repeat('█', (count(*) / 10)::INT) AS bar "
    "FROM orders GROUP BY status ORDER BY n DESC",
    "SELECT id, repeat('*', (total / 100)::INT) AS stars FROM orders "
    "WHERE total IS NOT NULL ORDER BY id LIMIT 30",
    "SELECT lpad(id::VARCHAR, 6, '0') AS code, name FROM customers ORDER BY id",
    "SELECT rpad(name, 30, '.') || coalesce(country, '??') AS line FROM customers ORDER BY id",
    "SELECT lpad(name, 20 + id % 5, ' ') FROM customers ORDER BY id",
    "SELECT repeat('-', length(name)) AS underline FROM customers ORDER BY id",
    "SELECT category, bar(avg(price), 0, 500, 40) AS chart FROM products "
    "GROUP BY category ORDER BY category",
    "SELECT name, bar(price, 0, 500) FROM products ORDER BY id",
    "SELECT '[' || repeat('#', (price / 50)::INT) || repeat('.', 10 - (price / 50)::INT) || ']' "
    "FROM products ORDER BY id",
    "SELECT printf('%.2f', sum(total)) AS revenue FROM orders WHERE status = 'paid'",
    "SELECT printf('%-20s|%8.2f', name, price) FROM products ORDER BY id",
    "SELECT round(avg(total), 2), printf('%d orders', count(*)) FROM orders",
    "SELECT format('{:>10}', name) FROM products ORDER BY id",
    "SELECT format('{} ({})', name, coalesce(category, 'none')) FROM products ORDER BY id",
    "SELECT lpad(printf('%.1f', price), 8, ' ') FROM products ORDER BY id",
    "SELECT strftime(ordered_at, '%Y-%m') AS month, count(*) FROM orders "
    "GROUP BY month ORDER BY month",
    "SELECT strftime(signed_up, '%d %B %Y') FROM customers ORDER BY id",
    "SELECT date_trunc('month', ordered_at) AS m, sum(total) FROM orders GROUP BY m ORDER BY m",
    "SELECT unnest(range(1, 13)) AS month",
    "SELECT m.month, count(o.id) FROM (SELECT unnest(range(1, 13)) AS month) AS m "
    "LEFT JOIN orders AS o ON month(o.ordered_at) = m.month GROUP BY m.month ORDER BY m.month",
    "SELECT d::DATE AS day FROM generate_series(DATE '2025-01-01', DATE '2025-01-31', "
    "INTERVAL 1 DAY) AS t(d)",
    "SELECT i, i * i FROM range(1, 101) AS t(i) WHERE i % 10 = 0",
    "SELECT count(*) FROM range(1000000) AS t(i)",
    "SELECT generate_series(1, 5) AS l",
    "SELECT unnest(generate_series(DATE '2025-01-01', DATE '2025-12-31', INTERVAL 1 MONTH)) AS m",
    "SELECT o.id, unnest(generate_series(o.ordered_at::DATE, o.ordered_at::DATE + 2, "
    "INTERVAL 1 DAY)) AS day FROM orders AS o ORDER BY o.id, day LIMIT 60",
    "SELECT string_split(email, '@')[2] AS domain, count(*) FROM customers "
    "WHERE email IS NOT NULL GROUP BY domain ORDER BY 2 DESC, 1",
    "SELECT regexp_replace(name, '[^A-Za-z ]', '', 'g') AS clean FROM customers ORDER BY id",
    "SELECT regexp_replace(lower(email), '@.*', '') FROM customers ORDER BY id",
    "SELECT replace(name, ' ', '_') FROM products ORDER BY id",
    "SELECT upper(left(name, 1)) || lower(substring(name, 2)) FROM customers ORDER BY id",
    "SELECT list_transform(string_split(name, ' '), lambda w: upper(w)) FROM customers ORDER BY id",
    "SELECT array_to_string(list_transform(string_split(name, ' '), lambda w: left(w, 1)), '') "
    "AS initials FROM customers ORDER BY id",
    "SELECT [x * 2 FOR x IN range(1, 6)]",
    "SELECT [upper(w) FOR w IN string_split(name, ' ') IF length(w) > 3] FROM customers "
    "ORDER BY id",
    "SELECT list_transform(range(1, 6), lambda i: repeat('*', i))",
    "SELECT list(name ORDER BY name) FROM products WHERE category = 'tea'",
    "SELECT string_agg(name, ', ' ORDER BY name) FROM products WHERE category = 'coffee'",
    "SELECT c.country, list_sort(list_distinct(list(o.status))) FROM customers AS c "
    "JOIN orders AS o ON o.customer_id = c.id GROUP BY c.country ORDER BY c.country",
    "SELECT list_filter(list(price ORDER BY price), lambda p: p > 100) FROM products",
    "SELECT list_reduce(list(quantity), lambda a, b: a + b) FROM order_items",
    "SELECT list_sum(list(quantity)), round(list_avg(list(unit_price)), 2) FROM order_items",
    "SELECT concat_ws(' / ', name, category, price::VARCHAR) FROM products ORDER BY id",
    "SELECT name || ' <' || coalesce(email, 'n/a') || '>' FROM customers ORDER BY id",
    "SELECT 'Order ' || id::VARCHAR || ': ' || status FROM orders ORDER BY id LIMIT 10",
    "SELECT hex(id), bin(id) FROM customers ORDER BY id LIMIT 5",
    "SELECT md5(name), to_base64(encode(name)) FROM products ORDER BY id",
    "SELECT json_object('id', id, 'name', name) FROM products ORDER BY id",
    "SELECT to_json(list(name ORDER BY id)) FROM products",
    "SELECT translate(name, 'aeiou', 'AEIOU') FROM customers ORDER BY id",
    "SELECT regexp_extract(email, '@(.+)$', 1) FROM customers ORDER BY id",
    "SELECT regexp_extract_all(name, '[A-Z]') FROM customers ORDER BY id",
    "SELECT id, len(string_split(comment, ' ')) FROM events ORDER BY id",
    "SELECT trim(comment) FROM events WHERE comment IS NOT NULL ORDER BY id",
    "SELECT equi_width_bins(0, 200, 4, false)",
    "SELECT list_resize([1, 2, 3], 5, 0)",
    "SELECT map_keys(histogram(status)) FROM orders",
    "SELECT struct_pack(n := count(*), s := sum(total)) FROM orders",
    "SELECT [name, category] FROM products ORDER BY id",
    "WITH RECURSIVE r(n, s) AS (SELECT 1, '1' UNION ALL SELECT n + 1, s || ',' || "
    "(n + 1)::VARCHAR FROM r WHERE n < 10) SELECT * FROM r",
    "WITH named AS (SELECT id, upper(name) AS shout FROM customers) "
    "SELECT shout || '!' FROM named ORDER BY id",
    "SELECT id, name, length(name) AS n, n * 2 AS twice FROM customers ORDER BY id",
]


def test_benign_corpus_is_large():
    assert len(BENIGN) >= 40


@pytest.mark.parametrize("sql", BENIGN)
def test_benign_query_passes_the_guard(sql: str):
    guarded(sql)


@pytest.fixture(scope="module")
def shop_engine(duckdb_shop: Path, tmp_path_factory: pytest.TempPathFactory):
    """The seeded shop, opened the way readonly.py opens DuckDB (read-only, external access
    off, configuration locked)."""
    copy = tmp_path_factory.mktemp("sizes") / duckdb_shop.name
    shutil.copy2(duckdb_shop, copy)
    engine = build_engine(f"duckdb:///{copy}")
    yield engine
    engine.dispose()


def _rows(engine: Any, sql: str) -> collections.Counter[tuple[Any, ...]]:
    fetched = run_read_only(engine, sql, max_rows=10_000, timeout_s=60)
    return collections.Counter(tuple(_normalise(value) for value in row) for row in fetched.rows)


def _normalise(value: Any) -> Any:
    if isinstance(value, float | decimal.Decimal):
        return round(float(value), 6)
    if isinstance(value, list | tuple):
        return tuple(_normalise(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _normalise(v)) for k, v in value.items()))
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    return value


@pytest.mark.parametrize("sql", BENIGN)
def test_benign_query_returns_the_same_rows_on_duckdb(sql: str, shop_engine: Any):
    direct = _rows(shop_engine, sql)
    assert sum(direct.values()) <= ROW_LIMIT  # the corpus stays under the row limit
    assert _rows(shop_engine, guarded(sql)) == direct


@pytest.mark.parametrize(("sql", "_"), REWRITES.values(), ids=REWRITES.keys())
def test_rewritten_counts_keep_results_under_the_bound(sql: str, _: str, shop_engine: Any):
    assert _rows(shop_engine, accepted(sql)) == _rows(shop_engine, sql)


def test_a_series_over_the_bound_fails_loudly_instead_of_being_cut_short(shop_engine: Any):
    sql = accepted("SELECT len(generate_series(a, a + 5000)) FROM (SELECT 1 AS a) AS t")
    with pytest.raises(Exception, match="value_too_large: generate_series"):
        _rows(shop_engine, sql)
