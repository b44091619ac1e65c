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
    """What a column holds, from the engine's statistics or a bounded sample
    (:mod:`relay_nb.sql.catalog.profile`)."""

    values: tuple[str, ...] = ()
    """A low-cardinality text column's distinct values, most frequent first (all of them)."""
    low: str | None = None
    """A number or date column's minimum, as text."""
    high: str | None = None
    null_share: float | None = None
    """NULLs among the sampled rows, 0 to 1."""
    sampled_rows: int | None = None
    """Set when the table is larger than the sample: values, NULL share and bounds come from
    this many rows of it (so the bounds are the sample's, not the table's)."""
    from_statistics: bool = False
    """Read from the engine's planner statistics (PostgreSQL's ``pg_stats``), not from rows:
    estimates over the engine's own sample of the whole table."""
    withheld: str | None = None
    """Why the column's values and bounds are not shown: ``"values look like a JSON Web
    Token"`` when one of them has a credential's shape (:mod:`relay_nb.secret_shapes`)."""


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
    _lookup: (
        tuple[tuple[TableInfo, ...], dict[str, TableInfo], dict[str, tuple[TableInfo, ...]]] | None
    ) = PrivateAttr(default=None)
    """``(the tables, by qualified name, by name)`` for :meth:`find`, checked the same way."""

    def find(self, name: str) -> TableInfo | None:
        """Look a table up by ``name`` or ``schema.name``, case-insensitively: the
        qualified name first, then the name in the default schema, then a name only one
        schema has. A lookup in dicts built once per catalog (every query looks its tables
        up; a 10,000-table catalog must not cost a scan each)."""
        qualified, by_name = self._index()
        wanted = name.lower()
        found = qualified.get(wanted)
        if found is not None:
            return found
        named = by_name.get(wanted, ())
        default = (self.default_schema or "").lower()
        for table in named:
            if table.schema_name is None or default == table.schema_name.lower():
                return table
        return named[0] if len(named) == 1 else None

    def _index(self) -> tuple[dict[str, TableInfo], dict[str, tuple[TableInfo, ...]]]:
        cached = self._lookup
        if cached is None or cached[0] is not self.tables:
            qualified: dict[str, TableInfo] = {}
            by_name: dict[str, list[TableInfo]] = {}
            for table in self.tables:
                qualified.setdefault(table.qualified_name.lower(), table)
                by_name.setdefault(table.name.lower(), []).append(table)
            named = {key: tuple(tables) for key, tables in by_name.items()}
            cached = self._lookup = (self.tables, qualified, named)
        return cached[1], cached[2]

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
