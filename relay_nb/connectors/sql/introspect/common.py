"""Shared pieces of catalog introspection: the builder every dialect reader fills, and type
compaction.

Each engine's module in this package turns a handful of catalog queries into calls on
:class:`CatalogBuilder`; the builder owns ordering, primary-key flags and deduplication, so the
per-dialect code stays a list of SQL statements and row mappings, nothing more.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from typing import TYPE_CHECKING

from pydantic import TypeAdapter

from relay_nb.sql import TableInfo

if TYPE_CHECKING:
    import sqlalchemy as sa

__all__ = [
    "SYSTEM_SCHEMAS",
    "CatalogBuilder",
    "compact_type",
    "is_system_schema",
    "paused_gc",
    "schema_fingerprint",
    "short_comment",
]

SYSTEM_SCHEMAS = frozenset(
    {
        "information_schema",
        "pg_catalog",
        "pg_toast",
        "mysql",
        "performance_schema",
        "sys",
    }
)
"""Schemas that hold the database's own bookkeeping; never shown to a model."""


def schema_fingerprint(
    conn: sa.Connection, statement: sa.TextClause, schemas: Sequence[str | None]
) -> str:
    """A dialect's one fingerprint statement run for the named schemas (its ``:schemas`` is
    an expanding IN; with none named it matches nothing), its single value as text."""
    names = [s for s in schemas if s is not None] or [""]
    return str(conn.execute(statement, {"schemas": names}).scalar())


def is_system_schema(name: str, dialect: str) -> bool:
    """True for catalog schemas (PostgreSQL also reserves every ``pg_`` prefix, ClickHouse
    has its ``system`` database)."""
    lowered = name.lower()
    return (
        lowered in SYSTEM_SCHEMAS
        or (dialect == "postgres" and lowered.startswith("pg_"))
        or (dialect == "clickhouse" and name == "system")
    )


_TABLES = TypeAdapter(tuple[TableInfo, ...])
_CHUNK = 512
"""Tables validated per call: the per-call cost is paid 20 times on 10,000 tables."""
_Key = tuple[str | None, str]
_RawColumn = tuple[int, str, str, bool, str | None]
"""(position, name, type, nullable, comment): models are made once, in :meth:`build`."""
_RawForeignKey = tuple[int, str, str | None, str, str | None]
"""(position, column, ref_schema, ref_table, ref_column)."""


@dataclass
class _Relation:
    kind: str
    comment: str | None
    columns: list[_RawColumn] = field(default_factory=list)
    primary_key: set[str] = field(default_factory=set)
    foreign_keys: dict[str, list[_RawForeignKey]] = field(default_factory=dict)


class CatalogBuilder:
    """Collects rows from catalog queries and builds sorted, frozen :class:`TableInfo` objects.

    Rows may arrive in any order and a relation's columns may arrive before or after its
    primary-key rows: PostgreSQL reads constraints in a second query, MySQL folds them into the
    column rows, and the builder reconciles both shapes. Rows are kept as plain tuples until
    :meth:`build`, so each pydantic model is created exactly once (on a 20,000-column catalog
    model creation is the largest cost after the catalog query itself).
    """

    def __init__(self) -> None:
        self._relations: dict[_Key, _Relation] = {}

    def add_relation(
        self, schema: str | None, name: str, kind: str, comment: str | None = None
    ) -> None:
        """Register a table or view (idempotent: repeated rows of a joined query are fine)."""
        key = (schema, name)
        if key not in self._relations:
            self._relations[key] = _Relation(kind=kind, comment=short_comment(comment))

    def add_column(
        self,
        schema: str | None,
        table: str,
        position: int,
        name: str,
        type_: str,
        *,
        nullable: bool,
        primary_key: bool = False,
        comment: str | None = None,
    ) -> None:
        """Add a column; ``position`` orders columns as the database declares them."""
        relation = self._relations.get((schema, table))
        if relation is None:
            return
        relation.columns.append((position, name, type_, bool(nullable), comment))
        if primary_key:
            relation.primary_key.add(name)

    def add_columns(
        self,
        schema: str | None,
        table: str,
        columns: list[tuple[int, str, str, bool, str | None]],
        primary_key: Iterable[str] = (),
    ) -> None:
        """Add a relation's columns at once, as ``(position, name, type, nullable, comment)``.

        The bulk form of :meth:`add_column` for readers whose rows arrive relation by relation
        (SQLite): one lookup per relation and a list extend, instead of a call per column.
        """
        relation = self._relations.get((schema, table))
        if relation is None:
            return
        relation.columns.extend(columns)
        relation.primary_key.update(primary_key)

    def add_primary_key(self, schema: str | None, table: str, columns: Iterable[str]) -> None:
        relation = self._relations.get((schema, table))
        if relation is not None:
            relation.primary_key.update(columns)

    def add_foreign_key_column(
        self,
        schema: str | None,
        table: str,
        constraint: str,
        position: int,
        column: str,
        ref_schema: str | None,
        ref_table: str,
        ref_column: str | None,
    ) -> None:
        """Add one column pair of a (possibly composite) foreign key.

        ``ref_column`` may be None where the database lets a key reference the target's primary
        key implicitly (SQLite); :meth:`build` resolves it then.
        """
        relation = self._relations.get((schema, table))
        if relation is not None:
            pairs = relation.foreign_keys.setdefault(constraint, [])
            pairs.append((position, column, ref_schema, ref_table, ref_column))

    def names(self) -> list[_Key]:
        return list(self._relations)

    def build(self) -> tuple[TableInfo, ...]:
        """Freeze everything, tables sorted by (schema, name), so catalogs compare equal.

        Once: the builder hands its rows over as it goes."""
        keys = sorted(self._relations, key=lambda k: (k[0] or "", k[1]))
        # keys first: an implicit key target's columns must still be here when resolved
        foreign_keys = {key: self._foreign_keys(self._relations[key]) for key in keys}
        # pydantic-core validates the nested dicts in Rust, several times faster than
        # 20,000 ColumnInfo(...) calls from Python; a chunk of tables at a time, each
        # relation's raw rows dropped once its dicts exist, so the raw rows, the dicts and
        # the models are never all alive at once (peak memory: docs/performance.md)
        tables: list[TableInfo] = []
        with paused_gc():
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                dicts = [self._build_one(k, self._relations.pop(k), foreign_keys[k]) for k in chunk]
                tables.extend(_TABLES.validate_python(dicts))
        return tuple(tables)

    def _foreign_keys(self, relation: _Relation) -> list[dict[str, object]]:
        return sorted(
            (self._foreign_key(pairs) for pairs in relation.foreign_keys.values()),
            key=_foreign_key_order,
        )

    def _build_one(
        self, key: _Key, relation: _Relation, foreign_keys: list[dict[str, object]]
    ) -> dict[str, object]:
        pk = relation.primary_key
        relation.columns.sort(key=_position)  # linear when already in order (SQLite's cid)
        columns = [
            # the common column (nullable, not a key, no comment) is two keys: no call
            {"name": name, "type": type_}
            if nullable and not comment and name not in pk
            else _column(name, type_, nullable, name in pk, comment)
            for _, name, type_, nullable, comment in relation.columns
        ]
        return {
            "schema_name": key[0],
            "name": key[1],
            "kind": relation.kind,
            "columns": columns,
            "foreign_keys": foreign_keys,
            "comment": relation.comment,
        }

    def _foreign_key(self, pairs: list[_RawForeignKey]) -> dict[str, object]:
        """A ForeignKey as a dict: validated with the rest of the catalog in :meth:`build`."""
        pairs.sort(key=_position)
        _, _, ref_schema, ref_table, _ = pairs[0]
        ref_columns = [p[4] for p in pairs]
        if any(c is None for c in ref_columns):
            ref_columns = self._primary_key_of((ref_schema, ref_table)) or [p[1] for p in pairs]
        return {
            "columns": tuple(p[1] for p in pairs),
            "ref_schema": ref_schema,
            "ref_table": ref_table,
            "ref_columns": tuple(str(c) for c in ref_columns),
        }

    def _primary_key_of(self, key: _Key) -> list[str]:
        """The target's primary-key columns in declaration order (an implicit FK target)."""
        target = self._relations.get(key)
        if target is None:
            return []
        return [c[1] for c in sorted(target.columns, key=_position) if c[1] in target.primary_key]


_position = itemgetter(0)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Hold the cyclic garbage collector while a catalog's objects are created.

    20,000 columns are ~60,000 new container objects (row tuples, dicts, models) that all
    survive: each 700 allocations trigger a young-generation pass, and the survivors push
    full-heap passes over everything the kernel holds (pandas, SQLAlchemy, the user's data),
    about half the time of a 1,000-table introspection. Catalog objects form no reference
    cycles, so pausing loses nothing; reference counting still frees garbage at once, and the
    collector resumes (and catches up) on exit. Nested use is safe: only the outermost caller
    that found the collector enabled turns it back on. The switch is process-wide, so code on
    another thread that turns the collector off meanwhile finds it on again afterwards.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _foreign_key_order(fk: dict) -> tuple:
    return (fk["columns"], fk["ref_schema"] or "", fk["ref_table"])


def _column(
    name: str, type_: str, nullable: bool, primary_key: bool, comment: str | None
) -> dict[str, object]:
    """A ColumnInfo as a dict holding only what differs from the model's defaults: pydantic
    validates fewer keys (~15% of the catalog's build time at 20,000 columns)."""
    column: dict[str, object] = {"name": name, "type": type_}
    if primary_key:
        column["primary_key"] = True
        column["nullable"] = False
    elif not nullable:
        column["nullable"] = False
    if comment:
        column["comment"] = short_comment(comment)
    return column


def short_comment(comment: str | None) -> str | None:
    """Collapse whitespace; empty comments become None (MySQL reports ``''`` for none)."""
    if comment is None:
        return None
    text = " ".join(str(comment).split())
    return text or None


_PG_NAMES = (
    (re.compile(r"^character varying\b"), "varchar"),
    (re.compile(r"^character\b"), "char"),
    (re.compile(r"^bit varying\b"), "varbit"),
    (re.compile(r"^double precision\b"), "float8"),
    (re.compile(r"^timestamp(\(\d+\))? with time zone"), r"timestamptz\1"),
    (re.compile(r"^timestamp(\(\d+\))? without time zone"), r"timestamp\1"),
    (re.compile(r"^time(\(\d+\))? with time zone"), r"timetz\1"),
    (re.compile(r"^time(\(\d+\))? without time zone"), r"time\1"),
)
_MYSQL_INT_WIDTH = re.compile(r"^(tinyint|smallint|mediumint|int|integer|bigint)\(\d+\)")


@lru_cache(maxsize=4096)
def compact_type(raw: str | None, dialect: str) -> str:
    """The database's own type name, lowercased and without noise.

    ``character varying(80)`` -> ``varchar(80)``, ``NUMERIC(10, 2)`` -> ``numeric(10,2)``,
    MySQL ``int(11)`` -> ``int`` (display widths mean nothing to a query; ``tinyint(1)`` is
    kept because it is MySQL's boolean). Unknown names pass through lowercased. Cached: a
    catalog repeats a handful of types thousands of times. ClickHouse's types are kept as
    written: their names are case-sensitive, and an ``Enum8('Paid' = 1)``'s labels are data.
    """
    if dialect == "clickhouse":
        return (raw or "").strip()
    text = " ".join((raw or "").split()).lower()
    text = re.sub(r"\s*\(\s*", "(", text)
    text = re.sub(r"\s*,\s*", ",", text)
    text = re.sub(r"\s*\)", ")", text)
    if dialect == "postgres":
        for pattern, replacement in _PG_NAMES:
            text = pattern.sub(replacement, text, count=1)
    elif dialect == "mysql" and not text.startswith("tinyint(1)"):
        text = _MYSQL_INT_WIDTH.sub(r"\1", text)
    return text
