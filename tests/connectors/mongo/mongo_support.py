"""Shared helpers of the Mongo connector tests (imported by name: ``conftest`` is ambiguous
when pytest has loaded several of them).

``ALLOWED`` is the test allowlist, ``MongoServer`` one seeded server, ``CommandLog`` a pymongo
listener recording every command a client sends, ``Watched`` a connector on such a client, and
``server_state`` what a write would change on the server.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pymongo
from pymongo import monitoring

from relay_nb.connectors.mongo import MongoConnector

__all__ = ["ALLOWED", "CommandLog", "MongoServer", "Watched", "server_state"]

ALLOWED = ("customers", "orders", "products", "events", "paid_orders", "tickets")
"""The test allowlist: ``internal_notes`` (and every ``system.*``) stays hidden."""


@dataclass(frozen=True)
class MongoServer:
    """One seeded server: ``url`` names the database, ``base_url`` does not."""

    kind: str
    base_url: str
    database: str

    @property
    def url(self) -> str:
        parts = urlsplit(self.base_url)
        return parts._replace(path=f"/{self.database}").geturl()


class CommandLog(monitoring.CommandListener):
    """Every command a client started, by name and with its body."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        with self._lock:
            self.commands.append((event.command_name, dict(event.command)))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def names(self) -> list[str]:
        with self._lock:
            return [name for name, _ in self.commands if name not in _DRIVER_CHATTER]

    def clear(self) -> None:
        with self._lock:
            self.commands.clear()


_DRIVER_CHATTER = {"hello", "ismaster", "isMaster", "endSessions", "ping", "saslStart"}


@dataclass
class Watched:
    """A connector on a client whose every command is logged, and that client."""

    connector: MongoConnector
    log: CommandLog
    client: pymongo.MongoClient
    server: MongoServer


def server_state(client: pymongo.MongoClient, database: str) -> dict[str, Any]:
    """What a write would change: every collection (system ones included) with its count,
    and — where the server reports them — the insert/update/delete counters."""
    db = client[database]
    # views hold no documents of their own; every other collection, system.* included, counts
    names = sorted(c["name"] for c in db.list_collections() if c.get("type") != "view")
    state: dict[str, Any] = {
        "collections": {name: db[name].count_documents({}) for name in names},
        "databases": sorted(client.list_database_names()),
    }
    status = client.admin.command("serverStatus")
    counters = status.get("opcounters", {})
    if status.get("process") == "secantus":  # a mongod counts its own background writes too
        state["writes"] = {k: counters.get(k) for k in ("insert", "update", "delete")}
    return state
