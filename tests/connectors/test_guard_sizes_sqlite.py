"""The value-size rule (``value_too_large``) for SQLite, which also computes in the kernel.

``SQLITE_LIMIT_LENGTH`` (the result's byte limit, 16 MiB, set per call) stops any one value at
that size, not many of them at once: ``SELECT randomblob(5000000) FROM orders LIMIT 50`` is
+248 MB in the kernel for a result that keeps three rows. The rule bounds what a query builds
with SQLite's own table (``SQLitePolicy.size_functions``) and limits. Here:

* the table against the installed engine: every function of ``pragma_function_list`` is
  sized, known to be fixed-width (checked by calling it) or refused by the guard; what
  sqlglot writes as a variable-size SQLite function is sized; the bounds hold for values
  the engine really builds (``hex`` of a number, ``%q``, ``%.5c``, JSON escapes …);
* SQLite's payloads (``corpus/value_sizes.yaml``) and unit cases are refused; counts that
  are not literals are clamped, keep every result under the bound and read back as bounded;
* benign analytics pass and return the same rows on the seeded shop file;
* live, in a fresh process each: every payload class is first harmful at a reduced scale
  (peak RSS growth > 150 MB, ``PeakGrowth``), then refused — or clamped, and harmless.
"""

from __future__ import annotations

import collections
import itertools
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlglot
import yaml
from size_support import (
    GENERATE,
    ROW_LIMIT,
    accepted,
    arities,
    generated_but_unsized,
    guarded,
    probe_sqlite,
    refusal,
    sized,
    sqlite_functions,
    sqlite_sizer,
    unlisted,
)

from relay_nb.connectors.sql.readonly import build_engine, run_read_only
from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard.policies.sqlite import SQLitePolicy
from relay_nb.sql.guard.query import guard_query
from relay_nb.sql.guard.sizes.kinds import KINDS
from relay_nb.sql.guard.sizes.model import SizeLimits, as_text
from relay_nb.sql.guard.sizes.scope import Scope
from relay_nb.sql.guard.sizes.sizer import RULE

SQLITE = SQLitePolicy
CORPUS = Path(__file__).with_name("corpus") / "value_sizes.yaml"

# --------------------------------------------------------------------------------------------
# The table against the installed engine


def _words(text: str) -> frozenset[str]:
    """Names read better as text than as 60 one-per-line literals."""
    return frozenset(text.split())


FIXED = _words(
    """
    abs acos acosh asin asinh atan atan2 atanh avg bm25 ceil ceiling changes cos cosh count
    cume_dist degrees dense_rank exp floor glob instr json_array_length json_type json_valid
    last_insert_rowid length like ln log log10 log2 match mod ntile octet_length
    percent_rank pi pow power radians random rank round row_number rtreedepth sign sin sinh
    soundex sqrt subtype sum tan tanh total total_changes trunc typeof unicode
    """
)
"""Functions whose result is fixed-width (a number, a flag, ``typeof``'s name): the rule takes
what it does not list for one, and :func:`test_fixed_functions_return_fixed_width_values`
calls each of them to check."""
REFUSED_BY_GUARD = _words(
    "load_extension fts3_tokenizer fts5 rtreecheck sqlite_log sqlite_compileoption_used"
)
"""Functions the guard refuses before sizing (files, side effects, server state)."""
OPERATORS = frozenset({"->", "->>"})


def test_every_function_of_the_engine_is_classified():
    functions = sqlite_functions()
    assert len(functions) > 100, sqlite3.sqlite_version  # the engine reports them
    sizer, missing = sqlite_sizer(), []
    for name, nargs in sorted(functions.items()):
        if name in FIXED or name in REFUSED_BY_GUARD:
            continue
        if name in OPERATORS:
            assert name in SQLITE.size_functions
            continue
        for arity in arities(nargs):
            call = f"SELECT {name}({', '.join(f'a{i}' for i in range(arity))})"
            try:
                node = sqlglot.parse_one(call, read="sqlite").expressions[0]
            except sqlglot.errors.ParseError:
                continue  # the guard refuses what sqlglot cannot parse
            if unlisted(node, sizer):
                missing.append(f"{name}/{arity} ({type(node).__name__})")
    assert not missing, f"SQLite {sqlite3.sqlite_version}: classify {missing}"
    assert not FIXED & set(SQLITE.size_functions), "a function is both fixed and sized"


_POOL: tuple[Any, ...] = (
    "x" * 5000, "é" * 2000, 12345678901234567, -1.7e308, b"\0" * 5000, None,
    '{"a": [1, 2, 3], "b": "' + "y" * 3000 + '"}', "2024-01-01 10:00:00",
)  # fmt: skip


def test_fixed_functions_return_fixed_width_values():
    """Each function taken for fixed-width, called with every combination of long text,
    blobs, huge numbers, JSON and dates, prints as at most 64 bytes (FTS and window functions
    only run in their context; the others must answer)."""
    functions, answered = sqlite_functions(), set()
    with sqlite3.connect(":memory:") as con:
        for name in sorted(FIXED & set(functions)):
            if not name.isidentifier():
                continue
            for arity in arities(functions[name]):
                holes = ", ".join("?" * arity)
                for args in itertools.product(_POOL, repeat=arity):
                    try:
                        (size,) = con.execute(
                            f"SELECT length(CAST({name}({holes}) AS BLOB))", args
                        ).fetchone()
                    except sqlite3.Error:
                        continue
                    answered.add(name)
                    assert (size or 0) <= 64, (name, [str(a)[:20] for a in args], size)
    assert len(answered) > 50


def test_functions_the_guard_refuses_are_refused():
    for name in sorted(REFUSED_BY_GUARD & set(sqlite_functions())):
        with pytest.raises(UnsafeQueryError) as info:
            guard_query(
                f"SELECT {name}('x', 'y')",
                dialect="sqlite",
                allowed_tables=frozenset(),
                default_schema=None,
                row_limit=ROW_LIMIT,
            )
        assert info.value.rule in ("forbidden_function", "file_access"), name


def test_every_function_sqlglot_writes_as_a_variable_size_one_is_sized():
    """The parser knows other dialects' functions and the SQLite generator rewrites some
    (``any_value`` → ``MAX``): what runs must be what was sized."""
    from sqlglot.dialects.sqlite import SQLite

    variable = set(sqlite_functions()) - FIXED - REFUSED_BY_GUARD
    missing = generated_but_unsized("sqlite", SQLite.Parser.FUNCTIONS, variable, sqlite_sizer())
    assert not missing, missing


BOUND_PROBES = [  # each projection is checked on its own
    "hex(-1.2345678901234567e-300), quote(-1.2345678901234567e-300), hex(x'00' || 'a' || 12.5)",
    "quote('it''s a ''quote'''), quote(x'00ff00ff'), printf('%Q', '''''')",
    "printf('%q|%Q|%w', '''''''', NULL, '\"\"\"'), printf('%5%|%n|%s', 'abc')",
    "printf('%.10c', '€'), printf('%-30.5c|', 'é'), printf('%.*c|%*c', 300, '€', -200, 'x')",
    "printf('%,.40d', 123456789), printf('%,d', -9223372036854775808), printf('%.300f', -1.7e308)",
    "printf('%#30.20x|%p|%r', 255, -1, 9223372036854775807)",
    "printf('%!.20e %.50g %G', 1.5, 1.0 / 3, 1.7e-308), printf('%*.*f|%-*d|', -40, 10, 2.5, 12, 7)",
    "format('%s-%s', 'a', hex(zeroblob(100))), char(1114111, 1114111, 65, 233)",
    "json_quote(char(1, 2, 3, 31, 34, 92)), json_object('k', char(31, 31), 'n', -1.7e308)",
    "json_array(char(1), 'a\"b', -1.7e308, json('[1,2]')), json('  [ 1 , 2 ]  ')",
    "json_extract('{\"a\":[1,2],\"b\":\"x\"}', '$.a', '$.b', '$')",
    "'{\"a\":{\"b\":[1,2,3]}}' -> '$.a', '{\"a\":{\"b\":[1,2,3]}}' ->> '$.a.b[1]'",
    "json_set('{\"a\":1}', '$.b', char(1, 2, 3)), json_remove('[1,2,3]', '$[0]')",
    'json_patch(\'{"a":1}\', \'{"b":{"c":2}}\')',
    "replace('aaaa', 'a', 'bbb'), replace(hex(zeroblob(10)), '00', '€'), replace(12, 1, 'xx')",
    "strftime('%J %s %f %j %W %Y-%m-%d %H:%M:%S', '2024-05-05 10:11:12.345')",
    "strftime('%J', 'now', '+1 day', 'localtime'), date('2024-01-31', '+1 month', 'weekday 0')",
    "datetime('2024-01-01 10:00:00.123', '-1 year'), upper('straße'), lower('ÀÉÎ')",
    "zeroblob(100), randomblob(0), lower(hex('€')), CAST(x'0001' AS TEXT) || 12345 || -1.7e308",
    "substr('abcdef', 2, 3) || trim('  x  ') || ltrim('xxa', 'x'), likelihood(hex('ab'), 0.5)",
    "sqlite_version() || sqlite_source_id(), typeof(1.5) || soundex('Robert') || unicode('€')",
    "coalesce(NULL, hex(zeroblob(30))), iif(1, quote('x'''), 'b'), max(hex('abc'), 'zz', 5)",
]


@pytest.mark.parametrize("expression", BOUND_PROBES)
def test_the_bound_holds_for_what_the_engine_builds(expression: str):
    """The analysis's bound on a value (printed as text, as SQLite returns it) is at least
    the bytes the installed SQLite builds for it."""
    tree = sqlglot.parse_one(f"SELECT {expression}", read="sqlite")
    huge = SizeLimits(1 << 40, 1 << 40, 1 << 40, 1 << 40, 1 << 20)
    sizer = sqlite_sizer(huge)
    with sqlite3.connect(":memory:") as con:
        for projection in tree.expressions:
            bound = as_text(sizer.value(projection, Scope()), SQLITE.size_text_factor)
            sql = f"SELECT length(CAST({projection.sql('sqlite')} AS BLOB))"
            (actual,) = con.execute(sql).fetchone()
            assert not bound.grows and (actual or 0) <= bound.const, (projection.sql(), actual)


def test_every_kind_in_the_table_exists():
    assert {rule[0] for rule in SQLITE.size_functions.values()} <= set(KINDS)
    assert all(name == name.lower() for name in SQLITE.size_functions)


# --------------------------------------------------------------------------------------------
# The adversarial corpus and unit refusals

ENTRIES = [
    entry
    for entry in yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
    if "sqlite" in entry["dialects"]
]


def test_the_corpus_has_sqlite_payloads():
    assert len(ENTRIES) >= 20
    assert all(entry["rule"] == RULE for entry in ENTRIES)


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry["id"] for entry in ENTRIES])
def test_corpus_payload_is_refused_through_the_guard(entry: dict[str, Any]):
    with pytest.raises(UnsafeQueryError) as info:
        guarded(entry["sql"], SQLITE)
    assert info.value.rule == RULE, info.value.message
    assert 10 < len(info.value.message) < 300
    assert entry["sql"] not in info.value.message


REFUSED = {
    "printf-star-literal": "SELECT printf('%.*c', 100000, 'x')",
    "printf-negative-star-is-a-width": "SELECT printf('%*d', -100000, 1)",
    "printf-q-doubles-quotes": (
        "SELECT printf('%q%q%q', s, s, s) FROM (SELECT hex(zeroblob(2000)) AS s)"
    ),
    "format-is-printf": "SELECT format('%100000d', 1)",
    "quote-of-quote": "SELECT quote(quote(quote(quote(zeroblob(2000)))))",
    "json-array-escapes": (
        "SELECT json_array(s, s) FROM (SELECT CAST(zeroblob(2000) AS TEXT) AS s)"
    ),
    "json-extract-many-paths": (
        "SELECT json_extract(j, '$', '$', '$', '$') FROM "
        "(SELECT json_array(hex(zeroblob(1000))) AS j)"
    ),
    "lag-passes-its-value-on": (
        "SELECT hex(lag(hex(zeroblob(6000))) OVER (ORDER BY id)) FROM orders"
    ),
    "strftime-format-from-a-value": (
        "SELECT strftime(replace(hex(zeroblob(500)), '0', '%J'), 'now')"
    ),
    "highlight-markers": "SELECT highlight(docs, 0, hex(zeroblob(1000)), '') FROM docs",
    "stored-value-65-copies": "SELECT " + " || ".join(["name"] * 65) + " FROM customers",
    "stored-value-300-copies-per-row": (
        "SELECT " + ", ".join(" || ".join(["name"] * 60) for _ in range(5)) + " FROM customers"
    ),
    "aggregate-spliced-many-times": (
        "SELECT replace(group_concat(name), ',', hex(zeroblob(100))) FROM customers"
    ),
    "replace-data-into-data": "SELECT replace(comment, ' ', comment) FROM events",
    "count-from-random": "SELECT zeroblob(abs(random()))",
    "count-from-randomblob": "SELECT zeroblob(unicode(randomblob(2)) * 100000)",
    "count-from-subquery": "SELECT zeroblob((SELECT max(id) FROM orders) * 100000)",
}


@pytest.mark.parametrize("sql", REFUSED.values(), ids=REFUSED.keys())
def test_unit_payload_is_refused(sql: str):
    message = refusal(sql, SQLITE)
    assert 10 < len(message) < 300


def test_messages_say_what_to_write_instead():
    assert "smaller size" in refusal("SELECT randomblob(5000000)", SQLITE)
    assert "smaller widths" in refusal("SELECT printf('%1000000d', 1)", SQLITE)
    assert "literal format" in refusal("SELECT printf(name, 1) FROM customers", SQLITE)
    assert "only add to it" in refusal(
        "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT s FROM r",
        SQLITE,
    )


_R = "WITH RECURSIVE r(s, n) AS (SELECT '', 0 UNION ALL SELECT s || "
RECURSION = {
    # a value that grows per step needs a bound on the steps (SQLite holds its rows unlimited)
    f"{_R}'x', n + 1 FROM r) SELECT s FROM r LIMIT 5": "nothing bounds its steps",
    f"{_R}'x', o.id + 1 FROM r, orders AS o WHERE o.id < 9) SELECT s FROM r": "nothing bounds",
    f"{_R}'xxxxxxxxxxxxxxxx', n + 1 FROM r WHERE n < 20000) SELECT s FROM r": "20001 steps",
    f"{_R}name, n + 1 FROM r, customers WHERE n < 100) SELECT s FROM r": "101 steps",
    f"{_R}'x', n + 1 FROM r WHERE n < 100) SELECT s FROM r": "",
    f"{_R}'x', n + 2 FROM r WHERE 100 >= n AND s <> 'y') SELECT s FROM r": "",
    f"{_R}'x', n FROM r LIMIT 1000) SELECT s FROM r": "",
    "WITH RECURSIVE t(id, path, depth) AS (SELECT id, name, 0 FROM customers WHERE id = 1 "
    "UNION ALL SELECT c.id, t.path || '/' || c.name, t.depth + 1 FROM customers AS c JOIN t "
    "ON c.id = t.id + 1 WHERE t.depth < 20) SELECT path FROM t": "",
}


@pytest.mark.parametrize(("sql", "refused"), RECURSION.items())
def test_a_recursive_cte_that_grows_a_value_bounds_its_steps(sql: str, refused: str):
    if refused:
        assert refused in refusal(sql, SQLITE)
    else:
        accepted(sql, SQLITE)
    if refused.startswith("nothing bounds its steps"):
        accepted(sql)  # DuckDB's working tables count against its memory limit


def test_sqlite_prints_values_as_their_own_bytes():
    """DuckDB may print a value of unknown type as 8 bytes per byte (BIT, BLOB escapes);
    SQLite prints text and blobs as they are: nine copies of a name are nine, not 72."""
    accepted("SELECT " + " || ".join(["name"] * 9) + " FROM customers", SQLITE)
    refusal("SELECT " + " || ".join(["name"] * 9) + " FROM customers")  # DuckDB


# --------------------------------------------------------------------------------------------
# Counts that are not literals: clamped, results kept, read back as bounded

REWRITES = {
    "zeroblob-count": (
        "SELECT hex(zeroblob(n)) FROM (SELECT 5 AS n)",
        "zeroblob(CASE WHEN CAST(n AS INTEGER) > 2048 THEN 2048 ELSE n END)",
    ),
    "count-as-text": (
        "SELECT length(zeroblob(n)) FROM (SELECT '5' AS n)",
        "CASE WHEN CAST(n AS INTEGER) > 2048",
    ),
    "randomblob-count": (
        "SELECT length(randomblob(n)) FROM (SELECT 16 AS n)",
        "randomblob(CASE WHEN CAST(n AS INTEGER) > 2048 THEN 2048 ELSE n END)",
    ),
    "bar-of-a-count": (
        "SELECT replace(hex(zeroblob(cnt / 10)), '00', '#') FROM (SELECT 55 AS cnt)",
        "CASE WHEN CAST((cnt / 10) AS INTEGER) > 2048 THEN 2048 ELSE (cnt / 10) END",
    ),
    "printf-star-repeat": (
        "SELECT printf('%.*c', n, '#') FROM (SELECT 5 AS n)",
        "MAX(MIN(CAST(n AS INTEGER), 2048), -2048)",
    ),
    "printf-star-width": (
        "SELECT printf('%*d|', column1, 7) FROM (VALUES (NULL), (-4), (3))",
        "MAX(MIN(CAST(column1 AS INTEGER), 2048), -2048)",
    ),
    "printf-star-precision": (
        "SELECT printf('%.*f', d, 3.14159) FROM (SELECT 2 AS d)",
        "MAX(MIN(CAST(d AS INTEGER), 1024), -1024)",
    ),
}


@pytest.mark.parametrize(("sql", "fragment"), REWRITES.values(), ids=REWRITES.keys())
def test_counts_that_are_not_literals_are_clamped(sql: str, fragment: str):
    out = accepted(sql, SQLITE)
    assert fragment in out, out
    assert accepted(out, SQLITE) == out  # read back as bounded: no second rewrite
    rewritten, _ = sized(sql, SQLITE)
    assert sqlglot.parse_one(out, read="sqlite") == rewritten


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT zeroblob(id % 10) FROM orders",
        "SELECT replace(hex(zeroblob(length(name))), '00', '-') FROM customers",
        "SELECT zeroblob(min(id, 40)) FROM customers",
        "SELECT printf('%.*c|%*d', 5, '*', -6, id) FROM customers",
        "SELECT printf('%.*s', id, name) FROM customers",  # a precision that only cuts text
        "SELECT substr('**********', 1, id % 10) FROM customers",
        "SELECT randomblob(16), hex(randomblob(8))",
    ],
)
def test_counts_bounded_by_the_tree_are_not_rewritten(sql: str):
    expected = sqlglot.parse_one(sql, read="sqlite").sql("sqlite", **GENERATE)
    assert accepted(sql, SQLITE) == expected


# --------------------------------------------------------------------------------------------
# Benign analytics: pass, and return the same rows

BENIGN = [
    "SELECT printf('%.2f', sum(total)) AS revenue FROM orders WHERE status = 'paid'",
    "SELECT printf('%05d', id) AS code, name FROM customers ORDER BY id",
    "SELECT printf('%-20s|%8.2f', name, price) FROM products ORDER BY id",
    "SELECT printf('%d orders, %.1f%% paid', count(*), 100.0 * sum(status = 'paid') / count(*)) "
    "FROM orders",
    "SELECT printf('%,d', sum(quantity)) FROM order_items",
    "SELECT printf('%5.1f%%', 100.0 * count(*) / (SELECT count(*) FROM orders)) FROM orders "
    "WHERE status = 'delivered'",
    "SELECT printf('%*d|', 6, id), printf('%.3s', status) FROM orders ORDER BY id LIMIT 5",
    "SELECT printf('%q', comment) FROM events WHERE comment LIKE '%''%' ORDER BY id",
    "SELECT status, count(*) AS n, printf('%.*c', count(*) / 10, '#') AS bar FROM orders "
    "GROUP BY status ORDER BY n DESC",
    "SELECT status, replace(hex(zeroblob(count(*) / 10)), '00', '*') AS bar FROM orders "
    "GROUP BY status ORDER BY status",
    "SELECT name, substr('**********', 1, CAST(price / 50 AS INTEGER)) FROM products ORDER BY id",
    "SELECT format('%s (%s)', name, coalesce(category, 'none')) FROM products ORDER BY id",
    "SELECT hex(id), lower(hex(name)), quote(name), quote(price) FROM products ORDER BY id",
    "SELECT length(zeroblob(0)), typeof(zeroblob(0)), hex(zeroblob(4)), length(randomblob(16))",
    "SELECT replace(name, ' ', '_') FROM products ORDER BY id",
    "SELECT trim(replace(replace(comment, ';', ''), '--', '')) FROM events "
    "WHERE comment IS NOT NULL ORDER BY id",
    "SELECT upper(substr(name, 1, 1)) || lower(substr(name, 2)) FROM customers ORDER BY id",
    "SELECT substr(email, instr(email, '@') + 1) AS domain, count(*) FROM customers "
    "WHERE email IS NOT NULL GROUP BY domain ORDER BY 2 DESC, 1",
    "SELECT ltrim(name, 'AEIOU'), rtrim(email, '.moc') FROM customers ORDER BY id",
    "SELECT char(65 + id % 26), unicode(name), soundex(name) FROM customers ORDER BY id",
    "SELECT name || ' <' || coalesce(email, 'n/a') || '>' FROM customers ORDER BY id",
    "SELECT coalesce(category, 'n/a') || ': ' || name FROM products ORDER BY id",
    "SELECT json_object('id', id, 'name', name, 'price', price) FROM products ORDER BY id",
    "SELECT json_group_array(name) FROM (SELECT name FROM products WHERE category = 'tea' "
    "ORDER BY name)",
    "SELECT category, json_group_array(json_object('id', id, 'name', name)) FROM products "
    "GROUP BY category ORDER BY category",
    "SELECT json_group_object(status, n) FROM (SELECT status, count(*) AS n FROM orders "
    "GROUP BY status ORDER BY status)",
    "SELECT json_extract(json_object('a', 1, 'b', name), '$.b'), json_object('n', id) -> '$.n' "
    "FROM customers ORDER BY id LIMIT 5",
    "SELECT value FROM json_each(json_array(1, 2, 3))",
    "SELECT json_array_length(json_array(1, 2, 3)), json_type('[1]'), json_valid('{}'), "
    "json_quote(name) FROM customers ORDER BY id LIMIT 3",
    "SELECT json_set('{}', '$.total', round(sum(total), 2)) FROM orders",
    "SELECT customer_id, group_concat(id, ', ') FROM (SELECT customer_id, id FROM orders "
    "ORDER BY id) GROUP BY customer_id ORDER BY customer_id",
    "SELECT c.country, count(DISTINCT o.status), group_concat(DISTINCT o.status) FROM customers "
    "AS c JOIN orders AS o ON o.customer_id = c.id GROUP BY c.country ORDER BY c.country",
    "SELECT strftime('%Y-%m', ordered_at) AS month, count(*) FROM orders GROUP BY month "
    "ORDER BY month",
    "SELECT date(ordered_at), time(ordered_at), julianday(ordered_at) FROM orders ORDER BY id "
    "LIMIT 10",
    "SELECT date(signed_up, '+1 month', 'start of month') FROM customers ORDER BY id",
    "SELECT strftime('%w', ordered_at) AS dow, round(avg(total), 2) FROM orders GROUP BY dow "
    "ORDER BY dow",
    "SELECT id, total, lag(total, 1, 0) OVER (ORDER BY id) AS prev FROM orders ORDER BY id "
    "LIMIT 20",
    "SELECT id, first_value(status) OVER (PARTITION BY customer_id ORDER BY id) FROM orders "
    "ORDER BY id LIMIT 20",
    "SELECT iif(total > 100, 'big', 'small') AS size, count(*) FROM orders GROUP BY 1 ORDER BY 1",
    "SELECT abs(-total), round(total * 1.2, 2), round(sqrt(total), 3) FROM orders ORDER BY id "
    "LIMIT 5",
    "WITH RECURSIVE r(n, s) AS (SELECT 1, '1' UNION ALL SELECT n + 1, s || ',' || (n + 1) "
    "FROM r WHERE n < 10) SELECT * FROM r",
    "WITH RECURSIVE months(m) AS (SELECT date('2025-01-01') UNION ALL SELECT date(m, '+1 month') "
    "FROM months WHERE m < '2025-12-01') SELECT m FROM months",
]


def test_benign_corpus_is_large():
    assert len(BENIGN) >= 30


@pytest.mark.parametrize("sql", BENIGN)
def test_benign_query_passes_the_guard(sql: str):
    guarded(sql, SQLITE)


@pytest.fixture(scope="module")
def shop_engine(sqlite_shop: Path, tmp_path_factory: pytest.TempPathFactory):
    """The seeded shop, opened the way readonly.py opens SQLite (mode=ro, query_only, and
    per call the length limit and the progress handler)."""
    copy = tmp_path_factory.mktemp("sizes_sqlite") / sqlite_shop.name
    shutil.copy2(sqlite_shop, copy)
    engine = build_engine(f"sqlite:///{copy}")
    yield engine
    engine.dispose()


def _rows(engine: Any, sql: str) -> collections.Counter[tuple[Any, ...]]:
    fetched = run_read_only(engine, sql, max_rows=10_000, timeout_s=60)
    return collections.Counter(
        tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in fetched.rows
    )


@pytest.mark.parametrize("sql", BENIGN)
def test_benign_query_returns_the_same_rows_on_sqlite(sql: str, shop_engine: Any):
    direct = _rows(shop_engine, sql)
    assert 0 < sum(direct.values()) <= ROW_LIMIT
    assert _rows(shop_engine, guarded(sql, SQLITE)) == direct


@pytest.mark.parametrize(("sql", "_"), REWRITES.values(), ids=REWRITES.keys())
def test_clamped_counts_keep_results_under_the_bound(sql: str, _: str, shop_engine: Any):
    assert _rows(shop_engine, accepted(sql, SQLITE)) == _rows(shop_engine, sql)


# --------------------------------------------------------------------------------------------
# Live: harmful at a reduced scale in a fresh process, then refused or clamped

_ROWS = "FROM orders LIMIT 50"
_SERIES = "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 2000) "
HARM = {
    # class: (reduced payload measured live, the full-size payload the guard refuses)
    "randomblob-rows": (
        "SELECT id, randomblob(5000000) AS big FROM orders ORDER BY id LIMIT 50",
        "SELECT id, randomblob(16000000) FROM orders",
    ),
    "zeroblob-values-in-one-row": (
        "SELECT " + ", ".join(f"zeroblob(15000000) AS c{i}" for i in range(6)),
        "SELECT " + ", ".join(f"zeroblob(16000000) AS c{i}" for i in range(100)),
    ),
    "printf-width": (f"SELECT printf('%5000000d', id) {_ROWS}", "SELECT printf('%1000000000d', 1)"),
    "printf-repeated-character": (
        f"SELECT printf('%.*c', 5000000, 'x') {_ROWS}",
        "SELECT printf('%.*c', 16000000, 'x') FROM orders",
    ),
    "replace-chain": (
        f"SELECT replace(hex(zeroblob(1250)), '0', hex(zeroblob(1250))) {_ROWS}",
        "SELECT replace(replace(hex(zeroblob(1000)), '0', hex(zeroblob(1000))), '0', 'ab') "
        "FROM orders",
    ),
    "hex-of-hex": (
        f"SELECT hex(hex(hex(randomblob(600000)))) {_ROWS}",
        "SELECT hex(hex(hex(hex(hex(hex(hex(randomblob(100000)))))))) FROM orders",
    ),
    "json-escapes": (
        f"SELECT json_quote(CAST(zeroblob(800000) AS TEXT)) {_ROWS}",
        "SELECT json_quote(CAST(zeroblob(2700000) AS TEXT)) FROM orders",
    ),
    "quote-of-a-blob": (
        f"SELECT quote(zeroblob(2500000)) {_ROWS}",
        "SELECT quote(zeroblob(8000000)) FROM orders",
    ),
    "recursive-doubling": (
        "WITH RECURSIVE r(s, n) AS (SELECT 'x', 0 UNION ALL SELECT s || s, n + 1 FROM r "
        "WHERE n < 22) SELECT r.s FROM r JOIN orders ON r.n = 22 LIMIT 50",
        "WITH RECURSIVE r(s, n) AS (SELECT 'x', 0 UNION ALL SELECT s || s, n + 1 FROM r "
        "WHERE n < 23) SELECT r.s FROM r, orders",
    ),
    "sorter-of-built-rows": (
        f"{_SERIES}SELECT count(*) FROM (SELECT i, zeroblob(524288) AS b FROM g ORDER BY random())",
        "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 100000) "
        "SELECT count(*) FROM (SELECT i, zeroblob(1000000) AS b FROM g ORDER BY random())",
    ),
    "recursive-append-sorted": (
        "WITH RECURSIVE r(s, n) AS (SELECT '', 0 UNION ALL SELECT s || hex(zeroblob(4000)), "
        "n + 1 FROM r WHERE n < 300) SELECT max(length(s)) FROM (SELECT s, n FROM r "
        "ORDER BY random())",
        "WITH RECURSIVE r(s, n) AS (SELECT '', 0 UNION ALL SELECT s || 'xxxxxxxxxxxxxxxx', "
        "n + 1 FROM r) SELECT max(length(s)) FROM (SELECT s, n FROM r ORDER BY random())",
    ),
    "group-by-built-value": (
        "SELECT count(*) FROM (SELECT randomblob(1500000) AS b FROM orders GROUP BY b)",
        "SELECT count(*) FROM (SELECT randomblob(16000000) AS b FROM order_items GROUP BY b)",
    ),
}


@pytest.mark.slow  # a live engine pushed to its harmful size, in a child process
@pytest.mark.parametrize(("reduced", "full"), HARM.values(), ids=HARM.keys())
def test_payload_class_is_harmful_live_then_refused(
    reduced: str, full: str, sqlite_shop: Path
) -> None:
    measured = probe_sqlite(sqlite_shop, reduced, raw=True)
    assert measured["growth_mb"] > 150, measured  # harmful through the plain driver
    refusal(reduced, SQLITE)  # the reduced payload is already over the bound
    with pytest.raises(UnsafeQueryError) as info:
        guarded(full, SQLITE)
    assert info.value.rule == RULE


CLAMPED = {
    # counts from the data: harmful as written, clamped by the rule, then harmless
    "printf-width-from-data": f"SELECT printf('%*d', 5000000 + id, 1) {_ROWS}",
    "printf-repeat-from-data": f"SELECT printf('%.*c', -5000000 - id, '#') {_ROWS}",
    "zeroblob-count-from-data": f"SELECT zeroblob(5000000 + id) {_ROWS}",
}


@pytest.mark.slow  # a live engine pushed to its harmful size, in a child process
@pytest.mark.parametrize("sql", CLAMPED.values(), ids=CLAMPED.keys())
def test_count_from_the_data_is_harmful_live_then_clamped(sql: str, sqlite_shop: Path):
    assert probe_sqlite(sqlite_shop, sql, raw=True)["growth_mb"] > 150
    clamped = guarded(sql, SQLITE)
    assert clamped != sql
    after = probe_sqlite(sqlite_shop, clamped)
    assert after["error"] is None and after["growth_mb"] < 20, after


@pytest.mark.slow  # a live engine pushed to its harmful size, in a child process
def test_the_bound_itself_is_harmless_live(sqlite_shop: Path):
    """The most a row may build, 16 KiB twice, in a sorter over 20 000 generated rows (the
    sorter's merge is the costliest place for built rows) and in a 64-row fetch."""
    sorter = (
        "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 20000) "
        "SELECT count(*) FROM (SELECT i, zeroblob(16000) AS a, zeroblob(16000) AS b FROM g "
        "ORDER BY random())"
    )
    rows = "SELECT id, zeroblob(16000) AS a, zeroblob(16000) AS b FROM orders"
    for sql in (sorter, rows):
        assert guarded(sql, SQLITE)
        assert probe_sqlite(sqlite_shop, sql)["growth_mb"] < 60
