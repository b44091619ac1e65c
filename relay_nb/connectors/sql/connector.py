"""``SQLConnector``: any SQLAlchemy database as guarded, read-only tools for the model.

Pipeline for every query, whoever writes it: guard (parse, check, clamp, re-serialise) →
read-only execution of the re-serialised tree → DataFrame for the notebook and a compact
preview for the model. The schema is read from the catalog once and cached; ``refresh()``
re-reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy import URL, Engine

from relay_nb.connectors.background import run_interruptibly
from relay_nb.connectors.base import check_connector_id
from relay_nb.connectors.bounds import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    ResultBudget,
    describe_bytes,
)
from relay_nb.connectors.guarded import GuardedSQLConnector
from relay_nb.connectors.preflight import Estimate, Preflight
from relay_nb.connectors.results import QueryResult
from relay_nb.connectors.sql.chdb_session import ONE_PATH
from relay_nb.connectors.sql.estimate import FIGURES, estimate_query
from relay_nb.connectors.sql.fetch import (
    driver_message,
    is_oversized,
    is_server_timeout,
    unknown_column,
)
from relay_nb.connectors.sql.introspect import fingerprint, introspect
from relay_nb.connectors.sql.readonly import (
    CancelHandle,
    DatabaseUnavailable,
    build_engine,
    open_connection,
    parse_url,
    run_read_only,
)
from relay_nb.connectors.sql.total import row_total
from relay_nb.errors import ConfigurationError, QueryExecutionError, QueryTimeoutError
from relay_nb.redaction import redact_url, register_secret, url_secrets
from relay_nb.sql import (
    Catalog,
    GuardedQuery,
    ProfileSettings,
    RenderCache,
    SchemaRanker,
    guard_dialect,
    policy_for,
    profile_catalog,
    render_catalog,
    sample_text_values,
    sqlglot_dialect,
)
from relay_nb.sql.catalog.profile import MAX_ROWS

if TYPE_CHECKING:
    import sqlalchemy as sa

__all__ = ["SQLConnector"]

logger = logging.getLogger("relay_nb.connectors.sql")

_TEMPORAL_WORDS = ("date", "time")
PROFILE_AGE_S = 3600.0
"""Value profiles (ranges, distinct values) follow the data, not the schema: an unchanged
schema is kept without a read for at most this long, then read and profiled again."""
_INLINE_TABLES = 200
"""A cached catalog this small renders for a question in well under a millisecond."""
_CATALOG_READ_S = 10.0
"""What the connect check allows the catalog read itself; profiling adds its own budget."""

_T = TypeVar("_T")


class Blocking(Protocol):
    """How the driver's calls are made: ``fetch()`` here, or handed to a worker thread."""

    def __call__(self, fetch: Callable[[], _T], /) -> _T: ...


def _here(fetch: Callable[[], _T], /) -> _T:
    return fetch()


class SQLConnector(GuardedSQLConnector):
    kind = "sql"

    def __init__(
        self,
        id: str,
        url: str | URL | Engine,
        *,
        tables: Sequence[str] | None = None,
        schemas: Sequence[str] | None = None,
        row_limit: int = 200,
        statement_timeout_s: float = 30.0,
        name: str | None = None,
        description: str | None = None,
        preview_chars: int = 4000,
        sample_values: int = 0,
        profile: bool = True,
        profile_exclude: Sequence[str] = (),
        profile_time_s: float = 5.0,
        ranker: SchemaRanker | None = None,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        preflight: bool | None = None,
        approve_above: int | str | None = None,
        approve_above_rows: int | None = None,
        price_per_tb: float | None = None,
    ) -> None:
        self.id = check_connector_id(id)
        self.preflight = Preflight.from_options(
            preflight, approve_above, approve_above_rows, price_per_tb
        )
        """Ask the database what a query scans before running it, and when to ask the
        analyst first (:mod:`relay_nb.connectors.preflight`)."""
        self._set_limits(
            row_limit=row_limit,
            statement_timeout_s=statement_timeout_s,
            max_value_bytes=max_value_bytes,
            max_result_bytes=max_result_bytes,
        )
        self.name = name or id
        self.description = description
        self.preview_chars = preview_chars
        if not isinstance(sample_values, int) or not 0 <= sample_values <= 20:
            raise ConfigurationError("sample_values must be an integer from 0 (off) to 20")
        self.sample_values = sample_values
        self._samples: dict[str, list[str]] | None = None
        self._renders = RenderCache()
        self.profile = ProfileSettings.from_options(profile, profile_exclude, profile_time_s)
        """Value profiling in the catalog pass (:mod:`relay_nb.sql.catalog.profile`)."""
        self.catalog_timeout_s = _CATALOG_READ_S + (
            self.profile.time_budget_s if self.profile.enabled else 0.0
        )
        """How long a catalog read (with its profiles) may take: the prompt's schema source
        waits that long for it, and the connect check too (``startup_timeout_s``)."""
        self.startup_timeout_s = self.catalog_timeout_s
        if ranker is not None and not isinstance(ranker, SchemaRanker):
            raise ConfigurationError(
                "ranker must have a rank(catalog, question) method (see SchemaRanker)"
            )
        self.ranker = ranker
        """Orders tables by the question when the schema does not fit (None: lexical)."""
        self._tables = list(tables) if tables is not None else None
        self._schemas = list(schemas) if schemas is not None else None
        self._owns_engine = not isinstance(url, Engine)
        given = url.url if isinstance(url, Engine) else parse_url(url)
        written = given.render_as_string(hide_password=False)
        for secret in url_secrets(written):
            register_secret(secret)
        self.engine = build_engine(url)
        self.target = redact_url(written)
        self._closed = False
        self.dialect = sqlglot_dialect(self.engine.dialect.name)
        if self.preflight.enabled:
            try:
                figures = FIGURES.get(self.engine.dialect.name)
                if figures is None:
                    raise ConfigurationError(
                        f"{self.engine.dialect.name} gives relay_nb no cost estimate yet; the "
                        "preflight (approve_above, approve_above_rows, price_per_tb) works on "
                        "PostgreSQL, DuckDB, BigQuery, Snowflake, Trino, ClickHouse and Spark"
                    )
                self.preflight.check_figures(figures, self.engine.dialect.name)
            except ConfigurationError:
                if self._owns_engine:
                    self.engine.dispose()
                raise
        self.policy = policy_for(self.dialect)
        """The guard policy of the dialect's family, and the family's connector facts."""
        self._catalog: Catalog | None = None
        self._fingerprint: str | None = None
        self._read_at = 0.0
        self._catalog_lock = threading.Lock()

    # ------------------------------------------------------------------ schema
    @property
    def catalog(self) -> Catalog:
        """The introspected schema, read once and cached."""
        self._check_not_closed()
        if self._catalog is None:
            with self._catalog_lock:
                if self._catalog is None:
                    self._catalog, self._fingerprint, self._read_at = self._read()
        return self._catalog

    detects_changes = True

    def refresh(self, *, force: bool = False) -> Catalog:  # type: ignore[override]
        """Read the catalog again after the database's schema changed; returns it.

        One statement first asks whether anything the read depends on changed
        (:func:`~relay_nb.connectors.sql.introspect.fingerprint`: SQLite's schema version,
        PostgreSQL's catalog row versions, a server-side checksum on MySQL/MariaDB and
        DuckDB); an unchanged schema keeps the catalog it has, unless its value profiles
        are older than :data:`PROFILE_AGE_S`. ``force=True`` reads it all, value samples
        included.
        """
        self.refresh_if_changed(force=force)
        return self.catalog

    def refresh_if_changed(self, *, force: bool = False) -> bool:
        """True if the catalog changed and was read again; False if it is the same object
        as before (what the registry calls for an expired schema, off the question's path)."""
        self._check_not_closed()
        with self._catalog_lock:
            old, token = self._catalog, self._fingerprint
            young = not self.profile.enabled or time.monotonic() < self._read_at + PROFILE_AGE_S
            checkable = not force and old is not None and young and token is not None
            if checkable and self._with_catalog_connection(self._fingerprint_of) == token:
                return False
            try:
                new, self._fingerprint, self._read_at = self._read()
            except Exception:
                self._catalog = None  # changed and unreadable: no stale allowlist stays behind
                raise
            if force:
                self._samples = None
            if old is not None and (new.tables, new.default_schema) == (
                old.tables,
                old.default_schema,
            ):
                return False  # e.g. PostgreSQL rewrote a catalog row: keep what caches hold
            self._catalog, self._samples = new, None
            return True

    def invalidate(self) -> None:
        """Forget the catalog; the next prompt reads it again, under its own timeout."""
        with self._catalog_lock:
            self._catalog = None
            self._samples = None

    def _check_not_closed(self) -> None:
        if self._closed:
            raise QueryExecutionError(
                f"the connector {self.id!r} is closed; connect the database again"
            )

    def samples(self) -> dict[str, list[str]]:
        """Up to ``sample_values`` distinct example values per text column (opt-in).

        They cost one small read-only query per text column, once, and are length-capped
        when rendered. Values help the model write ``WHERE status = 'shipped'`` instead of
        guessing 'Shipped'; they are off by default because they put data in the prompt.
        """
        if not self.sample_values:
            return {}
        if self._samples is None:

            def run(sql: str) -> list[tuple[Any, ...]]:
                return run_read_only(
                    self.engine,
                    sql,
                    max_rows=self.sample_values,
                    timeout_s=min(self.statement_timeout_s, 5.0),
                    budget=ResultBudget(self.max_value_bytes, self.max_result_bytes),
                    query=True,
                ).rows

            self._samples = sample_text_values(
                self.catalog, self.sample_values, self.dialect, run, self.profile.sample_rows
            )
        return self._samples

    def _profiled(self, catalog: Catalog) -> Catalog:
        """``catalog`` with its columns' values profiled, within ``profile_time_s``."""
        quote = self.engine.dialect.identifier_preparer.quote_identifier
        return profile_catalog(catalog, self.profile, self._profile_runner(), quote)

    def _profile_runner(self) -> Callable[[str, float], list[tuple[Any, ...]]]:
        """Runs one profiling statement: read-only, bounded, without parallel workers."""

        def run(sql: str, timeout_s: float) -> list[tuple[Any, ...]]:
            budget = ResultBudget(self.max_value_bytes, self.max_result_bytes)
            fetched = run_read_only(
                self.engine,
                sql,
                max_rows=MAX_ROWS + 1,
                timeout_s=timeout_s,
                budget=budget,
                parallel=False,
            )
            if len(fetched.rows) > MAX_ROWS or budget.full:  # cut rows would make lists lie
                raise QueryExecutionError("a profiling statement returned more than it may")
            return fetched.rows

        return run

    def _read(self) -> tuple[Catalog, str | None, float]:
        """A fresh catalog, profiled, and the fingerprint taken before it on the same
        connection. The caller stores the three only once all of it succeeded: a new
        fingerprint beside the old catalog would hide the change from every later check."""
        read_at = time.monotonic()

        def read(conn: sa.Connection) -> tuple[Catalog, str | None]:
            token = self._fingerprint_of(conn)
            return introspect(conn, schemas=self._schemas, tables=self._tables), token

        catalog, token = self._with_catalog_connection(read)
        return self._profiled(catalog), token, read_at

    def _fingerprint_of(self, conn: sa.Connection) -> str | None:
        try:
            return fingerprint(conn, schemas=self._schemas, tables=self._tables)
        except Exception:  # no cheap check (a bad option, a permission): the read tells
            if conn.in_transaction():
                conn.rollback()  # PostgreSQL: a failed statement aborts the transaction
            return None

    def _with_catalog_connection(self, work: Callable[[sa.Connection], Any]) -> Any:
        try:
            with open_connection(self.engine) as conn:
                self.dialect = guard_dialect(self.engine.dialect)  # MariaDB: known once connected
                return work(conn)
        except DatabaseUnavailable as exc:
            raise QueryExecutionError(
                f"could not read the schema of {self.id!r}: {self._unavailable_error(exc)}"
            ) from None
        except ConfigurationError:
            raise
        except Exception as exc:
            raise QueryExecutionError(
                f"could not read the schema of {self.id!r}: {driver_message(exc)}"
            ) from None

    # ------------------------------------------------------------------ queries
    def estimate(self, sql: str) -> Estimate | None:
        """What the database expects ``sql`` to scan, without running it (after the guard,
        which raises UnsafeQueryError as for a query); None when it cannot say."""
        self._check_not_closed()
        guarded = self.guard(sql)
        try:
            found = estimate_query(
                self.engine,
                guarded.sql,
                limit=guarded.limit,
                timeout_s=self.statement_timeout_s,
                search_path=self.catalog.default_schema if self.policy.pins_search_path else None,
            )
        except Exception:  # with a threshold set, the query then waits for the analyst
            logger.info("no estimate from %s", self.id, exc_info=True)
            return None
        return None if found is None else self.preflight.priced(found)

    def query(self, sql: str) -> QueryResult:
        """Run one query now. Ctrl-C (a kernel interrupt) cancels the running statement."""
        cancel = CancelHandle()

        def interruptibly(fetch: Callable[[], _T], /) -> _T:
            # only the driver's call leaves this thread: the guard and the frame are CPU
            # work that a KeyboardInterrupt stops here anyway, and whose data stays hot in
            # this core's caches (moving the whole query to a worker cost ~0.25 ms)
            return run_interruptibly(
                fetch,
                on_interrupt=lambda: cancel.cancel("interrupted"),
                grace_s=self.statement_timeout_s,
            )

        return self._execute(sql, cancel, blocking=interruptibly)

    async def aquery(self, sql: str) -> QueryResult:
        """Async form; cancelling the task cancels the statement and waits for the rollback."""
        cancel = CancelHandle()
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, self._execute, sql, cancel)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel.cancel("cancelled")
            # let the statement stop and roll back before the cancellation surfaces
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(future), self.statement_timeout_s)
            raise

    def _execute(
        self,
        sql: str,
        cancel: CancelHandle,
        blocking: Blocking | None = None,
    ) -> QueryResult:
        """Guard, run and frame ``sql``; ``blocking`` makes the driver's call (on a worker
        thread for :meth:`query`; None: here, for :meth:`aquery`, which is on one already)."""
        self._check_not_closed()
        guarded = self.guard(sql)
        self._before_run(guarded)
        budget = ResultBudget(self.max_value_bytes, self.max_result_bytes)
        search_path = self.catalog.default_schema if self.policy.pins_search_path else None
        try:
            fetched = (blocking or _here)(
                lambda: run_read_only(
                    self.engine,
                    guarded.sql,
                    max_rows=self.row_limit + 1,
                    timeout_s=self.statement_timeout_s,
                    cancel=cancel,
                    search_path=search_path,
                    budget=budget,
                    query=True,
                    reset_session=bool(guarded.unvetted_functions),
                    frame=True,
                )
            )
        except Exception as exc:
            raise self._execution_error(exc, cancel, guarded.tables) from None
        if budget.full and not fetched.count:
            raise self._oversized_error()
        result = self._result(
            sql,
            guarded,
            fetched.columns,
            fetched.rows,
            budget,
            fetched.elapsed_ms,
            temporal_columns=self._temporal(guarded),
            frame=fetched.frame,
        )
        if not result.truncated or result.limit != "rows":
            return result
        total = (blocking or _here)(
            lambda: row_total(
                self.engine,
                self.dialect,
                lambda cap: self.guard(sql, row_limit=cap).sql,
                row_limit=self.row_limit,
                elapsed_ms=fetched.elapsed_ms,
                timeout_s=self.statement_timeout_s,
                cancel=cancel,
                search_path=search_path,
                reset_session=bool(guarded.unvetted_functions),
            )
        )
        return result if total is None else result.model_copy(update={"total": total})

    def _before_run(self, guarded: GuardedQuery) -> None:
        """Called with each checked query just before it runs (the DataFrame connector
        registers the current contents of the frames it reads here)."""

    def _execution_error(
        self, exc: Exception, cancel: CancelHandle, tables: Sequence[str] = ()
    ) -> QueryExecutionError:
        if isinstance(exc, DatabaseUnavailable):
            return self._unavailable_error(exc)
        if (cancel.cancelled and cancel.reason == "timeout") or is_server_timeout(exc):
            return QueryTimeoutError(
                f"the query ran longer than {self.statement_timeout_s:g} s and was stopped; "
                "make it cheaper (filter earlier, aggregate, avoid cross joins)"
            )
        if cancel.cancelled:
            return QueryExecutionError("the query was cancelled")
        if is_oversized(exc):  # before any row came
            return self._oversized_error()
        message = driver_message(exc)
        return QueryExecutionError(
            f"the database refused the query: {message}{self._column_hint(message, tables)}"
        )

    def _column_hint(self, message: str, tables: Sequence[str]) -> str:
        """ "; did you mean name?" when the driver says a column does not exist and a column
        of the tables the query reads is spelt nearly so."""
        missing = unknown_column(message)
        if missing is None:
            return ""
        columns: dict[str, str] = {}
        for qualified in tables:
            table = self.catalog.find(qualified)
            for column in table.columns if table is not None else ():
                columns.setdefault(column.name.lower(), column.name)
        near = difflib.get_close_matches(missing.lower(), list(columns), n=3, cutoff=0.7)
        return f"; did you mean {' or '.join(columns[n] for n in near)}?" if near else ""

    def _oversized_error(self) -> QueryExecutionError:
        return QueryExecutionError(
            "the result's first row (or a value the query builds) is larger than "
            f"{describe_bytes(self.max_result_bytes)} (the connector's max_result_bytes), so "
            "nothing was read; select a part of long values (substr, left) or their length"
        )

    def _unavailable_error(self, exc: DatabaseUnavailable) -> QueryExecutionError:
        """The database is the problem, not the query: say which, and that asking again
        (not rewriting the SQL) is the fix."""
        driver = driver_message(exc.__cause__ or exc)
        if exc.kind == "pool":
            pool = self.engine.pool
            size = getattr(pool, "size", lambda: None)()
            busy = getattr(pool, "checkedout", lambda: None)()
            held = f" ({busy} in use, pool_size={size})" if size is not None else ""
            return QueryExecutionError(
                f"no free connection to {self.id!r} within the pool's timeout{held}, so the "
                "query did not run; wait for running queries to finish and try again, or give "
                "the engine a larger pool_size / max_overflow"
            )
        if exc.kind == "lost":
            return QueryExecutionError(
                f"the connection to {self.id!r} was lost while the query ran ({driver}), so "
                "it did not finish; the server may have stopped or restarted. Check that the "
                "database is up, then ask again"
            )
        if self.engine.dialect.name == "chdb":
            check = f"the database directory exists and is readable ({ONE_PATH})"
        elif self.policy.embedded:
            check = "the database file exists and is readable"
        else:
            check = "the database server is running and reachable"
        return QueryExecutionError(
            f"cannot connect to {self.id!r} ({self.target}): {driver}. Check that {check} and "
            "that the URL and credentials are right, then ask again"
        )

    def _temporal(self, guarded: GuardedQuery) -> dict[str, str]:
        """Declared date/time columns of the referenced tables (SQLite returns them as text)."""
        if not self.policy.dates_as_text:
            return {}
        found: dict[str, str] = {}
        for name in guarded.tables:
            table = self.catalog.find(name)
            for column in table.columns if table else ():
                if any(word in column.type.lower() for word in _TEMPORAL_WORDS):
                    found[column.name] = column.type
        return found

    # ------------------------------------------------------------------ model-facing
    def _query_description(self) -> str:
        return (
            f"Run one read-only SQL query ({self.dialect} dialect) on {self.name}. "
            f"Returns at most {self.row_limit} rows: aggregate in SQL rather than "
            "fetching raw rows."
        )

    def _context_head(self) -> str:
        return self._heading("SQL", self.dialect) + (
            f"Query with query_{self.id}: one SELECT/WITH statement, at most {self.row_limit} "
            f"rows returned (LIMIT applied automatically). describe_{self.id} gives full table "
            "details.\n"
        )

    @property
    def context_ready(self) -> bool:
        catalog, samples_read = self._catalog, self._samples is not None or not self.sample_values
        return catalog is not None and samples_read and len(catalog.tables) <= _INLINE_TABLES

    def _render_schema(self, head: str, budget: int | None, question: str | None) -> str:
        """The catalog with its sample values (when asked for), each render kept for the
        next model step of the turn, which asks again the same."""
        catalog, samples = self.catalog, self.samples() or None
        options: dict[str, Any] = {
            "question": question,
            "sample_values": samples,
            "ranker": self.ranker,
        }
        return self._renders.get(
            (catalog, samples, self.ranker),
            (budget, question, head),
            lambda: (
                render_catalog(
                    catalog, max_tokens=budget, describe_tool=f"describe_{self.id}", **options
                ).text
            ),
        )

    def close(self) -> None:
        self._closed = True
        if self._owns_engine:
            self.engine.dispose()
