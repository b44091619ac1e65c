"""What relay.connect does with a Spark session, checked without starting Spark."""

from __future__ import annotations

import pytest

import relay_nb
from relay_nb.connectors.spark.connector import SparkConnector
from relay_nb.connectors.spark.session import is_spark_session
from relay_nb.errors import ConfigurationError


class SparkSession:  # named as PySpark's, from another module: not a session
    pass


def test_only_a_pyspark_session_is_taken_for_one() -> None:
    assert not is_spark_session(SparkSession())
    with pytest.raises(ConfigurationError, match="takes a SparkSession, not SparkSession"):
        SparkConnector("lake", SparkSession())
    relay = relay_nb.Relay(relay_nb.ScriptedRuntime(), ledger=False)
    try:
        with pytest.raises(ConfigurationError, match="connect\\(\\) takes a DataFrame"):
            relay.connect("lake", SparkSession())
    finally:
        relay.close()
