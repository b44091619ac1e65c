"""A local Snowflake: the endpoints snowflake-connector-python calls to log in, run a
statement and log out, over plain HTTP.

Connect with the connector's own options: ``snowflake.connector.connect(account=…, user=…,
password=…, host="127.0.0.1", port=stub.port, protocol="http")``, or through
snowflake-sqlalchemy: ``create_engine(stub.url(), connect_args=stub.connect_args)``.

The connector's REST protocol is Snowflake's own (not a public API); its shapes follow
what the open-source connectors send and read (github.com/snowflakedb/snowflake-connector-python,
github.com/snowflakedb/gosnowflake): a ``{"data", "code", "message", "success"}`` envelope.

- ``POST /session/v1/login-request`` — a session token, the session's database, schema,
  warehouse and role;
- ``POST /queries/v1/query-request`` — ``{"sqlText": …}`` answered with a JSON rowset
  (``rowtype``, ``rowset`` of strings, ``queryResultFormat: "json"``):
  ``EXPLAIN USING JSON <query>`` with the one ``content`` column of Snowflake's documented
  plan (https://docs.snowflake.com/en/sql-reference/sql/explain: ``GlobalStats`` with
  ``partitionsTotal``, ``partitionsAssigned``, ``bytesAssigned``, and ``Operations``: a
  ``Result`` and one ``TableScan`` per table the query names, no pruning — the stub does not
  plan); ``SELECT CURRENT_VERSION()``, ``select current_database(), current_schema()``,
  ``SELECT 1``, ``COMMIT``/``ROLLBACK``, ``ALTER SESSION SET autocommit=…`` (the client's
  and SQLAlchemy's own statements);
  any other statement gets the next scripted
  :class:`~relay_nb.testing.warehouse_stubs.common.QueryRows`, or a compilation error;
- ``POST /session?delete=true`` (logout), ``POST /session/heartbeat``,
  ``POST /telemetry/send`` — acknowledged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from relay_nb.testing.warehouse_stubs.common import (
    QueryRows,
    Statement,
    StubTable,
    WarehouseHandler,
    WarehouseStub,
)

__all__ = ["SnowflakeStub"]

_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+USING\s+JSON\s+(?P<query>.*)$", re.I | re.S)
_SESSION = {
    "select current_version()": "version",
    "select current_database(), current_schema()": "where",
    "select 1": "ping",
    "commit": "done",
    "rollback": "done",
    "alter session set autocommit=false": "done",  # SQLAlchemy's isolation level
    "alter session set autocommit=true": "done",
}


class SnowflakeStub(WarehouseStub):
    """One account, one database; its schemas are its tables' schemas."""

    def __init__(
        self,
        tables: Sequence[StubTable] = (),
        *,
        database: str = "ANALYTICS",
        schema: str = "PUBLIC",
        warehouse: str = "RELAY_XS",
        version: str = "9.12.0",
    ) -> None:
        super().__init__(tables)
        self.database, self.schema = database, schema
        self.warehouse, self.version = warehouse, version

    def url(self, user: str = "relay", password: str = "stub-password") -> str:
        """A snowflake-sqlalchemy URL for this stub's account (with :attr:`connect_args`)."""
        return (
            f"snowflake://{user}:{password}@stubaccount/{self.database}/{self.schema}"
            f"?warehouse={self.warehouse}"
        )

    @property
    def connect_args(self) -> dict[str, Any]:
        """Where the connector finds the stub: snowflake-sqlalchemy takes the host only from
        ``create_engine(url, connect_args=…)``, never from the URL."""
        return {"host": "127.0.0.1", "port": self.port, "protocol": "http"}


class _Handler(WarehouseHandler):
    @property
    def sf(self) -> SnowflakeStub:
        return self.stub

    def do_POST(self) -> None:
        request = self._read()
        path = urlsplit(request.path).path
        if path == "/session/v1/login-request":
            self.sf._note(request)
            query = parse_qs(urlsplit(request.path).query)
            self._ok(
                {
                    "token": "stub-session-token",
                    "masterToken": "stub-master-token",
                    "validityInSeconds": 3600,
                    "masterValidityInSeconds": 14400,
                    "sessionId": 1,
                    "parameters": [],
                    "sessionInfo": {
                        "databaseName": (query.get("databaseName") or [self.sf.database])[0],
                        "schemaName": (query.get("schemaName") or [self.sf.schema])[0],
                        "warehouseName": (query.get("warehouse") or [self.sf.warehouse])[0],
                        "roleName": (query.get("roleName") or ["PUBLIC"])[0] or "PUBLIC",
                    },
                }
            )
        elif path == "/queries/v1/query-request":
            self._statement(request)
        elif path in ("/session", "/session/heartbeat", "/telemetry/send"):
            self.sf._note(request)
            self._ok(None)
        else:
            self.sf._note(request)
            self._json(
                404, {"data": None, "code": "404", "message": "not served", "success": False}
            )

    def _statement(self, request: Any) -> None:
        sql = str(request.body.get("sqlText", ""))
        explain = _EXPLAIN.match(sql)
        session = _SESSION.get(" ".join(sql.lower().rstrip("; \n").split()))
        if explain is not None:
            self.sf._note(request, Statement("estimate", sql))
            plan = _plan(self.sf, explain["query"])
            self._rows(QueryRows((("content", "text"),), ((json.dumps(plan),),)))
        elif session is not None:
            self.sf._note(request, Statement("session", sql))
            if session == "version":
                self._rows(QueryRows((("CURRENT_VERSION()", "text"),), ((self.sf.version,),)))
            elif session == "where":
                columns = (("CURRENT_DATABASE()", "text"), ("CURRENT_SCHEMA()", "text"))
                self._rows(QueryRows(columns, ((self.sf.database, self.sf.schema),)))
            elif session == "ping":
                self._rows(QueryRows((("1", "fixed"),), ((1,),)))
            else:
                self._rows(
                    QueryRows((("status", "text"),), (("Statement executed successfully.",),))
                )
        else:
            self.sf._note(request, Statement("query", sql))
            result = self.sf._take()
            if result is None:
                self._json(
                    200,
                    {
                        "data": {"errorCode": "002003", "sqlState": "02000"},
                        "code": "002003",
                        "message": "SQL compilation error: SnowflakeStub has no result for it",
                        "success": False,
                    },
                )
            else:
                self._rows(result)

    def _rows(self, result: QueryRows) -> None:
        self._ok(
            {
                "queryId": self.sf._next_id("query"),
                "rowtype": [_column(name, kind) for name, kind in result.columns],
                "rowset": [[None if v is None else str(v) for v in row] for row in result.rows],
                "total": len(result.rows),
                "returned": len(result.rows),
                "queryResultFormat": "json",
                "parameters": [],
                "finalDatabaseName": self.sf.database,
                "finalSchemaName": self.sf.schema,
                "finalWarehouseName": self.sf.warehouse,
                "statementTypeId": 4096,
            }
        )

    def _ok(self, data: Any) -> None:
        self._json(200, {"data": data, "code": None, "message": None, "success": True})


def _column(name: str, kind: str) -> dict[str, Any]:
    fixed = kind == "fixed"
    return {
        "name": name,
        "type": kind,
        "nullable": True,
        "length": None if fixed else 16777216,
        "byteLength": None if fixed else 16777216,
        "precision": 38 if fixed else None,
        "scale": 0 if fixed else None,
        "database": "",
        "schema": "",
        "table": "",
    }


def _plan(stub: SnowflakeStub, query: str) -> dict[str, Any]:
    """Snowflake's ``EXPLAIN USING JSON`` shape for the tables ``query`` names."""
    named = stub.named_in(query)
    operations: list[dict[str, Any]] = [
        {"id": 0, "operation": "Result", "expressions": [c for t in named for c, _ in t.columns]}
    ]
    for index, table in enumerate(named, start=1):
        operations.append(
            {
                "id": index,
                "parentOperators": [0],
                "operation": "TableScan",
                "objects": [f"{stub.database}.{table.schema}.{table.name}".upper()],
                "expressions": [name.upper() for name, _ in table.columns],
                "partitionsAssigned": table.partitions,
                "partitionsTotal": table.partitions,
                "bytesAssigned": table.bytes or 0,
            }
        )
    return {
        "GlobalStats": {
            "partitionsTotal": sum(t.partitions for t in named),
            "partitionsAssigned": sum(t.partitions for t in named),
            "bytesAssigned": sum(t.bytes or 0 for t in named),
        },
        "Operations": [operations],
    }


SnowflakeStub.handler = _Handler
