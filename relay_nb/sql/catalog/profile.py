"""Value profiles: what a catalog's columns hold, read once with the schema, bounded.

A question names data by its values as often as by its names ("students who have a dog" is a
``pet_type`` column holding ``'dog'``; "paid orders" is ``status = 'paid'``), and a model that
guesses a value's spelling writes SQL that returns nothing. So the catalog pass also learns,
per column and within a time budget, and without ever reading a table whole:

- for text columns of low cardinality (at most ``max_values`` distinct values), every
  distinct value, most frequent first;
- for numbers and dates, the lowest and highest value;
- for every profiled column, the share of NULLs.

A table larger than the sample is profiled first from what the engine already knows:
PostgreSQL's planner statistics (:mod:`relay_nb.sql.catalog.statistics`), one catalog
statement per batch of columns and no row of any table read; the profile says it is an
estimate (``from_statistics``). The rest (smaller tables, other engines, a table never
analysed) are read over a bounded sample:
the first ``sample_rows`` rows the engine returns (``LIMIT``), in two kinds of statement —
counts and bounds, then the values of the low-cardinality text columns — each covering up to
128 columns of any tables (``UNION ALL``), so a 1,000-table catalog costs tens of round
trips, not thousands. A sample of a larger table says so (``sampled_rows``): its bounds are
the sample's (the first rows are often the oldest), shown with that label and never as the
table's. No statement aggregates a whole table: on a table of ten million rows that is a
scan per column, seconds each, for a hint.

All statements run read-only, without parallel workers, through
:func:`~relay_nb.connectors.sql.readonly.run_read_only` like any query. Never profiled:
primary and foreign keys (identifiers, not categories), columns named like secrets
(``password``, ``api_key``, ``token``, ``ssn``, ``salt``…), and columns the connector's
``profile_exclude`` patterns name. The values of columns about a person (``email``,
``phone``, ``first_name``, ``birth_date``…), and values that look like e-mail addresses,
are never listed. Only the engines relay_nb introspects natively are profiled (SQLite,
PostgreSQL, MySQL/MariaDB, DuckDB, ClickHouse); a table the budget did not reach, or whose
statement failed, simply has no profile.

ClickHouse's types are unwrapped (``LowCardinality(Nullable(String))`` is text, ``Enum8(…)``
a category whose labels are listed, ``DateTime64(3)`` temporal, ``UInt64`` a number;
``Array``, ``Map``, ``Tuple``: nothing).

The profile lives on the catalog (:attr:`ColumnInfo.profile`), so it is cached with the schema
and read again when the schema is (``refresh()``); the renderer shows it
(``status text ∈ {'paid','refunded'}``, ``created_at date 2023-01-02..2024-12-30``, ``≈`` before
an estimate's bounds; a sample's bounds only in ``describe``) and the ranker indexes the
values.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.errors import ConfigurationError
from relay_nb.secret_shapes import secret_kind
from relay_nb.sql.catalog.model import Catalog, ColumnInfo, ColumnProfile, TableInfo
from relay_nb.sql.catalog.statistics import (
    STATISTICS_DIALECTS,
    Column,
    large_tables_sql,
    read_statistics,
    statistics_sql,
)

__all__ = [
    "ProfileSettings",
    "column_kind",
    "is_personal",
    "is_secret",
    "profile_catalog",
    "sample_text_values",
]

_TEXT_WORDS = ("char", "text", "string", "clob")

_log = logging.getLogger(__name__)

PROFILED_BACKENDS = frozenset({"sqlite", "postgres", "mysql", "duckdb", "clickhouse"})
"""sqlglot dialect names whose SQL the statements below are written for."""

_SECRET_WORD = re.compile(
    r"pass(?:word|wd|phrase|code)|secret|token|api_?key|private_?key|access_?key|credential|"
    r"bearer|cookie|(?:recovery|backup)_?code|mfa|totp|credit_?card",
    re.IGNORECASE,
)
"""Anywhere in a name (``userPassword``, ``accessToken``, ``x_apikey``): never profiled."""
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:pwd|auth|salt|hash|ssn|social_security|cvv\d?|cvc\d?|pin|iban|"
    r"card_?(?:number|num|no)|pan|otp|session(?:_?(?:id|key))?)"
    r"(?:_|$)",
    re.IGNORECASE,
)
"""Whole words of a name (``pin``, not ``shipping``): never profiled."""
_PERSONAL_NAME = re.compile(
    r"(?:^|_)(?:e_?mail|phone|mobile|fax|street|address|postcode|zip|birth|born|dob|"
    r"(?:first|last|sur|full|given|middle|maiden|nick|user|customer|client|employee|contact|"
    r"patient|student|person|member|owner|holder)_?name|ip_?addr(?:ess)?|"
    r"passport|tax_?id)(?:_|$)",
    re.IGNORECASE,
)
_PERSON_TABLE = re.compile(
    r"(?:^|_)(?:customer|client|user|employee|staff|student|pupil|patient|person|people|"
    r"member|contact|passenger|guest|player|author|teacher|physician|doctor|nurse|driver|"
    r"buyer|visitor|subscriber|account_holder|holder|applicant|candidate)s?(?:_|$)",
    re.IGNORECASE,
)
"""Columns about a person (an e-mail, a phone, a birth date, a name — also ``name`` in a
table of people): their NULL share is profiled, their values and bounds never shown (a small
table would otherwise put every customer's e-mail, or a birth date, into the prompt)."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_TYPE_WORD = re.compile(r"[a-z_0-9]+")
_TEXT_TYPES = (
    "char", "varchar", "nvarchar", "nchar", "character", "text", "citext", "string", "clob",
    "ntext", "tinytext", "mediumtext", "longtext", "bpchar",
    # ClickHouse (an enum's values are its labels)
    "fixedstring", "enum8", "enum16",
)  # fmt: skip
_TEMPORAL_TYPES = (
    "date", "datetime", "datetime2", "smalldatetime", "timestamp", "timestamptz", "time",
    "timetz",
    # ClickHouse
    "date32", "datetime64",
)  # fmt: skip
_NUMBER_TYPES = (
    "int", "integer", "bigint", "smallint", "tinyint", "mediumint", "int2", "int4", "int8",
    "hugeint", "numeric", "decimal", "real", "float", "float4", "float8", "double", "number",
    "money", "smallmoney", "serial", "bigserial",
    # ClickHouse
    "int16", "int32", "int64", "int128", "int256", "uint8", "uint16", "uint32", "uint64",
    "uint128", "uint256", "float32", "float64", "bfloat16", "decimal32", "decimal64",
    "decimal128", "decimal256",
)  # fmt: skip
_WRAPPERS = ("nullable(", "lowcardinality(")
"""ClickHouse's type wrappers: ``LowCardinality(Nullable(String))`` is profiled as text."""
_KINDS = {
    **dict.fromkeys(_TEXT_TYPES, "text"),
    **dict.fromkeys(_TEMPORAL_TYPES, "temporal"),
    **dict.fromkeys(_NUMBER_TYPES, "number"),
}
"""A type's first word -> what is profiled (``int4range``, ``point``, ``enum(…)``: nothing)."""
_MAX_VALUE_CHARS = 60
"""A longer value is prose or an identifier, not a category: the column gets no values."""


class ProfileSettings(BaseModel):
    """How a connector profiles its columns (its ``profile*`` options)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    exclude: tuple[str, ...] = ()
    """``fnmatch`` patterns over ``table.column`` and ``schema.table.column`` (``*.notes``)."""
    time_budget_s: float = Field(default=5.0, gt=0)
    """Wall-clock time the whole pass may take; tables past it are not profiled."""
    max_values: int = Field(default=12, ge=1, le=50)
    sample_rows: int = Field(default=10_000, ge=100)
    """Rows read of a table for its profile; a larger table's profile says it was sampled."""
    statistics: bool = True
    """Profile tables larger than the sample from the engine's planner statistics where it
    keeps them (PostgreSQL), reading no row."""

    @classmethod
    def from_options(
        cls, enabled: bool, exclude: Sequence[str] | str, time_budget_s: float
    ) -> ProfileSettings:
        """Settings from the connector's keyword options, or one line that says the fix."""
        if not isinstance(enabled, bool):
            raise ConfigurationError(f"profile must be True or False, got {enabled!r}")
        patterns = (exclude,) if isinstance(exclude, str) else tuple(exclude)
        if not all(isinstance(p, str) and p for p in patterns):
            raise ConfigurationError(
                "profile_exclude must be column patterns such as 'customers.email' or '*.notes'"
            )
        if not isinstance(time_budget_s, int | float) or time_budget_s <= 0:
            raise ConfigurationError("profile_time_s must be a positive number of seconds")
        return cls(enabled=enabled, exclude=patterns, time_budget_s=float(time_budget_s))

    def excludes(self, table: TableInfo, column: str) -> bool:
        if not self.exclude:
            return False
        names = (f"{table.name}.{column}".lower(), f"{table.qualified_name}.{column}".lower())
        return any(fnmatch.fnmatchcase(n, p.lower()) for p in self.exclude for n in names)


def column_kind(type_: str) -> str | None:
    """``text``, ``number`` or ``temporal`` for the types profiled; None for the rest."""
    lowered = type_.lower()
    if "[]" in lowered or "array" in lowered:
        return None
    while lowered.startswith(_WRAPPERS):
        lowered = lowered.split("(", 1)[1]
    words = _TYPE_WORD.findall(lowered)
    return _KINDS.get(words[0]) if words else None


def is_secret(column: str) -> bool:
    """Whether a column's name says it holds a credential (never profiled)."""
    snake = _CAMEL.sub("_", column)
    return bool(_SECRET_WORD.search(column) or _SECRET_NAME.search(snake))


def is_personal(table: TableInfo, column: str) -> bool:
    """Whether a column is about a person (values and bounds never shown)."""
    snake = _CAMEL.sub("_", column)
    if _PERSONAL_NAME.search(snake):
        return True
    return column.lower() == "name" and bool(_PERSON_TABLE.search(table.name))


Run = Callable[[str, float], list[tuple[Any, ...]]]
"""Runs one statement read-only under a timeout (seconds) and returns its rows."""

_BATCH = 128
"""Columns per statement: a round trip and a plan per batch, not per table (SQLite allows
500 compound terms). A values statement returns at most ``_BATCH * max_values`` rows."""
_STATEMENT_TIMEOUT_S = 5.0
"""At most this long for one statement, within what the pass's time budget has left."""
_TABLES_PER_STATEMENT = 1000
"""Tables whose row estimates one statement reads (it returns only the large ones)."""
MAX_ROWS = _BATCH * 50
"""The most rows one profiling statement may return (``max_values`` is at most 50); the
caller fails a statement that returns more, and its batch is split."""
_CAST = {"mysql": "CHAR", "clickhouse": "Nullable(String)"}
"""The text type each dialect casts to (TEXT elsewhere; ClickHouse's String holds no NULL)."""
_MIN_MAX = {"clickhouse": ("minOrNull", "maxOrNull")}
"""The aggregates bounds are read with (MIN and MAX elsewhere; ClickHouse's give 0 and
1970-01-01 for no rows)."""
_ALIASED = frozenset({"clickhouse"})
"""Dialects that refuse two output columns of one name in a UNION branch (``SELECT 0, 0``):
every column of a statement gets a name of its own (:meth:`_Statements._select`)."""


class _Target(NamedTuple):
    table: int
    """The table's position in the catalog, and the column's in the table: statements
    carry numbers, never names as literals."""
    position: int
    column: str
    kind: str


class _Seen(NamedTuple):
    """What was learned of one column, from rows or from the engine's statistics."""

    null_share: float | None
    values: tuple[str, ...]
    low: Any
    high: Any
    sampled_rows: int | None = None
    from_statistics: bool = False


def profile_catalog(
    catalog: Catalog, settings: ProfileSettings, run: Run, quote: Callable[[str], str]
) -> Catalog:
    """``catalog`` with each profiled column's :class:`ColumnProfile` filled in.

    ``quote`` quotes one identifier as the engine does (SQLAlchemy's preparer). Failures are
    the data's business, not the caller's: a batch that fails is split until the table that
    fails it is found, and that table keeps no profile.
    """
    if not settings.enabled or catalog.dialect not in PROFILED_BACKENDS:
        return catalog
    sql = _Statements(catalog, settings, quote)
    deadline = time.monotonic() + settings.time_budget_s
    targets = [
        _Target(table_position, position, column.name, kind)
        for table_position, table in enumerate(catalog.tables)
        if table.kind == "table"
        for position, column, kind in _chosen(table, settings)
    ]
    seen: dict[tuple[int, int], _Seen] = {}
    if settings.statistics and catalog.dialect in STATISTICS_DIALECTS:  # no row is read
        seen.update(_from_statistics(catalog, targets, settings, run, deadline))
    sampled = [t for t in targets if (t.table, t.position) not in seen]
    counts: dict[tuple[int, int], tuple[Any, ...]] = {}
    for row in _run_batches(sampled, sql.stats, run, deadline):
        for slot in range(2, len(row), 5):
            if int(row[slot]) >= 0:  # (rows, non-NULLs, distinct, low, high) per column
                counts[(int(row[0]), int(row[slot]))] = (row[1], *row[slot + 1 : slot + 5])
    categorical = [
        t
        for t in sampled
        if t.kind == "text"
        and not is_personal(catalog.tables[t.table], t.column)
        and 0 < int(counts.get((t.table, t.position), (0, 0, 0))[2] or 0) <= settings.max_values
    ]
    found: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for table, position, value, count in _run_batches(categorical, sql.values, run, deadline):
        found.setdefault((int(table), int(position)), []).append((-int(count), str(value)))
    for key, (rows, present, _distinct, low, high) in counts.items():
        values = tuple(value for _, value in sorted(found.get(key, ())))
        rows = int(rows or 0)
        seen[key] = _Seen(
            null_share=round(1 - int(present or 0) / rows, 3) if rows else None,
            values=values,
            low=low,
            high=high,
            # a sample's bounds are not the table's (the first rows are often the oldest)
            sampled_rows=rows if rows >= settings.sample_rows else None,
        )
    if len(seen) < len(targets):
        _log.info("profiled %d of %d columns (time budget or errors)", len(seen), len(targets))
    return catalog.model_copy(update={"tables": _with_profiles(catalog, seen, settings)})


def _from_statistics(
    catalog: Catalog,
    targets: list[_Target],
    settings: ProfileSettings,
    run: Run,
    deadline: float,
) -> dict[tuple[int, int], _Seen]:
    """Profiles from the engine's planner statistics (:mod:`.statistics`), for the columns
    of tables larger than the sample that it has them for; the rest are sampled. The large
    tables are found first, from the catalog's row estimates in one statement per thousand
    tables: most tables of most catalogs are small, and their statistics are not read (a
    table the sample covers is read whole instead: exact, and as cheap; a small table's
    statistics keep only values seen more than once)."""

    def where(table: int) -> tuple[str, str]:
        found = catalog.tables[table]
        return found.schema_name or catalog.default_schema or "", found.name

    def find_large(batch: list[_Target]) -> str:
        return large_tables_sql([(t.table, *where(t.table)) for t in batch], settings.sample_rows)

    one_per_table = list({t.table: t for t in targets}.values())
    large = {
        int(row[0])
        for row in _run_batches(one_per_table, find_large, run, deadline, _TABLES_PER_STATEMENT)
    }
    targets = [t for t in targets if t.table in large]
    if not targets:
        return {}
    columns = [Column(t.table, t.position, *where(t.table), t.column) for t in targets]
    by_key = {(c.table, c.position): c for c in columns}
    kinds = {(t.table, t.position): t.kind for t in targets}

    def build(batch: list[_Target]) -> str:
        return statistics_sql([by_key[(t.table, t.position)] for t in batch])

    rows = list(_run_batches(targets, build, run, deadline))
    return {
        key: _Seen(
            null_share=round(found.null_share, 3),
            values=found.values or (),
            low=found.low,
            high=found.high,
            from_statistics=True,
        )
        for key, found in read_statistics(rows, kinds, settings.max_values).items()
    }


def _chosen(table: TableInfo, settings: ProfileSettings) -> list[tuple[int, ColumnInfo, str]]:
    """The columns worth profiling: no keys, no secrets, nothing excluded, a known kind."""
    keys = {c for fk in table.foreign_keys for c in fk.columns}
    return [
        (position, column, kind)
        for position, column in enumerate(table.columns)
        if not column.primary_key
        and column.name not in keys
        and not is_secret(column.name)
        and not settings.excludes(table, column.name)
        and (kind := column_kind(column.type)) is not None
    ]


def _run_batches(
    targets: list[_Target],
    build: Callable[[list[_Target]], str],
    run: Run,
    deadline: float,
    size: int = _BATCH,
) -> Iterator[tuple[Any, ...]]:
    """Rows of ``build(batch)`` for batches of ``size`` targets; a failing batch is halved
    until the failing target is alone (and dropped), so one unreadable table costs only
    itself."""
    pending = [targets[i : i + size] for i in range(0, len(targets), size)]
    while pending:
        batch = pending.pop(0)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        try:
            rows = run(build(batch), min(remaining, _STATEMENT_TIMEOUT_S))
        except Exception as exc:
            _log.debug("profile batch of %d failed: %s", len(batch), type(exc).__name__)
            tables = sorted({t.table for t in batch})
            if len(tables) > 1:
                half = {*tables[: len(tables) // 2]}
                pending[:0] = [
                    [t for t in batch if t.table in half],
                    [t for t in batch if t.table not in half],
                ]
            continue
        yield from rows


class _Statements:
    """The two statements over a sample (counts and bounds, then values), written for one
    catalog's dialect."""

    def __init__(
        self, catalog: Catalog, settings: ProfileSettings, quote: Callable[[str], str]
    ) -> None:
        self.catalog = catalog
        self.settings = settings
        self.quote = quote
        self.text = _CAST.get(catalog.dialect, "TEXT")
        self.min, self.max = _MIN_MAX.get(catalog.dialect, ("MIN", "MAX"))
        self.aliased = catalog.dialect in _ALIASED

    def _select(self, items: list[str]) -> str:
        """``SELECT`` of ``items``, each named ``_relay_0``, ``_relay_1``… where the dialect
        needs it (ClickHouse resolves a name to a SELECT alias before a column: the aliases
        must not be a column's name)."""
        if self.aliased:
            items = [f"{item} AS _relay_{index}" for index, item in enumerate(items)]
        return "SELECT " + ", ".join(items)

    def stats(self, batch: list[_Target]) -> str:
        """Per table, one row: its sampled rows, then per column a slot of (position,
        non-NULLs, distinct (text), min, max (numbers, dates)); short rows padded with
        empty slots. One branch per table, not per column: SQLite spends more preparing a
        statement's subqueries than running them."""
        tables: dict[int, list[_Target]] = {}
        for target in batch:
            tables.setdefault(target.table, []).append(target)
        width = max(len(targets) for targets in tables.values())
        # typed NULLs: PostgreSQL types a column of two untyped NULLs as text, then fails
        # the UNION on the next branch's number; position -1 marks an empty slot
        none = f"CAST(NULL AS {self.text})"
        branches = []
        for table, targets in tables.items():
            items = [str(table), "COUNT(*)"]
            for target in targets:
                x = self.quote(target.column)
                position, present = str(target.position), f"COUNT({x})"
                if target.kind == "text":
                    items += [position, present, f"COUNT(DISTINCT {x})", none, none]
                else:
                    low, high = (f"CAST({f}({x}) AS {self.text})" for f in (self.min, self.max))
                    items += [position, present, "0", low, high]
            items += ["-1", "0", "0", none, none] * (width - len(targets))
            source = self._sample(targets[0], [t.column for t in targets])
            branches.append(f"{self._select(items)} FROM {source}")
        return " UNION ALL ".join(branches)

    def values(self, batch: list[_Target]) -> str:
        """Per low-cardinality column: each value and how often it occurs."""
        branches = []
        for target in batch:
            x = self.quote(target.column)
            items = [str(target.table), str(target.position), f"CAST({x} AS {self.text})"]
            branches.append(
                f"{self._select([*items, 'COUNT(*)'])} FROM {self._sample(target)} "
                f"WHERE {x} IS NOT NULL GROUP BY {x}"
            )
        return " UNION ALL ".join(branches)

    def _name(self, target: _Target) -> str:
        table = self.catalog.tables[target.table]
        name = self.quote(table.name)
        return f"{self.quote(table.schema_name)}.{name}" if table.schema_name else name

    def _sample(self, target: _Target, columns: list[str] | None = None) -> str:
        """The first ``sample_rows`` rows of the columns (default: the target's), as a
        derived table."""
        listed = ", ".join(self.quote(c) for c in columns or [target.column])
        return f"(SELECT {listed} FROM {self._name(target)} LIMIT {self.settings.sample_rows}) AS s"


def _with_profiles(
    catalog: Catalog, seen: dict[tuple[int, int], _Seen], settings: ProfileSettings
) -> tuple[TableInfo, ...]:
    tables = []
    for table_position, table in enumerate(catalog.tables):
        columns = []
        for position, column in enumerate(table.columns):
            found = seen.get((table_position, position))
            if found is None:
                columns.append(column)
                continue
            low, high, values = found.low, found.high, found.values
            if is_personal(table, column.name):  # a birth date's bounds are someone's
                low = high = None
                values = ()
            withheld = _credential_shape(values, low, high)
            if withheld is not None:  # named innocently, holding keys: nothing of it shown
                low = high = None
                values = ()
            if len(values) > settings.max_values or not all(_listable(v) for v in values):
                values = ()  # (more than counted: the engine sampled other rows the 2nd time)
            # built from the engine's own counts and text: trusted, so not validated again
            # (a 1,000-table pass would spend a third of its Python time re-checking them)
            profile = ColumnProfile.model_construct(
                values=values,
                low=_text(low),
                high=_text(high),
                null_share=found.null_share,
                sampled_rows=found.sampled_rows,
                from_statistics=found.from_statistics,
                withheld=withheld,
            )
            columns.append(dataclasses.replace(column, profile=profile))
        tables.append(table.model_copy(update={"columns": tuple(columns)}))
    return tuple(tables)


def _credential_shape(values: tuple[str, ...], low: Any, high: Any) -> str | None:
    """``"values look like a card number"`` when a value or a bound the profile would show
    has a credential's or a personal identifier's shape, whatever the column's name."""
    for value in (*values, low, high):
        kind = secret_kind(value) if isinstance(value, str) else None
        if kind is not None:
            return f"values look like {kind}"
    return None


def _listable(value: str) -> bool:
    """A category's value: short, not blank, not an e-mail address, and shown exactly as
    stored (no line breaks, tabs or doubled spaces the prompt's one line would lose)."""
    return (
        len(value) <= _MAX_VALUE_CHARS
        and bool(value)
        and " ".join(value.split()) == value
        and "@" not in value
    )


def _text(value: Any) -> str | None:
    """A bound as the prompt shows it: dates as dates, floats without binary noise."""
    if value is None:
        return None
    text = str(value).strip()
    if _DATE_TIME.fullmatch(text):
        return text[:10] if text[10:].strip(" T0:.") == "" else text[:19].replace("T", " ")
    try:
        number = float(text)
    except ValueError:
        return text[:_MAX_VALUE_CHARS]
    return text if len(text) <= 12 else f"{number:.6g}"


_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?.*")


def sample_text_values(
    catalog: Catalog,
    limit: int,
    dialect: str,
    run: Callable[[str], Sequence[tuple[Any, ...]]],
    sample_rows: int = 10_000,
) -> dict[str, list[str]]:
    """Up to ``limit`` distinct values of each text column (``run`` executes one query,
    read-only and bounded): the connector's opt-in ``sample_values``. Read from the first
    ``sample_rows`` rows of the table, never the whole of it (a ``DISTINCT … ORDER BY`` over
    ten million rows is a scan and a sort per column). A column that cannot be read has none;
    samples are a nicety, never a reason for a prompt to fail."""
    from sqlglot import exp

    samples: dict[str, list[str]] = {}
    for table in catalog.tables:
        for column in table.columns:
            if not any(word in column.type.lower() for word in _TEXT_WORDS):
                continue
            if is_secret(column.name) or is_personal(table, column.name):
                continue  # as in the profile: a credential's or a person's values never
            rows_of = (
                exp.select(exp.column(column.name, quoted=True))
                .from_(exp.table_(table.name, db=table.schema_name, quoted=True))
                .limit(sample_rows)
                .subquery("s")
            )
            name = exp.column(column.name, quoted=True)
            query = (
                exp.select(name)
                .distinct()
                .from_(rows_of)
                .where(exp.Not(this=exp.Is(this=name.copy(), expression=exp.Null())))
                .order_by(name.copy())
                .limit(limit)
            )
            try:
                rows = run(query.sql(dialect=dialect))
            except Exception:
                rows = []
            values = [str(row[0]) for row in rows]
            if any(secret_kind(value) for value in values):
                values = []  # one value shaped like a credential: the column shows none
            samples[f"{table.qualified_name}.{column.name}"] = values
    return samples
