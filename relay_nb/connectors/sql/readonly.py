"""Run one guarded query read-only, bounded in time and rows, cancellable from any thread.

The guard is the first wall; this module is the second, so that a guard bug still cannot
write. Every dialect gets the strongest read-only mode its driver offers:

- SQLite: opened ``mode=ro`` when the engine is built from a file URL, plus
  ``PRAGMA query_only`` and no attachable database (ATTACH, VACUUM INTO) on every call; time
  bounded by a progress handler.
- PostgreSQL: ``default_transaction_read_only`` at connect, ``SET TRANSACTION READ ONLY`` and
  ``SET LOCAL statement_timeout`` per call, the statement sent with the extended protocol
  (psycopg 3) so that a stacked ``COMMIT; …`` cannot run; cancelled through the driver's
  cancel request.
- MySQL/MariaDB: a read-only session (so DDL, which commits implicitly, is refused too) and
  ``START TRANSACTION READ ONLY`` plus ``max_execution_time`` (MySQL) or
  ``max_statement_time`` (MariaDB), reset after the call; the ``sql_mode`` flags that change
  how SQL text is read (``NO_BACKSLASH_ESCAPES``, ``ANSI_QUOTES``…) off during the call;
  cancelled with ``KILL QUERY``.
- DuckDB: ``read_only`` with external access disabled and the configuration locked.
- chDB (ClickHouse in the kernel): each statement on a connection of its own, bounded in time,
  rows and bytes and then made ``readonly = 1`` (which refuses writes, outside-reaching table
  functions and any later change of a setting), discarded after the statement; cancelled with
  ``KILL QUERY`` (:mod:`relay_nb.connectors.sql.chdb_session`).

Every call ends in a rollback; a connection whose rollback fails is discarded. What a
rollback does not undo is undone too, so no query can leave state for the next one: the
random seed is drawn afresh at the start of every call (PostgreSQL, DuckDB), and after a
statement that calls a function the guard cannot vouch for (an extension's, a user's) the
session is reset (PostgreSQL ``DISCARD ALL``: settings, prepared statements, advisory locks,
sequences' state, temporary objects) or, on the other databases, the connection discarded.

Rows are read under a byte budget (:mod:`relay_nb.connectors.sql.fetch`): the statement is
cancelled and the connection discarded when the budget is spent mid-result.

When the database itself is the problem — no connection can be opened, the pool has none
free, or the connection dies mid-query (the server stopped) — :class:`DatabaseUnavailable`
says which, so the caller can say "the server is down" instead of "your query was refused".
"""

from __future__ import annotations

import contextlib
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from sqlalchemy import URL, Connection, Engine, create_engine, event, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from relay_nb.connectors.background import Deadline, after
from relay_nb.connectors.bounds import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    ResultBudget,
)
from relay_nb.connectors.sql import chdb_session
from relay_nb.connectors.sql.fetch import WIRE_SLACK_BYTES, fetch_rows
from relay_nb.connectors.sql.urls import database_url, missing_file
from relay_nb.errors import ConfigurationError
from relay_nb.redaction import redact_url

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CancelHandle",
    "DatabaseUnavailable",
    "FetchedRows",
    "QueryCancelled",
    "build_engine",
    "open_connection",
    "parse_url",
    "run_read_only",
]

_T = TypeVar("_T")

# Drivers whose timeout/cancel we do not know get a watchdog that at least closes the cursor.
_SQLITE_PROGRESS_STEPS = 10_000
_SQLITE_MAX_VALUE_BYTES = 64 * 1024 * 1024


class ReadOnlyNotEnforced(Exception):
    """The database did not confirm read-only mode, so the statement was not run."""


class QueryCancelled(Exception):
    """The statement was cancelled before it reached the database."""


class DatabaseUnavailable(Exception):
    """The database, not the query, failed; the driver's exception is the ``__cause__``.

    ``kind``: ``"connect"`` (no connection could be opened: server down, wrong host or
    credentials), ``"pool"`` (the engine's pool had no free connection within its timeout),
    ``"lost"`` (the connection died while the statement ran; the statement did not finish).
    """

    def __init__(self, kind: Literal["connect", "pool", "lost"]) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass
class FetchedRows:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    elapsed_ms: float
    budget: ResultBudget | None = None
    """What the byte budget kept, clipped and refused (its ``notes()`` say so)."""
    frame: pd.DataFrame | None = None
    """The rows as a DataFrame already (asked with ``frame=True``, where the engine builds
    one: DuckDB); ``rows`` is then empty."""

    @property
    def count(self) -> int:
        """How many rows were read."""
        return len(self.rows) if self.frame is None else len(self.frame)


_CANCEL_REPEAT_S = 0.25
"""How often a fired cancel is sent again while its statement still runs."""


class CancelHandle:
    """Lets another thread (a timer, a stop button, Ctrl-C) stop the running statement."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._firing = threading.Lock()  # held while a cancel is delivered
        self._cancel: Callable[[], None] | None = None
        self.cancelled = False
        self.fired = False
        """A cancel reached the driver: the connection must not be reused (a late cancel
        request or KILL QUERY could hit the next, innocent statement)."""
        self.reason = ""

    def arm(self, cancel: Callable[[], None]) -> None:
        with self._lock:
            self._cancel = cancel
            fire = self.cancelled
        if fire:
            self._fire(cancel)

    def disarm(self) -> None:
        """Stop delivering cancels; waits for one already being delivered."""
        with self._firing, self._lock:
            self._cancel = None

    def cancel(self, reason: str = "cancelled") -> None:
        with self._lock:
            if self.cancelled:
                return
            self.cancelled, self.reason = True, reason
            cancel = self._cancel
        if cancel is not None:
            self._fire(cancel)

    def _fire(self, cancel: Callable[[], None]) -> None:
        with self._firing:
            with self._lock:
                if self._cancel is not cancel:
                    return  # disarmed meanwhile: the statement is over
                self.fired = True
            with contextlib.suppress(Exception):  # best effort: server timeouts are the backstop
                cancel()
        # A cancel that reaches the server before the statement does (fired between the
        # "cancelled already?" check and the query's arrival) is ignored there, and the query
        # would then run to its timeout. So it is sent again until the statement ends
        # (``disarm``); the connection is discarded after a fired cancel, so the repeats can
        # hit nothing else.
        retry = threading.Timer(_CANCEL_REPEAT_S, self._fire, args=(cancel,))
        retry.daemon = True
        retry.start()


def build_engine(url_or_engine: str | URL | Engine) -> Engine:
    """An engine configured read-only at connect time where the driver allows it.

    An engine passed in by the caller is used as is (it may carry pooling or auth the caller
    chose). The per-call measures still apply to it (read-only transactions and timeouts on
    PostgreSQL and MySQL, ``query_only`` on SQLite, a refusal of DuckDB engines with external
    access); open-time modes (SQLite ``mode=ro``, DuckDB ``read_only``) are the caller's.
    """
    if isinstance(url_or_engine, Engine):
        return url_or_engine
    url = parse_url(url_or_engine)
    backend = url.get_backend_name()
    connect_args: dict[str, Any] = {}
    if backend == "sqlite":
        url, connect_args = _sqlite_read_only_url(url)
    elif backend == "duckdb":
        database = url.database or ":memory:"
        # temp_directory "": with external access off DuckDB still reads files under its
        # spill directory (<cwd>/.tmp); replacement scans would read Python variables
        config = {
            "enable_external_access": False,
            "lock_configuration": True,
            "temp_directory": "",
            "python_enable_replacements": False,
        }
        connect_args = {"config": config}
        if database != ":memory:":
            connect_args["read_only"] = True
    elif backend == "chdb":
        _check_chdb_url(url)
    elif backend == "postgresql":
        connect_args = {"options": "-c default_transaction_read_only=on"}
        if "connect_timeout" not in url.query:
            # libpq waits for the OS (minutes) on an unreachable host; say so within seconds
            connect_args["connect_timeout"] = _PG_CONNECT_TIMEOUT_S
    try:
        # an embedded engine has no connection that dies between two uses, and BigQuery's
        # and Trino's are HTTP clients without a session to lose (BigQuery's ping is a
        # query job, seconds on every checkout): no ping
        ping = backend not in ("sqlite", "chdb", "bigquery", "trino")
        engine = create_engine(url, connect_args=connect_args, pool_pre_ping=ping)
    except ModuleNotFoundError as exc:
        raise ConfigurationError(_missing_driver(url, exc.name or "")) from None
    if backend == "sqlite":
        event.listen(engine, "connect", _sqlite_on_connect)
    elif backend == "chdb":
        chdb_session.discard_after_errors(engine)
    return engine


def _check_chdb_url(url: URL) -> None:
    """relay_nb makes each statement's session read-only after bounding it; a connection made
    read-only by the URL could not be bounded, and no statement would run."""
    settings = url.query.get("settings", ())
    named = [settings] if isinstance(settings, str) else list(settings)
    if "readonly" in url.query or any(s.split("=", 1)[0].strip() == "readonly" for s in named):
        raise ConfigurationError(
            "leave readonly out of the chdb:// URL: relay_nb sets readonly = 1 itself, on each "
            "statement's session, after the statement's time and size bounds"
        )


_PG_CONNECT_TIMEOUT_S = 10
_EXTRAS = {
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "duckdb": "duckdb",
    "chdb": "chdb",
}
_SUGGESTED = {
    "postgresql": "postgresql+psycopg://USER@HOST/DB",
    "mysql": "mysql+pymysql://USER@HOST/DB",
    "mariadb": "mysql+pymysql://USER@HOST/DB",
}


def parse_url(url: str | URL) -> URL:
    """A SQLAlchemy URL, or a short error naming the form (the password never shown); a
    URL or path as analysts paste them is read first (:func:`.urls.database_url`)."""
    if isinstance(url, str):
        missing = missing_file(url)
        if missing is not None:
            raise ConfigurationError(missing)
        url = database_url(url)
    try:
        parsed = make_url(url)
        parsed.get_dialect()  # an unknown database kind fails here, not at first query
    except NoSuchModuleError:
        scheme = str(url).split(":", 1)[0] if isinstance(url, str) else url.drivername
        raise ConfigurationError(
            f"unknown database kind {scheme!r}; use a SQLAlchemy URL such as "
            "sqlite:///path/to/file.db, postgresql+psycopg://USER@HOST/DB, "
            "mysql+pymysql://USER@HOST/DB or duckdb:///path/to/file.duckdb"
        ) from None
    except ModuleNotFoundError as exc:
        raise ConfigurationError(_missing_driver(make_url(url), exc.name or "")) from None
    except ArgumentError:
        raise ConfigurationError(
            "not a database URL or a database file that exists; use a path to a SQLite or "
            "DuckDB file, or a URL such as sqlite:///path/to/file.db or "
            "postgres://USER@HOST/DB"
        ) from None
    except ValueError:  # SQLAlchemy's int() of the port
        raise ConfigurationError(
            "the database URL's port is not a number; write it as HOST:PORT, e.g. "
            "postgresql+psycopg://USER@127.0.0.1:5432/DB (percent-encode ':' or '@' in a password)"
        ) from None
    return parsed


def _missing_driver(url: URL, module: str) -> str:
    backend = url.get_backend_name()
    shown = redact_url(url.render_as_string(hide_password=True))
    extra = _EXTRAS.get(backend)
    fix = f"pip install 'relay-nb[{extra}]'" if extra else f"install the {module!r} package"
    suggested = _SUGGESTED.get(backend)
    if suggested and url.drivername != suggested.split(":", 1)[0]:
        fix += f", or use the driver it installs: {suggested}"
    return f"the database driver {module!r} for {shown} is not installed; {fix}"


def _sqlite_read_only_url(url: URL) -> tuple[URL, dict[str, Any]]:
    database = url.database or ""
    args: dict[str, Any] = {"check_same_thread": False}
    if database in ("", ":memory:") or database.startswith("file:"):
        return url, args
    ro = url.set(database=f"file:{database}?mode=ro", query={**url.query, "uri": "true"})
    return ro, args


def _sqlite_on_connect(dbapi_connection: Any, record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA query_only = ON")
    finally:
        cursor.close()
    # the connection's own setting is then known: each query need not read it first
    record.info["relay_query_only_at_connect"] = True


_SERVERS = ("postgresql", "mysql", "mariadb")


def run_read_only(
    engine: Engine,
    sql: str,
    *,
    max_rows: int,
    timeout_s: float,
    cancel: CancelHandle | None = None,
    search_path: str | None = None,
    budget: ResultBudget | None = None,
    reset_session: bool = False,
    query: bool = False,
    parallel: bool = True,
    frame: bool = False,
) -> FetchedRows:
    """Run ``sql`` (already guarded) read-only; raise the driver's exception on failure.

    ``search_path`` (PostgreSQL) pins unqualified names to the schema the guard resolved
    them against, so a same-named table in another schema on the role's path cannot win.
    ``budget`` bounds the bytes read (the defaults when ``None``); ``reset_session`` says
    the statement may have changed session state a rollback keeps (it calls a function the
    guard cannot vouch for), so the session is reset or the connection discarded after it;
    ``query`` says ``sql`` is a query the guard produced, which PostgreSQL then measures row
    by row on the server (:func:`~relay_nb.connectors.sql.fetch.pg_row_bounded`).
    ``parallel=False`` (PostgreSQL) runs it without parallel workers, whose scans a
    statement timeout does not stop at once: what profiling's time budget needs.
    ``frame=True``: the rows are wanted as a DataFrame (:attr:`FetchedRows.frame`), which
    DuckDB builds from its own columnar result.
    """
    cancel = cancel or CancelHandle()
    budget = budget or ResultBudget(DEFAULT_MAX_VALUE_BYTES, DEFAULT_MAX_RESULT_BYTES)
    backend = engine.dialect.name
    raw = _checkout_statement(engine, backend)
    timer: Deadline | None = None
    started = time.perf_counter()
    clean = False
    stopped = False
    marker = ""
    if backend == "chdb":
        marker, sql = chdb_session.marked(sql)
    try:
        driver_conn = raw.driver_connection
        _begin_read_only(
            backend, engine, raw, timeout_s, cancel, search_path, budget, max_rows, parallel
        )
        cancel.arm(_canceller(backend, engine, driver_conn, raw, marker))
        timer = after(timeout_s, lambda: cancel.cancel(reason="timeout"))
        try:
            if cancel.cancelled:  # a cancel that came before the statement: never start it
                raise QueryCancelled(cancel.reason)
            outcome = fetch_rows(
                backend,
                engine,
                raw,
                sql,
                max_rows=max_rows,
                budget=budget,
                row_check=query,
                frame=frame,
            )
            stopped = outcome.stopped and backend in _SERVERS
            if stopped:  # rows are still coming: stop the statement, drop the connection
                cancel.cancel("stopped reading")
        finally:
            cancel.disarm()
            timer.cancel()
        clean = True
        elapsed = (time.perf_counter() - started) * 1000
        return FetchedRows(outcome.columns, outcome.rows, elapsed, budget, outcome.frame)
    except Exception as exc:
        if _is_disconnect(engine, exc, raw):
            raise DatabaseUnavailable("lost") from exc
        raise
    finally:
        cancel.disarm()  # also when the statement never started: no cancel outlives the call
        if timer is not None:
            timer.cancel()
        discard = (
            cancel.fired
            or stopped
            or (not clean and backend in ("mysql", "mariadb"))
            or backend == "chdb"  # read-only for good (and chdb_session's cursor fault)
        )
        _end(backend, engine, raw, discard=discard, reset_session=reset_session)


def open_connection(engine: Engine) -> Connection:
    """``engine.connect()``, or :class:`DatabaseUnavailable` saying why there is none (for
    the catalog reads that go through SQLAlchemy rather than :func:`run_read_only`)."""
    return _opened(engine.connect)


def _checkout_statement(engine: Engine, backend: str) -> Any:
    """The connection a statement runs on. chDB's is discarded after it, and chDB stops its
    engine when its last connection closes: a pooled connection is held with it (closed in
    :func:`_end`), so the engine outlives it."""
    if backend != "chdb":
        return _checkout(engine)
    anchor = _checkout(engine)
    try:
        raw = _checkout(engine)
    except BaseException:
        anchor.close()
        raise
    raw.info["relay_anchor"] = anchor
    return raw


def _checkout(engine: Engine) -> Any:
    """A pooled DBAPI connection, or :class:`DatabaseUnavailable` saying why there is none."""
    return _opened(engine.raw_connection)


def _opened(open_: Callable[[], _T]) -> _T:
    try:
        return open_()
    except PoolTimeout as exc:
        raise DatabaseUnavailable("pool") from exc
    except (ConfigurationError, ModuleNotFoundError):
        raise
    except Exception as exc:
        raise DatabaseUnavailable("connect") from exc


def _is_disconnect(engine: Engine, exc: Exception, raw: Any) -> bool:
    """Whether ``exc`` means the connection is gone (the dialect's own test), not the query."""
    if isinstance(exc, QueryCancelled | ReadOnlyNotEnforced):
        return False
    try:
        # any exception: the dialect's test looks at its type itself (typed for DBAPI errors)
        return bool(engine.dialect.is_disconnect(cast(Any, exc), raw.dbapi_connection, None))
    except Exception:  # a dialect that cannot tell: treat it as a query error
        return False


def _begin_read_only(
    backend: str,
    engine: Engine,
    raw: Any,
    timeout_s: float,
    cancel: CancelHandle,
    search_path: str | None,
    budget: ResultBudget,
    max_rows: int,
    parallel: bool = True,
) -> None:
    cursor = raw.cursor()
    try:
        if backend == "chdb":
            # the engine's own ceiling on what a result may bring into the kernel; the
            # budget then keeps, clips and notes within it as for every engine
            read_only = chdb_session.begin(
                cursor,
                timeout_s=timeout_s,
                max_rows=max_rows,
                max_result_bytes=budget.max_result_bytes + WIRE_SLACK_BYTES,
            )
            if not read_only:  # never run unless the engine confirms it
                raise ReadOnlyNotEnforced("chDB did not confirm readonly = 1")
        elif backend == "postgresql":
            driver = raw.driver_connection
            if getattr(driver, "autocommit", False):
                # an AUTOCOMMIT engine would run no transaction to make read-only
                raw.info["relay_autocommit_before"] = True
                driver.autocommit = False
            if hasattr(driver, "read_only"):  # psycopg 3 begins READ ONLY: a round trip less
                raw.info["relay_read_only_before"], driver.read_only = driver.read_only, True
            else:  # (restored in _end; the server's answer below is what is trusted)
                cursor.execute("SET TRANSACTION READ ONLY")
            # one round trip for the per-transaction settings; all revert at rollback.
            # standard_conforming_strings: the guard re-serialises strings assuming it is on
            settings = {
                "statement_timeout": str(int(timeout_s * 1000)),
                "standard_conforming_strings": "on",
            }
            if search_path:
                settings["search_path"] = _pg_identifier(search_path)
            if not parallel:
                settings["max_parallel_workers_per_gather"] = "0"
            calls = ", ".join(f"set_config('{name}', %s, true)" for name in settings)
            # a seed no earlier query chose: setseed() outlives every rollback
            cursor.execute(
                f"SELECT current_setting('transaction_read_only'), {calls}, setseed(%s)",
                (*settings.values(), _fresh_seed()),
            )
            if cursor.fetchone()[0] != "on":  # never run unless the server confirms it
                raise ReadOnlyNotEnforced("PostgreSQL did not start a read-only transaction")
        elif backend in ("mysql", "mariadb"):
            if getattr(engine.dialect, "is_mariadb", False):
                settings = f"SET SESSION max_statement_time = {float(timeout_s):.3f}"
            else:
                settings = f"SET SESSION max_execution_time = {int(timeout_s * 1000)}"
            modes = _mysql_modes(raw, cursor)
            if modes is not None:  # only when the connection reads SQL unlike the guard
                raw.info["relay_sql_mode_before"] = modes[0]
                settings += f", SESSION sql_mode = '{modes[1]}'"
            cursor.execute(settings)
            # DDL commits the open transaction implicitly and would then run outside it:
            # a read-only SESSION refuses DDL too (error 1792), the transaction alone does not
            cursor.execute("SET SESSION TRANSACTION READ ONLY")
            cursor.execute("START TRANSACTION READ ONLY")
        elif backend == "duckdb":
            if "relay_duckdb_checked" not in raw.info:
                # an engine the caller built may allow file and network access: refuse it
                cursor.execute("SELECT current_setting('enable_external_access')")
                if cursor.fetchone()[0] not in (False, "false"):
                    raise ReadOnlyNotEnforced(
                        "this DuckDB engine allows external access; pass a URL, or open it "
                        "with config={'enable_external_access': False}"
                    )
                raw.info["relay_duckdb_checked"] = True
            # a seed no earlier query chose: setseed() outlives the call
            cursor.execute(f"SELECT setseed({_fresh_seed()!r})")
            cursor.fetchall()  # read to the end: DuckDB 2 runs nothing else before
        elif backend == "sqlite":
            # remember the connection's own setting: an engine the caller passed in must get
            # its connections back as they were (our own engines are query_only from connect)
            if raw.info.get("relay_query_only_at_connect"):
                raw.info["relay_query_only_before"] = True  # ours: nothing to restore
            else:
                cursor.execute("PRAGMA query_only")
                raw.info["relay_query_only_before"] = bool(cursor.fetchone()[0])
            cursor.execute("PRAGMA query_only = ON")  # again each time: defence in depth
            # one huge string can outrun the progress handler: cap value sizes per call
            driver = raw.driver_connection
            # and no value may be longer than the whole result may be (the budget's limit)
            length = min(_SQLITE_MAX_VALUE_BYTES, budget.max_result_bytes)
            raw.info["relay_length_before"] = driver.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, length)
            # ATTACH and VACUUM INTO create files even under query_only: allow no attachment
            raw.info["relay_attached_before"] = driver.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            deadline = time.monotonic() + timeout_s

            def past_deadline() -> int:
                if time.monotonic() <= deadline:
                    return 0
                cancel.cancel("timeout")  # so the error says "timed out", not "interrupted"
                return 1

            raw.driver_connection.set_progress_handler(past_deadline, _SQLITE_PROGRESS_STEPS)
    finally:
        _close_quietly(cursor)


_PARSE_MODES = frozenset(
    {
        "ANSI", "ANSI_QUOTES", "PIPES_AS_CONCAT", "NO_BACKSLASH_ESCAPES", "HIGH_NOT_PRECEDENCE",
        "IGNORE_SPACE", "ORACLE", "MSSQL", "DB2", "POSTGRESQL", "MAXDB", "MYSQL323", "MYSQL40",
    }
)  # fmt: skip
"""``sql_mode`` flags that change how MySQL/MariaDB read SQL text (string escapes, double
quotes, ``||``, operator precedence, other grammars): the guard reads and writes the default
grammar, so these are off while a guarded query runs, and back on after it."""
_MODE_NAMES = re.compile(r"[A-Za-z0-9_,]*")


def _mysql_modes(raw: Any, cursor: Any) -> tuple[str, str] | None:
    """``(the connection's sql_mode, the one a guarded query runs under)`` when they differ.

    Read once per pooled connection: a guarded query cannot change it (``SET`` is refused).
    """
    original = raw.info.get("relay_sql_mode")
    if original is None:
        cursor.execute("SELECT @@SESSION.sql_mode")
        original = raw.info["relay_sql_mode"] = str(cursor.fetchone()[0] or "")
    if not _MODE_NAMES.fullmatch(original):
        raise ReadOnlyNotEnforced(f"unexpected sql_mode from the server: {original[:80]!r}")
    kept = ",".join(m for m in original.split(",") if m and m.upper() not in _PARSE_MODES)
    return None if kept == original else (original, kept)


def _fresh_seed() -> float:
    """A random seed in [-1, 1) from the operating system's entropy."""
    return secrets.randbits(52) / (1 << 51) - 1.0


def _pg_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _canceller(
    backend: str, engine: Engine, driver_conn: Any, raw: Any, marker: str = ""
) -> Callable[[], None]:
    if backend == "chdb":
        return chdb_session.canceller(engine, marker)
    if backend == "postgresql":
        cancel = getattr(driver_conn, "cancel_safe", None) or driver_conn.cancel
        return lambda: cancel()
    if backend in ("sqlite", "duckdb"):
        return driver_conn.interrupt
    if backend in ("mysql", "mariadb"):
        thread_id = driver_conn.thread_id()

        def kill_query() -> None:
            with engine.connect() as other:
                other.exec_driver_sql(f"KILL QUERY {int(thread_id)}")

        return kill_query
    return lambda: _close_quietly(raw)


def _end(
    backend: str, engine: Engine, raw: Any, *, discard: bool, reset_session: bool = False
) -> None:
    """Roll back, undo per-call settings, return the connection (or discard it if unsure).

    A server connection already known to be unfit (a cancel was sent, reading stopped
    mid-result) is closed at once: the server rolls back what it held, and nothing more is
    read from it. After ``reset_session`` PostgreSQL runs ``DISCARD ALL`` and MySQL/MariaDB
    connections are discarded; SQLite and DuckDB keep no session state a guarded query can
    set (their configuration is locked or refused, and the seed is drawn per call).
    """
    if discard and backend in _SERVERS:
        raw.invalidate()
        return
    anchor = raw.info.pop("relay_anchor", None)
    try:
        if backend == "duckdb":
            _rollback_duckdb(raw)
        else:
            raw.rollback()
        if backend in ("mysql", "mariadb") and reset_session:
            discard = True  # no reset of user variables, locks… a read-only session may run
        elif backend in ("mysql", "mariadb"):
            mariadb = getattr(engine.dialect, "is_mariadb", False)
            timeout_var = "max_statement_time" if mariadb else "max_execution_time"
            read_only_var = "tx_read_only" if mariadb else "transaction_read_only"
            restore = f"SET SESSION {timeout_var} = DEFAULT"
            before = raw.info.pop("relay_sql_mode_before", None)
            if before is not None:
                restore += f", SESSION sql_mode = '{before}'"
            cursor = raw.cursor()
            try:
                cursor.execute(restore)
                cursor.execute(f"SET SESSION {read_only_var} = DEFAULT")
            finally:
                _close_quietly(cursor)
        elif backend == "postgresql":
            if reset_session:
                _discard_all(raw)
            if "relay_read_only_before" in raw.info:
                raw.driver_connection.read_only = raw.info.pop("relay_read_only_before")
            if raw.info.pop("relay_autocommit_before", False):
                raw.driver_connection.autocommit = True
        elif backend == "sqlite":
            raw.driver_connection.set_progress_handler(None, 0)
            before = raw.info.pop("relay_length_before", None)
            if before is not None:
                raw.driver_connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, before)
            attached = raw.info.pop("relay_attached_before", None)
            if attached is not None:
                raw.driver_connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, attached)
            if not raw.info.pop("relay_query_only_before", True):
                raw.driver_connection.execute("PRAGMA query_only = OFF")
    except Exception:
        discard = True
    if discard:
        raw.invalidate()
    else:
        raw.close()
    if anchor is not None:  # after the statement's connection is gone (chDB)
        anchor.close()


def _discard_all(raw: Any) -> None:
    """PostgreSQL's reset of everything a session holds (it must run outside a transaction):
    settings, prepared statements, advisory locks, LISTEN, sequences' state, temp objects."""
    driver = raw.driver_connection
    driver.autocommit = True
    cursor = raw.cursor()
    try:
        cursor.execute("DISCARD ALL")
    finally:
        _close_quietly(cursor)
        driver.autocommit = False


def _rollback_duckdb(raw: Any) -> None:
    """DuckDB runs a lone SELECT in autocommit: "no transaction is active" is success."""
    try:
        raw.rollback()
    except Exception as exc:
        if "no transaction is active" not in str(exc):
            raise


def _close_quietly(resource: Any) -> None:
    with contextlib.suppress(Exception):
        resource.close()
