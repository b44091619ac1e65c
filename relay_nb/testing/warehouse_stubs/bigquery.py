"""A local BigQuery: the REST v2 API's few methods the official client calls for a dry run,
a query, and sqlalchemy-bigquery's catalog reads.

Point ``google.cloud.bigquery.Client`` at it with
``client_options={"api_endpoint": stub.endpoint}`` and
``credentials=google.auth.credentials.AnonymousCredentials()``; through SQLAlchemy, pass that
client: ``create_engine("bigquery://PROJECT/DATASET?user_supplied_client=True",
connect_args={"client": client})``.

Served (request and response shapes from the REST reference,
https://cloud.google.com/bigquery/docs/reference/rest/v2):

- ``POST /bigquery/v2/projects/{p}/jobs`` — jobs.insert
  (https://cloud.google.com/bigquery/docs/reference/rest/v2/jobs/insert) of a query job with
  ``configuration.dryRun``: the Job resource
  (https://cloud.google.com/bigquery/docs/reference/rest/v2/Job) with ``status.state`` DONE and
  ``statistics.totalBytesProcessed`` / ``statistics.query.totalBytesProcessed`` (JobStatistics2)
  — the sum of ``numBytes`` of the tables the query names (BigQuery's own figure counts only
  the columns read and the partitions kept; the stub does not plan). With
  ``bill_minimum=True`` it adds ``statistics.query.totalBytesBilled``: the bytes rounded up to
  BigQuery's on-demand minimum of 10 MB per table
  (https://cloud.google.com/bigquery/pricing#on_demand_pricing). A job that is not a dry run
  is refused: the client runs queries through jobs.query.
- ``POST /bigquery/v2/projects/{p}/queries`` — jobs.query
  (https://cloud.google.com/bigquery/docs/reference/rest/v2/jobs/query): the next scripted
  :class:`~relay_nb.testing.warehouse_stubs.common.QueryRows` as a QueryResponse
  (``schema``, ``rows`` of ``{"f": [{"v": …}]}``, ``jobComplete``).
- ``GET …/datasets``, ``GET …/datasets/{d}/tables``, ``GET …/datasets/{d}/tables/{t}`` —
  datasets.list, tables.list, tables.get (the Table resource: ``schema.fields``,
  ``numBytes``, ``numRows``, ``type``).

Errors are the API's error body (``{"error": {"code", "message", "status"}}``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

from relay_nb.testing.warehouse_stubs.common import (
    Statement,
    StubTable,
    WarehouseHandler,
    WarehouseStub,
)

__all__ = ["BigQueryStub"]

_PREFIX = "/bigquery/v2/projects/"
_BILLING_MINIMUM = 10 * 2**20
"""On-demand pricing's minimum per table referenced (10 MB, billed in MiB)."""


class BigQueryStub(WarehouseStub):
    """BigQuery's REST API for one project; its datasets are its tables' schemas."""

    def __init__(
        self,
        tables: Sequence[StubTable] = (),
        *,
        project: str = "relay-stub",
        location: str = "US",
        bill_minimum: bool = False,
    ) -> None:
        super().__init__(tables)
        self.project = project
        self.location = location
        self.bill_minimum = bill_minimum

    @property
    def endpoint(self) -> str:
        """The client's ``api_endpoint``."""
        return f"http://127.0.0.1:{self.port}"


class _Handler(WarehouseHandler):
    @property
    def bq(self) -> BigQueryStub:
        return self.stub

    def do_POST(self) -> None:
        request = self._read()
        path = request.path.split("?", 1)[0]
        match = re.fullmatch(rf"{_PREFIX}([^/]+)/(jobs|queries)", path)
        if match is None:
            self.bq._note(request)
            self._error(404, f"the stub does not serve POST {path}", "NOT_FOUND")
            return
        project, method = match.groups()
        if method == "jobs":
            self._insert(request, project)
        else:
            self._query(request, project)

    def do_GET(self) -> None:
        request = self._read()
        self.bq._note(request)
        parts = request.path.split("?", 1)[0].removeprefix(_PREFIX).split("/")
        if len(parts) == 2 and parts[1] == "datasets":
            datasets = sorted({table.schema for table in self.bq.tables})
            self._json(
                200,
                {
                    "kind": "bigquery#datasetList",
                    "datasets": [
                        {
                            "kind": "bigquery#dataset",
                            "id": f"{parts[0]}:{name}",
                            "datasetReference": {"projectId": parts[0], "datasetId": name},
                            "location": self.bq.location,
                        }
                        for name in datasets
                    ],
                },
            )
        elif len(parts) == 4 and parts[1] == "datasets" and parts[3] == "tables":
            tables = [t for t in self.bq.tables if t.schema == parts[2]]
            self._json(
                200,
                {
                    "kind": "bigquery#tableList",
                    "tables": [self._table(parts[0], t, full=False) for t in tables],
                    "totalItems": len(tables),
                },
            )
        elif len(parts) == 5 and parts[1] == "datasets" and parts[3] == "tables":
            table = self.bq.table(parts[2], parts[4])
            if table is None:
                self._error(404, f"Not found: Table {parts[0]}:{parts[2]}.{parts[4]}", "NOT_FOUND")
            else:
                self._json(200, self._table(parts[0], table, full=True))
        else:
            self._error(404, f"the stub does not serve GET {request.path}", "NOT_FOUND")

    # -- jobs ------------------------------------------------------------------------------

    def _insert(self, request: Any, project: str) -> None:
        body = request.body
        configuration = body.get("configuration") or {}
        sql = str((configuration.get("query") or {}).get("query", ""))
        dry_run = configuration.get("dryRun") is True
        kind = "estimate" if dry_run else "query"
        self.bq._note(request, Statement(kind, sql, dry_run=dry_run))
        if not dry_run:
            self._error(400, "the stub runs queries through jobs.query only", "INVALID_ARGUMENT")
            return
        named = self.bq.named_in(sql)
        processed = sum(table.bytes or 0 for table in named)
        query_stats: dict[str, Any] = {
            "totalBytesProcessed": str(processed),
            "totalBytesProcessedAccuracy": "PRECISE",
            "cacheHit": False,
            "statementType": "SELECT",
            "referencedTables": [
                {"projectId": project, "datasetId": t.schema, "tableId": t.name} for t in named
            ],
        }
        if self.bq.bill_minimum:
            query_stats["totalBytesBilled"] = str(
                sum(max(_BILLING_MINIMUM, -(-(t.bytes or 0) // 2**20) * 2**20) for t in named)
            )
        reference = dict(body.get("jobReference") or {})
        reference.setdefault("projectId", project)
        reference["location"] = self.bq.location
        self._json(
            200,
            {
                "kind": "bigquery#job",
                "id": f"{project}:{self.bq.location}.{reference.get('jobId', '')}",
                "jobReference": reference,
                "configuration": {**configuration, "jobType": "QUERY"},
                "status": {"state": "DONE"},
                "statistics": {
                    "creationTime": str(int(time.time() * 1000)),
                    "totalBytesProcessed": str(processed),
                    "query": query_stats,
                },
            },
        )

    def _query(self, request: Any, project: str) -> None:
        sql = str(request.body.get("query", ""))
        self.bq._note(request, Statement("query", sql))
        result = self.bq._take()
        if result is None:
            self._error(500, "BigQueryStub has no scripted query result left", "INTERNAL")
            return
        job_id = self.bq._next_id("job")
        self._json(
            200,
            {
                "kind": "bigquery#queryResponse",
                "schema": {
                    "fields": [
                        {"name": name, "type": kind, "mode": "NULLABLE"}
                        for name, kind in result.columns
                    ]
                },
                "jobReference": {
                    "projectId": project,
                    "jobId": job_id,
                    "location": self.bq.location,
                },
                "totalRows": str(len(result.rows)),
                "rows": [
                    {"f": [{"v": None if value is None else str(value)} for value in row]}
                    for row in result.rows
                ],
                "totalBytesProcessed": "0",
                "jobComplete": True,
                "cacheHit": False,
            },
        )

    # -- shapes ----------------------------------------------------------------------------

    def _table(self, project: str, table: StubTable, *, full: bool) -> dict[str, Any]:
        resource: dict[str, Any] = {
            "kind": "bigquery#table",
            "id": f"{project}:{table.schema}.{table.name}",
            "tableReference": {
                "projectId": project,
                "datasetId": table.schema,
                "tableId": table.name,
            },
            "type": "TABLE",
        }
        if full:
            resource |= {
                "schema": {
                    "fields": [
                        {"name": name, "type": kind, "mode": "NULLABLE"}
                        for name, kind in table.columns
                    ]
                },
                "numBytes": str(table.bytes or 0),
                "numRows": str(table.rows or 0),
                "location": self.bq.location,
            }
            if table.description is not None:
                resource["description"] = table.description
        return resource

    def _error(self, code: int, message: str, status: str) -> None:
        self._json(
            code,
            {
                "error": {
                    "code": code,
                    "message": message,
                    "status": status,
                    "errors": [{"message": message, "domain": "global", "reason": "invalid"}],
                }
            },
        )


BigQueryStub.handler = _Handler
