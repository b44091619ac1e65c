"""Schema linking on a real SQLite database whose questions name their tables by value,
synonym, typo and region: each must reach a tight prompt, and (so the test can fail) the
ranking before value profiling must miss it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import ConfigurationError
from relay_nb.sql.catalog.model import Catalog, TableInfo
from relay_nb.sql.prompt.ranking import LexicalRanker, SchemaRanker, rank_tables

BEFORE = LexicalRanker(values=False, synonyms=False, typos=False, rarity=False)
# decoys share the questions' ordinary words (name, type, status, country …)
_DECOYS = [
    f"CREATE TABLE {n}_{s} (id INTEGER PRIMARY KEY, name TEXT, type TEXT, status TEXT, "
    "country TEXT, amount NUMERIC, language TEXT, owner TEXT)"
    for n in ("asset", "claim", "ticket", "policy", "vessel", "permit", "survey", "grant")
    for s in ("log", "status", "history", "detail", "archive")
]
_SCHEMA = [
    "CREATE TABLE students (id INTEGER PRIMARY KEY, first_name TEXT, age INTEGER)",
    "CREATE TABLE pets (id INTEGER PRIMARY KEY, pet_type TEXT, weight NUMERIC)",
    "CREATE TABLE has_pet (student_id INTEGER REFERENCES students (id), "
    "pet_id INTEGER REFERENCES pets (id))",
    "CREATE TABLE continents (id INTEGER PRIMARY KEY, continent TEXT)",
    "CREATE TABLE nations (id INTEGER PRIMARY KEY, title TEXT, "
    "continent_id INTEGER REFERENCES continents (id))",
    "CREATE TABLE spoken (nation_id INTEGER REFERENCES nations (id), tongue TEXT)",
    "CREATE TABLE car_makers (id INTEGER PRIMARY KEY, maker TEXT, full_name TEXT)",
    "CREATE TABLE clients (id INTEGER PRIMARY KEY, full_name TEXT, segment TEXT)",
    *_DECOYS,
]
_ROWS = {
    "pets": ["(1, 'dog', 3)", "(2, 'cat', 4)", "(3, 'bird', 1)"],
    "continents": ["(1, 'Europe')", "(2, 'Asia')", "(3, 'Africa')"],
    "spoken": ["(1, 'English')", "(2, 'Dutch')", "(3, 'French')"],
    "clients": ["(1, 'Ada', 'corporate')", "(2, 'Bo', 'consumer')"],
}


@pytest.fixture(scope="module")
def catalogs(tmp_path_factory) -> tuple[Catalog, Catalog]:
    """(profiled, unprofiled) catalogs of the same database."""
    path: Path = tmp_path_factory.mktemp("ranking") / "linking.db"
    with sqlite3.connect(path) as conn:
        for statement in _SCHEMA:
            conn.execute(statement)
        for table, rows in _ROWS.items():
            conn.execute(f"INSERT INTO {table} VALUES {', '.join(rows)}")
    now = SQLConnector("now", f"sqlite:///{path}")
    before = SQLConnector("before", f"sqlite:///{path}", profile=False)
    try:
        return now.catalog, before.catalog
    finally:
        now.close()
        before.close()


CASES = [
    ("How many dogs are there?", "pets", 1),  # a value
    ("Who speaks Dutch?", "spoken", 1),  # a value
    ("Which cities are European?", "continents", 1),  # a region of the data
    ("list the carr makrs", "car_makers", 1),  # typos
    ("How many customers are there?", "clients", 1),  # a synonym
]


@pytest.mark.parametrize(("question", "target", "within"), CASES)
def test_tables_named_by_value_synonym_typo_or_region_lead_the_ranking(
    catalogs, question, target, within
):
    now, before = catalogs
    ranked = [t.name for t, score in rank_tables(now, question) if score > 0]
    assert target in ranked[:within]
    old = dict((t.name, score) for t, score in rank_tables(before, question, BEFORE))
    assert old[target] == 0  # the ranking before profiling had no evidence for it


def test_a_tight_prompt_keeps_the_value_named_tables_with_their_values(catalogs):
    from relay_nb.sql.prompt.render import render_catalog

    now, _ = catalogs
    rendered = render_catalog(now, max_tokens=120, question="students who have a dog")
    assert {"pets", "has_pet"} <= set(rendered.shown)
    assert "pet_type text? ∈ {" in rendered.text and "'dog'" in rendered.text
    assert len(rendered.omitted) > 30


def test_words_in_every_table_weigh_less_than_rare_ones(catalogs):
    now, _ = catalogs
    # "status" is a column of 40 decoys; "maker" of one table
    ranked = rank_tables(now, "maker status")
    assert ranked[0][0].name == "car_makers"


def test_a_plugged_in_ranker_orders_the_prompt(tmp_path):
    """Any object with rank(catalog, question) (an embedding ranker, say) decides."""

    class PetsFirst:
        def rank(self, catalog: Catalog, question: str) -> list[tuple[TableInfo, float]]:
            return sorted(
                ((t, float(t.name == "pets")) for t in catalog.tables), key=lambda p: -p[1]
            )

    path = tmp_path / "two.db"
    with sqlite3.connect(path) as conn:
        for statement in _SCHEMA[:3]:
            conn.execute(statement)
    assert isinstance(PetsFirst(), SchemaRanker)
    plugged = SQLConnector("two", f"sqlite:///{path}", ranker=PetsFirst())
    default = SQLConnector("two", f"sqlite:///{path}")
    try:
        text = plugged.prompt_context(max_tokens=75, question="students")
        assert "students(" not in text and "pets(" in text
        text = default.prompt_context(max_tokens=75, question="students")
        assert "students(" in text and "pets(" not in text
    finally:
        plugged.close()
        default.close()
    with pytest.raises(ConfigurationError, match="ranker must have a rank"):
        SQLConnector("bad", f"sqlite:///{path}", ranker="embeddings")


def test_a_word_most_tables_hold_still_finds_the_table_it_names() -> None:
    """In a catalog of 1,200 tables that all hold customer_id, "customer" no longer scores
    every table by its column, but the table named for it still comes first."""
    from relay_nb.sql.catalog.model import Catalog, ColumnInfo, TableInfo

    facts = [
        TableInfo(
            schema_name=None,
            name=f"fact_{i:04d}",
            columns=(ColumnInfo(name="customer_id", type="int"), ColumnInfo(name="x", type="int")),
        )
        for i in range(1_200)
    ]
    named = TableInfo(
        schema_name=None,
        name="retail_customer",
        columns=(ColumnInfo(name="customer_id", type="int"), ColumnInfo(name="spend", type="int")),
    )
    catalog = Catalog(dialect="sqlite", default_schema=None, tables=(*facts, named))
    ranked = LexicalRanker().rank(catalog, "which customer spent the most")
    assert ranked[0][0].name == "retail_customer" and ranked[0][1] > 0
    assert ranked[1][1] < ranked[0][1]


# -- a ranking read lazily (issue 22) ---------------------------------------------------------


def _wide_catalog(tables: int) -> Catalog:
    """Look-alike tables with a few distinct words each, as a warehouse's are."""
    from relay_nb.sql.catalog.model import ColumnInfo

    subjects = ("invoice", "shipment", "supplier", "campaign", "ticket", "warehouse", "refund")
    return Catalog(
        dialect="sqlite",
        default_schema=None,
        tables=tuple(
            TableInfo(
                schema_name=None,
                name=f"{subjects[i % len(subjects)]}_{i:05d}",
                columns=(
                    ColumnInfo(name="id", type="INTEGER", nullable=False, primary_key=True),
                    ColumnInfo(name=f"{subjects[(i * 3) % len(subjects)]}_code", type="TEXT"),
                    ColumnInfo(name="amount" if i % 2 else "created_at", type="NUMERIC(12,2)"),
                ),
            )
            for i in range(tables)
        ),
    )


def test_the_default_ranking_is_the_same_list_read_lazily() -> None:
    """Iterating, indexing and len() agree; the scored tables lead in score order and the
    rest follow in catalog order, each table once."""
    catalog = _wide_catalog(700)
    ranking = LexicalRanker().rank(catalog, "refund amount of invoice 00042")
    listed = list(ranking)
    assert len(ranking) == len(listed) == 700
    assert [ranking[i] for i in range(700)] == listed and ranking[:3] == listed[:3]
    assert len({id(t) for t, _ in listed}) == 700
    scores = [s for _, s in listed]
    scored = [s for s in scores if s > 0]
    assert scored == sorted(scored, reverse=True) and scores[len(scored) :] == [0.0] * (
        700 - len(scored)
    )
    tail = [t for t, s in listed if s == 0]
    assert tail == [t for t in catalog.tables if t in tail]  # catalog order
    assert listed[0][0].name == "invoice_00042"
    assert rank_tables(catalog, "refund amount of invoice 00042") == listed


def _one_edit_apart(a: str, b: str) -> bool:
    """Damerau-Levenshtein distance exactly 1, the slow and obvious way."""
    if a == b:
        return False
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        rows[i][0] = i
    for j in range(len(b) + 1):
        rows[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)] == 1


def test_typo_neighbours_are_every_vocabulary_word_one_edit_away() -> None:
    """The generated edits find exactly what a scan of the vocabulary finds."""
    import random

    from relay_nb.sql.prompt.ranking import _index

    catalog = _wide_catalog(300)
    index = _index(catalog)
    words = [w for w in index.postings if len(w) >= 3 and not w.isdigit()]
    rng = random.Random(22)
    probes = ["shipmnet", "supplir", "invoce", "ammount", "warehose", "refnd", "tickte", "code"]
    for word in (rng.choice(words) for _ in range(40)):  # and one- and two-edit variants
        i = rng.randrange(len(word))
        probes += [word[:i] + word[i + 1 :], word[:i] + "x" + word[i:], word[::-1][:6]]
    for probe in probes:
        expected = sorted(w for w in words if _one_edit_apart(w, probe))
        assert index.one_edit(probe) == expected, probe


def test_a_very_long_word_is_not_tried_for_typos(monkeypatch) -> None:
    """Each letter of a word is 72 strings one edit away, each as long as the word: a
    6,000-character word (a pasted blob, a model's describe search) is never expanded."""
    from relay_nb.sql.prompt import ranking
    from relay_nb.sql.prompt.ranking import search_tables

    tried: list[int] = []
    real_edits = ranking._edits
    monkeypatch.setattr(ranking, "_edits", lambda word: tried.append(len(word)) or real_edits(word))
    catalog = _wide_catalog(50)
    assert search_tables(catalog, "q7" * 3_000, 5) == []
    assert search_tables(catalog, "shipmnet", 5)[0].name.startswith("shipment")
    assert tried and max(tried) <= 64
