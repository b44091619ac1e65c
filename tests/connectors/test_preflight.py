"""The cost preflight: the engine's estimate before a model's query runs, and the analyst's
approval above the connector's threshold — real PostgreSQL and DuckDB, the real agent loop
with a scripted model (Spark's is in tests/connectors/spark)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa

from relay_nb.agent.approval import ApprovalRequest
from relay_nb.agent.loop import TurnResult, run_turn
from relay_nb.agent.services import TurnServices
from relay_nb.connectors.preflight import Estimate, Preflight, approve_if_costly, parse_bytes
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import ConfigurationError
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.tools import ask_approval
from relay_nb.views.model import status_of

BIG = "SELECT product_id, SUM(quantity) AS sold FROM order_items GROUP BY product_id"
SMALL = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status"


def turn_of(connector: SQLConnector, approver, *queries: str) -> TurnResult:
    calls = [{"tool_calls": [{"name": "query_shop", "input": {"sql": q}}]} for q in queries]
    runtime = ScriptedRuntime([*calls, {"text": "done"}])
    return asyncio.run(
        run_turn("q", TurnServices(runtime=runtime, tools=connector.tools(), approver=approver))
    )


def relation_bytes(admin_url: str, table: str) -> int:
    engine = sa.create_engine(admin_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text(f"SELECT pg_relation_size('{table}')")).scalar())
    finally:
        engine.dispose()


# -- settings ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "size"),
    [("500MB", 500 * 10**6), ("1.5 GB", 1_500_000_000), ("2GiB", 2 * 2**30), (10_000, 10_000),
     ("1tb", 10**12)],
)  # fmt: skip
def test_sizes_are_written_as_people_write_them(written, size) -> None:
    assert parse_bytes(written) == size


@pytest.mark.parametrize("bad", ["ten GB", "5 parsecs", -1, 0, True, "nan", float("inf")])
def test_a_bad_size_says_how_to_write_one(bad) -> None:
    with pytest.raises(ConfigurationError, match="approve_above"):
        parse_bytes(bad)


def test_options_turn_the_preflight_on_and_are_checked() -> None:
    assert not Preflight.from_options(None, None, None, None).enabled
    assert Preflight.from_options(None, None, None, None, default=True).enabled
    assert Preflight.from_options(None, "1GB", None, None).enabled
    assert Preflight.from_options(None, None, None, 6.25).enabled
    with pytest.raises(ConfigurationError, match="drop preflight=False"):
        Preflight.from_options(False, "1GB", None, None)
    with pytest.raises(ConfigurationError, match="approve_above_rows"):
        Preflight.from_options(None, None, 0, None)
    with pytest.raises(ConfigurationError, match="price_per_tb"):
        Preflight.from_options(None, None, None, -2)


def test_the_estimate_is_priced_and_compared_with_each_threshold() -> None:
    settings = Preflight.from_options(None, "1GB", 1_000_000, 6.25)
    estimate = settings.priced(Estimate(rows_scanned=2_000_000, bytes_scanned=4 * 10**12))
    assert estimate.dollars == pytest.approx(25.0)
    assert settings.over(estimate) == "1 GB and 1M rows"
    assert settings.over(Estimate(rows_scanned=10, bytes_scanned=10)) is None
    assert settings.over(Estimate()) is None  # an engine that says nothing is not stopped
    assert estimate.summary() == "≈ 2M rows, 4 TB scanned, ≈ $25.00"


def test_an_engine_without_an_estimate_refuses_the_options(sqlite_shop: Path) -> None:
    with pytest.raises(ConfigurationError, match="PostgreSQL, DuckDB, BigQuery, Snowflake, Trino"):
        SQLConnector("shop", f"sqlite:///{sqlite_shop}", approve_above="1GB")


async def test_outside_a_turn_nobody_approves() -> None:
    approved, why = await ask_approval("a big scan")
    assert not approved and "no turn" in why


async def test_the_gate_fails_closed_without_a_figure_to_compare() -> None:
    gated = Preflight.from_options(None, "1GB", None, None)
    for estimate, said in [
        (None, "not estimated"),
        (Estimate(rows_scanned=10, source="Spark's optimized plan"), "without the figure"),
    ]:
        refused = await approve_if_costly(gated, estimate, connector_id="lake")
        assert refused is not None and refused.failure == "denied", said
        assert said in refused.content and "nobody was there to approve it" in refused.content
    shown_only = Preflight.from_options(True, None, None, None)
    assert await approve_if_costly(shown_only, None, connector_id="lake") is None


def test_a_threshold_on_a_figure_the_engine_never_gives_is_refused(duckdb_shop: Path) -> None:
    with pytest.raises(ConfigurationError, match="gives rows, not bytes: use approve_above_rows"):
        SQLConnector("shop", f"duckdb:///{duckdb_shop}", approve_above="1GB")


def test_spark_s_size_for_a_table_without_statistics_is_no_estimate() -> None:
    from relay_nb.connectors.spark.plan import read_cost_plan

    plan = (
        "== Optimized Logical Plan ==\n"
        "GlobalLimit 201, Statistics(sizeInBytes=8.0 EiB)\n"
        "+- Relation spark_catalog.lake.events[id#1L] parquet, Statistics(sizeInBytes=8.0 EiB)\n"
    )
    estimate = read_cost_plan(plan)
    assert estimate is not None and estimate.bytes_scanned is None


# -- PostgreSQL ----------------------------------------------------------------------------------


def test_postgres_estimates_a_sequential_scan_as_the_whole_table(pg_urls) -> None:
    connector = SQLConnector("shop", pg_urls.ro, preflight=True, price_per_tb=5.0)
    try:
        estimate = connector.estimate(BIG)
        assert estimate is not None and estimate.source == "PostgreSQL EXPLAIN"
        assert estimate.bytes_scanned == relation_bytes(pg_urls.admin, "order_items")
        assert estimate.rows_scanned and estimate.result_rows
        assert estimate.dollars == pytest.approx(estimate.bytes_scanned / 1e12 * 5.0)
        with pytest.raises(Exception, match="DELETE"):  # the guard comes first
            connector.estimate("DELETE FROM order_items")
        # a plain read stops at its LIMIT: the planner's share of the scan, not the table
        streamed = connector.estimate("SELECT * FROM order_items")
        assert 0 < streamed.bytes_scanned < estimate.bytes_scanned
        assert streamed.rows_scanned <= 201
        # a sort reads all of its input before the LIMIT takes any
        sorted_ = connector.estimate("SELECT * FROM order_items ORDER BY quantity")
        assert sorted_.bytes_scanned == estimate.bytes_scanned
    finally:
        connector.close()


def test_postgres_over_the_threshold_waits_for_the_analyst(pg_urls) -> None:
    big = relation_bytes(pg_urls.admin, "order_items")
    small = relation_bytes(pg_urls.admin, "orders")
    assert small < big
    connector = SQLConnector("shop", pg_urls.ro, approve_above=(small + big) // 2)
    asked: list[ApprovalRequest] = []

    def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    try:
        result = turn_of(connector, deny, BIG, SMALL)
        refused, ran = result.tool_results
        assert refused.failure == "denied" and refused.artifact is None
        # the model reads the estimate and the threshold, and how to narrow the query
        assert "not run" in refused.content and "above the " in refused.content
        assert "filter on partition or date columns" in refused.content
        (request,) = asked  # the small query ran without asking
        # the person reads the step's cost line (tests/connectors/test_preflight_line.py),
        # the threshold it passes, and where the figures come from
        (line, _small) = [e.status for e in result.events if e.type == "tool_status"]
        assert request.name == "query_shop" and request.reason.startswith(f"{line}: above the ")
        assert request.reason.endswith("'shop' runs unasked (PostgreSQL EXPLAIN)")
        waiting = [e for e in result.events if e.type == "tool_awaiting_approval"]
        assert [e.reason for e in waiting] == [request.reason]
        assert not ran.is_error and ran.artifact.estimate.bytes_scanned == small
        assert "estimated ≈ " in status_of(ran.artifact)

        approved = turn_of(connector, lambda request: True, BIG)
        (outcome,) = approved.tool_results
        assert not outcome.is_error and outcome.artifact.estimate.bytes_scanned == big

        nobody = turn_of(connector, None, BIG)
        assert nobody.tool_results[0].failure == "denied"
    finally:
        connector.close()


# -- DuckDB --------------------------------------------------------------------------------------


def test_duckdb_gives_rows_and_its_threshold_is_in_rows(duckdb_shop: Path) -> None:
    url = f"duckdb:///{duckdb_shop}"
    connector = SQLConnector("shop", url, approve_above_rows=500)
    try:
        estimate = connector.estimate(BIG)
        assert estimate is not None and estimate.bytes_scanned is None
        assert estimate.rows_scanned and estimate.rows_scanned > 500  # 907 order items
        assert connector.estimate(SMALL).rows_scanned < 500
        # a plain read stops at its LIMIT; a filtered one reads until it has that many
        assert connector.estimate("SELECT * FROM order_items").rows_scanned == 201
        assert (
            201
            < connector.estimate("SELECT * FROM order_items WHERE quantity > 2").rows_scanned
            <= estimate.rows_scanned
        )
        result = turn_of(connector, lambda request: False, BIG, SMALL)
        refused, ran = result.tool_results
        assert refused.failure == "denied" and "above the 500 rows" in refused.content
        assert not ran.is_error and ran.artifact.estimate.source == "DuckDB EXPLAIN"
    finally:
        connector.close()
