"""An append-only ledger of every model call: who spent which tokens and dollars, when.

Why a ledger and not just per-turn totals: an analyst's question a month later is "what did
this notebook cost in October, and on which model?" — that needs a durable record that
outlives the kernel. Each row is one model call: ids, model, token counts, cost, latency and
finish reason. No prompt or answer text is stored, so the ledger is safe to keep and share.

Storage is a SQLite file under the user's data dir by default (:func:`default_ledger_path`),
or any SQLAlchemy URL. The ledger is bookkeeping, never a reason for a turn to fail: storage
errors in :meth:`UsageLedger.append` are logged on ``relay_nb.agent.ledger`` and reported
as ``False``. SQLAlchemy and pandas are imported lazily so importing this module stays cheap.
"""

from __future__ import annotations

import logging
import os
import threading
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
    anyway) and each commits its own transaction, so a crash loses at most the call in
    flight. Safe to share between threads.
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

    def __repr__(self) -> str:
        return f"UsageLedger({self.url!r})"

    # -- storage -----------------------------------------------------------------------

    def _ready(self) -> tuple[Engine, Table]:
        """The engine and table, created on first use (call with the lock held)."""
        if self._engine is not None and self._table is not None:
            return self._engine, self._table
        import sqlalchemy as sa

        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
        url = self._url.reveal()
        engine = sa.create_engine(url, connect_args=_connect_args(url))
        if engine.dialect.name == "sqlite":
            sa.event.listen(engine, "connect", _sqlite_pragmas)
        table = _table_for(sa.MetaData())
        try:
            table.metadata.create_all(engine, checkfirst=True)
        except Exception:
            engine.dispose()
            raise
        self._engine, self._table = engine, table
        return engine, table

    def append(self, row: LedgerRow) -> bool:
        """Record one call durably; False (and a logged warning) if storage failed.

        Never raises for storage errors: losing a ledger row must not lose the turn.
        """
        values = row.model_dump()
        values["timestamp"] = row.timestamp.replace(tzinfo=None)  # naive UTC: portable
        try:
            with self._lock:
                engine, table = self._ready()
                with engine.begin() as conn:
                    conn.execute(table.insert(), values)  # one cached statement, not one per row
        except Exception as exc:  # disk full, locked, unreachable, unwritable …
            logger.warning(
                "usage ledger %s: could not record a call for turn %s (%s: %s); the turn continues",
                self.url,
                row.turn_id,
                type(exc).__name__,
                redact(str(exc)),
            )
            return False
        return True

    def close(self) -> None:
        """Release pooled connections (the ledger reopens on next use)."""
        with self._lock:
            if self._engine is not None:
                self._engine.dispose()
            self._engine = self._table = None

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


def _connect_args(url: str) -> dict[str, Any]:
    # wait for another process's write instead of failing at once with "database is locked"
    return {"timeout": 10} if url.startswith("sqlite") else {}


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers (a report in another kernel) run beside a writer; FULL sync makes
    # every committed append survive a power cut
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
    finally:
        cursor.close()
