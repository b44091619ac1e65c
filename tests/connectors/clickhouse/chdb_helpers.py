"""Helpers of the ClickHouse-on-chDB tests (fixtures are in ``conftest.py``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


def require_chdb() -> None:
    for module in ("chdb", "chdb_sqlalchemy"):
        try:
            __import__(module)
        except ImportError:
            if os.environ.get("CI") == "true":
                pytest.fail(f"{module} is a dev dependency: CI must run ClickHouse on chDB")
            pytest.skip("pip install chdb chdb-sqlalchemy (dev dependencies)")


def run_raw(path: Path, statements: Sequence[str]) -> list[list[tuple[Any, ...]]]:
    """Each statement on a plain chDB connection (no relay_nb): the rows of each."""
    import chdb.dbapi

    connection = chdb.dbapi.connect(path=str(path))
    try:
        cursor = connection.cursor()
        results = []
        for statement in statements:
            cursor.execute(statement)
            results.append(list(cursor.fetchall()) if cursor.description else [])
        return results
    finally:
        connection.close()


def url(path: Path) -> str:
    return f"chdb:///{path}"  # an absolute path: chdb:////tmp/…


@dataclass
class Statement:
    sql: str
    rows_read: int
    """Rows the engine read from tables (``storage_rows_read``: table functions and system
    tables count too)."""


@dataclass
class StatementLog:
    statements: list[Statement] = field(default_factory=list)

    def clear(self) -> None:
        self.statements.clear()

    def naming(self, word: str) -> list[Statement]:
        return [s for s in self.statements if word in s.sql]


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection made to it (the first bytes
    each sent) and answers with ``reply``: where a table function would reach the network,
    the connection attempt lands here, and nothing leaves the machine."""

    def __init__(self, reply: bytes = b"") -> None:
        import socket
        import threading

        self.reply = reply
        self.received: list[bytes] = []
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(16)
        self.port: int = self._socket.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(2.0)
                try:
                    self.received.append(connection.recv(4096))
                    if self.reply:
                        connection.sendall(self.reply)
                except OSError:
                    self.received.append(b"")

    def close(self) -> None:
        self._socket.close()


HTTP_REPLY = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 20\r\n"
    b"Connection: close\r\n\r\nfrom-the-listener!!\n"
)
"""What the listener answers an HTTP client: a body the table function then returns as rows."""
