"""What a SQL database holds, as data: the catalog the guard, the prompt and the model share.

Introspection fills these models once per schema; the guard reads the table set as its
allowlist, the context layer renders them, and ``describe_<id>`` serves details on demand.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from pydantic.dataclasses import dataclass

__all__ = ["Catalog", "ColumnInfo", "ColumnProfile", "ForeignKey", "TableInfo"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ColumnProfile(_Frozen):
    """What a column holds, from a bounded sample (:mod:`relay_nb.sql.catalog.profile`)."""

    values: tuple[str, ...] = ()
    """A low-cardinality text column's distinct values, most frequent first (all of them)."""
    low: str | None = None
    """A number or date column's minimum, as text."""
    high: str | None = None
    null_share: float | None = None
    """NULLs among the sampled rows, 0 to 1."""
    sampled_rows: int | None = None
    """Set when the table is larger than the sample: values and NULL share come from this
    many rows (the bounds are exact)."""


@dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class ColumnInfo:
    """One column. A slotted pydantic dataclass, not a model: a catalog holds one per
    column of every table (200,000 on a 10,000 x 20 warehouse), and a model instance with
    its ``__dict__`` and fields-set costs ~600 bytes where this costs ~110. Validated the
    same way (pydantic builds it from the introspection's dicts, in Rust)."""

    name: str
    type: str
    """The database's own type name, compacted (``varchar(80)``, ``numeric(10,2)``)."""
    nullable: bool = True
    primary_key: bool = False
    comment: str | None = None
    profile: ColumnProfile | None = None
    """Filled by the catalog pass's value profiling (None: not profiled)."""


class ForeignKey(_Frozen):
    columns: tuple[str, ...]
    ref_schema: str | None
    ref_table: str
    ref_columns: tuple[str, ...]


class TableInfo(_Frozen):
    schema_name: str | None
    """None where the database has no schemas (SQLite's main database)."""
    name: str
    kind: str = "table"
    """``table`` or ``view``."""
    columns: tuple[ColumnInfo, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    comment: str | None = None

    @property
    def qualified_name(self) -> str:
        return f"{self.schema_name}.{self.name}" if self.schema_name else self.name


class Catalog(_Frozen):
    dialect: str
    """The sqlglot dialect name (``sqlite``, ``postgres``, ``mysql``, ``duckdb`` …)."""
    default_schema: str | None
    tables: tuple[TableInfo, ...] = Field(default_factory=tuple)
    database: str | None = None
    """The connection's own catalog (BigQuery's project, Snowflake's or PostgreSQL's
    database, Trino's catalog): a three-part name in it reads as ``schema.table``. None
    where the engine has no such level or it is not known."""
    complete_schemas: tuple[str, ...] = ()
    """Schemas read whole (no ``tables=`` restriction): a wildcard table may read there."""
    _allowlist: tuple[tuple[TableInfo, ...], frozenset[tuple[str | None, str]]] | None = (
        PrivateAttr(default=None)
    )
    """``(the tables it was built from, the allowlist)``: a ``model_copy`` with other tables
    carries the private attribute along, so the tables are checked by identity."""

    def find(self, name: str) -> TableInfo | None:
        """Look a table up by ``name`` or ``schema.name``, case-insensitively."""
        wanted = name.lower()
        for table in self.tables:
            if table.qualified_name.lower() == wanted:
                return table
        for table in self.tables:
            if table.name.lower() == wanted and (
                table.schema_name is None
                or (self.default_schema or "").lower() == (table.schema_name or "").lower()
            ):
                return table
        matches = [t for t in self.tables if t.name.lower() == wanted]
        return matches[0] if len(matches) == 1 else None

    def allowlist(self) -> frozenset[tuple[str | None, str]]:
        """(schema, table) pairs exactly as stored: what the guard lets a query touch.

        Case is kept: the guard compares by the dialect's rules (PostgreSQL tells
        ``"Orders"`` from ``orders``; SQLite and DuckDB do not). Built once per catalog (it
        is frozen; a refresh makes a new one) and the same object each time, so the guard's
        own per-dialect form of it is built once too (issue 22: a 10,000-table catalog cost
        every query 13 ms).
        """
        cached = self._allowlist
        if cached is None or cached[0] is not self.tables:
            pairs = frozenset((t.schema_name or None, t.name) for t in self.tables)
            cached = self._allowlist = (self.tables, pairs)
        return cached[1]
