"""The catalog as compact prompt context, plus describe for the model's follow-up questions.

A model writes better SQL from a terse, complete schema than from ``CREATE TABLE`` dumps or
sample rows, and tokens spent on the schema are tokens not spent on the conversation. One line
per table, about five tokens per column before comments::

    orders(id int pk, customer_id int → customers.id, status text ∈ {'paid','refunded'},
           placed_on date 2023-01-02..2024-12-30, total numeric(10,2)? "EUR") -- "Header"

``?`` marks a nullable column, ``pk`` the primary key, ``→`` a foreign key; ``∈ {…}`` lists a
low-cardinality column's values and ``a..b`` a date column's range, both from the catalog
pass's value profile (:mod:`~relay_nb.connectors.sql.profile`); views are prefixed ``view``
(their columns carry no ``?``: the catalog cannot know). Long type names the databases also
accept in short form are shortened (``integer`` -> ``int``, ``boolean`` -> ``bool``).

Under ``max_tokens`` the rendering degrades in steps, cheapest loss first: column comments go,
then table comments, then the profiles, and only then whole tables: a
:class:`~relay_nb.connectors.sql.ranking.SchemaRanker` orders them by the question, the best
that fit are kept (with their profiles when the question gave them any score), and one
closing line names the rest and points the model at the describe tool, which serves
:func:`describe_tables` (comments, profiles and incoming references included).
"""

from __future__ import annotations

import difflib
import math
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.sql.profile import column_kind
from relay_nb.connectors.sql.ranking import SchemaRanker, per_catalog, rank_tables, search_tables
from relay_nb.connectors.sql.schema import Catalog, ColumnInfo, ForeignKey, TableInfo
from relay_nb.runtime.types import estimate_tokens

__all__ = [
    "LEGEND",
    "RenderedSchema",
    "describe_request",
    "describe_tables",
    "estimate_tokens",
    "render_catalog",
]

LEGEND = "-- ? marks nullable columns"
_COLUMN_COMMENT_CHARS = 48
_TABLE_COMMENT_CHARS = 64
_PROFILE_CHARS = 80
"""A column's listed values, in characters; the list ends in ``…`` where it is cut."""
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

    ``pieces`` are column (and composite-FK) entries as (structure, column comment, opt-in
    sample values, profile): the comment sits between the structure and the values.
    """

    head: str
    pieces: tuple[tuple[str, str, str, str], ...]
    table_comment: str

    def text(self, *, table_comments: bool, column_comments: bool, profiles: bool) -> str:
        inner = ", ".join(
            before
            + (comment if column_comments else "")
            + samples
            + (profile if profiles and not samples else "")
            for before, comment, samples, profile in self.pieces
        )
        return f"{self.head}({inner}){self.table_comment if table_comments else ''}"

    def extra(self, *, table_comments: bool, column_comments: bool, profiles: bool) -> int:
        """Characters the comments and profiles add to the bare line."""
        extra = len(self.table_comment) if table_comments else 0
        for _, comment, samples, profile in self.pieces:
            extra += (len(comment) if column_comments else 0) + (
                len(profile) if profiles and not samples else 0
            )
        return extra


_STEPS = ((True, True, True), (True, False, True), (False, False, True), (False, False, False))
"""(table comments, column comments, profiles): what each degradation step keeps."""
_STEP_FLAGS = tuple(
    {"table_comments": table, "column_comments": column, "profiles": profiles}
    for table, column, profiles in _STEPS
)
_BARE = {"table_comments": False, "column_comments": False, "profiles": False}
_PROFILED = {"table_comments": False, "column_comments": False, "profiles": True}
_LINES: dict[Any, tuple[weakref.ref, Any]] = {}


def render_catalog(
    catalog: Catalog,
    *,
    max_tokens: int | None = None,
    question: str | None = None,
    sample_values: Mapping[str, Sequence[str]] | None = None,
    sample_value_chars: int = 40,
    describe_tool: str | None = None,
    ranker: SchemaRanker | None = None,
) -> RenderedSchema:
    """Render ``catalog`` in at most ``max_tokens`` (estimated) when given.

    ``sample_values`` maps ``table.column`` (or ``schema.table.column``) to example values; each
    column's examples are capped at ``sample_value_chars`` characters in total (they are opt-in,
    so they survive the degradation steps). ``describe_tool`` is the tool name the omission line
    tells the model to call (the connector's ``describe_<id>``); ``ranker`` orders the tables
    when not all fit (default: :class:`~relay_nb.connectors.sql.ranking.LexicalRanker`).
    """
    if sample_values:
        lines = _Lines.of(catalog, sample_values, sample_value_chars)
    else:  # the common case: per catalog, computed once
        lines = per_catalog(catalog, _LINES, lambda: _Lines.of(catalog, {}, 0))
    for flags, chars in zip(_STEP_FLAGS, lines.step_chars, strict=True):
        if max_tokens is None or math.ceil(chars / 4) <= max_tokens:
            text = [part.text(**flags) for part in lines.parts.values()]
            return _result("\n".join([LEGEND, *text]), tuple(lines.parts), ())
    return _render_ranked(catalog, lines, max_tokens, question, describe_tool, ranker)


class RenderCache:
    """The last texts rendered from one catalog (and its value samples), by what they were
    rendered for.

    Every model step of a turn builds its prompt again with the same question and budget,
    and an analyst re-runs a question's cell: on a 10,000-table catalog each render is
    milliseconds of ranking and packing. Another catalog or samples object (a refresh that
    found a change) empties it; the ones it holds are kept alive, so identity cannot be
    reused. Thread-safe: ``ask_many``'s turns render on worker threads.
    """

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._texts: OrderedDict[Hashable, str] = OrderedDict()
        self._sources: tuple[object, ...] = ()
        self._lock = threading.Lock()

    def get(self, sources: tuple[object, ...], key: Hashable, render: Callable[[], str]) -> str:
        """The text kept for ``key`` if it was rendered from these very ``sources``."""
        with self._lock:
            if self._same(sources) and (text := self._texts.get(key)) is not None:
                self._texts.move_to_end(key)
                return text
        text = render()
        with self._lock:
            if not self._same(sources):
                self._texts.clear()
                self._sources = sources
            self._texts[key] = text
            while len(self._texts) > self._size:
                self._texts.popitem(last=False)
        return text

    def _same(self, sources: tuple[object, ...]) -> bool:
        return len(sources) == len(self._sources) and all(
            a is b for a, b in zip(sources, self._sources, strict=True)
        )


@dataclass(frozen=True)
class _Lines:
    """Every table's line in pieces and what the degradation steps and the ranked render
    need of them, computed once per catalog (a 10,000-table catalog rendered each turn
    spent 130 ms re-summing them)."""

    parts: dict[str, _Line]
    bare: dict[str, str]
    """Each table's bare line (no comments, no profile), by qualified name."""
    step_chars: tuple[int, ...]
    """The whole catalog's length at each of :data:`_STEPS`."""
    names: dict[str, str]
    """Each table's name as the omission line writes it."""
    names_chars: int
    shortest: int
    """The shortest bare line: the ranked packing stops once less room than that is left."""

    @classmethod
    def of(cls, catalog: Catalog, samples: Mapping[str, Sequence[str]], chars: int) -> _Lines:
        parts = {t.qualified_name: _line(catalog, t, samples, chars) for t in catalog.tables}
        bare = {name: part.text(**_BARE) for name, part in parts.items()}
        bare_chars = len(LEGEND) + sum(len(line) + 1 for line in bare.values())
        steps = tuple(
            bare_chars + sum(part.extra(**flags) for part in parts.values())
            for flags in _STEP_FLAGS
        )
        names = {t.qualified_name: _display_name(catalog, t) for t in catalog.tables}
        return cls(
            parts=parts,
            bare=bare,
            step_chars=steps,
            names=names,
            names_chars=sum(len(name) + 2 for name in names.values()),
            shortest=min((len(line) for line in bare.values()), default=0),
        )


def _render_ranked(
    catalog: Catalog,
    lines: _Lines,
    max_tokens: int,
    question: str | None,
    describe_tool: str | None,
    ranker: SchemaRanker | None,
) -> RenderedSchema:
    """The most relevant tables that fit, then one line naming the rest.

    A table the question scored keeps its profile (the values it may have been found by);
    the others are bare, so more of them fit.
    """
    budget_chars = max_tokens * 4
    ranking = rank_tables(catalog, question or "", ranker)
    reserve = budget_chars // 4  # at most; a line naming every table is at least that long
    if lines.names_chars < budget_chars:  # when the names could fit, what they take
        every = _omitted_line(list(lines.names.values()), describe_tool)
        reserve = min(len(every), reserve)
    shown = _pack(ranking, lines, budget_chars - len(LEGEND) - 1 - reserve)
    omitted = [name for t, _ in ranking if (name := t.qualified_name) not in shown]
    body = [LEGEND, *(shown[name] for name in lines.parts if name in shown)]
    room = budget_chars - len("\n".join(body)) - 1
    body.append(_omitted_line([lines.names[n] for n in omitted], describe_tool, room))
    return _result("\n".join(body), tuple(n for n in lines.parts if n in shown), tuple(omitted))


def _result(text: str, shown: tuple[str, ...], omitted: tuple[str, ...]) -> RenderedSchema:
    return RenderedSchema(
        text=text, shown=shown, omitted=omitted, token_estimate=estimate_tokens(text)
    )


def _pack(ranking: Sequence[tuple[TableInfo, float]], lines: _Lines, room: int) -> dict[str, str]:
    """Greedy by rank: each table's line (with its profile when the question scored it),
    else its bare line, else (too large for what is left) skipped, as smaller ones may
    still fit — until not even the shortest line would."""
    shown: dict[str, str] = {}
    for table, score in ranking:
        if room < lines.shortest + 1:
            break
        name = table.qualified_name
        bare = lines.bare[name]
        line = lines.parts[name].text(**_PROFILED) if score > 0 else bare
        for candidate in (line, bare) if line != bare else (bare,):
            if len(candidate) + 1 <= room:
                shown[name] = candidate
                room -= len(candidate) + 1
                break
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
) -> tuple[str, str, str, str]:
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
    return text, comment, after, _profile_text(column)


def _profile_text(column: ColumnInfo) -> str:
    """`` ∈ {'paid','refunded'}`` for a category, `` 2023-01-02..2024-12-30`` for dates."""
    profile = column.profile
    if profile is None:
        return ""
    if profile.values:
        listed: list[str] = []
        used = 0
        for value in profile.values:
            literal = _literal(value)
            if used + len(literal) > _PROFILE_CHARS:
                break
            listed.append(literal)
            used += len(literal) + 1
        more = ",…" if len(listed) < len(profile.values) else ""
        return f" ∈ {{{','.join(listed)}{more}}}" if listed else ""
    if profile.low and profile.high and column_kind(column.type) == "temporal":
        low, high = profile.low[:10], profile.high[:10]  # the days: what time windows need
        return f" {low}..{high}" if low != high else f" {low}"
    return ""


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
        literal = _literal(value)
        if used + len(literal) > cap:
            if not rendered:
                rendered.append(literal[: max(1, cap - 2)] + "…'")
            break
        rendered.append(literal)
        used += len(literal) + 1
    return ",".join(rendered)


def _literal(value: object) -> str:
    return "'" + " ".join(str(value).split()).replace("'", "''") + "'"


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


# -- describe ---------------------------------------------------------------------------------


def describe_request(
    catalog: Catalog,
    tables: Sequence[str],
    search: str | None,
    *,
    connector_id: str,
    ranker: SchemaRanker | None = None,
) -> str:
    """What a ``describe_<id>`` tool answers: the named tables and the five that ``search``
    finds, in full — or, asked for nothing, the list of the catalog's tables."""
    names = list(tables)
    if search:
        names += [t.qualified_name for t in search_tables(catalog, search, 5, ranker)]
    if not names:
        listing = ", ".join(t.qualified_name for t in catalog.tables)
        return f"tables in {connector_id}: {listing}"
    return describe_tables(catalog, list(dict.fromkeys(names)))


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
        text += _profile_detail(column)
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


def _profile_detail(column: ColumnInfo) -> str:
    """Everything the profile knows: values (all), range, NULL share."""
    profile = column.profile
    if profile is None:
        return ""
    text = ""
    if profile.values:
        text += f" values {{{','.join(_literal(v) for v in profile.values)}}}"
    if profile.low is not None and profile.high is not None:
        text += f" range {profile.low}..{profile.high}"
    if profile.null_share:
        text += f" ({profile.null_share:.0%} null)"
    if profile.sampled_rows and (profile.values or profile.null_share):
        text += f" (from {profile.sampled_rows:,} sampled rows)"
    return text


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
