"""Run one guarded statement and read its rows under a byte budget, reading no further.

A row limit cannot bound memory: one row may hold a 500 MB string. So rows are read one at
a time, each goes through the :class:`~relay_nb.connectors.bounds.ResultBudget` (the row that
would take the bytes read past the result's limit is refused, oversized values are clipped),
and no single row larger than the result's limit ever reaches the kernel, by each engine's
own means:

- **PostgreSQL** (psycopg 3): the server measures every row of a guarded query before
  sending it — the query runs inside ``SELECT relay_row.* FROM (…) AS relay_row`` whose
  filter fails the statement when a row's text form is longer than the limit
  (:func:`pg_row_bounded`) — and rows are streamed one at a time (single-row mode, extended
  protocol: one statement only, even for roles that may write). A read of more than
  :data:`PG_CHUNKED_FROM` rows comes in chunks of :data:`PG_CHUNK_ROWS` (libpq 17), the
  server also stopping once the rows sent pass twice the limit; a cut chunk is read again
  row by row from a savepoint.
- **PyMySQL** (MySQL, MariaDB): an unbuffered cursor, and the length of every protocol
  packet is checked before the packet is read (:class:`_PacketMeter`).
- **SQLite**: rows are fetched one at a time, the engine refuses to build any value longer
  than the limit (``SQLITE_LIMIT_LENGTH``, set per call in readonly.py), and the guard bounds
  the values a query can build (the value-size rule).
- **DuckDB**: a query's result is read as Arrow batches and priced per column
  (:mod:`~relay_nb.connectors.sql.columnar`), when every column's type allows; else, as
  **other drivers**, rows are fetched in small batches. DuckDB computes in the kernel, so
  its values are bounded before they exist, by the guard's size rule.
- **chDB** (ClickHouse in the kernel): its DB-API cursor reads the whole result at once, so
  the engine bounds it first — ``max_result_rows`` and ``max_result_bytes`` (the result's
  limit plus :data:`WIRE_SLACK_BYTES`) with ``result_overflow_mode = 'break'``, set on the
  statement's session in readonly.py — and the budget keeps and clips within that.

When the budget is spent mid-result on a server, the caller cancels the statement and
discards the connection (:attr:`FetchOutcome.stopped`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay_nb.connectors.bounds import ResultBudget
from relay_nb.connectors.sql.columnar import fetch_duckdb_frame
from relay_nb.redaction import redact

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "OVERSIZED_ROW",
    "FetchOutcome",
    "OversizedRow",
    "WIRE_SLACK_BYTES",
    "driver_message",
    "unknown_column",
    "fetch_rows",
    "is_oversized",
    "is_server_timeout",
    "pg_row_bounded",
]

WIRE_SLACK_BYTES = 1 << 20
"""Bytes a MySQL result may carry beyond the result's byte limit: protocol framing, column
definitions, the row the budget then refuses. The kept rows are bounded by the budget."""
OVERSIZED_ROW = "relay_nb: a result row of"
"""How PostgreSQL's error starts when the server-side row check stops a statement."""
_BATCH = 64


@dataclass
class FetchOutcome:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    stopped: bool = False
    """Reading stopped before the statement finished (the budget was spent, or more rows
    came than were asked for): a server statement must be cancelled and its connection
    discarded."""
    frame: pd.DataFrame | None = None
    """The rows as a DataFrame already (DuckDB's columnar read, :mod:`.columnar`); ``rows``
    is then empty."""


class _WireFull(Exception):
    """The next packet would pass the wire ceiling; nothing of it was read."""


class OversizedRow(Exception):
    """The first row of a result is over its byte limit, so no row can be kept."""


def fetch_rows(
    backend: str,
    engine: Any,
    raw: Any,
    sql: str,
    *,
    max_rows: int,
    budget: ResultBudget,
    row_check: bool = False,
    frame: bool = False,
) -> FetchOutcome:
    """Execute ``sql`` on the checked-out connection ``raw`` and read at most ``max_rows``
    rows within ``budget``; driver errors propagate unchanged.

    ``row_check``: ``sql`` is a query (the guard's output), so PostgreSQL may run it inside
    :func:`pg_row_bounded`. Off for statements that are not queries (the tests that hand
    writes to the read-only wall directly), which PostgreSQL would not accept as a subquery.
    ``frame``: the caller wants a DataFrame, which DuckDB then builds from Arrow batches
    (:mod:`~relay_nb.connectors.sql.columnar`) when every column's type allows.
    """
    driver = raw.driver_connection
    if frame and backend == "duckdb":
        columnar = fetch_duckdb_frame(driver, sql, max_rows=max_rows, budget=budget)
        if columnar is not None:
            return FetchOutcome(columnar.columns, [], frame=columnar.frame)
    if backend == "postgresql" and engine.dialect.driver == "psycopg":
        return _fetch_psycopg(driver, sql, max_rows, budget, row_check)
    if backend in ("mysql", "mariadb") and engine.dialect.driver == "pymysql":
        return _fetch_pymysql(driver, sql, max_rows, budget)
    # SQLite's fetchmany steps the whole batch into Python before the budget sees a row
    batch = 1 if backend == "sqlite" else _BATCH
    return _fetch_batches(raw, sql, max_rows, budget, batch)


# -- PostgreSQL (psycopg 3) ---------------------------------------------------------------------


def pg_row_bounded(sql: str, max_row_bytes: int, max_total_bytes: int | None = None) -> str:
    """``sql`` wrapped so the server refuses to send a row whose text form is over
    ``max_row_bytes``: the statement fails with an error starting :data:`OVERSIZED_ROW`.

    With ``max_total_bytes`` it also stops (the same error) once the rows sent so far pass
    that many bytes of text, and each row carries two more columns, its size and the running
    total (:data:`PG_SIZE_COLUMNS`), which the reader drops: what lets rows come in chunks
    (:func:`_fetch_psycopg`) with what a chunk can bring bounded.

    ``ROW(relay_row.*)`` is the whole row, whatever its columns are called (a column named
    ``relay_row`` cannot stand in for it); the error text depends on the row, so the planner
    cannot fold it into an error for every query; the inner query keeps its LIMIT, so it is
    planned as written and its order is kept (the running total has no ORDER BY: it adds
    the rows up in the order they come).
    """
    size = "octet_length(CAST(ROW(relay_row.*) AS text))"
    over = f"CAST('{OVERSIZED_ROW} ' || {{size}} || ' bytes is over the limit' AS boolean)"
    if max_total_bytes is None:
        return (
            f"SELECT relay_row.* FROM ({sql}) AS relay_row WHERE CASE WHEN {size} <= "
            f"{int(max_row_bytes)} THEN TRUE ELSE {over.format(size=size)} END"
        )
    row, total = (f'relay_total."{name}"' for name in PG_SIZE_COLUMNS)
    return (
        "SELECT * FROM (SELECT relay_sized.*, "
        f'sum(relay_sized."{PG_SIZE_COLUMNS[0]}") OVER (ROWS UNBOUNDED PRECEDING) '
        f'AS "{PG_SIZE_COLUMNS[1]}" FROM (SELECT relay_row.*, {size} AS "{PG_SIZE_COLUMNS[0]}" '
        f"FROM ({sql}) AS relay_row) AS relay_sized) AS relay_total "
        f"WHERE CASE WHEN {row} > {int(max_row_bytes)} THEN {over.format(size=row)} "
        f"WHEN {total} > {int(max_total_bytes)} THEN "
        f"CAST('{OVERSIZED_ROW} ' || {total} || ' bytes with the rows before it is over the "
        "limit' AS boolean) ELSE TRUE END"
    )


PG_SIZE_COLUMNS = ("relay_nb row bytes", "relay_nb total bytes")
"""The two columns :func:`pg_row_bounded` adds for a chunked read (names no query's output
is likely to hold: one that does fails as ambiguous, never reads past the bound)."""
PG_CHUNK_ROWS = 256
"""Rows per chunk of a large PostgreSQL read (libpq 17's chunked mode): one Python call per
chunk instead of per row, 3x faster on 100,000 rows."""
PG_CHUNKED_FROM = 1_000
"""Reads of more rows than this (the guard's LIMIT) come in chunks; smaller ones row by row,
which costs them nothing and spares them the savepoint."""
PG_TOTAL_FACTOR = 2
"""The server stops a chunked read past this many times the result's byte limit (in text:
a ``bytea`` is twice its bytes as hex), so the budget, not the server, normally decides
where a result is cut, and what arrives is bounded by twice the limit and one row."""
_SAVEPOINT = "relay_nb_chunked"


class _ChunkCut(Exception):
    """The server stopped a chunked read: the rows of the chunk it was filling are lost."""


def _chunked() -> bool:
    """Whether libpq can send rows in chunks (version 17 and later)."""
    import psycopg

    return psycopg.pq.version() >= 170000


def _fetch_psycopg(
    conn: Any, sql: str, max_rows: int, budget: ResultBudget, row_check: bool
) -> FetchOutcome:
    """A guarded query's rows, measured by the server (:func:`pg_row_bounded`).

    A large one (more than :data:`PG_CHUNKED_FROM` rows allowed) is read in chunks, inside a
    savepoint: when the server stops it at a byte bound, the chunk it was filling is lost,
    so the read goes back to the savepoint (the transaction keeps its read-only settings)
    and reads the rows again one at a time, to keep every row before the cut."""
    if row_check and max_rows > PG_CHUNKED_FROM and _chunked():
        conn.execute(f"SAVEPOINT {_SAVEPOINT}")
        total = budget.max_result_bytes * PG_TOTAL_FACTOR
        try:
            return _stream(
                conn, pg_row_bounded(sql, budget.max_result_bytes, total), max_rows, budget, True
            )
        except _ChunkCut:
            conn.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
            budget.reset()
    if row_check:
        sql = pg_row_bounded(sql, budget.max_result_bytes)
    return _stream(conn, sql, max_rows, budget, False)


def _stream(conn: Any, sql: str, max_rows: int, budget: ResultBudget, sized: bool) -> FetchOutcome:
    """Stream the rows (the extended protocol; closing the stream early cancels the rest).
    ``sized``: ``sql`` carries :data:`PG_SIZE_COLUMNS` last, and comes in chunks."""
    cursor = conn.cursor()
    rows: list[tuple[Any, ...]] = []
    stream = cursor.stream(sql, size=PG_CHUNK_ROWS) if sized else cursor.stream(sql)
    drop = len(PG_SIZE_COLUMNS) if sized else 0
    try:
        for fetched in stream:
            kept = len(rows) < max_rows
            row = budget.admit(fetched[:-drop] if drop else fetched) if kept else None
            if row is None:
                return FetchOutcome(_names(cursor, drop), rows, stopped=True)
            rows.append(row)
        return FetchOutcome(_names(cursor, drop), rows)
    except Exception as exc:
        if sized and is_oversized(exc):
            raise _ChunkCut from exc
        if not (rows and is_oversized(exc)):
            raise  # before any row came, the caller says why in one line
        budget.full = True  # the server refused to send the next row: keep what came
        return FetchOutcome(_names(cursor, drop), rows)
    finally:
        stream.close()
        cursor.close()


def _names(cursor: Any, drop: int = 0) -> list[str]:
    names = [d[0] for d in cursor.description or ()]
    return names[: len(names) - drop]


# -- MySQL / MariaDB (PyMySQL) ------------------------------------------------------------------


def _fetch_pymysql(conn: Any, sql: str, max_rows: int, budget: ResultBudget) -> FetchOutcome:
    import pymysql

    meter = _PacketMeter(conn, budget.max_result_bytes + WIRE_SLACK_BYTES)
    cursor = conn.cursor(pymysql.cursors.SSCursor)  # unbuffered: rows stay on the wire
    columns: list[str] = []
    rows: list[tuple[Any, ...]] = []
    stopped = False
    try:
        cursor.execute(sql)
        columns = _names(cursor)
        while (fetched := cursor.fetchone()) is not None:
            row = budget.admit(fetched) if len(rows) < max_rows else None
            if row is None:  # the budget is spent, or more rows than were asked for
                stopped = True
                break
            rows.append(row)
    except _WireFull:
        budget.full = stopped = True
        if not rows:
            raise OversizedRow(OVERSIZED_ROW) from None
    finally:
        if stopped:
            _abandon(cursor, meter)
        else:
            with contextlib.suppress(Exception):
                cursor.close()
            meter.remove()
    return FetchOutcome(columns, rows, stopped=stopped)


def _abandon(cursor: Any, meter: _PacketMeter) -> None:
    """Leave an unbuffered result unread: PyMySQL would read the rest of it when the cursor
    is closed or collected. The caller discards the connection."""
    meter.over = True
    result = getattr(cursor, "_result", None)
    if result is not None:
        result.unbuffered_active = False
    cursor.connection = None


class _PacketMeter:
    """Counts the bytes PyMySQL reads for one result, refusing a read past ``ceiling``
    before it happens (the packet's length is known from its header)."""

    def __init__(self, conn: Any, ceiling: int) -> None:
        self.conn = conn
        self.ceiling = ceiling
        self.taken = 0
        self.over = False
        self._read: Callable[[int], bytes] = conn._read_bytes
        conn._read_bytes = self._metered  # an instance attribute shadows the method

    def _metered(self, num_bytes: int) -> bytes:
        if self.over or self.taken + num_bytes > self.ceiling:
            self.over = True
            raise _WireFull
        self.taken += num_bytes
        return self._read(num_bytes)

    def remove(self) -> None:
        with contextlib.suppress(AttributeError):
            del self.conn._read_bytes


# -- everything else ----------------------------------------------------------------------------


def _fetch_batches(
    raw: Any, sql: str, max_rows: int, budget: ResultBudget, batch: int
) -> FetchOutcome:
    cursor = raw.cursor()
    rows: list[tuple[Any, ...]] = []
    columns: list[str] = []
    try:
        cursor.execute(sql)
        columns = _names(cursor)
        if not columns:
            return FetchOutcome([], [])
        while len(rows) < max_rows:
            fetched_rows = cursor.fetchmany(min(batch, max_rows - len(rows)))
            if not fetched_rows:
                break
            for fetched in fetched_rows:
                row = budget.admit(fetched)
                if row is None:
                    return FetchOutcome(columns, rows, stopped=True)
                rows.append(row)
        return FetchOutcome(columns, rows)
    except Exception as exc:
        if not (rows and is_oversized(exc)):
            raise  # before any row came, the caller says why in one line
        budget.full = True  # SQLite would not build the next value: keep what came
        return FetchOutcome(columns, rows)
    finally:
        with contextlib.suppress(Exception):
            cursor.close()


_OVERSIZED = (
    OVERSIZED_ROW,  # PostgreSQL: the server-side row check (pg_row_bounded)
    "string or blob too big",  # SQLite: SQLITE_LIMIT_LENGTH, set to the result's limit
)


def is_oversized(exc: BaseException) -> bool:
    """Whether the engine stopped the statement because a row or value was over the
    result's byte limit (rather than for a fault of the query)."""
    if isinstance(exc, OversizedRow):
        return True
    text = str(getattr(exc, "orig", None) or exc)
    return any(marker in text for marker in _OVERSIZED)


_MAX_DRIVER_MESSAGE = 400
_SERVER_TIMEOUT_CODES = {3024, 1969}  # MySQL max_execution_time, MariaDB max_statement_time
_SERVER_TIMEOUT_SQLSTATE = "57014"  # PostgreSQL query_canceled (statement_timeout)
_CLICKHOUSE_TIMEOUT = "(TIMEOUT_EXCEEDED)"  # ClickHouse max_execution_time (code 159)


def is_server_timeout(exc: BaseException) -> bool:
    """The server's own statement timeout (PostgreSQL, MySQL, MariaDB, ClickHouse), which may
    fire before relay_nb's timer: the same meaning, so the same message."""
    original = getattr(exc, "orig", None) or exc
    if getattr(original, "sqlstate", None) == _SERVER_TIMEOUT_SQLSTATE:
        return "timeout" in str(original).lower()
    if _CLICKHOUSE_TIMEOUT in str(original):
        return True
    args = getattr(original, "args", ())
    return bool(args) and args[0] in _SERVER_TIMEOUT_CODES


_UNKNOWN_COLUMN = re.compile(
    r"no such column: (?:\w+\.)?(?P<a>\w+)"  # SQLite
    r"|column \"?(?:\w+\.)?(?P<b>\w+)\"? does not exist"  # PostgreSQL
    r"|Unknown column '(?:\w+\.)?(?P<c>\w+)' in"  # MySQL, MariaDB
)


def unknown_column(message: str) -> str | None:
    """The column a driver's message says does not exist (SQLite, PostgreSQL, MySQL and
    MariaDB word it each their own way; DuckDB names the candidates itself)."""
    found = _UNKNOWN_COLUMN.search(message)
    return None if found is None else next(v for v in found.groupdict().values() if v)


def driver_message(exc: BaseException) -> str:
    """The driver's own first line, scrubbed of known secrets and clipped."""
    original = getattr(exc, "orig", None) or exc
    text = (
        str(original).strip().splitlines()[0] if str(original).strip() else type(original).__name__
    )
    text = redact(text)
    return text if len(text) <= _MAX_DRIVER_MESSAGE else text[: _MAX_DRIVER_MESSAGE - 1] + "…"
