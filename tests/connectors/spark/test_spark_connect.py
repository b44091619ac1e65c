"""Spark Connect: ``relay.connect("lake", "sc://host:port")`` and Connect session objects,
against a real Connect server (in the test session's JVM, reading the same ``shop``
database): the catalog, guarded reads, a refused write, a timeout that interrupts the
server's jobs (checked in Spark's status tracker), the plan estimate, a turn through the loop."""

from __future__ import annotations

import time

import pytest

import relay_nb
from relay_nb.connectors.spark.connector import SparkConnector
from relay_nb.connectors.spark.session import open_connect_session, redact_connect_url
from relay_nb.errors import ConfigurationError, QueryTimeoutError, UnsafeQueryError

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(300)]

SLOW = "SELECT COUNT(*) AS n FROM shop.events a JOIN shop.events b ON a.customer_id = b.customer_id"


def test_a_url_connects_reads_and_refuses_writes(connect_url, spark) -> None:
    model = relay_nb.ScriptedRuntime(
        [
            {"tool_calls": [{"name": "query_lake", "input": {"sql": "DROP TABLE shop.orders"}}]},
            {
                "tool_calls": [
                    {
                        "name": "query_lake",
                        "input": {
                            "sql": "SELECT status, SUM(total) AS revenue FROM shop.orders "
                            "GROUP BY status ORDER BY status"
                        },
                    }
                ]
            },
            {"text": "Paid orders brought 230.4."},
        ]
    )
    relay = relay_nb.Relay(model, ledger=False)
    try:
        lake = relay.connect("lake", connect_url, tables=["shop.orders", "shop.events"])
        assert lake.target == f"spark ({connect_url})"
        assert lake.object_names() == ["shop.events", "shop.orders"]
        assert "day" in lake.prompt_context() and "partition" in lake.prompt_context()
        turn = relay.ask("Revenue per status?")
        refused, ran = turn.tool_results
        assert refused.failure == "refused"
        assert [tuple(r) for r in ran.artifact.df.itertuples(index=False)] == [
            ("paid", pytest.approx(230.4)),
            ("refunded", 30.0),
        ]
        assert spark.catalog.tableExists("shop.orders")  # nothing was dropped
        session = lake.session
    finally:
        relay.close()
    assert session.is_stopped  # opened from the URL, so stopped on close


def test_a_timeout_interrupts_the_servers_jobs(connect_url, spark) -> None:
    session = open_connect_session(connect_url)
    lake = SparkConnector("lake", session, databases=["shop"], statement_timeout_s=3)
    tracker = spark.sparkContext.statusTracker()
    try:
        started = time.monotonic()
        with pytest.raises(QueryTimeoutError, match="Spark jobs were cancelled"):
            lake.query(SLOW)
        assert time.monotonic() - started < 20
        deadline = time.monotonic() + 20
        while tracker.getActiveJobsIds() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert tracker.getActiveJobsIds() == []
        with pytest.raises(UnsafeQueryError):
            lake.query("INSERT INTO shop.orders VALUES (9, 9, 'x', 1.0)")
        assert lake.query("SELECT COUNT(*) AS n FROM shop.orders").df["n"][0] == 4
    finally:
        lake.close()
    assert session.sql("SELECT 1 AS one").collect()[0][0] == 1  # the analyst's: left open
    session.stop()


def test_the_estimate_is_read_from_the_plan_text(connect_url, sized_events) -> None:
    lake = SparkConnector("lake", connect_url, tables=["shop.sized", "shop.events"])
    try:
        whole = lake.estimate("SELECT COUNT(*) FROM shop.sized")
        one_day = lake.estimate("SELECT COUNT(*) FROM shop.sized WHERE day = 3")
        assert whole is not None and one_day is not None
        assert 0 < one_day.bytes_scanned * 4 < whole.bytes_scanned < 10**9
        # a table without statistics: Spark's default size (8 EiB) is no estimate
        assert lake.estimate("SELECT COUNT(*) FROM shop.events").bytes_scanned is None
    finally:
        lake.close()


def test_connect_urls_are_checked_and_their_tokens_redacted() -> None:
    assert redact_connect_url("sc://db.example:15002/;token=abc;user_id=x") == (
        "sc://db.example:15002"
    )
    with pytest.raises(ConfigurationError, match="sc://host:port"):
        open_connect_session("sc:/oops")
