"""``SparkConnector``: a ``SparkSession`` as guarded, read-only tools for the model.

``relay.connect("lake", spark)`` with the session a Databricks, EMR or Dataproc notebook
hands the analyst (or a local one). Every query goes through the same guard as any SQL
connector's, in the Spark dialect (:mod:`relay_nb.sql.guard.policies.spark`): one
``SELECT``/``WITH``, only tables of the catalog, no DDL/DML, ``INSERT OVERWRITE``,
``CACHE``, ``ADD JAR``, ``SET``, ``reflect``/``java_method``, no file or path tables; the
row limit is a ``LIMIT`` in the SQL, so it is pushed into Spark's plan.

Spark has no read-only transaction: the guard is what keeps a query a read, and the
session's own catalog permissions are the second wall (docs/connectors.md says which to
give it). Each query runs as a **job group** of its own (``setJobGroup`` with
``interruptOnCancel``), so a timeout or a kernel interrupt cancels its Spark jobs — not only
the Python wait. Results come back at most ``row_limit + 1`` rows and ``max_result_bytes``,
as a pandas DataFrame.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from relay_nb.connectors.background import run_interruptibly
from relay_nb.connectors.base import check_connector_id
from relay_nb.connectors.bounds import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    ResultBudget,
)
from relay_nb.connectors.guarded import GuardedSQLConnector, tool_inputs
from relay_nb.connectors.preflight import Estimate, Preflight
from relay_nb.connectors.results import QueryResult
from relay_nb.connectors.spark.catalog import read_spark_catalog
from relay_nb.connectors.spark.jobs import is_connect_session, job_marks, once_more_if_pool_shut
from relay_nb.connectors.spark.plan import plan_estimate
from relay_nb.connectors.spark.session import (
    is_spark_session,
    open_connect_session,
    redact_connect_url,
)
from relay_nb.errors import ConfigurationError, QueryExecutionError, QueryTimeoutError
from relay_nb.redaction import redact
from relay_nb.sql import Catalog, SchemaRanker

__all__ = ["SparkConnector"]

_MAX_MESSAGE = 400


class SparkConnector(GuardedSQLConnector):
    kind = "spark"
    query_input, describe_input = tool_inputs("Spark SQL", "database.table")
    query_timeout_margin_s = 15.0

    def __init__(
        self,
        id: str,
        session: Any,
        *,
        databases: Sequence[str] | None = None,
        tables: Sequence[str] | None = None,
        row_limit: int = 200,
        statement_timeout_s: float = 120.0,
        catalog_timeout_s: float = 30.0,
        name: str | None = None,
        description: str | None = None,
        preview_chars: int = 4000,
        ranker: SchemaRanker | None = None,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        preflight: bool | None = None,
        approve_above: int | str | None = None,
        approve_above_rows: int | None = None,
        price_per_tb: float | None = None,
        dialect: str | None = None,
    ) -> None:
        self.id = check_connector_id(id)
        self.preflight = Preflight.from_options(
            preflight, approve_above, approve_above_rows, price_per_tb, default=True
        )
        if dialect is None:  # a Databricks runtime speaks Databricks SQL (QUALIFY, v:path)
            dialect = "databricks" if os.environ.get("DATABRICKS_RUNTIME_VERSION") else "spark"
        if dialect not in ("spark", "databricks"):
            raise ConfigurationError(
                f"dialect must be 'spark' or 'databricks' (Databricks SQL), not {dialect!r}"
            )
        """Spark's plan estimate before each model query (on by default: it costs no job),
        and when to ask the analyst first (:mod:`relay_nb.connectors.preflight`)."""
        if not is_spark_session(session) and not isinstance(session, str):
            raise ConfigurationError(
                "a Spark connector takes a SparkSession or a Spark Connect URL "
                f"(sc://host:15002), not {type(session).__name__}"
            )
        self._set_limits(
            row_limit=row_limit,
            statement_timeout_s=statement_timeout_s,
            max_value_bytes=max_value_bytes,
            max_result_bytes=max_result_bytes,
        )
        if not catalog_timeout_s or catalog_timeout_s <= 0:
            raise ConfigurationError("catalog_timeout_s must be a positive number of seconds")
        self._owns_session = isinstance(session, str)
        """Opened here from an ``sc://`` URL, so closed here; a session passed in is the
        analyst's, and never stopped."""
        if isinstance(session, str):
            target = redact_connect_url(session)
            session = open_connect_session(session)
        elif is_connect_session(session):
            target = "Spark Connect"
        else:
            target = f"{session.version}, {session.sparkContext.master}"
        self.session = session
        self._jobs = job_marks(session)
        self.name = name or id
        self.description = description
        self.catalog_timeout_s = float(catalog_timeout_s)
        self.startup_timeout_s = self.catalog_timeout_s
        self.preview_chars = preview_chars
        self.ranker = ranker
        self.dialect = dialect
        self._databases = list(databases) if databases is not None else None
        self._tables = list(tables) if tables is not None else None
        self.target = f"spark ({target})"
        self._catalog: Catalog | None = None
        self._catalog_lock = threading.Lock()
        self._cancelled: set[str] = set()
        """Job groups cancelled while their query may still be planning."""
        self._closed = False

    # ------------------------------------------------------------------ schema
    @property
    def catalog(self) -> Catalog:
        """The session's tables and views (see :mod:`.catalog`), read once and cached."""
        self._check_not_closed()
        if self._catalog is None:
            with self._catalog_lock:
                if self._catalog is None:
                    self._catalog = self._read_catalog()
        return self._catalog

    def _read_catalog(self) -> Catalog:
        try:
            return read_spark_catalog(
                self.session,
                databases=self._databases,
                tables=self._tables,
                timeout_s=self.catalog_timeout_s,
            )
        except QueryExecutionError:
            raise
        except Exception as exc:
            raise QueryExecutionError(
                f"could not read the Spark catalog of {self.id!r}: {_spark_message(exc)}"
            ) from None

    def refresh(self) -> Catalog:  # type: ignore[override] - also returns the new catalog
        self._check_not_closed()
        with self._catalog_lock:
            self._catalog = self._read_catalog()
        return self._catalog

    def invalidate(self) -> None:
        with self._catalog_lock:
            self._catalog = None

    def _check_not_closed(self) -> None:
        if self._closed:
            raise QueryExecutionError(f"the connector {self.id!r} is closed; connect it again")

    # ------------------------------------------------------------------ queries
    def estimate(self, sql: str) -> Estimate | None:
        """What Spark's optimized plan says ``sql`` reads, without running a job (after the
        guard, which raises UnsafeQueryError as for a query); None when it cannot say."""
        self._check_not_closed()
        guarded = self.guard(sql)
        try:  # marked like a query: analysis may start jobs (listing many partitions)
            with self._jobs.marked(self._group(), f"relay_nb {self.id}: estimate"):
                found = plan_estimate(self.session.sql(guarded.sql))
        except Exception:  # with a threshold set, the query then waits for the analyst
            return None
        return None if found is None else self.preflight.priced(found)

    def query(self, sql: str) -> QueryResult:
        """Run one query now; Ctrl-C (a kernel interrupt) or the statement timeout cancels
        its Spark jobs. It runs on a reused worker (:mod:`relay_nb.connectors.background`)."""
        group = self._group()
        return run_interruptibly(
            lambda: self._execute(sql, group),
            lambda: self._cancel(group),
            10.0,
            timeout_s=self.statement_timeout_s,
            timeout_error=self._timeout_error,
        )

    async def aquery(self, sql: str) -> QueryResult:
        """Async form: a timeout or a cancelled task cancels the query's Spark jobs."""
        group = self._group()
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, self._execute, sql, group)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.statement_timeout_s)
        except TimeoutError:
            self._cancel(group)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(future, 10.0)
            raise self._timeout_error() from None
        except asyncio.CancelledError:
            self._cancel(group)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(future), 10.0)
            raise

    def _group(self) -> str:
        return f"relay_nb-{self.id}-{uuid.uuid4().hex[:12]}"

    def _cancel(self, group: str) -> None:
        """Cancel the query's Spark work (see :mod:`.jobs`) and mark the group, so a query
        still being planned stops before it starts any."""
        self._cancelled.add(group)
        self._jobs.cancel(group)

    def _timeout_error(self) -> QueryTimeoutError:
        return QueryTimeoutError(
            f"the query ran longer than {self.statement_timeout_s:g} s and its Spark jobs were "
            "cancelled; make it cheaper (filter on partition columns, aggregate earlier)"
        )

    def _execute(self, sql: str, group: str) -> QueryResult:
        self._check_not_closed()
        guarded = self.guard(sql)
        started = time.perf_counter()

        def read() -> tuple[list[str], list[tuple[Any, ...]], ResultBudget]:
            budget = ResultBudget(self.max_value_bytes, self.max_result_bytes)
            kept: list[tuple[Any, ...]] = []
            with self._jobs.marked(group, f"relay_nb {self.id}: {guarded.sql[:120]}"):
                return self._read(guarded.sql, group, budget, kept), kept, budget

        try:
            columns, kept, budget = once_more_if_pool_shut(read)
        except QueryExecutionError:
            raise
        except Exception as exc:
            if group in self._cancelled:
                raise QueryExecutionError("the query was cancelled") from None
            raise QueryExecutionError(f"Spark refused the query: {_spark_message(exc)}") from None
        finally:
            self._cancelled.discard(group)
        elapsed = (time.perf_counter() - started) * 1000
        if budget.full and not kept:
            raise QueryExecutionError(
                "the result's first row is larger than the connector's max_result_bytes, so "
                "nothing was read; select a part of long values (substr, slice) or their size"
            )
        return self._result(sql, guarded, columns, kept, budget, elapsed)

    def _read(self, sql: str, group: str, budget: ResultBudget, kept: list[Any]) -> list[str]:
        """Run ``sql``, keep its rows in ``kept`` and return its columns. Rows are read one
        by one: reading stops at the row limit (plus one) or the byte budget, not after the
        whole result."""
        self._stop_if_cancelled(group)
        frame = self.session.sql(sql)  # analysed here; jobs start when read
        columns = list(frame.columns)
        self._stop_if_cancelled(group)
        rows = frame.toLocalIterator()
        try:
            for row in rows:
                admitted = budget.admit(row)
                if admitted is None:
                    break
                kept.append(admitted)
                if len(kept) > self.row_limit:
                    break
        finally:
            close = getattr(rows, "close", None)
            if close is not None:
                close()
        return columns

    def _stop_if_cancelled(self, group: str) -> None:
        """A cancel that came while Spark analysed or planned (no job yet to cancel)."""
        if group in self._cancelled:
            raise QueryExecutionError("the query was cancelled before its Spark jobs started")

    # ------------------------------------------------------------------ model-facing
    def _query_description(self) -> str:
        return (
            f"Run one read-only Spark SQL query on {self.name}; it runs as Spark jobs. "
            f"Returns at most {self.row_limit} rows: aggregate in SQL rather than "
            "fetching raw rows, and filter on partition columns."
        )

    def _describe_description(self) -> str:
        return (
            f"Full details (all columns, partition columns, comments) of tables in "
            f"{self.name}, by name or by search words."
        )

    def _context_head(self) -> str:
        return self._heading("Spark", "Spark SQL") + (
            f"Query with query_{self.id}: one SELECT/WITH statement, at most "
            f"{self.row_limit} rows returned (LIMIT applied automatically); each query runs "
            f"as Spark jobs, so filter on partition columns. describe_{self.id} gives full "
            "table details.\n"
        )

    def close(self) -> None:
        """Forget the session; stop it only when it was opened here from a URL (a session
        passed in is the analyst's)."""
        self._closed = True
        if self._owns_session:
            with contextlib.suppress(Exception):
                self.session.stop()


def _spark_message(exc: BaseException) -> str:
    """Spark's own first line (an AnalysisException's message, not the Java stack),
    redacted."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    line = redact(line)
    return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 1] + "…"
