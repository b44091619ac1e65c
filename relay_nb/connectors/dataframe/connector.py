"""``DataFrameConnector``: notebook DataFrames as read-only SQL tables, through DuckDB.

It *is* a :class:`SQLConnector` — the same guard, read-only execution, timeouts,
cancellation, previews and tools — over a private in-memory DuckDB database in which every
frame is registered as a view. DuckDB scans pandas memory directly, so registering a
million-row frame takes milliseconds and copies nothing. The database is opened sealed:
external access off (no files, no network, no extensions, no spill directory, no lookup of
Python variables by name) and the configuration locked, so even SQL the guard missed could
only read the registered frames.

Two things differ from a database, and explain most of this module:

- **The catalog is the frames.** Registered views are temporary, which DuckDB's catalog
  reader skips, and a frame's schema can change between any two turns. So the catalog is
  built here from ``DESCRIBE`` of each registered frame, and rebuilt for one table only when
  that frame's cheap :func:`~relay_nb.connectors.dataframe.frames.signature` changes.
- **Values change in place.** DuckDB binds a frame's arrays when it is registered, so a cell
  edited or a column replaced afterwards would stay invisible. Every query therefore
  re-registers the frames it reads (about a millisecond each, still no copy).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from relay_nb.connectors.background import run_interruptibly
from relay_nb.connectors.base import check_connector_id
from relay_nb.connectors.bounds import DEFAULT_MAX_RESULT_BYTES, DEFAULT_MAX_VALUE_BYTES
from relay_nb.connectors.dataframe.frames import (
    FrameError,
    FrameSource,
    SQLFrame,
    normalize_sources,
    resolve,
    signature,
    sql_frame,
)
from relay_nb.connectors.guarded import GuardedSQLConnector
from relay_nb.connectors.results import QueryResult
from relay_nb.connectors.sql.connector import Blocking, SQLConnector
from relay_nb.connectors.sql.introspect.common import compact_type
from relay_nb.connectors.sql.readonly import CancelHandle
from relay_nb.errors import ConfigurationError, QueryExecutionError
from relay_nb.sql import Catalog, ColumnInfo, GuardedQuery, TableInfo

if TYPE_CHECKING:
    from sqlalchemy import Engine

__all__ = ["DUCKDB_CONFIG", "DataFrameConnector"]

DUCKDB_CONFIG: dict[str, Any] = {
    "enable_external_access": False,  # no files, URLs, ATTACH, COPY, INSTALL
    "python_enable_replacements": False,  # no `FROM some_variable` reaching Python objects
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "temp_directory": "",  # DuckDB allows file access under its spill directory: none
}
"""How the private database is opened: external access is off from the first moment."""

_ON_CONNECT = (
    # time-zone-aware columns read the same on every machine (an ICU setting, so it cannot
    # be given at open); then the lock, before any query can run: nothing is SET back
    "SET TimeZone = 'UTC'",
    "SET lock_configuration = true",
)

_SHORT_DUCKDB_TYPES = {"timestamp with time zone": "timestamptz"}


@dataclass
class _TableState:
    """The last good reading of one table, and why it cannot be read now (if it cannot)."""

    frame: pd.DataFrame
    """Held so the identity in ``signature`` cannot be reused by another object."""
    signature: tuple[Any, ...]
    info: TableInfo
    problem: FrameError | None = None


class DataFrameConnector(SQLConnector):
    """In-notebook pandas DataFrames, queried with guarded read-only DuckDB SQL.

    ``frames`` is one source — a table named like the connector id — or a mapping of
    snake_case table names to sources. A source is a DataFrame (changes made to that object
    are seen) or a zero-argument callable returning one, called before every query and
    prompt (so rebinding a notebook variable is seen too).
    """

    kind = "dataframe"

    def __init__(
        self,
        id: str,
        frames: FrameSource | Mapping[str, FrameSource],
        *,
        row_limit: int = 200,
        statement_timeout_s: float = 30.0,
        name: str | None = None,
        description: str | None = None,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    ) -> None:
        connector_id = check_connector_id(id)
        self._sources: dict[str, FrameSource] = normalize_sources(connector_id, frames)
        self._states: dict[str, _TableState] = {}
        self._lock = threading.RLock()
        self._closed = False
        super().__init__(
            connector_id,
            _sealed_engine(),
            row_limit=row_limit,
            statement_timeout_s=statement_timeout_s,
            name=name,
            description=description,
            max_value_bytes=max_value_bytes,
            max_result_bytes=max_result_bytes,
        )
        tables = list(self._sources)
        plural = "s" if len(tables) > 1 else ""
        self.target = f"{len(tables)} DataFrame{plural}: {', '.join(tables)}"
        try:
            self.catalog  # noqa: B018 - read every source now: a bad frame fails at connect
        except QueryExecutionError as exc:
            self.close()
            raise ConfigurationError(str(exc)) from None

    # ------------------------------------------------------------------ schema
    @property
    def catalog(self) -> Catalog:
        """The frames as tables, as they are now; a table whose signature is unchanged is
        not described again."""
        with self._lock:
            self._check_open()
            changed = self._catalog is None
            for table, source in self._sources.items():
                changed = self._update(table, source) or changed
            if changed:
                self._catalog = Catalog(
                    dialect="duckdb",
                    default_schema=None,
                    tables=tuple(self._shown(self._states[t]) for t in self._sources),
                )
            assert self._catalog is not None
            return self._catalog

    def refresh(self, *, force: bool = False) -> Catalog:  # type: ignore[override]
        """Describe every frame again (the catalog also follows changes by itself)."""
        with self._lock:
            self._check_open()
            self._states.clear()
            self._catalog = None
            return self.catalog

    def refresh_if_changed(self, *, force: bool = False) -> bool:
        """Nothing to read for an expired schema: each read of :attr:`catalog` compares the
        frames' signatures already (``force``: describe every frame again)."""
        before = self._catalog
        return (self.refresh() if force else self.catalog) is not before

    @property
    def context_ready(self) -> bool:
        return False  # reading the namespace may describe a changed frame: not on the loop

    def _update(self, table: str, source: FrameSource) -> bool:
        """Read one source; returns whether what the model is shown changed.

        A source that fails after it once worked keeps its last schema with a note, so the
        other tables stay usable and a query on this one fails with the reason.
        """
        state = self._states.get(table)
        try:
            frame = resolve(table, source)
            current = signature(frame)
            if state is not None and state.signature == current:
                fixed = state.problem is not None
                state.frame, state.problem = frame, None
                return fixed
            info = self._describe(table, frame)
        except FrameError as exc:
            if state is None:  # never read: there is nothing to show
                raise QueryExecutionError(str(exc)) from None
            fresh = state.problem is None or state.problem.reason != exc.reason
            state.problem = exc
            return fresh
        self._states[table] = _TableState(frame, current, info)
        return True

    def _describe(self, table: str, frame: pd.DataFrame) -> TableInfo:
        prepared = sql_frame(table, frame)
        with self._driver() as driver:
            self._register(driver, table, prepared)
            try:  # binding the view is where an unreadable column shows
                described = driver.execute(f'DESCRIBE "{table}"').fetchall()
            except Exception as exc:
                raise _unscannable(driver, table, prepared.frame, exc) from None
        columns = tuple(
            ColumnInfo(
                name=column,
                type=_sql_type(duck_type),
                nullable=prepared.nullable.get(column, True),
                comment=prepared.notes.get(column) or None,
            )
            for column, duck_type, *_ in described
        )
        rows = len(frame)
        comment = f"DataFrame, {rows:,} row{'s' if rows != 1 else ''}"
        return TableInfo(schema_name=None, name=table, columns=columns, comment=comment)

    @staticmethod
    def _shown(state: _TableState) -> TableInfo:
        if state.problem is None:
            return state.info
        comment = f"unavailable: {state.problem.reason}"
        return state.info.model_copy(update={"comment": comment})

    # ------------------------------------------------------------------ queries
    def _before_run(self, guarded: GuardedQuery) -> None:
        """Register the current contents of the frames the query reads (DuckDB would
        otherwise scan the arrays it saw at the last registration)."""
        with self._lock, self._driver() as driver:
            for table in guarded.tables:
                state = self._states[table]
                if state.problem is not None:
                    raise QueryExecutionError(str(state.problem))
                try:
                    self._register(driver, table, sql_frame(table, state.frame))
                except FrameError as exc:
                    raise QueryExecutionError(str(exc)) from None

    def query(self, sql: str) -> QueryResult:
        """Run one query now; Ctrl-C cancels it. The whole query (registrations, statement)
        runs on the worker, which holds the lock until the statement has really ended: a
        caller given up on after Ctrl-C must not let the next query re-register frames on
        the one connection while that statement still runs."""
        cancel = CancelHandle()
        return run_interruptibly(
            lambda: self._execute(sql, cancel),
            on_interrupt=lambda: cancel.cancel("interrupted"),
            grace_s=self.statement_timeout_s,
        )

    def _execute(
        self, sql: str, cancel: CancelHandle, blocking: Blocking | None = None
    ) -> QueryResult:
        # one DuckDB connection holds the registrations: queries take turns on it
        with self._lock:
            self._check_open()
            return super()._execute(sql, cancel, blocking)

    @contextlib.contextmanager
    def _driver(self) -> Iterator[Any]:
        """The DuckDB connection (the pool's only one; reopened empty after a timeout)."""
        raw = self.engine.raw_connection()
        try:
            yield raw.driver_connection
        finally:
            raw.close()

    @staticmethod
    def _register(driver: Any, table: str, prepared: SQLFrame) -> None:
        abort = getattr(driver, "abort", None)  # DuckDB 2 refuses work while a result is open
        if abort is not None:
            abort()
        try:
            driver.register(table, prepared.frame)
        except Exception:
            # something not registered by us holds the name (only SQL run around the guard
            # can create it): drop it and register again
            try:
                driver.execute(f'DROP VIEW IF EXISTS "{table}"')
                driver.register(table, prepared.frame)
            except Exception as exc:
                raise _unscannable(driver, table, prepared.frame, exc) from None

    def _check_open(self) -> None:
        if self._closed:
            raise QueryExecutionError(
                f"the DataFrame connector {self.id!r} is closed; connect the frames again, "
                f"e.g. relay.connect({self.id!r}, df)"
            )

    # ------------------------------------------------------------------ model-facing
    def _query_description(self) -> str:
        return (
            f"Run one read-only SQL query (DuckDB dialect) on {self.name}: pandas "
            f"DataFrames in the notebook, as tables. Returns at most {self.row_limit} "
            "rows: aggregate in SQL rather than fetching raw rows."
        )

    def _context_head(self) -> str:
        return self._heading("DataFrame", "pandas DataFrames in the notebook as DuckDB tables") + (
            f"Query with query_{self.id}: one SELECT/WITH statement in DuckDB SQL, at most "
            f"{self.row_limit} rows returned (LIMIT applied automatically). The tables are the "
            f"frames as they are now. describe_{self.id} gives full table details.\n"
        )

    # the frames' catalog is rebuilt when they change: rendered anew, never from a cache
    _render_schema = GuardedSQLConnector._render_schema

    def close(self) -> None:
        """Close the DuckDB database and let go of the frames; later queries say so."""
        with self._lock:
            self._closed = True
            self._states.clear()
            self._sources = {}
            self._catalog = None
            self.engine.dispose()


def _sealed_engine() -> Engine:
    """An engine over one private in-memory DuckDB connection, sealed at open.

    ``StaticPool``: registered frames live in one connection, so every checkout must be that
    connection. If a timeout makes the pool discard it, the next checkout opens a fresh,
    equally sealed one, and the next query registers what it reads there.
    """
    try:
        import duckdb  # noqa: F401 - fail here with an install hint, not inside SQLAlchemy
        import duckdb_engine  # noqa: F401
    except ModuleNotFoundError:
        raise ConfigurationError(
            "DataFrame connectors run on DuckDB, which is not installed; "
            "pip install 'relay-nb[duckdb]'"
        ) from None
    from sqlalchemy import create_engine, event
    from sqlalchemy.pool import StaticPool

    engine = create_engine(
        "duckdb:///:memory:", poolclass=StaticPool, connect_args={"config": dict(DUCKDB_CONFIG)}
    )
    event.listen(engine, "connect", _seal)
    return engine


def _seal(dbapi_connection: Any, _record: Any) -> None:
    """Runs once per opened connection, before the pool hands it to anyone."""
    for statement in _ON_CONNECT:
        dbapi_connection.execute(statement)


def _sql_type(duck_type: str) -> str:
    """DuckDB's type name, compact: ``ENUM('a', 'b')`` -> ``enum`` (the categories are in
    the column comment), ``TIMESTAMP WITH TIME ZONE`` -> ``timestamptz``."""
    text = compact_type(duck_type, "duckdb")
    if text.startswith("enum("):
        return "enum"
    return _SHORT_DUCKDB_TYPES.get(text, text)


def _unscannable(driver: Any, table: str, frame: pd.DataFrame, error: Exception) -> FrameError:
    """Name the column DuckDB cannot scan (probing one column at a time), or say why not."""
    probe = "__relay_probe"
    for position, (label, series) in enumerate(frame.items()):
        try:
            driver.register(probe, frame.iloc[:, [position]])
            driver.execute(f'SELECT * FROM "{probe}" LIMIT 0').fetchall()
        except Exception:
            return FrameError(
                f"table {table!r}: column {str(label)!r} has dtype {series.dtype}, which DuckDB "
                f"cannot read; convert it, e.g. df[{str(label)!r}] = "
                f"df[{str(label)!r}].astype(str)",
                f"column {str(label)!r} cannot be read",
            )
        finally:
            with contextlib.suppress(Exception):
                driver.unregister(probe)
    first_line = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
    return FrameError(
        f"table {table!r}: DuckDB cannot read this DataFrame ({first_line})",
        "DuckDB cannot read it",
    )
