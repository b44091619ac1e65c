"""The catalog as compact prompt context, plus lexical table ranking, describe and search.

A model writes better SQL from a terse, complete schema than from ``CREATE TABLE`` dumps or
sample rows, and tokens spent on the schema are tokens not spent on the conversation. One line
per table, about five tokens per column before comments::

    orders(id int pk, customer_id int → customers.id, total numeric(10,2)? "EUR") -- "Header"

``?`` marks a nullable column, ``pk`` the primary key, ``→`` a foreign key; views are prefixed
``view`` (their columns carry no ``?``: the catalog cannot know). Long type names the databases
also accept in short form are shortened (``integer`` -> ``int``, ``boolean`` -> ``bool``).

Under ``max_tokens`` the rendering degrades in steps, cheapest loss first: column comments go,
then table comments, and only then whole tables: they are ranked by lexical relevance to the
question, the best that fit are kept, and one closing line names the rest and points the model
at the describe tool, which serves :func:`describe_tables` / :func:`search_tables` (comments
included). :func:`rank_tables` is shared with the context resolver.
"""

from __future__ import annotations

import bisect
import difflib
import math
import re
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.sql.schema import Catalog, ColumnInfo, ForeignKey, TableInfo
from relay_nb.runtime.types import estimate_tokens

__all__ = [
    "LEGEND",
    "RenderedSchema",
    "describe_tables",
    "estimate_tokens",
    "rank_tables",
    "render_catalog",
    "search_tables",
]

LEGEND = "-- ? marks nullable columns"
_COLUMN_COMMENT_CHARS = 48
_TABLE_COMMENT_CHARS = 64
_SHORT_TYPES = ((re.compile(r"^integer\b"), "int"), (re.compile(r"^boolean\b"), "bool"))


class RenderedSchema(BaseModel):
    """The rendered text and what it covers, so callers can report omissions honestly."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    shown: tuple[str, ...]
    """Qualified names of the tables rendered, in catalog order."""
    omitted: tuple[str, ...]
    """Qualified names of the tables left out for the budget, most relevant first."""
    token_estimate: int
    """``ceil(len(text) / 4)``: an estimate, not a provider count."""


# -- rendering --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    """One table's line in pieces, so each degradation step is a join, not a re-render.

    ``pieces`` are column (and composite-FK) entries as (before, column comment, after): the
    comment sits between the column's structure and its opt-in sample values.
    """

    head: str
    pieces: tuple[tuple[str, str, str], ...]
    table_comment: str

    def text(self, *, table_comments: bool, column_comments: bool) -> str:
        inner = ", ".join(
            f"{before}{comment}{after}" if column_comments else f"{before}{after}"
            for before, comment, after in self.pieces
        )
        return f"{self.head}({inner}){self.table_comment if table_comments else ''}"

    def extra(self, *, table_comments: bool, column_comments: bool) -> int:
        """Characters the comments add to the bare line."""
        extra = len(self.table_comment) if table_comments else 0
        return extra + (sum(len(c) for _, c, _ in self.pieces) if column_comments else 0)


_STEPS = ((True, True), (True, False), (False, False))
"""(table comments, column comments): what each degradation step keeps."""


def render_catalog(
    catalog: Catalog,
    *,
    max_tokens: int | None = None,
    question: str | None = None,
    sample_values: Mapping[str, Sequence[str]] | None = None,
    sample_value_chars: int = 40,
    describe_tool: str | None = None,
) -> RenderedSchema:
    """Render ``catalog`` in at most ``max_tokens`` (estimated) when given.

    ``sample_values`` maps ``table.column`` (or ``schema.table.column``) to example values; each
    column's examples are capped at ``sample_value_chars`` characters in total (they are opt-in,
    so they survive the degradation steps). ``describe_tool`` is the tool name the omission line
    tells the model to call (the connector's ``describe_<id>``).
    """
    if sample_values:
        parts, bare = _lines(catalog, sample_values, sample_value_chars)
    else:  # the common case: per catalog, computed once
        parts, bare = _per_catalog(catalog, _LINES, lambda: _lines(catalog, {}, 0))
    bare_chars = len(LEGEND) + sum(len(line) + 1 for line in bare.values())
    for table_comments, column_comments in _STEPS:
        flags = {"table_comments": table_comments, "column_comments": column_comments}
        chars = bare_chars + sum(part.extra(**flags) for part in parts.values())
        if max_tokens is None or math.ceil(chars / 4) <= max_tokens:
            lines = [part.text(**flags) for part in parts.values()]
            return _result("\n".join([LEGEND, *lines]), tuple(parts), ())
    return _render_ranked(catalog, bare, max_tokens, question, describe_tool)


def _lines(
    catalog: Catalog, samples: Mapping[str, Sequence[str]], sample_chars: int
) -> tuple[dict[str, _Line], dict[str, str]]:
    """Every table's pieces, and its bare line (no comments), by qualified name."""
    parts = {t.qualified_name: _line(catalog, t, samples, sample_chars) for t in catalog.tables}
    bare = {n: p.text(table_comments=False, column_comments=False) for n, p in parts.items()}
    return parts, bare


def _render_ranked(
    catalog: Catalog,
    lines: Mapping[str, str],
    max_tokens: int,
    question: str | None,
    describe_tool: str | None,
) -> RenderedSchema:
    """The most relevant tables that fit, then one line naming the rest."""
    budget_chars = max_tokens * 4
    ranked = [t for t, _ in rank_tables(catalog, question or "")]
    names = {t.qualified_name: _display_name(catalog, t) for t in catalog.tables}
    reserve = min(len(_omitted_line(list(names.values()), describe_tool)), budget_chars // 4)
    shown = _pack(ranked, lines, budget_chars - len(LEGEND) - 1 - reserve)
    omitted = [t.qualified_name for t in ranked if t.qualified_name not in shown]
    body = [LEGEND, *(line for name, line in lines.items() if name in shown)]
    room = budget_chars - len("\n".join(body)) - 1
    body.append(_omitted_line([names[n] for n in omitted], describe_tool, room))
    return _result("\n".join(body), tuple(n for n in lines if n in shown), tuple(omitted))


def _result(text: str, shown: tuple[str, ...], omitted: tuple[str, ...]) -> RenderedSchema:
    return RenderedSchema(
        text=text, shown=shown, omitted=omitted, token_estimate=estimate_tokens(text)
    )


def _pack(ranked: list[TableInfo], lines: Mapping[str, str], room: int) -> set[str]:
    """Greedy by rank; a table too large for what is left is skipped, smaller ones may fit."""
    shown: set[str] = set()
    for table in ranked:
        cost = len(lines[table.qualified_name]) + 1
        if cost <= room:
            shown.add(table.qualified_name)
            room -= cost
    return shown


def _omitted_line(names: Sequence[str], describe_tool: str | None, room: int | None = None) -> str:
    """Name as many omitted tables (most relevant first) as fit in ``room`` characters.

    Without ``room``, every name: that length is what packing reserves (at most a quarter of
    the budget), so small schemas get all their omissions named.
    """
    tail = f" (call {describe_tool or 'the describe tool'} for their columns)"
    head = f"-- {len(names)} more tables"
    limit = room if room is not None else sum(len(n) + 2 for n in names) + len(head) + len(tail)
    listed: list[str] = []
    length = len(head) + 2 + len(tail)
    for index, name in enumerate(names):
        rest = len(names) - index - 1
        more = len(f", … {rest} more") if rest else 0
        if length + len(name) + more > limit:
            break
        length += len(name) + 2
        listed.append(name)
    if not listed:
        return head + tail
    unnamed = len(names) - len(listed)
    return f"{head}: {', '.join(listed)}{f', … {unnamed} more' if unnamed else ''}{tail}"


def _line(
    catalog: Catalog,
    table: TableInfo,
    samples: Mapping[str, Sequence[str]],
    sample_chars: int,
) -> _Line:
    single_fk = {fk.columns[0]: fk for fk in table.foreign_keys if len(fk.columns) == 1}
    pieces = [
        _column_piece(catalog, table, column, single_fk.get(column.name), samples, sample_chars)
        for column in table.columns
    ]
    pieces += [
        (
            f"({', '.join(_ident(c, catalog.dialect) for c in fk.columns)}) → "
            f"{_fk_target(catalog, table, fk)}",
            "",
            "",
        )
        for fk in table.foreign_keys
        if len(fk.columns) > 1
    ]
    prefix = "view " if table.kind == "view" else ""
    comment = f" -- {_quoted(table.comment, _TABLE_COMMENT_CHARS)}" if table.comment else ""
    return _Line(f"{prefix}{_display_name(catalog, table)}", tuple(pieces), comment)


def _column_piece(
    catalog: Catalog,
    table: TableInfo,
    column: ColumnInfo,
    fk: ForeignKey | None,
    samples: Mapping[str, Sequence[str]],
    sample_chars: int,
) -> tuple[str, str, str]:
    text = _ident(column.name, catalog.dialect)
    if column.type:
        text += f" {_short_type(column.type)}"
    if column.nullable and table.kind != "view":
        text += "?"
    if column.primary_key:
        text += " pk"
    if fk is not None:
        text += f" → {_fk_target(catalog, table, fk)}"
    comment = f" {_quoted(column.comment, _COLUMN_COMMENT_CHARS)}" if column.comment else ""
    values = _samples_for(samples, table, column) if samples else ()
    after = f" e.g. {_sample_text(values, sample_chars)}" if values else ""
    return text, comment, after


@lru_cache(maxsize=1024)
def _short_type(type_: str) -> str:
    for pattern, short in _SHORT_TYPES:
        type_ = pattern.sub(short, type_)
    return type_


def _fk_target(catalog: Catalog, table: TableInfo, fk: ForeignKey) -> str:
    """``customers.id``; schema-qualified only when the target lives elsewhere."""
    ref = _ident(fk.ref_table, catalog.dialect)
    if fk.ref_schema not in (table.schema_name, catalog.default_schema) and fk.ref_schema:
        ref = f"{_ident(fk.ref_schema, catalog.dialect)}.{ref}"
    columns = [_ident(c, catalog.dialect) for c in fk.ref_columns]
    return f"{ref}.{columns[0]}" if len(columns) == 1 else f"{ref}({', '.join(columns)})"


def _display_name(catalog: Catalog, table: TableInfo) -> str:
    """Unqualified in the default schema (the way queries usually name it), else qualified."""
    name = _ident(table.name, catalog.dialect)
    if table.schema_name is None or table.schema_name == catalog.default_schema:
        return name
    return f"{_ident(table.schema_name, catalog.dialect)}.{name}"


def _quoted(text: str, limit: int) -> str:
    text = " ".join(text.split()).replace('"', "'")
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return f'"{text}"'


def _samples_for(
    sample_values: Mapping[str, Sequence[str]], table: TableInfo, column: ColumnInfo
) -> Sequence[str]:
    """Values keyed ``schema.table.column`` or ``table.column``."""
    for key in (f"{table.qualified_name}.{column.name}", f"{table.name}.{column.name}"):
        if key in sample_values:
            return sample_values[key]
    return ()


def _sample_text(values: Sequence[str], cap: int) -> str:
    """SQL literals with whitespace collapsed, ``cap`` characters in all (the first is cut).

    Values are data, not instructions: collapsing newlines keeps each on the column's line,
    and quoting them as literals shows the model exactly how to write them back in SQL.
    """
    rendered: list[str] = []
    used = 0
    for value in values:
        literal = "'" + " ".join(str(value).split()).replace("'", "''") + "'"
        if used + len(literal) > cap:
            if not rendered:
                rendered.append(literal[: max(1, cap - 2)] + "…'")
            break
        rendered.append(literal)
        used += len(literal) + 1
    return ",".join(rendered)


# -- identifiers ------------------------------------------------------------------------------

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED_WORDS = """
    all analyse analyze and any array as asc asymmetric authorization between binary both
    case cast check collate collation column concurrently constraint create cross current_catalog
    current_date current_role current_schema current_time current_timestamp current_user default
    deferrable desc distinct do else end except false fetch for foreign freeze from full grant
    group having ilike in initially inner intersect into is isnull join lateral leading left like
    limit localtime localtimestamp natural not notnull null offset on only or order outer
    overlaps placing primary references returning right select session_user set similar some
    symmetric system_user table tablesample then to trailing true union unique user using
    variadic verbose when where window with"""
_RESERVED = frozenset(_RESERVED_WORDS.split())


@lru_cache(maxsize=65536)
def _ident(name: str, dialect: str) -> str:
    """``name`` as a query must spell it: quoted when reserved, unusual or case-folded away."""
    if _PLAIN.fullmatch(name) and name.lower() not in _reserved_words(dialect):
        folds = _case_folding(dialect)
        if folds is None or name == folds(name):
            return name
    from sqlglot import exp

    return exp.to_identifier(name, quoted=True).sql(dialect=dialect)


@lru_cache(maxsize=32)
def _reserved_words(dialect: str) -> frozenset[str]:
    from sqlglot.dialects.dialect import Dialect

    try:
        extra = Dialect.get_or_raise(dialect).generator_class.RESERVED_KEYWORDS
    except (ValueError, AttributeError):
        extra = set()
    return _RESERVED | {w.lower() for w in extra}


def _case_folding(dialect: str) -> Callable[[str], str] | None:
    """How the dialect folds unquoted names (None: it matches them case-insensitively)."""
    if dialect in ("postgres", "redshift"):
        return str.lower
    if dialect in ("snowflake", "oracle"):
        return str.upper
    return None


# -- ranking ----------------------------------------------------------------------------------

_STOP_WORDS_TEXT = """
    a an the of for in on at by per to from with and or not no is are was were be been
    what which who whom whose how many much show me list give get find tell all each every any
    some our my their its this that these those do does did there than then top most least
    please can could would should i we you it as into over under between about"""
_STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WEIGHTS = (3.0, 1.0, 0.5)
"""Score of a question word found in a table name, a column name, a comment."""
_PARTIAL = 0.5
_NEIGHBOUR_SHARE, _NEIGHBOUR_CAP = 0.3, 2.0


def rank_tables(catalog: Catalog, question: str) -> list[tuple[TableInfo, float]]:
    """Tables by lexical relevance to ``question``, best first; ties keep catalog order.

    A question word matching a table-name word scores 3, a column-name word 1, a comment word
    0.5, a prefix match (4+ letters) half of that; words are folded (plurals, -ing/-ed, case,
    snake/camel case). Tables joined by a foreign key to a hit get 30% of its score (at most
    2), so the junction and lookup tables a query needs come along with the tables it names.
    An inverted index per catalog (built once, cached while the catalog lives) keeps a
    1,000-table ranking to a few milliseconds.
    """
    index = _index(catalog)
    direct = [0.0] * len(catalog.tables)
    for term in _terms(question):
        for position, weight in index.matches(term).items():
            direct[position] += weight
    bonus = [0.0] * len(direct)
    for position, score in enumerate(direct):
        if score > 0:
            for near in index.neighbours[position]:
                bonus[near] += _NEIGHBOUR_SHARE * score
    scores = [d + min(_NEIGHBOUR_CAP, b) for d, b in zip(direct, bonus, strict=True)]
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [(catalog.tables[i], scores[i]) for i in order]


def search_tables(catalog: Catalog, query: str, limit: int = 10) -> list[TableInfo]:
    """The ``limit`` most relevant tables for ``query`` (only those that match at all)."""
    return [table for table, score in rank_tables(catalog, query) if score > 0][:limit]


class _Index:
    """Term -> tables postings (best field per table), the vocabulary, FK neighbours."""

    def __init__(self, catalog: Catalog) -> None:
        self.postings: dict[str, dict[int, float]] = {}
        positions = {_key(t.schema_name, t.name): i for i, t in enumerate(catalog.tables)}
        self.neighbours: list[set[int]] = [set() for _ in catalog.tables]
        for position, table in enumerate(catalog.tables):
            self._add(position, table)
            for fk in table.foreign_keys:
                target = positions.get(_key(fk.ref_schema, fk.ref_table))
                if target is not None and target != position:
                    self.neighbours[position].add(target)
                    self.neighbours[target].add(position)
        self.vocabulary = sorted(t for t in self.postings if len(t) >= 4)
        self.known = frozenset(self.vocabulary)

    def _add(self, position: int, table: TableInfo) -> None:
        comments = " ".join(filter(None, [table.comment, *(c.comment for c in table.columns)]))
        fields = (
            _name_terms(table.name),
            frozenset().union(*(_name_terms(c.name) for c in table.columns)),
            _terms(comments),
        )
        for weight, terms in zip(_WEIGHTS, fields, strict=True):
            for term in terms:
                posting = self.postings.setdefault(term, {})
                posting[position] = max(posting.get(position, 0.0), weight)

    def matches(self, term: str) -> dict[int, float]:
        """Table position -> best weight for ``term``: exact, else a prefix match at half."""
        best = dict(self.postings.get(term, {}))
        if len(term) < 4:
            return best
        for related in self._prefix_related(term):
            for position, weight in self.postings[related].items():
                if weight * _PARTIAL > best.get(position, 0.0):
                    best[position] = weight * _PARTIAL
        return best

    def _prefix_related(self, term: str) -> list[str]:
        """Vocabulary words that extend ``term`` or that ``term`` extends (4+ letters)."""
        related = [term[:k] for k in range(4, len(term)) if term[:k] in self.known]
        start = bisect.bisect_right(self.vocabulary, term)
        for word in self.vocabulary[start:]:
            if not word.startswith(term):
                break
            related.append(word)
        return related


def _key(schema: str | None, name: str) -> tuple[str, str]:
    return ((schema or "").lower(), name.lower())


_INDEXES: dict[int, tuple[weakref.ref, Any]] = {}
_LINES: dict[int, tuple[weakref.ref, Any]] = {}


def _index(catalog: Catalog) -> _Index:
    return _per_catalog(catalog, _INDEXES, lambda: _Index(catalog))


def _per_catalog(catalog: Catalog, cache: dict[int, tuple[weakref.ref, Any]], build) -> Any:
    """Derived data cached by catalog identity (catalogs are frozen) until it is collected.

    Keyed by ``id`` with a weak reference to check it, not by the catalog itself: hashing a
    frozen 20,000-column model on every lookup would cost more than the cache saves.
    """
    key = id(catalog)
    cached = cache.get(key)
    if cached is not None and cached[0]() is catalog:
        return cached[1]
    value = build()
    cache[key] = (weakref.ref(catalog, lambda _ref: cache.pop(key, None)), value)
    return value


def _terms(text: str) -> set[str]:
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
def _name_terms(name: str) -> frozenset[str]:
    return frozenset(_fold(w) for w in _words(name))


# -- describe ---------------------------------------------------------------------------------


def describe_tables(catalog: Catalog, names: Sequence[str]) -> str:
    """Full detail of the named tables: every column, key, comment and incoming reference.

    Unknown names are reported with close matches instead of failing the whole call: this is
    a tool result the model reads and corrects from.
    """
    if isinstance(names, str):
        names = [names]
    blocks: list[str] = []
    for name in names:
        table = catalog.find(name)
        blocks.append(_describe_one(catalog, table) if table else _unknown(catalog, name))
    return "\n\n".join(blocks) if blocks else "no table names given"


def _describe_one(catalog: Catalog, table: TableInfo) -> str:
    where = f", schema {table.schema_name}" if table.schema_name else ""
    head = f"{_display_name(catalog, table)} ({table.kind}{where}, {len(table.columns)} columns)"
    lines = [head + (f" -- {_quoted(table.comment, 400)}" if table.comment else "")]
    single_fk = {fk.columns[0]: fk for fk in table.foreign_keys if len(fk.columns) == 1}
    for column in table.columns:
        text = f"  {_ident(column.name, catalog.dialect)} {column.type or '(untyped)'}"
        text += " null" if column.nullable else " not null"
        if column.primary_key:
            text += " primary key"
        if column.name in single_fk:
            text += f" → {_fk_target(catalog, table, single_fk[column.name])}"
        if column.comment:
            text += f" -- {_quoted(column.comment, 400)}"
        lines.append(text)
    pk = [c.name for c in table.columns if c.primary_key]
    if len(pk) > 1:
        lines.append(f"  primary key ({', '.join(_ident(c, catalog.dialect) for c in pk)})")
    for fk in table.foreign_keys:
        if len(fk.columns) > 1:
            cols = ", ".join(_ident(c, catalog.dialect) for c in fk.columns)
            lines.append(f"  foreign key ({cols}) → {_fk_target(catalog, table, fk)}")
    incoming = _referenced_by(catalog, table)
    if incoming:
        lines.append(f"  referenced by: {', '.join(incoming)}")
    return "\n".join(lines)


def _referenced_by(catalog: Catalog, target: TableInfo) -> list[str]:
    refs: list[str] = []
    for table in catalog.tables:
        for fk in table.foreign_keys:
            same_schema = (fk.ref_schema or None) == (target.schema_name or None) or (
                fk.ref_schema is None and target.schema_name == catalog.default_schema
            )
            if fk.ref_table == target.name and same_schema:
                cols = ", ".join(fk.columns)
                refs.append(f"{_display_name(catalog, table)}({cols})")
    return refs


def _unknown(catalog: Catalog, name: str) -> str:
    options = [_display_name(catalog, t) for t in catalog.tables]
    close = difflib.get_close_matches(name, options, n=3, cutoff=0.5)
    close += [
        _display_name(catalog, t)
        for t in search_tables(catalog, name, limit=3)
        if _display_name(catalog, t) not in close
    ]
    hint = f"; did you mean {', '.join(close[:5])}?" if close else "; no similar table"
    return f"unknown table {name!r}{hint}"
