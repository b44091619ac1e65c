"""BigQuery: a dry run of the guarded query (BigQuery has no ``EXPLAIN``).

The query is sent as a query job with ``dryRun`` set and the query cache off
(``QueryJobConfig(dry_run=True, use_query_cache=False)``): BigQuery parses, checks and plans
it, prunes partitions, and answers with the bytes the query would process
(``statistics.query.totalBytesProcessed``) — nothing runs, nothing is billed, no job is
kept. With the cache on, a query whose result is cached would say 0 bytes; the estimate is
what running it afresh costs.

The bytes are what on-demand pricing bills: the logical (uncompressed) size of the columns
the query reads, in the partitions it cannot prune. A dry run cannot know what only running
shows — clustering prunes blocks at run time (the estimate is then an upper bound) — and a
LIMIT reads the same columns: it does not lower the bytes. No rows: the dry run gives none.
The billed bytes (``totalBytesBilled``, rounded up to BigQuery's 10 MB minimum per table)
are read when the answer has them, and counted only where they are larger than the bytes
processed.

The job is sent through the ``google.cloud.bigquery.Client`` the connection already holds
(sqlalchemy-bigquery's DB-API connection keeps it as ``_client``, which the dialect's own
reflection uses too), with the dataset and billing project the URL named
(``dialect.create_job_config``).
"""

from __future__ import annotations

from typing import Any

from relay_nb.connectors.preflight import Estimate
from relay_nb.connectors.sql.estimate.common import Planning
from relay_nb.connectors.sql.readonly import open_connection

__all__ = ["estimate"]


def estimate(planning: Planning) -> Estimate:
    from google.api_core.retry import Retry
    from google.cloud.bigquery import QueryJobConfig

    config = QueryJobConfig(dry_run=True, use_query_cache=False)
    dialect: Any = planning.engine.dialect
    configure = getattr(dialect, "create_job_config", None)
    if configure is not None:  # the URL's dataset (unqualified names) and billing project
        config = configure(config)
    with open_connection(planning.engine) as conn:
        client = _client(conn.connection.driver_connection)
        job = client.query(
            planning.sql,
            job_config=config,
            timeout=planning.timeout_s,
            retry=Retry(timeout=planning.timeout_s),
            job_retry=None,
        )
    processed = job.total_bytes_processed
    billed = job.total_bytes_billed
    if processed is None:
        raise ValueError("BigQuery's dry run gave no bytes processed")
    return Estimate(bytes_scanned=max(int(processed), int(billed or 0)), source="BigQuery dry run")


def _client(dbapi_connection: Any) -> Any:
    client = getattr(dbapi_connection, "_client", None)
    if client is None or not hasattr(client, "query"):
        raise TypeError("this BigQuery connection holds no google.cloud.bigquery.Client")
    return client
