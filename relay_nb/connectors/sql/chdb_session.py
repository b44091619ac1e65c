"""chDB — ClickHouse embedded in the kernel — run read-only: a session of its own per statement.

ClickHouse's read-only mode is the setting ``readonly = 1``. Once it is set, the session
refuses every write (``INSERT``, ``INSERT INTO FUNCTION file(…)``, ``CREATE``, ``ALTER``…),
every table function that reaches outside the database (``file``, ``url``, ``executable``…;
``numbers()`` stays), temporary tables, and any change of a setting — ``readonly`` itself
included, and a query's own ``SETTINGS`` clause too. (``readonly = 2`` would let settings
change, and with them ``file('/etc/…')`` reads and temporary tables: not a wall.) That last
refusal shapes how a statement runs:

- its bounds are set first, in the same ``SET`` as ``readonly = 1`` (:func:`begin`):
  ``max_execution_time`` (the statement's time bound), ``max_result_rows`` and
  ``max_result_bytes`` with ``result_overflow_mode = 'break'`` (a result stops at the block
  that passes them, so a statement without LIMIT — the guard lets none through — cannot
  materialise a table in the kernel); then the engine's ``getSetting('readonly')`` must
  answer 1 before the statement runs;
- a session never leaves read-only mode and the next statement needs bounds of its own, so
  the connection is discarded after its statement (a chDB connection to an open database
  costs about 2 ms);
- chDB shuts its engine down when the last connection to it closes, and starting it again
  reloads every table's metadata: the caller holds a pooled connection for the length of the
  call, so the engine outlives the discarded one;
- the DB-API cursor cannot be interrupted (closing its connection waits for the statement to
  end): a cancel is ``KILL QUERY`` from another connection, for the statement that starts
  with this call's marker comment (:func:`marked`, :func:`canceller`).

chdb 4.4's cursor has a fault no connection may outlive: after a statement that fails while
it runs (a timeout, a cancel, ``throwIf``), the next result on the same connection starts with
the failed statement's two header lines, read as rows, under the failed statement's column
names. Statement connections are discarded anyway; :func:`discard_after_errors` has an engine
invalidate every pooled connection that saw an error (the catalog's).

chDB hosts one database directory per process: a second ``chdb:///other/path`` fails to
connect while connections to the first are open (:data:`ONE_PATH`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["ONE_PATH", "begin", "canceller", "discard_after_errors", "marked"]

ONE_PATH = (
    "chDB holds one database directory per process: close this kernel's connections to "
    "another path (connector.close(), engine.dispose()) before connecting to a new one"
)
"""What to do when chDB refuses a second path (its ``EmbeddedServer already initialized``)."""

_MIN_TIMEOUT_S = 0.001
"""``max_execution_time = 0`` means no limit: a bound is never written as 0."""


def marked(sql: str) -> tuple[str, str]:
    """``(marker, sql with the marker comment in front)``: how :func:`canceller` finds the
    statement among the engine's running queries (``system.processes.query``)."""
    marker = f"/* relay_nb {secrets.token_hex(8)} */"
    return marker, f"{marker} {sql}"


def begin(cursor: Any, *, timeout_s: float, max_rows: int, max_result_bytes: int) -> bool:
    """Bound the connection's session and make it read-only; True when the engine confirms
    ``readonly = 1`` (the statement must not run otherwise)."""
    cursor.execute(
        f"SET max_execution_time = {max(float(timeout_s), _MIN_TIMEOUT_S):.3f}, "
        "timeout_overflow_mode = 'throw', "
        f"max_result_rows = {max(int(max_rows), 1)}, "
        f"max_result_bytes = {max(int(max_result_bytes), 1)}, "
        "result_overflow_mode = 'break', readonly = 1"
    )
    cursor.execute("SELECT getSetting('readonly')")
    row = cursor.fetchone()
    return row is not None and row[0] == 1


def canceller(engine: Engine, marker: str) -> Callable[[], None]:
    """Stop the statement that starts with ``marker``, from another connection."""

    def kill_query() -> None:
        with engine.connect() as other:
            other.exec_driver_sql(f"KILL QUERY WHERE startsWith(query, '{marker}') ASYNC")

    return kill_query


def discard_after_errors(engine: Engine) -> None:
    """Invalidate a pooled connection whose statement failed (chdb 4.4 would return the
    failed statement's header as rows of the next result on it), not the whole pool."""

    @event.listens_for(engine, "handle_error")
    def _discard(context: Any) -> None:
        context.is_disconnect = True
        context.invalidate_pool_on_disconnect = False
