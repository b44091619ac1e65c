"""What the model's ``describe_<id>`` tool answers: tables in full, found by name or search.

The prompt's schema is terse (:mod:`~relay_nb.sql.prompt.lines`) and, on a large catalog,
partial; this is where the model reads the rest: every column, key, comment and profile, and
the tables that reference the one described.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from relay_nb.sql.catalog.model import Catalog, ColumnInfo, TableInfo
from relay_nb.sql.prompt.lines import (
    display_name,
    fk_target,
    ident,
    literal,
    quoted,
    single_column_fks,
)
from relay_nb.sql.prompt.ranking import SchemaRanker, search_tables

__all__ = ["describe_request", "describe_tables", "referenced_by"]


MAX_DESCRIBED = 20
"""Tables one ``describe_<id>`` call describes: an unknown name is matched against every
table (10,000 tables: about 0.4 s a name), so a long list of guesses is cut."""
_NAME_CHARS = 256


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
    names = list(names)
    blocks: list[str] = []
    for name in names[:MAX_DESCRIBED]:
        table = catalog.find(name)
        blocks.append(_describe_one(catalog, table) if table else _unknown(catalog, name))
    if len(names) > MAX_DESCRIBED:
        blocks.append(
            f"{len(names) - MAX_DESCRIBED} more names not described (at most {MAX_DESCRIBED} "
            "a call); ask for them in another call"
        )
    return "\n\n".join(blocks) if blocks else "no table names given"


def _describe_one(catalog: Catalog, table: TableInfo) -> str:
    where = f", schema {table.schema_name}" if table.schema_name else ""
    head = f"{display_name(catalog, table)} ({table.kind}{where}, {len(table.columns)} columns)"
    lines = [head + (f" -- {quoted(table.comment, 400)}" if table.comment else "")]
    single_fk = single_column_fks(table)
    for column in table.columns:
        text = f"  {ident(column.name, catalog.dialect)} {column.type or '(untyped)'}"
        text += " null" if column.nullable else " not null"
        if column.primary_key:
            text += " primary key"
        if column.name in single_fk:
            text += f" → {fk_target(catalog, table, single_fk[column.name])}"
        text += _profile_detail(column)
        if column.comment:
            text += f" -- {quoted(column.comment, 400)}"
        lines.append(text)
    pk = [c.name for c in table.columns if c.primary_key]
    if len(pk) > 1:
        lines.append(f"  primary key ({', '.join(ident(c, catalog.dialect) for c in pk)})")
    for fk in table.foreign_keys:
        if len(fk.columns) > 1:
            cols = ", ".join(ident(c, catalog.dialect) for c in fk.columns)
            lines.append(f"  foreign key ({cols}) → {fk_target(catalog, table, fk)}")
    incoming = referenced_by(catalog, table)
    if incoming:
        lines.append(f"  referenced by: {', '.join(incoming)}")
    return "\n".join(lines)


def _profile_detail(column: ColumnInfo) -> str:
    """Everything the profile knows: values (all), range, NULL share."""
    profile = column.profile
    if profile is None:
        return ""
    text = f" ({profile.withheld}: not shown)" if profile.withheld else ""
    if profile.values:
        text += f" values {{{','.join(literal(v) for v in profile.values)}}}"
    if profile.low is not None and profile.high is not None:
        about = "≈" if profile.from_statistics or profile.sampled_rows else ""
        text += f" range {about}{profile.low}..{profile.high}"
    if profile.null_share:
        text += f" ({profile.null_share:.0%} null)"
    if profile.from_statistics:
        text += " (from the database's statistics)"
    elif profile.sampled_rows:
        text += f" (in a sample of {profile.sampled_rows:,} rows)"
    return text


def referenced_by(catalog: Catalog, target: TableInfo) -> list[str]:
    """The tables whose foreign keys point at ``target``: ``order_items(order_id)``."""
    refs: list[str] = []
    for table in catalog.tables:
        for fk in table.foreign_keys:
            same_schema = (fk.ref_schema or None) == (target.schema_name or None) or (
                fk.ref_schema is None and target.schema_name == catalog.default_schema
            )
            if fk.ref_table == target.name and same_schema:
                cols = ", ".join(fk.columns)
                refs.append(f"{display_name(catalog, table)}({cols})")
    return refs


def _unknown(catalog: Catalog, name: str) -> str:
    name = name[:_NAME_CHARS]  # a table name is short; matching grows with its length
    options = [display_name(catalog, t) for t in catalog.tables]
    close = difflib.get_close_matches(name, options, n=3, cutoff=0.5)
    close += [
        display_name(catalog, t)
        for t in search_tables(catalog, name, limit=3)
        if display_name(catalog, t) not in close
    ]
    hint = f"; did you mean {', '.join(close[:5])}?" if close else "; no similar table"
    return f"unknown table {name!r}{hint}"
