"""Spark: reading a 1,000-table catalog, and what a guarded query costs over Spark's own.

A local Spark (``local[2]``, pyspark from PyPI) with a database of 1,000 partitioned parquet
tables (4 columns each, one of them the partition column, a comment on another). Side by
side in the same session:

- **catalog**: relay_nb's read (:func:`relay_nb.connectors.spark.catalog.read_spark_catalog`:
  the tables listed, then each one's ``DESCRIBE TABLE`` read by 8 threads) against what a
  naive integration does — ``DESCRIBE TABLE`` for each table, one after another — and
  against the catalog API's ``listColumns`` for each (what relay_nb's first version did);
  medians of 3.
- **query**: one small aggregate on a 100,000-row table through
  ``SparkConnector.query`` (guard, job group, bounded fetch, DataFrame) against
  ``spark.sql(sql).toPandas()``; medians of 20 after 3 warm-ups.
- **preflight**: the plan estimate a model's query gets before it runs
  (``SparkConnector.estimate``: guard, analysis, optimized plan statistics), as a share of
  the query itself.
- **connect**: the same query through a Spark Connect server in the same JVM, relay_nb's
  ``sc://`` connector against the Connect session's own ``spark.sql(sql).toPandas()``.

Skipped without pyspark or Java.
"""

from __future__ import annotations

import importlib.util
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

TABLES = 1000
RUNS = 3
QUERY_RUNS = 20
_SQL = (
    "SELECT day, COUNT(*) AS n, SUM(amount) AS total FROM default.facts GROUP BY day ORDER BY day"
)


def _median_ms(work: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _side_by_side(relay: Any, plain: Any) -> dict[str, float]:
    """relay_nb's call and Spark's own, warmed up together, then medians of each."""
    for _ in range(3):
        relay()
        plain()
    measured = {
        "relay_ms": _median_ms(relay, QUERY_RUNS),
        "spark_to_pandas_ms": _median_ms(plain, QUERY_RUNS),
    }
    measured["ratio"] = measured["relay_ms"] / measured["spark_to_pandas_ms"]
    return measured


def _measure(spark: Any) -> dict[str, Any]:
    from relay_nb.connectors.spark.catalog import read_spark_catalog
    from relay_nb.connectors.spark.connector import SparkConnector

    spark.sql("CREATE DATABASE bench")
    started = time.perf_counter()
    for i in range(TABLES):
        spark.sql(
            f"CREATE TABLE bench.t{i:04d} (id BIGINT COMMENT 'the row id', name STRING, "
            "amount DOUBLE, day INT) USING parquet PARTITIONED BY (day)"
        )
    setup_s = time.perf_counter() - started
    names = [f"bench.t{i:04d}" for i in range(TABLES)]

    def relay() -> None:
        read = read_spark_catalog(spark, databases=["bench"], tables=None, timeout_s=600)
        assert len(read.tables) == TABLES

    def describe_each() -> None:
        for name in names:
            spark.sql(f"DESCRIBE TABLE {name}").collect()

    def list_columns_each() -> None:
        spark.catalog.listTables("bench")
        for name in names:
            spark.catalog.listColumns(name)

    catalog = {
        "relay_ms": _median_ms(relay, RUNS),
        "describe_each_ms": _median_ms(describe_each, RUNS),
        "list_columns_each_ms": _median_ms(list_columns_each, RUNS),
        "setup_s": setup_s,
    }
    catalog["speedup_vs_describe"] = catalog["describe_each_ms"] / catalog["relay_ms"]
    spark.range(0, 100_000).selectExpr(
        "id", "CAST(id % 7 AS INT) AS day", "id * 0.5 AS amount"
    ).write.saveAsTable("default.facts")
    connector = SparkConnector("lake", spark, tables=["default.facts"])
    query = _side_by_side(lambda: connector.query(_SQL), lambda: spark.sql(_SQL).toPandas())
    connector.estimate(_SQL)
    preflight = {"estimate_ms": _median_ms(lambda: connector.estimate(_SQL), QUERY_RUNS)}
    preflight["share_of_query"] = preflight["estimate_ms"] / query["relay_ms"]
    return {
        "tables": TABLES,
        "catalog": catalog,
        "query": query,
        "preflight": preflight,
        "connect": _connect(spark),
        "version": spark.version,
    }


def _connect(spark: Any) -> dict[str, float]:
    from relay_nb.connectors.spark.connector import SparkConnector
    from relay_nb.testing.spark import start_connect_server

    remote = SparkConnector("remote", start_connect_server(spark), tables=["default.facts"])
    try:
        session = remote.session
        return _side_by_side(lambda: remote.query(_SQL), lambda: session.sql(_SQL).toPandas())
    finally:
        remote.close()


def run() -> dict[str, Any] | None:
    if importlib.util.find_spec("pyspark") is None or shutil.which("java") is None:
        print("-- skipped: needs pyspark and Java (pip install 'relay_nb[spark]')")
        return None
    with tempfile.TemporaryDirectory(prefix="relay_spark_bench_") as scratch:
        from relay_nb.testing.spark import local_spark

        spark = local_spark(Path(scratch), app_name="relay_nb-benchmark")
        try:
            results = _measure(spark)
        finally:
            spark.stop()
    catalog, query = results["catalog"], results["query"]
    preflight, connect = results["preflight"], results["connect"]
    print(
        f"-- Spark {results['version']} local[2], {TABLES} partitioned tables "
        f"(created in {catalog['setup_s']:.1f} s); medians"
    )
    print(
        f"catalog: relay_nb {catalog['relay_ms']:.0f} ms · DESCRIBE each "
        f"{catalog['describe_each_ms']:.0f} ms · listColumns each "
        f"{catalog['list_columns_each_ms']:.0f} ms → {catalog['speedup_vs_describe']:.1f}x"
    )
    print(
        f"query: SparkConnector.query {query['relay_ms']:.1f} ms · spark.sql().toPandas() "
        f"{query['spark_to_pandas_ms']:.1f} ms → {query['ratio']:.2f}x"
    )
    print(
        f"preflight: estimate {preflight['estimate_ms']:.1f} ms "
        f"({preflight['share_of_query']:.0%} of the query)"
    )
    print(
        f"connect: SparkConnector('sc://…').query {connect['relay_ms']:.1f} ms · "
        f"session.sql().toPandas() {connect['spark_to_pandas_ms']:.1f} ms → "
        f"{connect['ratio']:.2f}x"
    )
    return results


if __name__ == "__main__":
    run()
