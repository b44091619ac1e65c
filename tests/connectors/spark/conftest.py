"""A real local Spark (PyPI pyspark on Debian's OpenJDK 17) for the Spark connector's tests.

One session for the whole module run, ``local[2]``, with everything it writes — warehouse,
shuffle files, the JVM's temp files — under pytest's own temp folder (the JVM's perf-data file
in /tmp is turned off), and a ``shop`` database: ``orders`` and ``customers`` as tables,
``events`` (2,000,000 rows) partitioned by ``day``, and a temporary view; and, for the Spark
Connect tests, a Connect server in the same JVM (``connect_url``). Spark tests are
``slow`` (the default suite stays within its time; ``pytest -m slow`` and CI run them).
"""

from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    pytest.importorskip("pyspark", reason="pip install 'relay_nb[spark]'")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if os.environ.get("CI") == "true":
            pytest.fail("no Java for Spark under CI (apt-get install openjdk-17-jre-headless)")
        pytest.skip("no Java runtime for Spark (apt-get install openjdk-17-jre-headless)")
    from relay_nb.testing.spark import local_spark

    session = local_spark(tmp_path_factory.mktemp("spark"), app_name="relay_nb-tests")
    session.sql("CREATE DATABASE IF NOT EXISTS shop COMMENT 'the test shop'")
    customers = [(1, "Ada", "DE"), (2, "Bo", "FR"), (3, "Cy", "DE")]
    session.createDataFrame(customers, "id INT, name STRING, country STRING").write.saveAsTable(
        "shop.customers"
    )
    orders = [
        (1, 1, "paid", 120.5),
        (2, 1, "refunded", 30.0),
        (3, 2, "paid", 99.9),
        (4, 3, "paid", 10.0),
    ]
    session.createDataFrame(
        orders, "id INT, customer_id INT, status STRING, total DOUBLE"
    ).write.saveAsTable("shop.orders")
    session.sql("COMMENT ON TABLE shop.orders IS 'one row per order'")
    events = session.range(0, 2_000_000).selectExpr(
        "id", "id % 97 AS customer_id", "CAST(id % 7 AS INT) AS day"
    )
    events.write.partitionBy("day").saveAsTable("shop.events")
    session.createDataFrame([(1, "gold")], "customer_id INT, tier STRING").createOrReplaceTempView(
        "tiers"
    )
    session.catalog.setCurrentDatabase("shop")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_url(spark) -> str:
    """A Spark Connect server in the test session's own JVM (the ``spark-connect`` jar ships
    with pyspark 4; the client needs ``pyspark[connect]``'s grpcio): it sees the same
    ``shop`` database, and its jobs show in the same status tracker."""
    pytest.importorskip("grpc", reason="pip install 'relay_nb[spark]'")
    from relay_nb.testing.spark import start_connect_server

    return start_connect_server(spark)


@pytest.fixture(scope="session")
def sized_events(spark) -> str:
    """``shop.sized``: 200,000 events in 7 day partitions, with table statistics (``ANALYZE``),
    so Spark's plan knows its size; ``shop.events`` has none (its size is Spark's default)."""
    spark.sql(
        "CREATE TABLE shop.sized USING parquet PARTITIONED BY (day) "
        "AS SELECT id, customer_id, day FROM shop.events WHERE id < 200000"
    )
    spark.sql("ANALYZE TABLE shop.sized COMPUTE STATISTICS NOSCAN")
    return "shop.sized"
