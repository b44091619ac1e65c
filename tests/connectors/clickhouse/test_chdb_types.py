"""ClickHouse's own types through the SQL connector, on chDB: the catalog shows them as written,
the value profile reads them (categories, ranges, NULL shares), and a query's DataFrame holds
them with honest dtypes."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
from chdb_helpers import url

from relay_nb import Relay, ScriptedRuntime

SEED = [
    "CREATE TABLE sales ("
    " id UInt64,"
    " big_id UInt64,"
    " region LowCardinality(String),"
    " channel Enum8('Web' = 1, 'Store' = 2, 'Phone' = 3),"
    " qty Nullable(Int32),"
    " sold_at DateTime64(3),"
    " day Date,"
    " amount Decimal(12, 2),"
    " discount Nullable(Decimal(5, 2)),"
    " ratio Float64,"
    " note Nullable(String),"
    " tags Array(String),"
    " attrs Map(String, UInt8)"
    ") ENGINE = MergeTree ORDER BY id",
    "INSERT INTO sales SELECT number, 18446744073709551000 + number % 7,"
    " ['north', 'south', 'east'][number % 3 + 1],"
    " ['Web', 'Store', 'Phone'][number % 3 + 1],"
    " if(number % 5 = 0, NULL, toInt32(number % 9)),"
    " toDateTime64('2024-03-01 08:00:00.250', 3) + toIntervalHour(number),"
    " toDate('2024-03-01') + number % 10,"
    " toDecimal64(number, 2) * 1.5,"
    " if(number % 2 = 0, NULL, toDecimal32(number % 10, 2)),"
    " number / 8,"
    " NULL,"
    " ['a', toString(number % 2)],"
    " map('k', toUInt8(number % 4))"
    " FROM numbers(300)",
]


@pytest.fixture(scope="module")
def sales(chdb_database):
    database = chdb_database(SEED)
    relay = Relay(ScriptedRuntime(), ledger=False)
    connector = relay.connect("ch", url(database))
    yield connector
    relay.close()


def test_the_catalog_shows_clickhouse_types_as_written(sales):
    (table,) = sales.catalog.tables
    types = {c.name: (c.type, c.nullable) for c in table.columns}
    assert types == {
        "id": ("UInt64", False),
        "big_id": ("UInt64", False),
        "region": ("LowCardinality(String)", False),
        "channel": ("Enum8('Web' = 1, 'Store' = 2, 'Phone' = 3)", False),
        "qty": ("Nullable(Int32)", True),
        "sold_at": ("DateTime64(3)", False),
        "day": ("Date", False),
        "amount": ("Decimal(12, 2)", False),
        "discount": ("Nullable(Decimal(5, 2))", True),
        "ratio": ("Float64", False),
        "note": ("Nullable(String)", True),
        "tags": ("Array(String)", False),
        "attrs": ("Map(String, UInt8)", False),
    }


def test_the_profile_reads_clickhouse_types(sales):
    (table,) = sales.catalog.tables
    profile = {c.name: c.profile for c in table.columns}
    assert set(profile["region"].values) == {"north", "south", "east"}
    assert set(profile["channel"].values) == {"Web", "Store", "Phone"}  # the labels, as written
    assert (profile["qty"].low, profile["qty"].high, profile["qty"].null_share) == ("0", "8", 0.2)
    assert (profile["sold_at"].low, profile["sold_at"].high) == (
        "2024-03-01 08:00:00",
        "2024-03-13 19:00:00",
    )
    assert (profile["day"].low, profile["day"].high) == ("2024-03-01", "2024-03-10")
    assert (profile["amount"].low, profile["amount"].high) == ("0", "448.5")
    assert profile["discount"].null_share == 0.5
    assert profile["note"].null_share == 1.0 and profile["note"].values == ()
    assert profile["tags"] is None and profile["attrs"] is None  # containers: not profiled
    text = sales.prompt_context()
    assert "'north'" in text and "'Phone'" in text and "2024-03-01..2024-03-10" in text


def test_a_querys_frame_has_honest_dtypes(sales):
    result = sales.query("SELECT * FROM sales ORDER BY id")
    frame = result.df
    assert result.row_count == 200 and result.truncated  # the row limit, one more fetched
    dtypes = {name: str(dtype) for name, dtype in frame.dtypes.items()}
    assert dtypes["id"] == "int64" and dtypes["big_id"] == "uint64"
    assert dtypes["qty"] == "Int64"  # NULLs kept as <NA>, the integers exact
    assert dtypes["sold_at"].startswith("datetime64") and dtypes["day"].startswith("datetime64")
    assert dtypes["amount"] == "float64"  # decimals as pandas.read_sql gives them
    assert dtypes["tags"] == "object" and dtypes["attrs"] == "object"
    first = frame.iloc[1]
    assert first["sold_at"] == pd.Timestamp("2024-03-01 09:00:00.250")
    assert first["day"] == pd.Timestamp(dt.date(2024, 3, 2))
    assert first["tags"] == ["a", "1"] and first["attrs"] == {"k": 1}
    assert first["region"] == "south" and first["channel"] == "Store"
    assert frame["qty"].isna().sum() == 40 and frame["qty"].iloc[1] == 1
    assert frame["big_id"].iloc[6] == 18446744073709551006  # past 2**63, exact
    assert frame["discount"].iloc[0] is None or pd.isna(frame["discount"].iloc[0])


def test_nullable_uint64_past_float_precision_stays_exact(sales):
    frame = sales.query(
        "SELECT if(id % 2 = 0, NULL, big_id) AS maybe FROM sales ORDER BY id LIMIT 4"
    ).df
    assert str(frame["maybe"].dtype) == "UInt64"
    assert frame["maybe"].tolist()[1] == 18446744073709551001 and pd.isna(frame["maybe"][0])


def test_the_model_reads_a_preview_of_those_types(sales):
    tools = {tool.name: tool for tool in sales.tools()}
    import asyncio

    result = asyncio.run(
        tools["query_ch"].run({"sql": "SELECT id, qty, tags, sold_at FROM sales ORDER BY id"})
    )
    assert not result.is_error
    assert "qty Int64" in result.content and "2024-03-01 08:00:00.250" in result.content
