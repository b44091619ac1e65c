"""The cost preflight on the warehouses people pay per byte or second.

BigQuery, Snowflake and Trino: their own client libraries (google-cloud-bigquery with
sqlalchemy-bigquery, snowflake-connector-python with snowflake-sqlalchemy, trino) against
local stubs of their wire protocols (:mod:`relay_nb.testing.warehouse_stubs`), which record
every statement: the estimate must carry the guarded SQL, and nothing may run before the
analyst approves. BigQuery goes through the whole SQL connector and the agent loop (its
stub also serves the catalog); Snowflake and Trino through the estimator and the approval
gate the connector calls (their SQLAlchemy catalogs are read with statements the stubs do
not answer). ClickHouse: a real embedded ClickHouse (chdb) with millions of rows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from relay_nb.agent.approval import ApprovalRequest
from relay_nb.agent.loop import TurnResult, run_turn
from relay_nb.agent.services import TurnServices
from relay_nb.connectors.preflight import Estimate, Preflight, approve_if_costly, cost_line
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.connectors.sql.estimate import FIGURES, estimate_query
from relay_nb.connectors.sql.readonly import build_engine
from relay_nb.errors import ConfigurationError, UnsafeQueryError
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.sql import GuardedQuery, guard_query
from relay_nb.testing.warehouse_stubs import (
    BigQueryStub,
    QueryRows,
    SnowflakeStub,
    StubTable,
    TrinoStub,
)

ORDERS = StubTable(
    "shop",
    "orders",
    (("id", "INT64"), ("status", "STRING"), ("total", "NUMERIC")),
    rows=40_000_000,
    bytes=3_200_000_000,
    partitions=400,
)
CUSTOMERS = StubTable("shop", "customers", (("id", "INT64"), ("name", "STRING")), 5_000, 90_000)
UNANALYZED = StubTable("shop", "events", (("id", "INT64"),), rows=None, bytes=None)
TABLES = [ORDERS, CUSTOMERS, UNANALYZED]

BIG = "SELECT status, SUM(total) AS revenue FROM orders GROUP BY status"
SMALL = "SELECT name FROM customers WHERE id < 10"


def guarded(sql: str, dialect: str, schema: str = "shop") -> GuardedQuery:
    """What the connector's guard makes of ``sql`` (the stubs' tables allowed)."""
    return guard_query(
        sql,
        dialect=dialect,
        allowed_tables=[(schema, t.name) for t in TABLES],
        default_schema=schema,
        row_limit=201,
    )


def estimate(engine: sa.Engine, query: GuardedQuery) -> Estimate | None:
    return estimate_query(engine, query.sql, limit=query.limit, timeout_s=10, search_path=None)


def gate(preflight: Preflight, found: Estimate | None):
    """The approval gate every query tool calls; outside a turn nobody approves."""
    return asyncio.run(approve_if_costly(preflight, found, connector_id="wh"))


def turn_of(connector: SQLConnector, approver, *queries: str) -> TurnResult:
    calls = [{"tool_calls": [{"name": "query_bq", "input": {"sql": q}}]} for q in queries]
    runtime = ScriptedRuntime([*calls, {"text": "done"}])
    services = TurnServices(runtime=runtime, tools=connector.tools(), approver=approver)
    return asyncio.run(run_turn("q", services))


# -- BigQuery: a dry run, through the whole connector ---------------------------------------------


@pytest.fixture
def bigquery() -> Iterator[tuple[BigQueryStub, sa.Engine]]:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import bigquery as bq

    with BigQueryStub(TABLES) as stub:
        client = bq.Client(
            project=stub.project,
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": stub.endpoint},
        )
        engine = sa.create_engine(
            f"bigquery://{stub.project}/shop?user_supplied_client=True",
            connect_args={"client": client, "prefer_bqstorage_client": False},
        )
        try:
            yield stub, engine
        finally:
            engine.dispose()
            client.close()


def test_bigquery_dry_runs_the_guarded_query_and_runs_nothing_before_approval(bigquery) -> None:
    stub, engine = bigquery
    connector = SQLConnector("bq", engine, approve_above="1GB", price_per_tb=6.25, profile=False)
    asked: list[ApprovalRequest] = []

    def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    try:
        big, small = connector.guard(BIG).sql, connector.guard(SMALL).sql
        stub.enqueue(QueryRows((("name", "STRING"),), (("Ada",), ("Grace",))))
        result = turn_of(connector, deny, BIG, SMALL)
        refused, ran = result.tool_results
        assert refused.failure == "denied" and "above the 1 GB" in refused.content
        # before each query ran, its step showed one line with both costs
        kinds = [e.type for e in result.events if e.type in ("tool_status", "tool_result")]
        assert kinds == ["tool_status", "tool_result", "tool_status", "tool_result"]
        first = next(e.status for e in result.events if e.type == "tool_status")
        assert first == "model cost unknown · ≈ 3.2 GB scanned (≈ $0.02 at your price)"
        (request,) = asked  # the small query ran without asking
        assert "3.2 GB scanned" in request.reason and "(BigQuery dry run)" in request.reason
        assert not ran.is_error and list(ran.artifact.df["name"]) == ["Ada", "Grace"]
        assert ran.artifact.estimate.bytes_scanned == CUSTOMERS.bytes
        # the warehouse saw two dry runs of the guarded SQL, and ran the small query only
        assert [(s.kind, s.sql, s.dry_run) for s in stub.statements] == [
            ("estimate", big, True),
            ("estimate", small, True),
            ("query", small, False),
        ]
        dry_run = next(r.body for r in stub.requests if r.body.get("configuration"))
        assert dry_run["configuration"]["dryRun"] is True
        assert dry_run["configuration"]["query"]["useQueryCache"] is False
        assert dry_run["configuration"]["query"]["defaultDataset"]["datasetId"] == "shop"

        stub.enqueue(QueryRows((("status", "STRING"), ("revenue", "NUMERIC")), (("paid", 9),)))
        approved = turn_of(connector, lambda request: True, BIG)
        (outcome,) = approved.tool_results
        assert not outcome.is_error and outcome.artifact.estimate.dollars == pytest.approx(
            3.2e9 / 1e12 * 6.25
        )
        assert stub.queries == [small, big]  # run after its dry run, once approved
    finally:
        connector.close()


def test_bigquery_names_as_analysts_write_them(bigquery) -> None:
    """Through sqlalchemy-bigquery and Google's client: the URL's dataset is the default one
    (the dialect reports none), the project is the connection's catalog, so the project,
    the dataset or neither may be written; another project is refused; a wildcard reads the
    dataset read whole."""
    stub, engine = bigquery
    connector = SQLConnector("bq", engine, profile=False)
    try:
        catalog = connector.catalog
        assert (catalog.database, catalog.default_schema) == (stub.project, "shop")
        assert catalog.complete_schemas == ("shop",)
        for sql in (
            "SELECT id FROM orders",
            "SELECT id FROM shop.orders",
            f"SELECT id FROM `{stub.project}.shop.orders`",
            f"SELECT id FROM `{stub.project}`.shop.orders",
            "SELECT id FROM `shop.*` WHERE _TABLE_SUFFIX = 'orders'",
        ):
            assert connector.guard(sql).tables in (("shop.orders",), ("shop.*",)), sql
        with pytest.raises(UnsafeQueryError, match=r"other-project\.shop\.orders is not a table"):
            connector.guard("SELECT id FROM `other-project.shop.orders`")
    finally:
        connector.close()


def test_bigquery_counts_the_billed_bytes_when_they_are_more(bigquery) -> None:
    stub, engine = bigquery
    stub.bill_minimum = True  # the on-demand minimum: 10 MB per table referenced
    small = estimate(engine, guarded(SMALL, "bigquery"))
    assert small is not None and small.bytes_scanned == 10 * 2**20
    assert small.rows_scanned is None and small.source == "BigQuery dry run"


def test_bigquery_gives_bytes_so_a_row_threshold_is_refused(bigquery) -> None:
    _, engine = bigquery
    assert FIGURES["bigquery"] == {"bytes"}
    with pytest.raises(ConfigurationError, match="gives bytes, not rows: use approve_above"):
        SQLConnector("bq", engine, approve_above_rows=1_000_000)


# -- Snowflake: EXPLAIN USING JSON -----------------------------------------------------------------


@pytest.fixture
def snowflake() -> Iterator[tuple[SnowflakeStub, sa.Engine]]:
    with SnowflakeStub(TABLES, schema="SHOP") as stub:
        engine = sa.create_engine(stub.url(), connect_args=stub.connect_args)
        try:
            yield stub, engine
        finally:
            engine.dispose()


def test_snowflake_reads_the_bytes_of_the_partitions_left_and_runs_nothing(snowflake) -> None:
    stub, engine = snowflake
    query = guarded(BIG, "snowflake")
    found = estimate(engine, query)
    assert found is not None and found.bytes_scanned == ORDERS.bytes
    assert found.rows_scanned is None and found.result_rows is None  # Snowflake gives none
    assert found.source == "Snowflake EXPLAIN, 400 of 400 partitions"

    preflight = Preflight.from_options(None, "1GB", None, 2.0)
    priced = preflight.priced(found)
    assert priced.dollars == pytest.approx(ORDERS.bytes / 1e12 * 2.0)
    refused = gate(preflight, priced)
    assert refused is not None and "nobody was there to approve it" in refused.content
    assert stub.estimates == [f"EXPLAIN USING JSON {query.sql}"]
    assert stub.queries == []  # the login, the session's own statements, the EXPLAIN: no query
    assert {s.kind for s in stub.statements} == {"session", "estimate"}

    small = estimate(engine, guarded(SMALL, "snowflake"))
    assert small is not None and small.bytes_scanned == CUSTOMERS.bytes
    assert gate(preflight, small) is None  # under the threshold: it may run


def test_the_line_before_a_query_reads_the_same_on_every_warehouse(snowflake, trino) -> None:
    """The line's scan part from each warehouse's own estimate (the model part comes from
    the turn; BigQuery's and ClickHouse's whole line is checked in a turn)."""
    priced = Preflight.from_options(None, "1GB", None, 6.25)
    _, sf_engine = snowflake
    _, trino_engine = trino
    lines = {
        name: cost_line(priced.priced(estimate(engine, guarded(BIG, dialect))), None)
        for name, engine, dialect in (
            ("snowflake", sf_engine, "snowflake"),
            ("trino", trino_engine, "trino"),
        )
    }
    assert lines["snowflake"].startswith("≈ ") and "GB scanned (≈ $" in lines["snowflake"]
    assert lines["trino"].startswith("≈ ") and "scanned (≈ $" in lines["trino"]
    assert all("at your price)" in line for line in lines.values())


def test_snowflake_gives_bytes_so_only_a_byte_threshold_is_taken(snowflake) -> None:
    _, engine = snowflake
    SQLConnector("wh", engine, approve_above="1GB").close()
    with pytest.raises(ConfigurationError, match="gives bytes, not rows: use approve_above"):
        SQLConnector("wh", engine, approve_above_rows=1_000_000)


# -- Trino: EXPLAIN (TYPE IO, FORMAT JSON) ---------------------------------------------------------


@pytest.fixture
def trino() -> Iterator[tuple[TrinoStub, sa.Engine]]:
    with TrinoStub(TABLES, output_rows=4) as stub:
        engine = build_engine(stub.url("shop"))
        try:
            yield stub, engine
        finally:
            engine.dispose()


def test_trino_sums_the_table_scans_estimates_and_runs_nothing(trino) -> None:
    stub, engine = trino
    query = guarded(BIG, "trino")
    found = estimate(engine, query)
    assert found is not None and found.source == "Trino EXPLAIN (TYPE IO)"
    assert (found.rows_scanned, found.bytes_scanned, found.result_rows) == (
        ORDERS.rows,
        ORDERS.bytes,
        4,
    )
    both = estimate(engine, guarded(f"{BIG} UNION ALL SELECT name, 0 FROM customers", "trino"))
    assert both is not None and both.rows_scanned == (ORDERS.rows or 0) + (CUSTOMERS.rows or 0)

    refused = gate(Preflight.from_options(None, None, 1_000_000, None), found)
    assert refused is not None and refused.failure == "denied"
    assert stub.estimates[0] == f"EXPLAIN (TYPE IO, FORMAT JSON) {query.sql}"
    assert stub.queries == []
    assert (
        gate(
            Preflight.from_options(None, "1GB", 1_000_000, None),
            estimate(engine, guarded(SMALL, "trino")),
        )
        is None
    )


def test_trino_without_table_statistics_has_no_figure_and_the_gate_asks(trino) -> None:
    stub, engine = trino
    found = estimate(engine, guarded("SELECT id FROM events", "trino"))
    assert found is not None and found.rows_scanned is None and found.bytes_scanned is None
    refused = gate(Preflight.from_options(None, "1GB", None, None), found)
    assert refused is not None and "without the figure" in refused.content
    assert stub.queries == []


def test_trino_takes_either_threshold(trino) -> None:
    _, engine = trino
    assert FIGURES["trino"] == {"rows", "bytes"}
    SQLConnector("lake", engine, approve_above="1GB", approve_above_rows=10**6).close()


# -- ClickHouse: EXPLAIN ESTIMATE on a real embedded ClickHouse ------------------------------------

EVENTS_ROWS = 5_000_000


@pytest.fixture(scope="module")
def clickhouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sa.Engine]:
    """chdb with ``shop.events`` (5M rows, ordered by ``id``) and a Memory table. One embedded
    server per process: the engine is disposed before another module opens its own."""
    pytest.importorskip("chdb_sqlalchemy")
    path: Path = tmp_path_factory.mktemp("chdb")
    engine = build_engine(f"chdb:///{path}")
    try:
        with engine.connect() as conn:
            for statement in (
                "CREATE DATABASE shop",
                "CREATE TABLE shop.events (id Int64, kind String, amount Float64) "
                "ENGINE = MergeTree ORDER BY id",
                "INSERT INTO shop.events SELECT number, toString(number % 7), number / 3 "
                f"FROM numbers({EVENTS_ROWS})",
                "OPTIMIZE TABLE shop.events FINAL",
                "CREATE TABLE shop.notes (id Int64) ENGINE = Memory",
                "INSERT INTO shop.notes SELECT number FROM numbers(10)",
            ):
                conn.exec_driver_sql(statement)
        yield engine
    finally:
        engine.dispose()


def clickhouse_guarded(sql: str) -> GuardedQuery:
    return guard_query(
        sql,
        dialect="clickhouse",
        allowed_tables=[("shop", "events"), ("shop", "notes")],
        default_schema="shop",
        row_limit=201,
    )


def part_bytes(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(
            conn.exec_driver_sql(
                "SELECT sum(data_compressed_bytes) FROM system.parts "
                "WHERE active AND database = 'shop' AND table = 'events'"
            ).scalar()
        )


def test_clickhouse_estimates_the_granules_left_to_read(clickhouse) -> None:
    whole = estimate(
        clickhouse, clickhouse_guarded("SELECT kind, sum(amount) FROM shop.events GROUP BY kind")
    )
    assert whole is not None and whole.source == "ClickHouse EXPLAIN ESTIMATE"
    assert whole.rows_scanned == EVENTS_ROWS  # every granule: no filter
    assert whole.bytes_scanned == pytest.approx(part_bytes(clickhouse), rel=0.01)
    assert whole.result_rows is None

    # a filter on the ORDER BY key reads its granules only (8192 rows each)
    keyed = estimate(clickhouse, clickhouse_guarded("SELECT * FROM shop.events WHERE id < 100000"))
    assert keyed is not None and 100_000 <= keyed.rows_scanned <= 100_000 + 2 * 8192
    assert keyed.bytes_scanned < whole.bytes_scanned / 20
    # a filter on another column cannot skip a granule
    other = estimate(clickhouse, clickhouse_guarded("SELECT * FROM shop.events WHERE kind = '3'"))
    assert other is not None and other.rows_scanned == EVENTS_ROWS
    # a trivial count is answered from the parts' metadata: nothing to read
    counted = estimate(clickhouse, clickhouse_guarded("SELECT count() FROM shop.events"))
    assert counted is not None and (counted.rows_scanned, counted.bytes_scanned) == (0, 0)

    rows_gate = Preflight.from_options(None, None, 1_000_000, None)
    assert gate(rows_gate, whole) is not None
    assert gate(rows_gate, keyed) is None


def test_clickhouse_says_nothing_for_a_table_explain_estimate_cannot_see(clickhouse) -> None:
    found = estimate(
        clickhouse,
        clickhouse_guarded("SELECT e.id FROM shop.events AS e JOIN shop.notes AS n ON e.id = n.id"),
    )
    assert found is not None and (found.rows_scanned, found.bytes_scanned) == (None, None)
    assert "not counting ReadFromMemoryStorage" in found.source
    refused = gate(Preflight.from_options(None, "1GB", None, None), found)
    assert refused is not None and "without the figure" in refused.content
