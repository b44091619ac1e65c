"""Spark's preflight against a real local Spark: the optimized plan's estimate (partition
pruning included) before a model's query runs, in the trace; above the connector's threshold
the query waits for the analyst, and a denial tells the model how to narrow it."""

from __future__ import annotations

import pytest

import relay_nb
from relay_nb.agent.approval import ApprovalRequest
from relay_nb.connectors.spark.connector import SparkConnector
from relay_nb.views.model import status_of

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(300)]

WHOLE = (  # three of the seven day partitions
    "SELECT customer_id, COUNT(*) AS n FROM shop.events WHERE day IN (1, 2, 3) GROUP BY customer_id"
)
ONE_DAY = "SELECT customer_id, COUNT(*) AS n FROM shop.events WHERE day = 3 GROUP BY customer_id"


def test_the_estimate_comes_from_the_plan_with_partitions_pruned(spark) -> None:
    connector = SparkConnector("lake", spark, price_per_tb=5.0)
    try:
        assert connector.preflight.enabled  # on by default: it costs no job
        assert connector.catalog.find("shop.events") is not None  # read before counting
        jobs_before = len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
        whole = connector.estimate(WHOLE)
        one_day = connector.estimate(ONE_DAY)
        assert whole is not None and one_day is not None
        assert whole.source == "Spark's optimized plan"
        # the files of the partitions read: three days are about three times one day
        assert 2 * one_day.bytes_scanned < whole.bytes_scanned < 4 * one_day.bytes_scanned
        assert whole.dollars == pytest.approx(whole.bytes_scanned / 1e12 * 5.0)
        assert len(spark.sparkContext.statusTracker().getJobIdsForGroup(None)) == jobs_before
    finally:
        connector.close()


def test_a_scan_over_the_threshold_waits_for_a_click(spark) -> None:
    probe = SparkConnector("probe", spark)
    whole = probe.estimate(WHOLE).bytes_scanned
    one_day = probe.estimate(ONE_DAY).bytes_scanned
    probe.close()
    threshold = (whole + one_day) // 2
    asked: list[ApprovalRequest] = []

    def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    model = relay_nb.ScriptedRuntime(
        [
            {"tool_calls": [{"name": "query_lake", "input": {"sql": WHOLE}}]},
            {"tool_calls": [{"name": "query_lake", "input": {"sql": ONE_DAY}}]},
            {"text": "One day only: three need your approval."},
        ]
    )
    relay = relay_nb.Relay(model, ledger=False, approver=deny)
    try:
        relay.connect("lake", spark, tables=["shop.events"], approve_above=threshold)
        turn = relay.ask("Events per customer?")
        refused, ran = turn.tool_results
        assert refused.failure == "denied"
        assert "scanned (Spark's optimized plan), above the" in refused.content
        (request,) = asked
        assert "Spark's optimized plan" in request.reason
        assert not ran.is_error and ran.artifact.row_count == 97
        assert ran.artifact.estimate.bytes_scanned == one_day
        assert "estimated ≈ " in status_of(ran.artifact)
    finally:
        relay.close()


def test_a_scan_spark_cannot_size_waits_too(spark) -> None:
    """A file table without statistics: Spark's size is its default (8 EiB), no estimate;
    with a threshold set, the query asks rather than runs unchecked."""
    spark.sql("DROP TABLE IF EXISTS shop.unsized")
    spark.sql("CREATE TABLE shop.unsized (id BIGINT, day INT) USING parquet PARTITIONED BY (day)")
    spark.sql("INSERT INTO shop.unsized VALUES (1, 1), (2, 2)")
    lake = SparkConnector("lake", spark, tables=["shop.unsized"], approve_above="1GB")
    try:
        estimate = lake.estimate("SELECT COUNT(*) AS n FROM shop.unsized")
        assert estimate is not None and estimate.bytes_scanned is None
        model = relay_nb.ScriptedRuntime(
            [
                {
                    "tool_calls": [
                        {
                            "name": "query_lake",
                            "input": {"sql": "SELECT COUNT(*) FROM shop.unsized"},
                        }
                    ]
                },
                {"text": "It needs your approval."},
            ]
        )
        relay = relay_nb.Relay(model, ledger=False)  # no approver: nobody to ask
        try:
            relay.connect("lake", lake)
            (refused,) = relay.ask("How many?").tool_results
            assert refused.failure == "denied" and "without the figure" in refused.content
            assert "nobody was there to approve it" in refused.content
        finally:
            relay.close()
    finally:
        lake.close()
        spark.sql("DROP TABLE IF EXISTS shop.unsized")
