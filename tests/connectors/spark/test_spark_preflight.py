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

WHOLE = "SELECT customer_id, COUNT(*) AS n FROM shop.events GROUP BY customer_id"
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
        # seven day partitions: one day's files are about a seventh of the table's
        assert 0 < one_day.bytes_scanned * 4 < whole.bytes_scanned
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
            {"text": "One day only: the whole table needs your approval."},
        ]
    )
    relay = relay_nb.Relay(model, ledger=False, approver=deny)
    try:
        relay.connect("lake", spark, tables=["shop.events"], approve_above=threshold)
        turn = relay.ask("Events per customer?")
        refused, ran = turn.tool_results
        assert refused.failure == "denied" and "scanned is above" in refused.content
        (request,) = asked
        assert "Spark's optimized plan" in request.reason
        assert not ran.is_error and ran.artifact.row_count == 97
        assert ran.artifact.estimate.bytes_scanned == one_day
        assert "estimated ≈ " in status_of(ran.artifact)
    finally:
        relay.close()
