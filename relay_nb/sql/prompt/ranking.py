"""Which tables a question needs: the :class:`SchemaRanker` protocol and its default.

When a schema does not fit the prompt's budget, the renderer keeps the tables a ranker puts
first and names the rest (the model can still describe them on demand). A ranker is anything
with ``rank(catalog, question)``; pass one as the connector's ``ranker=`` to use, say, an
embedding model the team already runs. The default, :class:`LexicalRanker`, needs no model
and no network, and understands a question that names its data

- by a name or a description: a question word in a table name scores 3, in a column name 1,
  in a comment 0.5; words are folded (plurals, -ing/-ed, case, snake/camel case);
- by a **value** the catalog pass profiled (``dog`` is a value of ``pets.pet_type``): 2;
- by a **prefix** or an inflection (``european`` -> ``Europe``): half;
- by a **synonym** from the built-in glossary (``client`` -> ``customers``, ``nation`` ->
  ``country``, ``dutch`` -> ``Netherlands``; :mod:`~relay_nb.sql.prompt.synonyms`): 0.8;
- with a **typo** (``carr`` -> ``car``; one edit, for words of 4 to 64 letters, only
  when the word itself matches nothing): 0.6;

each weight times how rare the word is in the catalog (a word in every table says little;
in a catalog of thousands of tables, a word more than half of them hold scores only where a
table's name holds it).
Tables joined by a foreign key to a hit get 30% of its score (at most 2), so the junction
and lookup tables a query needs come along. An inverted index per catalog, built once and
cached while the catalog lives, keeps a 1,000-table ranking to a few milliseconds.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
import weakref
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any, Protocol, overload, runtime_checkable

from relay_nb.sql.catalog.model import Catalog, TableInfo
from relay_nb.sql.prompt.synonyms import DEMONYMS, SYNONYM_GROUPS

__all__ = [
    "LexicalRanker",
    "Ranking",
    "SchemaRanker",
    "per_catalog",
    "rank_tables",
    "ranked",
    "search_tables",
]


@runtime_checkable
class SchemaRanker(Protocol):
    """Orders a catalog's tables by how much a question needs them."""

    def rank(self, catalog: Catalog, question: str) -> Sequence[tuple[TableInfo, float]]:
        """Every table of ``catalog``, best first, with a score (0: no evidence at all)."""
        ...


_STOP_WORDS_TEXT = """
    a an the of for in on at by per to from with and or not no is are was were be been
    what which who whom whose how many much show me list give get find tell all each every any
    some our my their its this that these those do does did there than then top most least
    please can could would should i we you it as into over under between about have has had
    where when ever also only both either more less"""
_STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NAME, _VALUE, _COLUMN, _COMMENT = 3.0, 2.0, 1.0, 0.5
_PARTIAL, _SYNONYM, _TYPO = 0.5, 0.8, 0.6
_NEIGHBOUR_SHARE, _NEIGHBOUR_CAP = 0.3, 2.0
_COMMON_SHARE, _COMMON_MIN_TABLES = 0.5, 1_000
"""A word in more than half the tables, and in at least 1,000, ranks by table names only
(see :meth:`_Index.too_common`): smaller catalogs rank every word as before."""


class LexicalRanker:
    """The default ranker (see the module docstring). Each switch turns one reading off, for
    comparison: all four off is the ranking relay_nb had before value profiling."""

    def __init__(
        self,
        *,
        values: bool = True,
        synonyms: bool = True,
        typos: bool = True,
        rarity: bool = True,
    ) -> None:
        self.values = values
        self.synonyms = synonyms
        self.typos = typos
        self.rarity = rarity

    def rank(self, catalog: Catalog, question: str) -> Ranking:
        """Sparse: only the tables a word of the question reaches are scored and sorted;
        the rest follow at 0 in catalog order, lazily (on 10,000 tables, per-table lists for
        every question were most of a warm turn's cost)."""
        index = _index(catalog, values=self.values)
        direct: dict[int, float] = {}
        for term in terms(question):
            rarity = index.rarity(term) if self.rarity else 1.0
            # a word most tables hold tells them apart only by a table's own name
            matches = index.named(term) if index.too_common(term) else self._matches(index, term)
            for position, weight in matches.items():
                direct[position] = direct.get(position, 0.0) + weight * rarity
        bonus: dict[int, float] = {}
        for position, score in direct.items():
            if score > 0:
                for near in index.neighbours.get(position, ()):
                    bonus[near] = bonus.get(near, 0.0) + _NEIGHBOUR_SHARE * score
        scores = {
            position: direct.get(position, 0.0) + min(_NEIGHBOUR_CAP, bonus.get(position, 0.0))
            for position in direct.keys() | bonus.keys()
        }
        scored = sorted((i for i, score in scores.items() if score > 0),
                        key=lambda i: (-scores[i], i))  # fmt: skip
        tables = catalog.tables
        return Ranking([(tables[i], scores[i]) for i in scored], set(scored), tables)

    def _matches(self, index: _Index, term: str) -> dict[int, float]:
        """Table position -> the best weight any reading of ``term`` earns there."""
        best = dict(index.postings.get(term, {}))
        found = bool(best)
        if len(term) >= 4:
            for related in index.prefix_related(term):
                found = True
                _merge(best, index.postings[related], _PARTIAL)
        if self.synonyms:
            for synonym in _glossary().get(term, ()):
                _merge(best, index.postings.get(synonym, {}), _SYNONYM)
        if self.typos and not found and len(term) >= 4:
            for near in index.one_edit(term):
                _merge(best, index.postings[near], _TYPO)
        return best

    def __repr__(self) -> str:
        return "LexicalRanker()"


DEFAULT_RANKER = LexicalRanker()


class Ranking(Sequence[tuple[TableInfo, float]]):
    """Every table of a catalog, best first: the scored ones, then the rest at 0 in catalog
    order. Iterating is lazy, so a reader that stops early (a render shows a few dozen of
    10,000 tables) never walks the tail; indexing or ``len`` builds the whole list once."""

    __slots__ = ("_all", "_scored", "_tables", "_taken")

    def __init__(
        self,
        scored: list[tuple[TableInfo, float]],
        taken: set[int],
        tables: Sequence[TableInfo],
    ) -> None:
        self._scored = scored
        self._taken = taken
        """The catalog positions of the scored tables, which the tail skips."""
        self._tables = tables
        self._all: list[tuple[TableInfo, float]] | None = None

    def __iter__(self) -> Iterator[tuple[TableInfo, float]]:
        yield from self._scored
        taken = self._taken
        for position, table in enumerate(self._tables):
            if position not in taken:
                yield table, 0.0

    def __len__(self) -> int:
        return len(self._tables)

    def __eq__(self, other: object) -> bool:
        """Equal to the same pairs as a list (``rank`` returned lists before)."""
        if isinstance(other, Ranking | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @overload
    def __getitem__(self, index: int) -> tuple[TableInfo, float]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[TableInfo, float]]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if self._all is None:
            self._all = list(self)
        return self._all[index]


def rank_tables(
    catalog: Catalog, question: str, ranker: SchemaRanker | None = None
) -> list[tuple[TableInfo, float]]:
    """Tables by relevance to ``question``, best first; ties keep catalog order."""
    return list(ranked(catalog, question, ranker))


def ranked(
    catalog: Catalog, question: str, ranker: SchemaRanker | None = None
) -> Sequence[tuple[TableInfo, float]]:
    """What ``ranker`` (default: :class:`LexicalRanker`) returns, unlisted: iterate it to
    read only as far as needed."""
    return (ranker or DEFAULT_RANKER).rank(catalog, question)


def search_tables(
    catalog: Catalog, query: str, limit: int = 10, ranker: SchemaRanker | None = None
) -> list[TableInfo]:
    """The ``limit`` most relevant tables for ``query`` (only those that match at all)."""
    found = (table for table, score in ranked(catalog, query, ranker) if score > 0)
    return list(itertools.islice(found, limit))


def _merge(best: dict[int, float], posting: dict[int, float], factor: float) -> None:
    for position, weight in posting.items():
        if weight * factor > best.get(position, 0.0):
            best[position] = weight * factor


class _Index:
    """Term -> tables postings (best field per table), the vocabulary, FK neighbours."""

    def __init__(self, catalog: Catalog, *, values: bool) -> None:
        self.postings: dict[str, dict[int, float]] = {}
        self.tables = max(1, len(catalog.tables))
        positions: dict[tuple[str, str], int] = {}
        by_column: dict[str, list[dict[int, float]]] = {}
        """Column name -> the postings its terms go to (warehouses repeat their columns)."""
        self.neighbours: dict[int, set[int]] = {}
        """Table position -> the tables a foreign key joins it to (most have none)."""
        for position, table in enumerate(catalog.tables):
            self._add(position, table, by_column, values=values)
            for fk in table.foreign_keys:
                if not positions:  # only a catalog with foreign keys needs them
                    positions.update(
                        (_key(t.schema_name, t.name), i) for i, t in enumerate(catalog.tables)
                    )
                target = positions.get(_key(fk.ref_schema, fk.ref_table))
                if target is not None and target != position:
                    self.neighbours.setdefault(position, set()).add(target)
                    self.neighbours.setdefault(target, set()).add(position)
        self.vocabulary = sorted(t for t in self.postings if len(t) >= 4)
        self.longest = max(map(len, self.postings), default=0)
        self.known = frozenset(self.vocabulary)
        self._named: dict[str, dict[int, float]] = {}
        self._near: dict[str, list[str]] = {}

    def _add(
        self,
        position: int,
        table: TableInfo,
        by_column: dict[str, list[dict[int, float]]],
        *,
        values: bool,
    ) -> None:
        """A table's terms, each at the best weight its fields give it (a 10,000 x 20
        catalog is 200,000 columns: this loop is the index)."""
        postings = self.postings
        for term in name_terms(table.name):
            postings.setdefault(term, {}).setdefault(position, _NAME)
        shown: list[str] = []
        comments = [table.comment] if table.comment else []
        for column in table.columns:
            targets = by_column.get(column.name)
            if targets is None:
                targets = by_column[column.name] = [
                    postings.setdefault(term, {}) for term in name_terms(column.name)
                ]
            for posting in targets:
                posting.setdefault(position, _COLUMN)  # a name's 3 was set first
            if column.comment:
                comments.append(column.comment)
            if values and column.profile is not None and column.profile.values:
                shown.extend(column.profile.values)
        for term in terms(" ".join(shown)) if shown else ():
            posting = postings.setdefault(term, {})
            posting[position] = max(posting.get(position, 0.0), _VALUE)
        for term in terms(" ".join(comments)) if comments else ():
            postings.setdefault(term, {}).setdefault(position, _COMMENT)

    def too_common(self, term: str) -> bool:
        """A word most tables of a large catalog hold (``id``, a column every table has)
        cannot tell them apart by their columns, and scoring it costs a pass over thousands
        of tables for each question: only the tables it names are scored (:meth:`named`)."""
        found = len(self.postings.get(term, ()))
        return found >= _COMMON_MIN_TABLES and found > _COMMON_SHARE * self.tables

    def named(self, term: str) -> dict[int, float]:
        """The tables whose name holds ``term``: its name matches only, kept per word."""
        if term not in self._named:
            self._named[term] = {
                position: weight
                for position, weight in self.postings.get(term, {}).items()
                if weight >= _NAME
            }
        return self._named[term]

    def rarity(self, term: str) -> float:
        """1 for a word in one table, falling towards 0.5 for a word in every table."""
        tables = len(self.postings.get(term, ())) or 1
        return 0.5 + 0.5 * math.log(1 + self.tables / tables) / math.log(1 + self.tables)

    def prefix_related(self, term: str) -> list[str]:
        """Vocabulary words that extend ``term`` or that ``term`` extends (4+ letters)."""
        # prefixes no longer than the longest word; the words after ``term`` in sorted
        # order read in place (a slice would copy the vocabulary for every question word)
        longest = min(len(term), self.longest + 1)
        related = [term[:k] for k in range(4, longest) if term[:k] in self.known]
        vocabulary = self.vocabulary
        for index in range(bisect.bisect_right(vocabulary, term), len(vocabulary)):
            if not vocabulary[index].startswith(term):
                break
            related.append(vocabulary[index])
        return related

    def one_edit(self, term: str) -> list[str]:
        """Vocabulary words one edit (insert, delete, substitute, swap) from ``term``.

        Every string one edit away is generated and looked up: a few hundred set lookups a
        word, where a deletion index over a 10,000-table vocabulary cost 0.3 s to build.
        """
        if len(term) > self.longest + 1 or len(term) > _TYPO_CHARS:
            return []  # no word is one edit away, or too long a word to try: 72 edits a letter
        near = self._near.get(term)
        if near is None:
            postings = self.postings
            found = {w for w in _edits(term) if w in postings and len(w) >= 3 and not w.isdigit()}
            found.discard(term)
            near = sorted(found)
            if len(self._near) < _NEAR_KEPT:  # an analyst's words recur, question to question
                self._near[term] = near
        return near


_TYPO_CHARS = 64
"""Longer words are not tried for typos: each letter is 72 strings one edit away, each as
long as the word (a 6,000-character word was 2.7 GB)."""
_NEAR_KEPT = 4_096
"""Words whose one-edit neighbours an index keeps."""
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
"""Every character a folded word holds (:data:`_WORD`)."""


def _edits(word: str) -> set[str]:
    """Every string one insertion, deletion, substitution or adjacent swap from ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = {a + b[1:] for a, b in splits if b}
    swaps = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    replaces = {a + c + b[1:] for a, b in splits if b for c in _ALPHABET}
    inserts = {a + c + b for a, b in splits for c in _ALPHABET}
    return deletes | swaps | replaces | inserts


@lru_cache(maxsize=1)
def _glossary() -> dict[str, frozenset[str]]:
    """Folded word -> the folded words it may stand for."""
    glossary: dict[str, set[str]] = {}
    for group in SYNONYM_GROUPS:
        folded = {_fold(word) for word in group}
        for word in folded:
            glossary.setdefault(word, set()).update(folded - {word})
    for people, places in DEMONYMS.items():
        glossary.setdefault(_fold(people), set()).update(_fold(p) for p in places)
    return {word: frozenset(others) for word, others in glossary.items()}


def _key(schema: str | None, name: str) -> tuple[str, str]:
    return ((schema or "").lower(), name.lower())


_INDEXES: dict[tuple[int, bool], tuple[weakref.ref, Any]] = {}


def _index(catalog: Catalog, *, values: bool = True) -> _Index:
    return per_catalog(catalog, _INDEXES, lambda: _Index(catalog, values=values), values)


def per_catalog(
    catalog: Catalog, cache: dict[Any, tuple[weakref.ref, Any]], build, variant: Any = None
) -> Any:
    """Derived data cached by catalog identity (catalogs are frozen) until it is collected.

    Keyed by ``id`` with a weak reference to check it, not by the catalog itself: hashing a
    frozen 20,000-column model on every lookup would cost more than the cache saves.
    """
    key = (id(catalog), variant)
    cached = cache.get(key)
    if cached is not None and cached[0]() is catalog:
        return cached[1]
    value = build()
    cache[key] = (weakref.ref(catalog, lambda _ref: cache.pop(key, None)), value)
    return value


def terms(text: str) -> set[str]:
    """The folded words of ``text`` that can name data (stop words and single letters out)."""
    return {_fold(w) for w in _words(text) if w not in _STOP_WORDS and len(w) > 1}


def _words(text: str) -> list[str]:
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


@lru_cache(maxsize=65536)
def _fold(word: str) -> str:
    """A light stemmer: the same fold on both sides is all lexical matching needs."""
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch")):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            word = word[: -len(suffix)] + replacement
            break
    else:
        if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
            word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


@lru_cache(maxsize=65536)
def name_terms(name: str) -> frozenset[str]:
    """The folded words of an identifier (``customerOrders`` -> customer, order)."""
    return frozenset(_fold(w) for w in _words(name))
