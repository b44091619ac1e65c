"""Local stand-ins for the warehouses people pay per byte or second, speaking each vendor's
wire protocol to its own client library: BigQuery's REST API (google-cloud-bigquery),
Snowflake's login and query endpoints (snowflake-connector-python), Trino's client protocol
(trino). Each holds a few :class:`StubTable` s, answers a plan or a dry run from them, runs
nothing but scripted :class:`QueryRows`, and records every statement it received.

    with TrinoStub([StubTable("shop", "orders", rows=1_000_000, bytes=8_000_000)]) as stub:
        engine = sqlalchemy.create_engine(stub.url("shop"))
        ...
        assert stub.estimates == ["EXPLAIN (TYPE IO, FORMAT JSON) SELECT …"]
        assert stub.queries == []
"""

from relay_nb.testing.warehouse_stubs.bigquery import BigQueryStub
from relay_nb.testing.warehouse_stubs.common import QueryRows, Statement, StubTable
from relay_nb.testing.warehouse_stubs.snowflake import SnowflakeStub
from relay_nb.testing.warehouse_stubs.trino import TrinoStub

__all__ = ["BigQueryStub", "QueryRows", "SnowflakeStub", "Statement", "StubTable", "TrinoStub"]
