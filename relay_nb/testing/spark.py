"""A local Spark for tests and benchmarks: ``local[2]``, everything it writes under one folder,
and a Spark Connect server in the same JVM on demand.

One builder for the Spark tests (``tests/connectors/spark``) and ``benchmarks/spark.py``, so
both measure and test the same session. PySpark is imported when a session is made, never
when this module is (relay_nb does not depend on it).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

__all__ = ["local_spark", "start_connect_server"]


def local_spark(root: Path, *, app_name: str) -> Any:
    """A ``local[2]`` session whose warehouse, shuffle files and JVM temp files are under
    ``root`` (the JVM's perf-data file in /tmp is off), its log at ERROR, and a free port
    chosen for a Connect server (:func:`start_connect_server`)."""
    from pyspark.sql import SparkSession

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        connect_port = probe.getsockname()[1]
    java_options = f"-XX:-UsePerfData -Djava.io.tmpdir={root}"
    session = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.local.dir", str(root / "local"))
        .config("spark.sql.warehouse.dir", str(root / "warehouse"))
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.executor.extraJavaOptions", java_options)
        .config("spark.connect.grpc.binding.address", "127.0.0.1")
        .config("spark.connect.grpc.binding.port", str(connect_port))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def start_connect_server(session: Any) -> str:
    """Start a Spark Connect server in ``session``'s JVM (the ``spark-connect`` jar ships with
    pyspark 4); its ``sc://`` URL. Its sessions share the session's catalog and jobs."""
    context = session.sparkContext
    context._jvm.org.apache.spark.sql.connect.service.SparkConnectService.start(context._jsc.sc())
    return f"sc://127.0.0.1:{context.getConf().get('spark.connect.grpc.binding.port')}"
