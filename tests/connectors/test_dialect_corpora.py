"""The warehouse dialect corpora (``corpus/dialects/<family>.yaml``): analyst queries in each
engine's own idioms pass the guard with their meaning kept; each engine's side doors are
refused with the rule that names them. ClickHouse's also run on a real embedded ClickHouse
(chdb), the guard's output against the query as written.

Meaning kept is checked twice over, beyond the guard's own fixed point: the calls the output
makes are the calls the model wrote (a rename sqlglot would make — ``ADD_MONTHS`` to
``DATEADD`` — is a different function on the engine unless listed below as the same), and the
output parsed again equals the input parsed with the guard's LIMIT set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlglot
import yaml
from sqlglot import exp
from sqlglot.tokens import TokenType

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard.limit import apply_limit, uncounted_limit, wrap_uncounted_limit
from relay_nb.sql.guard.policies import policy_for
from relay_nb.sql.guard.policies.as_written import keep_as_written
from relay_nb.sql.guard.query import _dialect, guard_query

CORPUS = Path(__file__).parent / "corpus" / "dialects"
FAMILIES = ("snowflake", "bigquery", "redshift", "trino", "databricks", "clickhouse")
ROW_LIMIT = 200

SAME_FUNCTION: dict[str, dict[str, str]] = {
    "snowflake": {"DIV0": "IFF", "ZEROIFNULL": "IFF", "NVL": "COALESCE",
                  "TIMESTAMPADD": "DATEADD", "NUMBER": "DECIMAL"},
    "bigquery": {},
    "redshift": {"NVL": "COALESCE", "DATE_PART": "EXTRACT", "LEN": "LENGTH",
                 "CHARINDEX": "POSITION"},
    "trino": {},
    "databricks": {"NVL": "COALESCE", "IFNULL": "COALESCE", "NAMED_STRUCT": "STRUCT",
                   "DATE_SUB": "DATE_ADD"},
    "clickhouse": {"TOSTARTOFMONTH": "DATETRUNC", "MEDIAN": "QUANTILE", "IF": "",
                   "SPLITBYCHAR": "SPLITBYSTRING", "DATEDIFF": "DATE_DIFF"},
}  # fmt: skip
"""Renames the generator makes that were checked to be the same function on the engine (its
documentation; ClickHouse's also on chdb, below): nothing else may change name between what
the model wrote and what runs ("": written as syntax, ``if(c, a, b)`` as ``CASE WHEN``)."""

SYNTAX = {"CAST", "TRY_CAST", "GET_PATH", "BERNOULLI", "TIMESTAMP", "REGEXP_LIKE", "DECIMAL",
          "CURRENT_DATE", "CURRENT_TIMESTAMP", "STRUCT", "LIMIT", "MOD", ""}  # fmt: skip
"""Spellings of syntax rather than calls: ``x::int`` is written ``CAST(x AS INT)``,
Snowflake's ``v:path`` ``GET_PATH(v, 'path')``, ``SAMPLE (10)`` ``TABLESAMPLE BERNOULLI (10)``,
``x RLIKE p`` ``REGEXP_LIKE(x, p)``, ``CURRENT_DATE()`` ``CURRENT_DATE``, ``MOD(a, b)``
``a % b``; they may appear or
go, the calls may not."""


def load(family: str) -> dict[str, Any]:
    return yaml.safe_load((CORPUS / f"{family}.yaml").read_text(encoding="utf-8"))


def allowed(corpus: dict[str, Any]) -> set[tuple[str | None, str]]:
    pairs: set[tuple[str | None, str]] = set()
    for name in corpus["tables"]:
        schema, _, table = name.rpartition(".")
        pairs.add((schema or None, table))
    return pairs


def guard(corpus: dict[str, Any], sql: str):
    return guard_query(
        sql,
        dialect=corpus["dialect"],
        allowed_tables=allowed(corpus),
        default_schema=corpus.get("default_schema"),
        row_limit=ROW_LIMIT,
    )


def entries(kind: str) -> Iterator[Any]:
    for family in FAMILIES:
        corpus = load(family)
        for entry in corpus[kind]:
            yield pytest.param(corpus, entry, id=f"{family}:{entry['id']}")


def calls(sql: str, dialect: str) -> list[str]:
    """Function names called in ``sql`` (a name followed by ``(``), upper case, in order."""
    tokens = _dialect(dialect).tokenize(sql)
    return [
        token.text.upper()
        for before, token, following in zip([None, *tokens], tokens, tokens[1:], strict=False)
        if following.token_type == TokenType.L_PAREN
        and token.token_type not in _NOT_CALLS
        and token.text.upper() not in _KEYWORDS_BEFORE_PARENS
        and not (  # AS t(a, b): an alias and its columns, not a call
            before is not None
            and before.token_type == TokenType.ALIAS
            and token.token_type == TokenType.VAR
        )
    ]


_NOT_CALLS = {TokenType.L_PAREN, TokenType.R_PAREN, TokenType.COMMA, TokenType.STRING}
_KEYWORDS_BEFORE_PARENS = {
    "IN", "AS", "OVER", "FROM", "JOIN", "ON", "USING", "AND", "OR", "NOT", "EXISTS", "SELECT",
    "WHERE", "WITH", "VALUES", "ANY", "ALL", "SOME", "UNION", "INTERSECT", "EXCEPT", "BY",
    "WITHIN", "FILTER", "WINDOW", "THEN", "ELSE", "WHEN", "CASE", "END", "IS", "LATERAL",
    "TABLESAMPLE", "SAMPLE", "PIVOT", "UNPIVOT", "FOR", "REPLACE", "QUALIFY", "HAVING",
    "INTERVAL", "ARRAY", "STRUCT", "MAP", "ROW", "TABLE", "UNNEST", "LIMIT", "OFFSET", "ORDER",
    "GROUP", "PARTITION", "ROWS", "RANGE", "BETWEEN", "DISTINCT", "LIKE", "ILIKE", "RLIKE",
    "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "OUTER", "SEMI", "ANTI", "PREWHERE", "FINAL",
    "CUBE", "ROLLUP", "SETS", "GROUPING",
}  # fmt: skip


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_has_its_corpus(family: str) -> None:
    corpus = load(family)
    assert corpus["dialect"]
    assert len(corpus["benign"]) >= 40 and len(corpus["refused"]) >= 25
    ids = [entry["id"] for entry in (*corpus["benign"], *corpus["refused"])]
    assert len(ids) == len(set(ids)), "duplicate ids"
    assert policy_for(corpus["dialect"]).name != "generic"


@pytest.mark.parametrize(("corpus", "entry"), entries("benign"))
def test_benign_queries_pass_with_their_meaning_kept(corpus, entry) -> None:
    dialect = corpus["dialect"]
    if "refused_for_now" in entry:  # a known gap, said in the entry: it must still be one
        with pytest.raises(UnsafeQueryError):
            guard(corpus, entry["sql"])
        return
    try:
        guarded = guard(corpus, entry["sql"])
    except UnsafeQueryError as refused:
        pytest.fail(f"refused a benign query: {refused}")
    if "expect_limit" in entry:
        assert guarded.limit == entry["expect_limit"]
    same = SAME_FUNCTION[_family(dialect)]
    written = {same.get(name, name) for name in calls(entry["sql"], dialect)} - SYNTAX
    ran = set(calls(guarded.sql, dialect)) - SYNTAX
    assert sorted(ran) == sorted(written), guarded.sql
    # the tree that runs is the tree the model wrote, with the guard's LIMIT
    engine = _dialect(dialect)
    expected = engine.parse(entry["sql"])[0]
    keep_as_written(expected, engine.tokenize(entry["sql"]), policy_for(dialect).as_written)
    root = _root(expected)
    if uncounted_limit(root):
        capped = wrap_uncounted_limit(root)
        expected = capped if root is expected else expected
        root = capped
    apply_limit(root, ROW_LIMIT)
    assert engine.parse(guarded.sql)[0] == engine.parse(engine.generate(expected))[0]


@pytest.mark.parametrize(("corpus", "entry"), entries("refused"))
def test_side_doors_are_refused_with_their_rule(corpus, entry) -> None:
    with pytest.raises(UnsafeQueryError) as refused:
        guard(corpus, entry["sql"])
    assert refused.value.rule in entry["rules"], str(refused.value)


def _family(dialect: str) -> str:
    return {"presto": "trino", "athena": "trino"}.get(dialect, dialect)


def _root(tree: exp.Expr) -> exp.Query:
    while isinstance(tree, exp.Subquery):
        tree = tree.this
    assert isinstance(tree, exp.Query)
    return tree


# -- ClickHouse on chdb ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clickhouse():
    try:
        import chdb
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("chdb is a dev dependency: CI must run the ClickHouse corpus on it")
        pytest.skip("pip install chdb (a dev dependency)")
    session = chdb.session.Session()
    seed = (CORPUS / "clickhouse_seed.sql").read_text(encoding="utf-8")
    for statement in seed.split(";\n"):
        if statement.strip():
            session.query(statement)
    session.query("USE analytics")
    yield session
    session.close()


@pytest.mark.parametrize(
    ("corpus", "entry"), [p for p in entries("benign") if p.id.startswith("clickhouse:")]
)
def test_clickhouse_runs_the_guarded_query_as_the_model_wrote_it(clickhouse, corpus, entry) -> None:
    if "refused_for_now" in entry:
        pytest.skip(entry["refused_for_now"])
    guarded = guard(corpus, entry["sql"])
    original = _rows(clickhouse.query(entry["sql"], "JSONCompact"))
    ran = _rows(clickhouse.query(guarded.sql, "JSONCompact"))
    if len(original) <= guarded.limit:  # the whole answer: the same rows (order may differ)
        assert sorted(map(repr, ran)) == sorted(map(repr, original))
    else:  # cut at the limit: as many rows, each one of the answer's
        assert len(ran) == guarded.limit
        assert {repr(row) for row in ran} <= {repr(row) for row in original}


def _rows(result: Any) -> list[Any]:
    import json

    return json.loads(result.bytes() or b'{"data": []}')["data"]


def test_sqlglot_reads_every_corpus_in_its_own_dialect() -> None:
    for family in FAMILIES:
        corpus = load(family)
        for entry in corpus["benign"]:
            if "refused_for_now" not in entry:
                sqlglot.transpile(entry["sql"], read=corpus["dialect"])
