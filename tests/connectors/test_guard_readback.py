"""The guard's one pass: the text that runs reads back as the tree that was checked.

The guard used to guard its own output a second time. It now records the checked tree's
shape, parses the generated text once more and compares (``guard_readback``), running the
full second pass only when the two differ. These tests prove that the change refuses nothing
the second pass accepted and accepts nothing it refused, on every corpus:

- every query of the benign, adversarial and value-size corpora in each of their dialects,
  and of the six warehouse corpora, has the same outcome (the same SQL, LIMIT, tables and
  unvetted functions, or the same rule and message) through :func:`guard_query` and through
  the two full passes;
- wherever the read-back holds, the full second pass accepts the text and reproduces it;
- :func:`shape` tells apart what the generator would write differently (a name's case, its
  quotes, a node's class, a list's length) and nothing else.

The fuzzers' queries get the same comparison in ``tests/fuzz/test_fuzz_guard_readback.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlglot
import yaml
from sqlglot import exp

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard import query as guard
from relay_nb.sql.guard.policies import policy_for
from relay_nb.sql.guard.query import guard_query
from relay_nb.sql.guard.readback import reads_back, shape

CORPUS = Path(__file__).parent / "corpus"
DIALECTS = ("sqlite", "duckdb", "postgres", "mysql")
SCHEMAS: dict[str, str | None] = {"sqlite": None, "duckdb": "main", "postgres": "public",
                                  "mysql": "shop"}  # fmt: skip
SHOP = ("customers", "products", "orders", "order_items", "events", "customer_revenue")
ROW_LIMIT = 200


def two_passes(
    sql: str, dialect: str, allowed: frozenset[tuple[str | None, str]], schema: str | None
) -> guard.GuardedQuery:
    """The guard as it was: the pipeline, then the whole pipeline again over its output."""
    first, _ = guard._guard_once(
        sql, dialect=dialect, names=guard._Names(allowed, schema),
        row_limit=ROW_LIMIT, bounds=guard._INPUT,
    )  # fmt: skip
    if not guard._fixed_point(first, guard._Names(allowed, schema), ROW_LIMIT, dialect):
        raise UnsafeQueryError("unfaithful_rewrite", guard._UNFAITHFUL)
    return first


def outcome(run: Any) -> tuple[Any, ...]:
    try:
        result = run()
    except UnsafeQueryError as error:
        return ("refused", error.rule, error.message)
    return ("accepted", result.model_dump())


def same_outcome(
    sql: str, dialect: str, allowed: frozenset[tuple[str | None, str]], schema: str | None
) -> tuple[Any, ...]:
    now = outcome(
        lambda: guard_query(
            sql, dialect=dialect, allowed_tables=allowed, default_schema=schema,
            row_limit=ROW_LIMIT,
        )
    )  # fmt: skip
    before = outcome(lambda: two_passes(sql, dialect, allowed, schema))
    assert now == before, sql
    return now


def _cases() -> list[Any]:
    cases = []
    for name in ("benign.yaml", "adversarial.yaml", "value_sizes.yaml"):
        for entry in yaml.safe_load((CORPUS / name).read_text(encoding="utf-8")):
            listed = entry["dialects"]
            for dialect in DIALECTS if listed == "all" else listed:
                cases.append(pytest.param(dialect, entry["sql"], id=f"{dialect}-{entry['id']}"))
    return cases


@pytest.mark.parametrize(("dialect", "sql"), _cases())
def test_one_pass_decides_as_two_did(dialect: str, sql: str) -> None:
    schema = SCHEMAS[dialect]
    same_outcome(sql, dialect, frozenset((schema, t) for t in SHOP), schema)


def _warehouse_cases() -> list[Any]:
    cases = []
    for path in sorted((CORPUS / "dialects").glob("*.yaml")):
        corpus = yaml.safe_load(path.read_text(encoding="utf-8"))
        for group in ("benign", "refused"):
            for entry in corpus.get(group) or ():
                cases.append(pytest.param(corpus, entry["sql"], id=f"{path.stem}-{entry['id']}"))
    return cases


@pytest.mark.parametrize(("corpus", "sql"), _warehouse_cases())
def test_one_pass_decides_as_two_did_in_the_warehouses(corpus: dict[str, Any], sql: str) -> None:
    allowed = frozenset(
        (schema or None, table)
        for schema, _, table in (name.rpartition(".") for name in corpus["tables"])
    )
    same_outcome(sql, corpus["dialect"], allowed, corpus.get("default_schema"))


def test_where_the_text_reads_back_the_second_pass_reproduces_it() -> None:
    """The claim the one pass rests on, on every accepted benign query: read-back holds for
    nearly all of them, and wherever it holds the second pass accepts the same text."""
    held = fell_back = 0
    for entry in yaml.safe_load((CORPUS / "benign.yaml").read_text(encoding="utf-8")):
        listed = entry["dialects"]
        for dialect in DIALECTS if listed == "all" else listed:
            schema = SCHEMAS[dialect]
            allowed = frozenset((schema, t) for t in SHOP)
            try:
                first, checked = guard._guard_once(
                    entry["sql"], dialect=dialect, names=guard._Names(allowed, schema),
                    row_limit=ROW_LIMIT, bounds=guard._INPUT,
                )  # fmt: skip
            except UnsafeQueryError:
                continue
            if not reads_back(first.sql, checked, guard._dialect(dialect), policy_for(dialect)):
                fell_back += 1
                continue
            held += 1
            second, _ = guard._guard_once(
                first.sql, dialect=dialect, names=guard._Names(allowed, schema),
                row_limit=ROW_LIMIT, bounds=guard._OUTPUT,
            )  # fmt: skip
            assert (second.sql, second.limit) == (first.sql, first.limit)
    assert held > 20 * fell_back  # the cheap check is the common path, not the exception


def test_a_rewritten_query_takes_the_second_pass_and_passes() -> None:
    """SQLite has no GREATEST: sqlglot spells it out, the text no longer reads back as the
    checked tree, and the full second pass accepts the spelled-out form."""
    sql = "SELECT GREATEST(total, 1) AS g FROM orders"
    first, checked = guard._guard_once(
        sql, dialect="sqlite", names=guard._Names({(None, "orders")}, None),
        row_limit=ROW_LIMIT, bounds=guard._INPUT,
    )  # fmt: skip
    assert not reads_back(first.sql, checked, guard._dialect("sqlite"), policy_for("sqlite"))
    assert guard_query(
        sql, dialect="sqlite", allowed_tables={(None, "orders")}, default_schema=None,
        row_limit=ROW_LIMIT,
    ).sql == first.sql  # fmt: skip


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("SELECT a FROM t", "SELECT A FROM t"),  # the case of a name
        ('SELECT "a" FROM t', "SELECT a FROM t"),  # its quotes
        ("SELECT 'x' FROM t", "SELECT 'X' FROM t"),  # a string's case (sqlglot's == folds it)
        ("SELECT 1 FROM t", "SELECT '1' FROM t"),  # a number vs a string
        ("SELECT a, b FROM t", "SELECT a FROM t"),  # a list's length
        ("SELECT a + b FROM t", "SELECT a - b FROM t"),  # a node's class
        ("SELECT a FROM t LIMIT 5", "SELECT a FROM t LIMIT 6"),  # the LIMIT
        ("SELECT a FROM t WHERE (a)", "SELECT a FROM t WHERE a"),  # parentheses
    ],
)
def test_shape_tells_apart_what_reads_differently(left: str, right: str) -> None:
    one, other = sqlglot.parse_one(left, read="postgres"), sqlglot.parse_one(right, read="postgres")
    assert shape(one) != shape(other)


def test_shape_ignores_comments_and_copies() -> None:
    tree = sqlglot.parse_one("SELECT a /* why */, b FROM t WHERE c = 'Kelvin' LIMIT 3")
    assert shape(tree) == shape(tree.copy())
    assert shape(tree) == shape(sqlglot.parse_one("SELECT a, b FROM t WHERE c = 'Kelvin' LIMIT 3"))
    assert shape(exp.column("a")) == shape(exp.column("a"))


@pytest.mark.parametrize("terms", [240, 248, 250, 256])
def test_depth_the_guard_adds_after_its_walk_is_judged_by_the_full_pass(terms: int) -> None:
    """The value-size rule bounds a count by wrapping it after the walk, which deepens the
    tree: near the depth limit, the one pass must decide as the two passes did."""
    chain = "".join(" + 1" if i % 2 else " - 1" for i in range(terms))
    sql = f"SELECT length(repeat('x', customer_id)){chain} AS y FROM orders"
    same_outcome(sql, "duckdb", frozenset(("main", t) for t in SHOP), "main")


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(
    "chain",
    [
        " AND total > {n}",  # the analytic filter: thousands of conditions
        " OR status = 's{n}'",
        " + {n}",
        " || 'x{n}'",
        " + length(repeat('x', customer_id)) - {n}",  # a bounded count inside each link
    ],
)
@pytest.mark.parametrize("links", [120, 255, 256, 600, 1_500])
def test_long_chains_read_back_and_decide_as_two_passes_did(
    dialect: str, chain: str, links: int
) -> None:
    """A chain of one kind adds no depth to the walk, nor to the read-back's depth: a long
    WHERE reads back in one pass, and near and past the limits both decide alike."""
    schema = SCHEMAS[dialect]
    terms = "".join(chain.format(n=n) for n in range(links))
    if chain.startswith((" AND", " OR")):
        sql = f"SELECT id FROM orders WHERE id > 0{terms}"
    else:
        sql = f"SELECT customer_id{terms} AS y FROM orders"
    same_outcome(sql, dialect, frozenset((schema, t) for t in SHOP), schema)


def test_a_long_where_reads_back_in_one_pass() -> None:
    """1,500 ANDed conditions nest 1,500 levels as sqlglot parses them, but add none to the
    walk's depth: the read-back counts them alike, so no second pass runs."""
    where = " AND ".join(f"(total > {n} OR status = 's{n}')" for n in range(1_500))
    first, checked = guard._guard_once(
        f"SELECT id FROM orders WHERE {where}", dialect="postgres",
        names=guard._Names({("public", "orders")}, "public"), row_limit=ROW_LIMIT,
        bounds=guard._INPUT,
    )  # fmt: skip
    assert checked is not None
    assert reads_back(first.sql, checked, guard._dialect("postgres"), policy_for("postgres"))


@pytest.mark.parametrize("dialect", ["duckdb", "sqlite"])
def test_a_long_union_is_decided_alike_at_any_stack_depth(dialect: str) -> None:
    """The value-size rule sizes a UNION chain in a loop, as it does operator chains: with
    recursion, 981 branches were refused or not by how deep the caller's stack was."""
    schema = SCHEMAS[dialect]
    sql = " UNION ALL ".join(["SELECT id FROM orders"] * 1_500)
    allowed = frozenset((schema, t) for t in SHOP)

    def at_depth(frames: int) -> Any:
        if frames:
            return at_depth(frames - 1)
        return same_outcome(sql, dialect, allowed, schema)

    assert at_depth(0) == at_depth(300)
    assert at_depth(0)[0] == "accepted"
