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
    with pytest.raises(ConfigurationError, match="takes a SparkSession or a Spark Connect URL"):
        SparkConnector("lake", SparkSession())
    relay = relay_nb.Relay(relay_nb.ScriptedRuntime(), ledger=False)
    try:
        with pytest.raises(ConfigurationError, match="connect\\(\\) takes a DataFrame"):
            relay.connect("lake", SparkSession())
    finally:
        relay.close()


class _Row(tuple):
    pass


class _DescribeSession:
    """What ``session.sql("DESCRIBE TABLE …").collect()`` gives, without Spark."""

    def __init__(self, rows: list[tuple[str, str, str | None]]) -> None:
        self.rows = rows

    def sql(self, text: str) -> _DescribeSession:
        self.asked = text
        return self

    def collect(self) -> list[tuple[str, str, str | None]]:
        return self.rows


def test_describe_is_read_as_columns_then_partition_columns() -> None:
    from relay_nb.connectors.spark.catalog import _columns

    session = _DescribeSession(
        [
            ("id", "bigint", "the row id"),
            ("#tag", "string", None),  # a column, though its name starts with #
            ("day", "int", None),
            ("# Partition Information", "", ""),
            ("# col_name", "data_type", "comment"),
            ("day", "int", None),
        ]
    )
    columns = _columns(session, "shop", "odd`name")
    assert session.asked == "DESCRIBE TABLE `shop`.`odd``name`"
    assert [(c.name, c.type, c.comment) for c in columns] == [
        ("id", "bigint", "the row id"),
        ("#tag", "string", None),
        ("day", "int", "partition column"),
    ]
    iceberg = _DescribeSession(
        [
            ("ts", "timestamp", None),
            ("day", "date", None),
            ("", "", ""),
            ("# Partitioning", "", ""),
            ("Part 0", "day", ""),
            ("Part 1", "years(ts)", ""),
        ]
    )
    assert [c.comment for c in _columns(iceberg, None, "t")] == [None, "partition column"]


def test_a_connect_pool_shut_by_another_session_is_met_once_more() -> None:
    from relay_nb.connectors.spark.jobs import once_more_if_pool_shut

    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("cannot schedule new futures after shutdown")
        return "rows"

    assert once_more_if_pool_shut(flaky) == "rows" and len(calls) == 2
    with pytest.raises(RuntimeError, match="another"):
        once_more_if_pool_shut(lambda: (_ for _ in ()).throw(RuntimeError("another")))
