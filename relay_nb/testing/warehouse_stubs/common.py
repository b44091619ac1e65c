"""What the warehouse stubs share: the tables they pretend to hold, the rows a query
returns, the record of every statement, and the request plumbing.

A warehouse stub is a :class:`~relay_nb.testing.stub_server.ScriptedStub` whose scripted
replies are :class:`QueryRows`: the result of the next query it is asked to *run*. What it
can answer by itself — its catalog, a plan or a dry run computed from its
:class:`StubTable` s, the client's own session statements — consumes no reply. Every SQL
text it receives is kept as a :class:`Statement` with what the stub took it for, so a test
can say "the warehouse was asked for a plan of this query and ran nothing".
"""

from __future__ import annotations

import gzip
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from relay_nb.testing.stub_server import RecordedRequest, ScriptedStub, StubHandler, json_object

__all__ = ["QueryRows", "Statement", "StubTable", "WarehouseHandler", "WarehouseStub"]


@dataclass(frozen=True)
class StubTable:
    """A table the stub holds: its name, columns, and the figures its plans report.

    ``rows``/``bytes`` None stand for a table without statistics (Trino then says ``NaN``).
    ``partitions`` is Snowflake's micro-partition count.
    """

    schema: str
    name: str
    columns: tuple[tuple[str, str], ...] = (("id", "INT64"),)
    """``(name, the vendor's type name)``."""
    rows: int | None = 0
    bytes: int | None = 0
    partitions: int = 1
    description: str | None = None

    def named_in(self, sql: str) -> bool:
        """Whether ``sql`` names this table (as a word, in any case): the stub does not
        parse SQL, it looks for its tables' names."""
        return re.search(rf"(?<![\w$]){re.escape(self.name)}(?![\w$])", sql, re.I) is not None


@dataclass(frozen=True)
class QueryRows:
    """The result of one query the stub runs: columns as ``(name, vendor type)``, rows."""

    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple[Any, ...], ...] = ()


@dataclass(frozen=True)
class Statement:
    """One SQL text the stub received. ``kind``: ``"estimate"`` (an EXPLAIN or a dry run),
    ``"query"`` (a statement it ran, or was asked to run), ``"session"`` (the client's own:
    its version, its current schema, a ping, a rollback), ``"catalog"`` (a catalog read)."""

    kind: Literal["estimate", "query", "session", "catalog"]
    sql: str
    dry_run: bool = False


class WarehouseStub(ScriptedStub[QueryRows]):
    """A loopback warehouse: start it with ``with``, give it tables, enqueue query results."""

    def __init__(self, tables: Sequence[StubTable] = ()) -> None:
        super().__init__()
        self.tables: list[StubTable] = list(tables)
        self._statements: list[Statement] = []
        self._statements_lock = threading.Lock()

    @property
    def statements(self) -> list[Statement]:
        """Every SQL text received so far, oldest first."""
        with self._statements_lock:
            return list(self._statements)

    @property
    def queries(self) -> list[str]:
        """The statements the stub was asked to run (not plans, not the session's own)."""
        return [s.sql for s in self.statements if s.kind == "query"]

    @property
    def estimates(self) -> list[str]:
        """The EXPLAIN statements and dry runs received."""
        return [s.sql for s in self.statements if s.kind == "estimate"]

    def named_in(self, sql: str) -> list[StubTable]:
        """The stub's tables ``sql`` names."""
        return [table for table in self.tables if table.named_in(sql)]

    def table(self, schema: str, name: str) -> StubTable | None:
        for table in self.tables:
            if table.schema.lower() == schema.lower() and table.name.lower() == name.lower():
                return table
        return None

    # -- called from handler threads -------------------------------------------------------

    def _note(self, request: RecordedRequest, *statements: Statement) -> None:
        """Record a request, and the SQL it carried, without consuming a reply."""
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()
        with self._statements_lock:
            self._statements.extend(statements)

    def _take(self) -> QueryRows | None:
        """The next scripted query result, or None when none is left."""
        with self._lock:
            return self._replies.popleft() if self._replies else None


class WarehouseHandler(StubHandler[Any]):
    """Reads a request (gzip-encoded or not) and records it."""

    def _read(self) -> RecordedRequest:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.headers.get("content-encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        return RecordedRequest(
            method=self.command,
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=json_object(raw),
            raw_body=raw,
        )

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        self.close_connection = True
        self._send_json(status, payload, {})
