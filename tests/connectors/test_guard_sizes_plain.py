"""The value-size rule's fast path (``relay_nb/sql/guard/sizes/plain.py``) skips the full
analysis only where the analysis would find nothing: checked over every query of the public
world corpus (DuckDB, SQLite, PostgreSQL, MySQL, ClickHouse families), the benign and
adversarial corpora and the value-size attacks, in each family that runs the rule. A tree
the fast path passes must leave the full analysis silent; and it must pass the analysts'
plain queries (else it saves nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot
import yaml

from relay_nb.sql.guard.policies import policy_for
from relay_nb.sql.guard.sizes import sizer
from relay_nb.sql.guard.sizes.model import SizeLimits
from relay_nb.sql.guard.sizes.plain import builds_no_value

CORPUS = Path(__file__).parent / "corpus"
DIALECTS = ("duckdb", "sqlite", "postgres", "mysql", "clickhouse")


def _queries(dialect: str) -> list[str]:
    found: list[str] = []
    for name in ("benign.yaml", "adversarial.yaml", "value_sizes.yaml"):
        for entry in yaml.safe_load((CORPUS / name).read_text(encoding="utf-8")):
            if entry["dialects"] == "all" or dialect in entry["dialects"]:
                found.append(entry["sql"])
    world = CORPUS / "world" / f"{dialect}.yaml"
    if world.exists():
        found += [q["sql"] for q in yaml.safe_load(world.read_text(encoding="utf-8"))["queries"]]
    return found


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_fast_path_passes_only_what_the_analysis_finds_nothing_in(dialect):
    passed = 0
    for sql in _queries(dialect):
        try:
            trees = sqlglot.parse(sql, read=dialect)
        except sqlglot.errors.SqlglotError:
            continue
        for tree in trees:
            if tree is None or not builds_no_value(tree, SizeLimits()):
                continue
            passed += 1
            policy = policy_for(dialect)
            table = getattr(policy, "size_functions", None) or {}
            prefixes = getattr(policy, "size_prefixes", None) or {}
            limits = getattr(policy, "size_limits", None) or SizeLimits()
            try:  # the full analysis, which the fast path skipped
                sizer._Sizer(tree, table, prefixes, limits, dialect).run()
            except sizer.TooLarge as refusal:
                pytest.fail(f"{sql!r}: {refusal.message}")
    assert passed >= 50, passed  # the fast path is taken by the analysts' plain queries


def test_what_builds_a_value_is_not_passed():
    for sql in (
        "SELECT repeat('x', 10)",
        "SELECT a || b FROM t",
        "SELECT CAST(a AS TEXT) FROM t",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r",
        "SELECT string_agg(a, ',') FROM t",
        "SELECT * FROM range(10)",
        f"SELECT '{'x' * 70_000}'",
        "SELECT " + ", ".join(["a"] * 1100) + " FROM t",
        # found in review: DuckDB builds a struct of a row value, concatenates lists with +,
        # and max(x, n) is a list of n values; through CTEs each grows per step
        "SELECT (x, x, x, x, x, x, x, x) AS v FROM t",
        "WITH a0 AS (SELECT max(id, 1000) AS l FROM t), a1 AS (SELECT l + l AS l FROM a0) "
        "SELECT l FROM a1",
        "SELECT max(id, 1000) FROM t",
        "WITH a AS (SELECT *, * FROM t) SELECT *, * FROM a",
    ):
        assert not builds_no_value(sqlglot.parse_one(sql, read="duckdb"), SizeLimits()), sql
    assert builds_no_value(
        sqlglot.parse_one("SELECT region, SUM(amount) FROM orders WHERE x = 'p' GROUP BY 1"),
        SizeLimits(),
    )
