"""The world corpus (``corpus/world/<family>.yaml``): read-only queries other people wrote —
Spider 2.0's gold SQL, sqlglot's dialect tests, vendors' examples — through the guard.

Each query runs with an allowlist built from its own tables (``scripts/world_corpus``,
:func:`guard_args`), so a refusal is about the guard, not about a table we forgot. Every
refusal the guard makes today is listed, with its rule, in ``expected_refusals.yaml``; this
test fails on a refusal not listed there, on a listed one that now passes (so the list stays
true: shrink it, or run ``scripts/world_corpus expect``), and on a crash not listed (an
exception other than UnsafeQueryError is a bug), and on a refusal whose ``doc`` is not a row
of "What the guard refuses, and why" in ``docs/engines/index.md``.
Offline: the corpus is in the repository; the whole file takes a few seconds.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlglot import exp

from relay_nb.sql.guard.limit import apply_limit, uncounted_limit, wrap_uncounted_limit
from relay_nb.sql.guard.policies import policy_for
from relay_nb.sql.guard.policies.as_written import keep_as_written
from relay_nb.sql.guard.query import _dialect

ROOT = Path(__file__).resolve().parents[2]
WORLD = Path(__file__).parent / "corpus" / "world"


def _load_harness() -> Any:
    path = ROOT / "scripts" / "world_corpus"
    loader = importlib.machinery.SourceFileLoader("world_corpus", str(path))
    spec = importlib.util.spec_from_loader("world_corpus", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


harness = _load_harness()
EXPECTED: dict[str, list[dict[str, str]]] = (
    yaml.safe_load((WORLD / "expected_refusals.yaml").read_text(encoding="utf-8")) or {}
)


@pytest.mark.parametrize("family", harness.FAMILIES)
def test_corpus_file_is_well_formed(family: str) -> None:
    corpus = harness.load_family(family)
    assert corpus["family"] == family
    assert corpus["sources"], "a corpus file names its sources"
    for source in corpus["sources"]:
        assert {"name", "url", "commit", "licence", "how"} <= source.keys()
    queries = corpus["queries"]
    assert queries
    sources = [q["source"] for q in queries]
    assert len(sources) == len(set(sources)), "a source id names one query of the family"
    for query in queries:
        assert query["sql"].strip()
        assert harness.FAMILY_OF[query.get("dialect", family)] == family


@pytest.mark.parametrize("family", harness.FAMILIES)
def test_refusals_are_the_expected_ones(family: str) -> None:
    results = harness.run_family(family)
    got = {r["source"]: r for r in results if r["outcome"] != "passed"}
    listed = {e["source"]: e for e in EXPECTED.get(family) or ()}
    problems: list[str] = []
    for source, r in got.items():
        entry = listed.get(source)
        if entry is None or entry["rule"] != r["rule"]:
            was = f" (listed as {entry['rule']})" if entry else ""
            kind = "CRASH" if r["outcome"] == "crash" else "refused"
            problems.append(
                f"{kind} {source} [{r['dialect']}] {r['rule']}{was}: {r['message']}\n"
                f"    {harness._short(r['sql'])}"
            )
    for source, entry in listed.items():
        if source not in got:
            problems.append(
                f"now passes (or left the corpus): {source} was listed as {entry['rule']}; "
                "take it out of expected_refusals.yaml"
            )
    assert not problems, f"{len(problems)} differences from expected_refusals.yaml:\n" + "\n".join(
        problems
    )


def test_expectations_name_only_known_families() -> None:
    assert set(EXPECTED) <= set(harness.FAMILIES)
    for entries in EXPECTED.values():
        for entry in entries or ():
            assert {"source", "rule", "doc"} <= entry.keys()


DOCUMENTED_IDS = set(
    re.findall(r"^\| `([a-z-]+)` \|", (ROOT / "docs/engines/index.md").read_text("utf-8"), re.M)
)


def test_every_refusal_is_a_documented_one() -> None:
    """Each refusal names its row in docs/engines/index.md; none is unexplained or a crash."""
    assert {doc for doc, _, _ in harness.DOCUMENTED} <= DOCUMENTED_IDS
    unexplained = [
        f"{family} {e['source']}: {e['rule']} ({e['doc']})"
        for family, entries in EXPECTED.items()
        for e in entries or ()
        if e["doc"] not in DOCUMENTED_IDS
    ]
    assert not unexplained, "\n".join(unexplained)


def test_the_docs_figures_are_todays() -> None:
    text = (ROOT / "docs/engines/index.md").read_text("utf-8")
    shown = text.split("<!-- world-corpus -->\n", 1)[1].split("<!-- /world-corpus -->", 1)[0]
    assert shown == harness.figures_table(), "run scripts/world_corpus table into the docs"


MEANING_CHANGED_ON_PURPOSE = {
    "sqlglot:test_databricks.py:L33": "`stream` quoted, the second try (a keyword otherwise)",
    "sqlglot:test_duckdb.py:L292": "range() bounded at run time by the value-size rule",
    "sqlglot:test_duckdb.py:L300": "range() bounded at run time by the value-size rule",
}


def _expected_tree(sql: str, dialect: str) -> exp.Expr:
    """What the guard should write: the query as parsed, its LIMIT set (wrapped where it
    counts no rows), the calls kept as written where the family says so."""
    engine = _dialect(dialect)
    tree = engine.parse(sql)[0]
    keep_as_written(tree, engine.tokenize(sql), policy_for(dialect).as_written)
    if isinstance(tree, exp.Pivot):
        tree = wrap_uncounted_limit(tree)
    root = tree
    while isinstance(root, exp.Subquery) and not any(
        v for k, v in root.args.items() if k != "this"
    ):
        root = root.this
    if uncounted_limit(root):
        capped = wrap_uncounted_limit(root)
        tree, root = (capped if root is tree else tree), capped
    apply_limit(root, harness.ROW_LIMIT)
    return tree


@pytest.mark.parametrize("family", harness.FAMILIES)
def test_what_passes_keeps_its_meaning(family: str) -> None:
    """The SQL that runs parses to the tree the query was, with the guard's LIMIT: nothing
    renamed, dropped or reordered on the way (what the readback checks, stated for queries
    nobody here wrote)."""
    changed = []
    for r in harness.run_family(family):
        if r["outcome"] != "passed" or r["source"] in MEANING_CHANGED_ON_PURPOSE:
            continue
        engine = _dialect(r["dialect"])
        expected = engine.parse(engine.generate(_expected_tree(r["sql"], r["dialect"])))[0]
        if engine.parse(r["output"])[0] != expected:
            changed.append(f"{r['source']}: {harness._short(r['output'], 160)}")
    assert not changed, "\n".join(changed)
