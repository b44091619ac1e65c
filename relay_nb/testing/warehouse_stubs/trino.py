"""A local Trino coordinator: the client REST protocol the ``trino`` package speaks
(https://trino.io/docs/current/develop/client-protocol.html).

``POST /v1/statement`` with the SQL as the body answers the first page — ``id``,
``infoUri``, ``nextUri``, ``stats`` (state QUEUED); ``GET`` on that ``nextUri`` answers the
last page, with ``columns`` (``name``, ``type``, ``typeSignature``), ``data`` and state
FINISHED (or an ``error`` and state FAILED); ``DELETE`` on it is acknowledged. Connect with
``trino://USER@127.0.0.1:PORT/CATALOG/SCHEMA`` (:meth:`TrinoStub.url`).

Answered from the stub's tables:

- ``EXPLAIN (TYPE IO, FORMAT JSON) <query>`` — one ``Query Plan`` row holding the IO plan
  as Trino's ``IoPlanPrinter`` writes it (https://trino.io/docs/current/sql/explain.html,
  ``EXPLAIN (TYPE IO)``): ``inputTableColumnInfos`` with, per table the query names, its
  ``table`` (``catalog``, ``schemaTable``), ``constraint`` and ``estimate``
  (``outputRowCount``, ``outputSizeInBytes``, ``cpuCost``, ``maxMemory``, ``networkCost``;
  ``"NaN"`` for a table without statistics), and the query's own ``estimate``
  (``output_rows``, or ``"NaN"``). The stub does not plan: a table's figures are the whole
  table's.
- ``SELECT 1`` (SQLAlchemy's ping) and ``SELECT version()``.

Any other statement gets the next scripted
:class:`~relay_nb.testing.warehouse_stubs.common.QueryRows`, or fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from relay_nb.testing.warehouse_stubs.common import (
    QueryRows,
    Statement,
    StubTable,
    WarehouseHandler,
    WarehouseStub,
)

__all__ = ["TrinoStub"]

_EXPLAIN_IO = re.compile(
    r"^\s*EXPLAIN\s*\(\s*TYPE\s+IO\s*,\s*FORMAT\s+JSON\s*\)\s*(?P<query>.*)$", re.I | re.S
)
_SESSION = {"select 1": "ping", "select version()": "version"}


class TrinoStub(WarehouseStub):
    """One coordinator serving one catalog."""

    def __init__(
        self,
        tables: Sequence[StubTable] = (),
        *,
        catalog: str = "hive",
        version: str = "479",
        output_rows: int | None = None,
    ) -> None:
        super().__init__(tables)
        self.catalog, self.version = catalog, version
        self.output_rows = output_rows
        """What the IO plan says the query returns (None: ``"NaN"``, unknown)."""
        self._pages: dict[str, dict[str, Any]] = {}

    def url(self, schema: str, user: str = "relay") -> str:
        return f"trino://{user}@127.0.0.1:{self.port}/{self.catalog}/{schema}"


class _Handler(WarehouseHandler):
    @property
    def trino(self) -> TrinoStub:
        return self.stub

    def do_POST(self) -> None:
        request = self._read()
        if urlsplit(request.path).path != "/v1/statement":
            self.trino._note(request)
            self._json(404, {"message": f"the stub does not serve POST {request.path}"})
            return
        sql = request.raw_body.decode()
        query_id = self.trino._next_id("query")
        self.trino._pages[query_id] = self._answer(request, sql)
        base = f"http://127.0.0.1:{self.trino.port}"
        self._json(
            200,
            {
                "id": query_id,
                "infoUri": f"{base}/ui/query.html?{query_id}",
                "nextUri": f"{base}/v1/statement/executing/{query_id}/1",
                "stats": _stats("QUEUED"),
                "warnings": [],
            },
        )

    def do_GET(self) -> None:
        request = self._read()
        self.trino._note(request)
        match = re.fullmatch(r"/v1/statement/executing/([^/]+)/1", urlsplit(request.path).path)
        page = self.trino._pages.pop(match.group(1), None) if match else None
        if page is None:
            self._json(404, {"message": f"no such query page: {request.path}"})
        else:
            self._json(200, page)

    def do_DELETE(self) -> None:
        self.trino._note(self._read())
        self.close_connection = True
        self.send_response(204)
        self.send_header("content-length", "0")
        self.end_headers()

    def _answer(self, request: Any, sql: str) -> dict[str, Any]:
        """The last page of the statement: its rows, or its error."""
        explain = _EXPLAIN_IO.match(sql)
        session = _SESSION.get(" ".join(sql.lower().rstrip("; \n").split()))
        if explain is not None:
            self.trino._note(request, Statement("estimate", sql))
            plan = json.dumps(_io_plan(self.trino, explain["query"]))
            result: QueryRows | None = QueryRows((("Query Plan", "varchar"),), ((plan,),))
        elif session == "ping":
            self.trino._note(request, Statement("session", sql))
            result = QueryRows((("_col0", "integer"),), ((1,),))
        elif session == "version":
            self.trino._note(request, Statement("session", sql))
            result = QueryRows((("_col0", "varchar"),), ((self.trino.version,),))
        else:
            self.trino._note(request, Statement("query", sql))
            result = self.trino._take()
        query_id = self.trino._next_id("page")
        page: dict[str, Any] = {
            "id": query_id,
            "infoUri": f"http://127.0.0.1:{self.trino.port}/ui/query.html?{query_id}",
            "warnings": [],
        }
        if result is None:
            message = "TrinoStub has no scripted result for this statement"
            return page | {
                "stats": _stats("FAILED"),
                "error": {
                    "message": message,
                    "errorCode": 1,
                    "errorName": "GENERIC_USER_ERROR",
                    "errorType": "USER_ERROR",
                    "failureInfo": {"type": "io.trino.spi.TrinoException", "message": message},
                },
            }
        return page | {
            "columns": [_column(name, kind) for name, kind in result.columns],
            "data": [list(row) for row in result.rows],
            "stats": _stats("FINISHED"),
        }


def _column(name: str, kind: str) -> dict[str, Any]:
    arguments = [{"kind": "LONG", "value": 2147483647}] if kind == "varchar" else []
    return {
        "name": name,
        "type": kind,
        "typeSignature": {"rawType": kind, "arguments": arguments},
    }


def _stats(state: str) -> dict[str, Any]:
    done = state in ("FINISHED", "FAILED")
    return {
        "state": state,
        "queued": state == "QUEUED",
        "scheduled": done,
        "nodes": 1,
        "totalSplits": 0,
        "queuedSplits": 0,
        "runningSplits": 0,
        "completedSplits": 0,
        "cpuTimeMillis": 0,
        "wallTimeMillis": 0,
        "queuedTimeMillis": 0,
        "elapsedTimeMillis": 0,
        "processedRows": 0,
        "processedBytes": 0,
        "physicalInputBytes": 0,
        "peakMemoryBytes": 0,
        "spilledBytes": 0,
    }


def _figure(value: int | None) -> float | str:
    return "NaN" if value is None else float(value)


def _io_plan(stub: TrinoStub, query: str) -> dict[str, Any]:
    tables = []
    for table in stub.named_in(query):
        tables.append(
            {
                "table": {
                    "catalog": stub.catalog,
                    "schemaTable": {"schema": table.schema, "table": table.name},
                },
                "constraint": {"none": False, "columnConstraints": []},
                "estimate": {
                    "outputRowCount": _figure(table.rows),
                    "outputSizeInBytes": _figure(table.bytes),
                    "cpuCost": _figure(table.bytes),
                    "maxMemory": 0.0,
                    "networkCost": 0.0,
                },
            }
        )
    return {
        "inputTableColumnInfos": tables,
        "estimate": {
            "outputRowCount": _figure(stub.output_rows),
            "outputSizeInBytes": "NaN",
            "cpuCost": "NaN",
            "maxMemory": "NaN",
            "networkCost": "NaN",
        },
    }


TrinoStub.handler = _Handler
