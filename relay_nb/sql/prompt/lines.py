"""One table as one line of prompt context, and a catalog's lines built as a render needs them.

One line per table, about five tokens per column before comments::

    orders(id int pk, customer_id int → customers.id, status text ∈ {'paid','refunded'},
           placed_on date 2023-01-02..2024-12-30, total numeric(10,2)? "EUR") -- "Header"

``?`` marks a nullable column, ``pk`` the primary key, ``→`` a foreign key; ``∈ {…}`` lists a
low-cardinality column's values and ``a..b`` a date column's range, both from the catalog
pass's value profile (:mod:`~relay_nb.sql.catalog.profile`); views are prefixed ``view``
(their columns carry no ``?``: the catalog cannot know). Long type names the databases also
accept in short form are shortened (``integer`` -> ``int``, ``boolean`` -> ``bool``).

:class:`CatalogLines` keeps a catalog's lines. A render of a 10,000-table catalog shows a few
dozen of them, so a table's full line (comments, profiles) is built the first time a render
shows it; only the bare lines, whose shortest tells the packing when to stop, are built for
every table, from column pieces shared across tables (issue 22: building every full line made
the first render of such a catalog 0.5 s).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from relay_nb.sql.catalog.model import Catalog, ColumnInfo, ForeignKey, TableInfo
from relay_nb.sql.catalog.profile import column_kind

__all__ = [
    "LEGEND",
    "PROFILED",
    "STEPS",
    "CatalogLines",
    "TableLine",
    "display_name",
    "fk_target",
    "ident",
    "literal",
    "quoted",
    "single_column_fks",
]

LEGEND = "-- ? marks nullable columns"
_COLUMN_COMMENT_CHARS = 48
_TABLE_COMMENT_CHARS = 64
_PROFILE_CHARS = 80
"""A column's listed values, in characters; the list ends in ``…`` where it is cut."""
_SHORT_TYPES = ((re.compile(r"^integer\b"), "int"), (re.compile(r"^boolean\b"), "bool"))

STEPS = (
    {"table_comments": True, "column_comments": True, "profiles": True},
    {"table_comments": True, "column_comments": False, "profiles": True},
    {"table_comments": False, "column_comments": False, "profiles": True},
    {"table_comments": False, "column_comments": False, "profiles": False},
)
"""What each degradation step keeps, cheapest loss first; the last is the bare line."""
PROFILED = {"table_comments": False, "column_comments": False, "profiles": True}
"""How a ranked render writes a table the question scored: its profile kept (the values it
may have been found by), its comments left to describe."""


@dataclass(frozen=True)
class TableLine:
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


class CatalogLines:
    """A catalog's lines (with its opt-in sample values), each built once, when first needed.

    Thread-safe without a lock: ``ask_many``'s turns render on worker threads, and two of
    them building the same table's line store equal strings.
    """

    def __init__(
        self, catalog: Catalog, samples: Mapping[str, Sequence[str]], sample_chars: int
    ) -> None:
        self.catalog = catalog
        self._samples = samples
        self._sample_chars = sample_chars
        self._lines: dict[str, TableLine] = {}
        self._names: dict[str, str] = {}
        self._every_omitted: dict[str | None, str] = {}
        self._wholes: dict[int, str] = {}

    def line(self, table: TableInfo) -> TableLine:
        name = table.qualified_name
        line = self._lines.get(name)
        if line is None:
            line = self._lines[name] = _line(self.catalog, table, self._samples, self._sample_chars)
        return line

    @cached_property
    def bare(self) -> dict[str, str]:
        """Every table's bare line (no comments, no profile), by qualified name."""
        catalog, samples, chars = self.catalog, self._samples, self._sample_chars
        return {t.qualified_name: _bare(catalog, t, samples, chars) for t in catalog.tables}

    @cached_property
    def shortest(self) -> int:
        """The shortest bare line: the ranked packing stops once less room than that is
        left."""
        return min(map(len, self.bare.values()), default=0)

    @cached_property
    def floor(self) -> int:
        """At most the whole bare catalog's length, counted without writing a line: a name
        and its parentheses, and a character and a separator a column. A catalog whose floor
        is over the budget is ranked at once, its lines left unbuilt."""
        return len(LEGEND) + sum(
            len(t.name) + 3 + max(0, 3 * len(t.columns) - 2) for t in self.catalog.tables
        )

    @cached_property
    def step_chars(self) -> tuple[int, ...]:
        """The whole catalog's length at each of :data:`STEPS` (builds every line)."""
        tables = self.catalog.tables
        bare = len(LEGEND) + sum(len(line) + 1 for line in self.bare.values())
        return tuple(bare + sum(self.line(t).extra(**flags) for t in tables) for flags in STEPS)

    def whole(self, step: int) -> str:
        """The whole catalog at ``STEPS[step]``: written once, as it is the same text
        whatever the question (a small catalog's every prompt)."""
        text = self._wholes.get(step)
        if text is None:
            flags, tables = STEPS[step], self.catalog.tables
            text = "\n".join([LEGEND, *(self.line(t).text(**flags) for t in tables)])
            self._wholes[step] = text
        return text

    @cached_property
    def qualified_names(self) -> tuple[str, ...]:
        """Every table's qualified name, in catalog order."""
        return tuple(t.qualified_name for t in self.catalog.tables)

    @cached_property
    def positions(self) -> dict[str, int]:
        """Each table's place in the catalog, by qualified name: shown tables keep that
        order."""
        return {t.qualified_name: i for i, t in enumerate(self.catalog.tables)}

    @cached_property
    def names_floor(self) -> int:
        """At most the characters naming every table takes (see :meth:`name`)."""
        return sum(len(t.name) + 2 for t in self.catalog.tables)

    @cached_property
    def names_chars(self) -> int:
        """The characters naming every table takes, separators included."""
        return sum(len(self.name(t)) + 2 for t in self.catalog.tables)

    def name(self, table: TableInfo, key: str | None = None) -> str:
        """The table's name as the omission line writes it (kept: a render names hundreds);
        ``key``: its qualified name, when the caller has it."""
        key = key or table.qualified_name
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = display_name(self.catalog, table)
        return name

    def every_omitted(self, describe_tool: str | None, write: Callable[[], str]) -> str:
        """The omission line naming every table, written once per describe tool."""
        line = self._every_omitted.get(describe_tool)
        if line is None:
            line = self._every_omitted[describe_tool] = write()
        return line


def _line(
    catalog: Catalog,
    table: TableInfo,
    samples: Mapping[str, Sequence[str]],
    sample_chars: int,
) -> TableLine:
    single_fk = single_column_fks(table)
    pieces = [
        _column_piece(catalog, table, column, single_fk.get(column.name), samples, sample_chars)
        for column in table.columns
    ]
    pieces += [(structure, "", "", "") for structure in _composite_fks(catalog, table)]
    prefix = "view " if table.kind == "view" else ""
    comment = f" -- {quoted(table.comment, _TABLE_COMMENT_CHARS)}" if table.comment else ""
    return TableLine(f"{prefix}{display_name(catalog, table)}", tuple(pieces), comment)


def _bare(
    catalog: Catalog,
    table: TableInfo,
    samples: Mapping[str, Sequence[str]],
    sample_chars: int,
) -> str:
    """``TableLine.text`` at the bare step, from cached column pieces: built for every table
    of the catalog, where the full line is built for the few a render shows."""
    dialect, view = catalog.dialect, table.kind == "view"
    single_fk = single_column_fks(table) if table.foreign_keys else {}
    pieces = []
    for column in table.columns:
        text = _structure(
            column.name, column.type, column.nullable and not view, column.primary_key, dialect
        )
        if single_fk and (fk := single_fk.get(column.name)) is not None:
            text += f" → {fk_target(catalog, table, fk)}"
        if samples:
            text += _samples_piece(samples, table, column, sample_chars)
        pieces.append(text)
    pieces += _composite_fks(catalog, table)
    return f"{'view ' if view else ''}{display_name(catalog, table)}({', '.join(pieces)})"


def single_column_fks(table: TableInfo) -> dict[str, ForeignKey]:
    """The table's one-column foreign keys, by their column: written on the column itself
    (``customer_id int → customers.id``); a composite key gets an entry of its own."""
    return {fk.columns[0]: fk for fk in table.foreign_keys if len(fk.columns) == 1}


def _composite_fks(catalog: Catalog, table: TableInfo) -> list[str]:
    return [
        f"({', '.join(ident(c, catalog.dialect) for c in fk.columns)}) → "
        f"{fk_target(catalog, table, fk)}"
        for fk in table.foreign_keys
        if len(fk.columns) > 1
    ]


def _column_piece(
    catalog: Catalog,
    table: TableInfo,
    column: ColumnInfo,
    fk: ForeignKey | None,
    samples: Mapping[str, Sequence[str]],
    sample_chars: int,
) -> tuple[str, str, str, str]:
    text = _structure(
        column.name,
        column.type,
        column.nullable and table.kind != "view",
        column.primary_key,
        catalog.dialect,
    )
    if fk is not None:
        text += f" → {fk_target(catalog, table, fk)}"
    comment = f" {quoted(column.comment, _COLUMN_COMMENT_CHARS)}" if column.comment else ""
    after = _samples_piece(samples, table, column, sample_chars) if samples else ""
    return text, comment, after, _profile_text(column)


@lru_cache(maxsize=65536)
def _structure(name: str, type_: str, nullable: bool, primary_key: bool, dialect: str) -> str:
    """``name type? pk``: warehouses repeat their columns (``id``, ``created_at``) across
    thousands of tables, so each distinct one is written once."""
    text = ident(name, dialect)
    if type_:
        text += f" {_short_type(type_)}"
    if nullable:
        text += "?"
    if primary_key:
        text += " pk"
    return text


def _samples_piece(
    samples: Mapping[str, Sequence[str]], table: TableInfo, column: ColumnInfo, cap: int
) -> str:
    """`` e.g. 'a','b'``: values keyed ``schema.table.column`` or ``table.column``, as SQL
    literals with whitespace collapsed, ``cap`` characters in all (the first is cut).

    Values are data, not instructions: collapsing newlines keeps each on the column's line,
    and quoting them as literals shows the model exactly how to write them back in SQL.
    """
    values: Sequence[str] = ()
    for key in (f"{table.qualified_name}.{column.name}", f"{table.name}.{column.name}"):
        if key in samples:
            values = samples[key]
            break
    rendered: list[str] = []
    used = 0
    for value in values:
        text = literal(value)
        if used + len(text) > cap:
            if not rendered:
                rendered.append(text[: max(1, cap - 2)] + "…'")
            break
        rendered.append(text)
        used += len(text) + 1
    return f" e.g. {','.join(rendered)}" if rendered else ""


def _profile_text(column: ColumnInfo) -> str:
    """`` ∈ {'paid','refunded'}`` for a category, `` 2023-01-02..2024-12-30`` for dates."""
    profile = column.profile
    if profile is None:
        return ""
    if profile.withheld:
        return " (values withheld)"
    if profile.values:
        listed: list[str] = []
        used = 0
        for value in profile.values:
            text = literal(value)
            if used + len(text) > _PROFILE_CHARS:
                break
            listed.append(text)
            used += len(text) + 1
        more = ",…" if len(listed) < len(profile.values) else ""
        return f" ∈ {{{','.join(listed)}{more}}}" if listed else ""
    if (
        profile.low
        and profile.high
        and not profile.sampled_rows  # a sample's bounds are not the table's: describe only
        and column_kind(column.type) == "temporal"
    ):
        low, high = profile.low[:10], profile.high[:10]  # the days: what time windows need
        about = "≈" if profile.from_statistics else ""
        return f" {about}{low}..{high}" if low != high else f" {about}{low}"
    return ""


@lru_cache(maxsize=1024)
def _short_type(type_: str) -> str:
    for pattern, short in _SHORT_TYPES:
        type_ = pattern.sub(short, type_)
    return type_


def fk_target(catalog: Catalog, table: TableInfo, fk: ForeignKey) -> str:
    """``customers.id``; schema-qualified only when the target lives elsewhere."""
    ref = ident(fk.ref_table, catalog.dialect)
    if fk.ref_schema not in (table.schema_name, catalog.default_schema) and fk.ref_schema:
        ref = f"{ident(fk.ref_schema, catalog.dialect)}.{ref}"
    columns = [ident(c, catalog.dialect) for c in fk.ref_columns]
    return f"{ref}.{columns[0]}" if len(columns) == 1 else f"{ref}({', '.join(columns)})"


def display_name(catalog: Catalog, table: TableInfo) -> str:
    """Unqualified in the default schema (the way queries usually name it), else qualified."""
    name = ident(table.name, catalog.dialect)
    if table.schema_name is None or table.schema_name == catalog.default_schema:
        return name
    return f"{ident(table.schema_name, catalog.dialect)}.{name}"


def quoted(text: str, limit: int) -> str:
    text = " ".join(text.split()).replace('"', "'")
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return f'"{text}"'


def literal(value: object) -> str:
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
def ident(name: str, dialect: str) -> str:
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
