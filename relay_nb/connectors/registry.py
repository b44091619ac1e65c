"""``ConnectorRegistry``: the connectors a session holds, their schema age and their status.

A notebook registers, replaces and removes connectors from cells all day, so the registry
owns three lifecycles the connectors themselves cannot see:

- **Closing.** A connector replaced or removed is closed at once (its pool, client or socket
  goes with it), and :meth:`close` closes the rest at kernel shutdown: nothing leaks.
- **Schema age.** A connector's cached schema older than ``schema_ttl_s`` is checked at the
  start of each turn, for the turn's connectors, by :meth:`refresh_stale`, so a table
  created in another cell shows up without reconnecting. A connector that can tell cheaply
  whether its schema changed (SQL: one statement) is checked on a thread of its own; the
  turn waits for it at most :data:`CHANGE_CHECK_WAIT_S` (a SQLite check takes ~1 ms) and
  otherwise goes on with the schema it has, which the check replaces when it changed. An
  unchanged schema stays the same object, so nothing built from it is rebuilt. Any other
  connector's expired schema is dropped and read again by the next prompt.
- **Invalidation.** Every change bumps :attr:`version` and drops the cached tool lists, so
  the next turn is built from what is registered now.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from typing import TYPE_CHECKING

from pydantic import BaseModel

from relay_nb.connectors.base import Connector
from relay_nb.errors import ConfigurationError, ConnectorError, RelayError
from relay_nb.redaction import redact
from relay_nb.tools import Tool

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_SCHEMA_TTL_S", "ConnectorRegistry", "ConnectorStatus", "check_reachable"]

DEFAULT_SCHEMA_TTL_S = 300.0
CHANGE_CHECK_WAIT_S = 0.25
"""How long a turn waits for an expired schema's change check before going on without it."""
_log = logging.getLogger(__name__)
_STATUS_TIMEOUT_S = 15.0


class ConnectorStatus(BaseModel):
    """One row of ``%relay --connectors``: never a secret (``target`` is masked)."""

    id: str
    type: str
    name: str
    target: str
    objects: list[str]
    status: str
    """``"ok"``, or ``"error: …"`` with the reason the schema could not be read."""


class ConnectorRegistry(Mapping[str, Connector]):
    """Connectors by id; a read-only mapping, changed only through :meth:`add`/:meth:`remove`."""

    def __init__(
        self,
        *,
        schema_ttl_s: float | None = DEFAULT_SCHEMA_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if schema_ttl_s is not None and schema_ttl_s <= 0:
            raise ConfigurationError(
                "schema_ttl_s must be a positive number of seconds, or None to keep a "
                "connector's schema until it is refreshed by hand"
            )
        self.schema_ttl_s = schema_ttl_s
        self._clock = clock
        self._connectors: dict[str, Connector] = {}
        self._loaded_at: dict[str, float] = {}
        self._tools: dict[str, tuple[int, list[Tool]]] = {}
        """Per connector: its ``tools_version`` when built, and the tools built."""
        self._lock = threading.Lock()
        self._checking: set[str] = set()
        """Connectors whose change check is running (one at a time each)."""
        self.version = 0
        """Bumped on every add, replace, remove and refresh."""

    # -- mapping ---------------------------------------------------------------------------------

    def __getitem__(self, connector_id: str) -> Connector:
        return self._connectors[connector_id]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._connectors))

    def __len__(self) -> int:
        return len(self._connectors)

    def __repr__(self) -> str:
        return f"<ConnectorRegistry {list(self._connectors)}>"

    # -- changes ---------------------------------------------------------------------------------

    def add(self, connector: Connector, *, replace: bool = False) -> Connector | None:
        """Register ``connector``; with ``replace`` the one under the same id is closed and
        returned (None when there was none)."""
        if not isinstance(connector, Connector):
            raise ConfigurationError(
                f"expected a Connector, got {type(connector).__name__}; build one with "
                "relay.connect(ID, URL_OR_OBJECT) or subclass relay_nb.Connector"
            )
        with self._lock:
            old = self._connectors.get(connector.id)
            if old is not None and not replace:
                raise ConfigurationError(
                    f"a connector with id {connector.id!r} is already registered; remove it "
                    "first or pass replace=True"
                )
            self._connectors[connector.id] = connector
            self._loaded_at[connector.id] = self._clock()
            self._changed(connector.id)
        if old is not None and old is not connector:
            old.close()
        return old

    def remove(self, connector_id: str, *, close: bool = True) -> Connector:
        """Unregister (and by default close) a connector; an unknown id lists the known ones."""
        with self._lock:
            connector = self._connectors.pop(connector_id, None)
            if connector is None:
                raise _unknown(connector_id, self._connectors)
            self._loaded_at.pop(connector_id, None)
            self._changed(connector_id)
        if close:
            connector.close()
        return connector

    def close(self) -> None:
        """Close and forget every connector (kernel shutdown, ``relay.close()``)."""
        with self._lock:
            connectors = list(self._connectors.values())
            self._connectors.clear()
            self._loaded_at.clear()
            self._tools.clear()
            self.version += 1
        for connector in connectors:
            connector.close()

    def _changed(self, connector_id: str) -> None:
        self._tools.pop(connector_id, None)
        self.version += 1

    # -- schema age ------------------------------------------------------------------------------

    def stale(self, ids: Iterable[str] | None = None) -> list[str]:
        """Ids (of ``ids``, default all) whose schema is older than ``schema_ttl_s``."""
        if self.schema_ttl_s is None:
            return []
        now = self._clock()
        wanted = None if ids is None else set(ids)
        return [
            cid
            for cid, at in self._loaded_at.items()
            if now - at >= self.schema_ttl_s and (wanted is None or cid in wanted)
        ]

    def refresh_stale(self, ids: Iterable[str] | None = None) -> list[str]:
        """Renew the schema of the connectors (of ``ids``: the turn's) that outlived the TTL.

        A connector that ``detects_changes`` is checked on a daemon thread, waited for at
        most :data:`CHANGE_CHECK_WAIT_S`; any other one's schema is forgotten, and the next
        prompt reads it under the context source's timeout. Either way an unreachable system
        never stalls the turn that uses another one. A connector whose check or ``invalidate``
        fails is logged (its id and the error's type, nothing it said) and tried again next
        turn: the turn goes on with the schema it had."""
        expired, checks = self._renew(ids)
        deadline = time.monotonic() + CHANGE_CHECK_WAIT_S
        for check in checks:
            with contextlib.suppress(FutureTimeout):
                check.result(timeout=max(0.0, deadline - time.monotonic()))
        return expired

    async def arefresh_stale(self, ids: Iterable[str] | None = None) -> list[str]:
        """:meth:`refresh_stale` for a turn on the event loop: the wait is awaited, so the
        other turns of ``ask_many`` go on meanwhile."""
        expired, checks = self._renew(ids)
        if checks:
            await asyncio.wait(
                [asyncio.wrap_future(c) for c in checks], timeout=CHANGE_CHECK_WAIT_S
            )
        return expired

    def _renew(self, ids: Iterable[str] | None) -> tuple[list[str], list[Future[list[str]]]]:
        """Start the expired connectors' checks, forget the others' schemas."""
        expired = self.stale(ids)
        checks: list[Future[list[str]]] = []
        for cid in expired:
            connector = self._connectors.get(cid)
            if connector is None:
                continue
            if connector.detects_changes:
                with self._lock:
                    if cid in self._checking:
                        continue
                    self._checking.add(cid)
                checks.append(_in_daemon_thread(partial(self._check, cid, connector)))
                continue
            try:
                connector.invalidate()
            except Exception as exc:  # one connector's fault must not fail a turn about others
                _warn_expired(cid, "forgetting its expired schema", exc)
                continue
            with self._lock:
                if self._connectors.get(cid) is connector:
                    self._loaded_at[cid] = self._clock()
                    self._changed(cid)
        return expired, checks

    def _check(self, cid: str, connector: Connector) -> list[str]:
        """One expired schema's change check (on its own thread): renewed if it changed."""
        changed: bool | None = None  # None: the check failed, try again next turn
        try:
            changed = connector.refresh_if_changed()
        except Exception as exc:
            _warn_expired(cid, "checking its expired schema", exc)
        with self._lock:
            self._checking.discard(cid)
            current = self._connectors.get(cid) is connector
            if current and changed is not None:
                self._loaded_at[cid] = self._clock()
                if changed:
                    self._changed(cid)
        if not current:  # removed or replaced while it was checked: it must stay closed
            connector.close()
        return [cid] if changed else []

    def refresh(self, connector_id: str | None = None) -> dict[str, str]:
        """Renew one connector's schema (or every one's) now: ``{id: "ok" | "error: …"}``.

        A connector that detects changes (SQL) keeps an unchanged schema as it is, and what
        was built from it; the others read theirs again.

        Blocking (it may query catalogs): call it from a thread in async code. Naming one
        connector raises its error; refreshing all reports each and goes on past failures.
        """
        if connector_id is not None and connector_id not in self._connectors:
            raise _unknown(connector_id, self._connectors)
        ids = list(self._connectors) if connector_id is None else [connector_id]
        outcome: dict[str, str] = {}
        for cid in ids:
            connector = self._connectors.get(cid)
            if connector is None:
                continue
            try:
                changed = connector.refresh_if_changed()
            except Exception as exc:
                if connector_id is not None:
                    raise
                outcome[cid] = f"error: {_short(exc)}"
                continue
            with self._lock:
                current = self._connectors.get(cid) is connector
                if current:
                    self._loaded_at[cid] = self._clock()
                    if changed:
                        self._changed(cid)
            if not current:  # removed or replaced while it was read: it must stay closed
                connector.close()
            outcome[cid] = "ok"
        return outcome

    # -- what the model and the analyst see ------------------------------------------------------

    def tools(self, connector_id: str) -> list[Tool]:
        """The connector's tools, built once per registration (dropped on every change, and
        rebuilt when the connector's ``tools_version`` moves)."""
        connector = self[connector_id]
        version = getattr(connector, "tools_version", 0)
        cached = self._tools.get(connector_id)
        if cached is None or cached[0] != version:
            cached = self._tools[connector_id] = (version, list(connector.tools()))
        return cached[1]

    def statuses(self, *, timeout_s: float = _STATUS_TIMEOUT_S) -> list[ConnectorStatus]:
        """One row per connector, their schemas read concurrently (each may be a server
        round trip); one unreachable system shows its error without hiding the others."""
        connectors = list(self._connectors.values())
        if not connectors:
            return []
        futures = [_in_daemon_thread(c.object_names) for c in connectors]
        deadline = time.monotonic() + timeout_s
        rows = []
        for connector, future in zip(connectors, futures, strict=True):
            try:
                remaining = max(0.0, deadline - time.monotonic())
                objects, status = list(future.result(timeout=remaining)), "ok"
            except FutureTimeout:
                objects, status = [], f"error: no answer within {timeout_s:g} s"
            except Exception as exc:
                objects, status = [], f"error: {_short(exc)}"
            rows.append(
                ConnectorStatus(
                    id=connector.id,
                    type=connector.kind,
                    name=connector.name,
                    target=redact(connector.target),
                    objects=objects,
                    status=status,
                )
            )
        return rows

    def status_frame(self) -> pd.DataFrame:
        """:meth:`statuses` as a DataFrame: id, type, target, objects, status."""
        import pandas as pd

        columns = ["id", "type", "target", "objects", "status"]
        rows = [
            {**s.model_dump(include=set(columns)), "objects": ", ".join(s.objects)}
            for s in self.statuses()
        ]
        return pd.DataFrame(rows, columns=columns)


def check_reachable(connector: Connector, timeout_s: float) -> None:
    """Read what ``connector`` holds (its schema, collections, endpoints) within
    ``timeout_s``, so a wrong password, an unreachable server or a missing file fails when
    connecting, with its whole cause on one line, not later in a status table.

    A connector that starts what it speaks to (an MCP server process: a Python interpreter
    importing its SDK, or ``npx`` fetching a package) says how long that may take in
    ``startup_timeout_s``; the check waits at least that long, so a slow start on a busy
    machine is not reported as a server that does not answer."""
    timeout_s = max(timeout_s, float(getattr(connector, "startup_timeout_s", 0.0) or 0.0))
    try:
        _in_daemon_thread(connector.object_names).result(timeout=timeout_s)
    except FutureTimeout:
        raise ConnectorError(
            f"{connector.id!r} did not answer within {timeout_s:g} s; check that the server "
            "is running and reachable (check=False connects without this check)"
        ) from None
    except RelayError as exc:
        raise type(exc)(_one_line(exc)) from None
    except Exception as exc:
        raise ConnectorError(
            f"cannot connect to {connector.id!r}: {type(exc).__name__}: {_one_line(exc)}"
        ) from None


def _warn_expired(cid: str, doing: str, exc: Exception) -> None:
    _log.warning(
        "connector %r: %s failed (%s); it keeps the schema it has and is tried again next turn",
        cid,
        doing,
        type(exc).__name__,
    )


def _one_line(exc: BaseException) -> str:
    return redact(" ".join(str(exc).split()))


def _in_daemon_thread(work: Callable[[], list[str]]) -> Future[list[str]]:
    """Run ``work`` on a daemon thread: a system that never answers must hold up neither
    the status table nor the kernel's exit (pool workers are joined at exit)."""
    future: Future[list[str]] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(work())
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, name="relay-connector", daemon=True).start()
    return future


def _unknown(connector_id: str, known: Mapping[str, Connector]) -> ConfigurationError:
    return ConfigurationError(
        f"no connector {connector_id!r}; registered: {sorted(known) or 'none'}"
    )


def _short(exc: BaseException) -> str:
    """The error on one line, whole: a cause cut mid-word is no use to fix it."""
    return _one_line(exc) or type(exc).__name__
