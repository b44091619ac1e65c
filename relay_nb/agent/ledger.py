"""An append-only ledger of every model call: who spent which tokens and dollars, when.

Why a ledger and not just per-turn totals: an analyst's question a month later is "what did
this notebook cost in October, and on which model?" — that needs a durable record that
outlives the kernel. Each row is one model call: ids, model, token counts, cost, latency and
finish reason. No prompt or answer text is stored, so the ledger is safe to keep and share.

Storage is a SQLite file under the user's data dir by default (:func:`default_ledger_path`),
or any SQLAlchemy URL. The ledger is bookkeeping, never a reason for a turn to fail: storage
errors in :meth:`UsageLedger.append` are logged on ``relay_nb.agent.ledger`` and reported
as ``False``. SQLAlchemy and pandas are imported lazily so importing this module stays cheap.

Durability of a SQLite ledger, and why an append costs ~20 µs rather than an fsync: every
append commits its own transaction to the write-ahead log before it returns
(``synchronous=NORMAL``), so the row is in the operating system's hands and survives a crash
of the kernel, the process or Python — nothing is lost that ``append`` reported as recorded.
What a commit no longer does is wait for the disk: the fsyncs are grouped. The first append
after a sync arms a timer, and :data:`SYNC_DELAY_S` later one fsync of the log covers every
row committed since (appends go on meanwhile; rows that came while it ran arm it again);
:meth:`UsageLedger.close` and interpreter exit sync at once. Only a power
cut or an operating-system crash within that window can lose rows — at most the last
second's. A ledger at another SQLAlchemy URL commits each row through the server, which owns
its durability.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from relay_nb.redaction import Secret, redact, redact_url, register_secret, url_secrets
from relay_nb.runtime.types import InvocationResult, Usage

if TYPE_CHECKING:
    import pandas as pd
    from sqlalchemy import Engine, Table

__all__ = ["LedgerRow", "UsageLedger", "default_ledger_path"]

logger = logging.getLogger("relay_nb.agent.ledger")

_TABLE_NAME = "relay_usage"
_FILE_NAME = "usage.sqlite"
_TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_GROUP_KEYS = ("day", "model", "notebook", "provider", "session_id", "turn_id", "finish_reason")
SYNC_DELAY_S = 1.0
"""How long a SQLite ledger's committed rows may wait for the grouped fsync (see above)."""
_BUSY_TIMEOUT_S = 10
"""How long an append on a worker thread waits for another process's write."""


class LedgerRow(BaseModel):
    """One model call as recorded. Token counts and cost stay None when unknown."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timestamp: datetime = Field(default_factory=lambda: datetime.now(UTC))
    session_id: str
    turn_id: str
    step: int = Field(ge=0)
    notebook: str | None = None
    model: str
    provider: str
    """Who answered; ``scripted`` or ``replayed`` when no model did (the cost is then what
    ``model`` would have cost, not money spent)."""
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cache_read_tokens: int | None = Field(default=None, ge=0)
    cache_write_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)
    estimated: bool = False
    latency_ms: float | None = Field(default=None, ge=0)
    finish_reason: str | None = None

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        # a naive time is ambiguous across machines; the ledger speaks UTC only
        if value.tzinfo is None:
            raise ValueError("timestamp must be timezone-aware")
        return value.astimezone(UTC)

    @classmethod
    def from_result(
        cls,
        result: InvocationResult,
        *,
        session_id: str,
        turn_id: str,
        step: int,
        notebook: str | None = None,
        usage: Usage | None = None,
        timestamp: datetime | None = None,
    ) -> LedgerRow:
        """A row for one invocation; pass the *priced* ``usage`` when it differs."""
        used = usage if usage is not None else result.usage
        extra = {"timestamp": timestamp} if timestamp is not None else {}
        return cls(
            session_id=session_id,
            turn_id=turn_id,
            step=step,
            notebook=notebook,
            model=result.model,
            provider=result.simulated or result.provider,
            input_tokens=used.input_tokens,
            output_tokens=used.output_tokens,
            cache_read_tokens=used.cache_read_tokens,
            cache_write_tokens=used.cache_write_tokens,
            cost_usd=used.cost_usd,
            estimated=used.estimated,
            latency_ms=result.latency_ms,
            finish_reason=result.stop_reason,
            **extra,
        )


def default_ledger_path() -> Path:
    """``$RELAY_DATA_DIR``, else ``$XDG_DATA_HOME/relay_nb``, else ``~/.local/share/relay_nb``.

    Empty variables count as unset, as the XDG spec asks. The file is ``usage.sqlite``.
    """
    data_dir = os.environ.get("RELAY_DATA_DIR")
    if data_dir:
        return Path(data_dir).expanduser() / _FILE_NAME
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "relay_nb" / _FILE_NAME


class UsageLedger:
    """Append-only usage records in SQLite (default) or any SQLAlchemy database.

    ``target`` is a path to a SQLite file, a SQLAlchemy URL (anything with ``://``), or
    None for :func:`default_ledger_path`. Nothing touches storage until the first call, so
    building a ledger never fails. Appends are serialised by a lock (SQLite has one writer
    anyway) and each commits its own transaction before it returns, so a crash loses at most
    the call in flight (for a SQLite file's grouped fsync, see the module docstring). Safe to
    share between threads.
    """

    def __init__(self, target: str | Path | None = None) -> None:
        if target is None:
            target = default_ledger_path()
        self._path: Path | None = None
        if isinstance(target, str) and "://" in target:
            url = target
            for secret in url_secrets(target):  # a driver's error may quote the login
                register_secret(secret)
        else:
            self._path = Path(target).expanduser()
            url = f"sqlite:///{self._path}"
        self._url = Secret(url)  # no repr or vars() dump shows the login
        self.url = redact_url(url)
        """Where the ledger is, fit to print: the password and secret options masked."""
        self._lock = threading.Lock()
        self._engine: Engine | None = None
        self._table: Table | None = None
        self._fast: _SQLiteAppender | None = None
        self._sync_timer: threading.Timer | None = None
        self._appended = self._synced = 0
        """Appends to the SQLite file so far, and how many of them an fsync has covered."""

    def __repr__(self) -> str:
        return f"UsageLedger({self.url!r})"

    # -- storage -----------------------------------------------------------------------

    def _ready(self) -> tuple[Engine, Table]:
        """The engine and table, created on first use (call with the lock held)."""
        if self._engine is not None and self._table is not None:
            return self._engine, self._table
        import sqlalchemy as sa
        from sqlalchemy import event

        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        url = self._url.reveal()
        engine = sa.create_engine(url, connect_args=_connect_args(url))
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_pragmas)
        table = _table_for(sa.MetaData())
        try:
            table.metadata.create_all(engine, checkfirst=True)
            if engine.dialect.name == "sqlite":
                self._fast = _SQLiteAppender(engine, table)
        except Exception:
            engine.dispose()
            raise
        self._engine, self._table = engine, table
        _OPEN_LEDGERS.add(self)
        return engine, table

    def append_without_waiting(self, row: LedgerRow) -> bool:
        """Append on the caller's thread if that needs no wait; False when it would wait, so
        the caller appends on a worker thread (:meth:`append`) instead.

        For an event loop: an open SQLite file's append is a write to its log (~20 µs),
        cheaper than a thread hop. It would wait when the file is not open yet (the first
        append opens it and imports SQLAlchemy), at a server, while another thread appends,
        and when another process (a second kernel, a report) holds the write lock: SQLite
        would wait out its busy timeout, up to 10 s, with the loop stopped. True when the row
        was handled, stored or (logged) refused, as :meth:`append` handles it.
        """
        if self._fast is None or not self._lock.acquire(blocking=False):
            return False
        try:
            fast = self._fast
            if fast is None:  # closed meanwhile
                return False
            try:
                fast.insert(_values(row), wait=False)
            except Exception as exc:
                if _busy(exc):
                    return False
                _log_refused(self.url, row, exc)
                return True
            self._appended += 1
            self._arm_sync()
            return True
        finally:
            self._lock.release()

    def append(self, row: LedgerRow) -> bool:
        """Record one call durably; False (and a logged warning) if storage failed.

        Never raises for storage errors: losing a ledger row must not lose the turn.
        """
        values = _values(row)
        try:
            with self._lock:
                engine, table = self._ready()
                if self._fast is not None:
                    self._fast.insert(values, wait=True)
                    self._appended += 1
                    self._arm_sync()
                else:
                    with engine.begin() as conn:
                        conn.execute(table.insert(), values)  # one cached statement
        except Exception as exc:  # disk full, locked, unreachable, unwritable …
            _log_refused(self.url, row, exc)
            return False
        return True

    def _arm_sync(self) -> None:
        """Schedule the grouped fsync unless one is pending (call with the lock held).

        ``is_alive`` rather than a flag: a timer that fired, or one lost across a fork,
        is re-armed by the next append.
        """
        if self._sync_timer is None or not self._sync_timer.is_alive():
            self._sync_timer = threading.Timer(SYNC_DELAY_S, self.sync)
            self._sync_timer.daemon = True
            self._sync_timer.start()

    def sync(self) -> None:
        """Make every recorded row survive a power cut now: an fsync of the SQLite file's
        write-ahead log, where every committed row is (appends go on meanwhile).

        Runs by itself :data:`SYNC_DELAY_S` after an append, at :meth:`close` and at exit;
        rows appended while it ran arm it again. A failure is logged, never raised: the rows
        are committed, and the next append's sync tries again.
        """
        with self._lock:
            if self._fast is None or self._appended == self._synced:
                return
            upto, log = self._appended, self._fast.log
        try:
            _fsync(log)
        except OSError as exc:
            logger.warning(
                "usage ledger %s: could not sync to disk (%s: %s); the rows are committed",
                self.url,
                type(exc).__name__,
                redact(str(exc)),
            )
            return
        with self._lock:
            self._synced = max(self._synced, upto)
            if self._fast is not None and self._appended > self._synced:
                self._sync_timer = None  # this one is ending: rows came while it ran
                self._arm_sync()

    def close(self) -> None:
        """Sync, then release connections (the ledger reopens on next use)."""
        self.sync()
        with self._lock:
            if self._sync_timer is not None:
                self._sync_timer.cancel()
            if self._fast is not None:
                self._fast.close()  # the last connection's close checkpoints the log
            if self._engine is not None:
                self._engine.dispose()
            self._engine = self._table = self._fast = self._sync_timer = None
        _OPEN_LEDGERS.discard(self)

    def _forget_after_fork(self) -> None:
        """In a forked child: drop the parent's connections unclosed (SQLite connections do
        not survive a fork), so the child opens its own on its first append."""
        self._lock = threading.Lock()
        if self._engine is not None:
            self._engine.dispose(close=False)
        self._engine = self._table = self._fast = self._sync_timer = None
        self._appended = self._synced = 0

    def __enter__(self) -> UsageLedger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------

    def rows(self, session_id: str | None = None) -> pd.DataFrame:
        """All recorded calls, oldest first, as a DataFrame (``timestamp`` tz-aware UTC).

        Unlike :meth:`append`, reading raises on storage errors: a report the user asked
        for should say why it cannot be produced.
        """
        import pandas as pd

        with self._lock:
            engine, table = self._ready()
        query = table.select().order_by(table.c.timestamp, table.c.id)
        if session_id is not None:
            query = query.where(table.c.session_id == session_id)
        with engine.connect() as conn:
            frame = pd.read_sql(query, conn)
        frame = frame.drop(columns=["id"])
        frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
        frame["estimated"] = frame["estimated"].astype(bool)
        for column in (*_TOKEN_COLUMNS, "step"):
            frame[column] = frame[column].astype("Int64")  # nullable: unknown stays <NA>
        for column in ("cost_usd", "latency_ms"):
            frame[column] = frame[column].astype("float64")
        return frame

    def report(
        self,
        by: Sequence[str] = ("day", "model", "notebook"),
        *,
        session_id: str | None = None,
    ) -> pd.DataFrame:
        """Sums of calls, tokens and cost grouped by ``by`` (day is the UTC date).

        ``cost_usd`` is the sum of the *known* costs (NaN when none is known);
        ``unknown_cost_calls`` counts calls whose cost is unknown, so a partial sum is
        never mistaken for a total. ``estimated_calls`` counts calls with estimated tokens.
        """
        by = [by] if isinstance(by, str) else list(by)
        unknown = [key for key in by if key not in _GROUP_KEYS]
        if unknown or not by:
            raise ValueError(f"report(by=...) takes some of {_GROUP_KEYS}, got {by!r}")
        frame = self.rows(session_id=session_id)
        frame["day"] = frame["timestamp"].dt.date
        frame["unknown_cost"] = frame["cost_usd"].isna()
        grouped = frame.groupby(by, dropna=False, sort=True)
        out = grouped.agg(
            calls=("model", "size"),
            **{column: (column, "sum") for column in _TOKEN_COLUMNS},
            cost_usd=("cost_usd", lambda s: s.sum(min_count=1)),
            unknown_cost_calls=("unknown_cost", "sum"),
            estimated_calls=("estimated", "sum"),
        ).reset_index()
        for column in (*_TOKEN_COLUMNS, "calls", "unknown_cost_calls", "estimated_calls"):
            out[column] = out[column].astype("int64")
        out["cost_usd"] = out["cost_usd"].astype("float64").round(6)
        return out


def _table_for(metadata: Any) -> Table:
    import sqlalchemy as sa

    return sa.Table(
        _TABLE_NAME,
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("timestamp", sa.DateTime(timezone=False), nullable=False, index=True),
        sa.Column("session_id", sa.String(200), nullable=False, index=True),
        sa.Column("turn_id", sa.String(200), nullable=False),
        sa.Column("step", sa.Integer, nullable=False),
        sa.Column("notebook", sa.String(1000), nullable=True),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("provider", sa.String(100), nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=True),
        sa.Column("output_tokens", sa.BigInteger, nullable=True),
        sa.Column("cache_read_tokens", sa.BigInteger, nullable=True),
        sa.Column("cache_write_tokens", sa.BigInteger, nullable=True),
        sa.Column("cost_usd", sa.Float, nullable=True),
        sa.Column("estimated", sa.Boolean, nullable=False),
        sa.Column("latency_ms", sa.Float, nullable=True),
        sa.Column("finish_reason", sa.String(100), nullable=True),
    )


class _SQLiteAppender:
    """One held DBAPI connection and the INSERT compiled once, for a SQLite ledger's appends.

    SQLAlchemy's per-execute work (a pooled checkout, a transaction object, result set-up) is
    ~0.15 ms, most of an append now that the fsync is grouped. Values go through the column
    types' own bind processors, so a row reads back exactly as one SQLAlchemy wrote.
    """

    def __init__(self, engine: Engine, table: Table) -> None:
        columns = [column for column in table.columns if not column.primary_key]
        quote = engine.dialect.identifier_preparer
        self._sql = "INSERT INTO {} ({}) VALUES ({})".format(
            quote.format_table(table),
            ", ".join(quote.quote(column.name) for column in columns),
            ", ".join("?" for _ in columns),
        )
        self._names = [column.name for column in columns]
        self._convert = [column.type.bind_processor(engine.dialect) for column in columns]
        self._connection = engine.raw_connection()  # held: appends never queue in the pool
        self._waits = True
        """Whether the connection waits out another writer's lock (its busy timeout)."""
        database = engine.url.database or ""
        self.log = Path(f"{database}-wal") if database and database != ":memory:" else None
        """The write-ahead log every committed row is in until a checkpoint moves it."""

    def insert(self, values: dict[str, Any], *, wait: bool) -> None:
        """Commit one row; ``wait``: for another process's write lock, up to the busy
        timeout (else a busy file raises at once; the setting changes only when asked)."""
        if wait is not self._waits:
            busy_ms = _BUSY_TIMEOUT_S * 1000 if wait else 0
            cursor = self._connection.cursor()
            try:
                cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            finally:
                cursor.close()
            self._waits = wait
        params = []
        for name, convert in zip(self._names, self._convert, strict=True):
            value = values.get(name)
            params.append(convert(value) if convert is not None and value is not None else value)
        cursor = self._connection.cursor()
        try:
            cursor.execute(self._sql, params)
            self._connection.commit()  # in the log, in the OS's hands: survives a crash
        except BaseException:
            self._connection.rollback()  # a failed row must not hold the write lock
            raise
        finally:
            cursor.close()

    def close(self) -> None:
        self._connection.close()


_OPEN_LEDGERS: weakref.WeakSet[UsageLedger] = weakref.WeakSet()


@atexit.register
def _sync_open_ledgers() -> None:
    for ledger in list(_OPEN_LEDGERS):
        ledger.sync()


def _forget_open_ledgers() -> None:
    for ledger in list(_OPEN_LEDGERS):
        ledger._forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_open_ledgers)


def _fsync(path: Path | None) -> None:
    """fsync ``path`` if it exists (a log that a checkpoint emptied and removed holds no
    rows: the checkpoint synced the database itself). Opened for writing, which Windows'
    fsync needs; nothing is written."""
    if path is None:
        return
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _values(row: LedgerRow) -> dict[str, Any]:
    values = row.model_dump()
    values["timestamp"] = row.timestamp.replace(tzinfo=None)  # naive UTC: portable
    return values


def _log_refused(url: str, row: LedgerRow, exc: Exception) -> None:
    logger.warning(
        "usage ledger %s: could not record a call for turn %s (%s: %s); the turn continues",
        url,
        row.turn_id,
        type(exc).__name__,
        redact(str(exc)),
    )


_SQLITE_BUSY_CODES = frozenset({5, 6})
"""SQLITE_BUSY and SQLITE_LOCKED: another connection holds what the write needs. Python
reports extended codes (SQLITE_BUSY_SNAPSHOT is 517): the primary code is the low byte."""


def _busy(exc: Exception) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return "locked" in str(exc) or "busy" in str(exc)
    return (code & 0xFF) in _SQLITE_BUSY_CODES


def _connect_args(url: str) -> dict[str, Any]:
    # wait for another process's write instead of failing at once with "database is locked";
    # the held append connection is used by whichever thread appends (under the lock): a
    # first append on a worker thread, the later ones on the event loop's
    sqlite = {"timeout": _BUSY_TIMEOUT_S, "check_same_thread": False}
    return sqlite if url.startswith("sqlite") else {}


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers (a report in another kernel) run beside a writer; NORMAL commits to
    # the log without an fsync, which the ledger groups (module docstring)
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()
