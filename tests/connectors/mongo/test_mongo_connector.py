"""MongoConnector against a real server: results as DataFrames, limits, timeouts, the tool,
configuration errors, secrets and closing."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import time

import pandas as pd
import pymongo
import pytest
from bson import ObjectId
from mongo_support import ALLOWED, MongoServer, Watched
from seed_mongo import oid

from relay_nb.connectors.mongo import MongoConnector
from relay_nb.connectors.mongo.values import parse_json_input
from relay_nb.errors import ConfigurationError, QueryExecutionError, UnsafeQueryError
from relay_nb.redaction import redact

HEAVY = [
    {"$lookup": {"from": "orders", "as": "y", "pipeline": [
        {"$lookup": {"from": "orders", "as": "z", "pipeline": []}},
    ]}},
    {"$count": "n"},
]  # fmt: skip
"""240³ documents touched: minutes of work, so only maxTimeMS can end it quickly."""


@pytest.fixture
def small(mongo_server: MongoServer):
    connector = MongoConnector("small", mongo_server.url, collections=ALLOWED, row_limit=10)
    yield connector
    connector.close()


# -- results ------------------------------------------------------------------------------------


def test_find_converts_objectids_dates_decimals_and_flattens(shop: MongoConnector) -> None:
    result = shop.find("customers", {"_id": {"$in": [oid(1, 0), oid(1, 3)]}}, sort={"_id": 1})
    frame = result.df
    assert list(frame["_id"]) == [str(oid(1, 0)), str(oid(1, 3))]
    assert pd.api.types.is_datetime64_any_dtype(frame["created_at"])
    assert frame.loc[0, "created_at"] == pd.Timestamp("2025-01-01 00:00")
    assert frame.loc[1, "created_at"] == pd.Timestamp("2025-01-10 03:00")
    assert frame.loc[0, "address.city"] == "Berlin" and frame.loc[0, "address.geo.lat"] == 40.0
    assert pd.isna(frame.loc[1, "email"])  # null in the data
    assert frame["tags"].map(lambda cell: isinstance(json.loads(cell), list)).all()

    products = shop.find("products", sort={"_id": 1}, limit=3).df
    assert products["price"].dtype == "float64" and list(products["price"]) == [5.99, 7.99, 9.99]


def test_dates_with_nulls_stay_datetime(shop: MongoConnector) -> None:
    frame = shop.find("orders", sort={"_id": 1}, limit=5).df
    assert pd.api.types.is_datetime64_any_dtype(frame["shipped_at"])
    assert frame["shipped_at"].isna().tolist() == [True, False, False, True, True]
    assert frame.loc[1, "shipped_at"] - frame.loc[1, "ordered_at"] == pd.Timedelta(days=2)
    items = json.loads(frame.loc[0, "items"])
    assert set(items[0]) == {"sku", "qty", "price"}


def test_python_values_and_json_text_give_the_same_result(shop: MongoConnector) -> None:
    by_python = shop.find(
        "orders", {"_id": oid(2, 9), "ordered_at": {"$gte": dt.datetime(2025, 1, 1)}}
    )
    by_text = shop.find(
        "orders",
        '{"_id": {"$oid": "' + str(oid(2, 9)) + '"}, '
        '"ordered_at": {"$gte": {"$date": "2025-01-01T00:00:00Z"}}}',
    )
    pd.testing.assert_frame_equal(by_python.df, by_text.df)
    assert by_python.row_count == 1 and by_python.df.loc[0, "note"] == "gift wrap"
    assert by_python.executed_sql == by_text.executed_sql


def test_executed_json_is_what_ran_and_parses_back(shop: MongoConnector) -> None:
    result = shop.find("orders", {"_id": oid(2, 1)}, {"total": 1}, {"total": -1}, 3)
    command = parse_json_input(result.executed_sql, "executed")
    assert command == {
        "find": "orders",
        "filter": {"_id": oid(2, 1)},
        "projection": {"total": 1},
        "sort": {"total": -1},
        "limit": 3,
        "maxTimeMS": 10_000,
    }
    assert json.loads(result.submitted_sql)["limit"] == 3
    aggregated = shop.aggregate("orders", [{"$match": {"status": "paid"}}, {"$count": "n"}])
    assert json.loads(aggregated.executed_sql) == {
        "aggregate": "orders",
        "pipeline": [{"$match": {"status": "paid"}}, {"$count": "n"}, {"$limit": 201}],
        "maxTimeMS": 10_000,
    }
    assert aggregated.df.to_dict("records") == [{"n": 48}]
    assert aggregated.language == "mongo" and aggregated.tables == ("orders",)


def test_lookups_report_every_collection_read(shop: MongoConnector) -> None:
    result = shop.aggregate(
        "orders",
        [
            {"$match": {"_id": oid(2, 0)}},
            {"$lookup": {"from": "customers", "localField": "customer_id",
                         "foreignField": "_id", "as": "customer"}},
            {"$unwind": "$customer"},
            {"$project": {"customer.name": 1, "total": 1}},
        ],
    )  # fmt: skip
    assert result.tables == ("orders", "customers")
    assert result.df.loc[0, "customer.name"] == "Customer 00"


# -- limits ---------------------------------------------------------------------------------------


def test_truncation_at_the_row_limit(small: MongoConnector) -> None:
    everything = small.find("orders", sort={"_id": 1})
    assert (everything.row_count, everything.truncated, len(everything.df)) == (10, True, 10)
    assert json.loads(everything.executed_sql)["limit"] == 11
    assert list(everything.df["_id"]) == [str(oid(2, i)) for i in range(10)]

    exactly = small.find("orders", sort={"_id": 1}, limit=10)
    assert (exactly.row_count, exactly.truncated) == (10, False)
    fewer = small.find("orders", {"status": "paid"}, limit=4)
    assert (fewer.row_count, fewer.truncated) == (4, False)

    grouped = small.aggregate("orders", [{"$group": {"_id": "$customer_id"}}])
    assert (grouped.row_count, grouped.truncated) == (10, True)  # 40 customers ordered
    few_groups = small.aggregate("orders", [{"$group": {"_id": "$status"}}])
    assert (few_groups.row_count, few_groups.truncated) == (5, False)


async def test_the_model_is_told_about_truncation(small: MongoConnector) -> None:
    result = await small.tools()[0].run({"collection": "orders"})
    assert not result.is_error
    assert result.content.startswith("10 rows (stopped at the row limit; more rows exist")
    assert result.artifact.truncated


# -- timeouts -----------------------------------------------------------------------------------


def test_every_query_carries_max_time_ms(watch: Watched) -> None:
    watch.connector.find("orders", {"status": "paid"}, limit=2)
    watch.connector.aggregate("orders", [{"$count": "n"}])
    sent = [(name, body) for name, body in watch.log.commands if name in ("find", "aggregate")]
    assert [name for name, _ in sent] == ["find", "aggregate"]
    assert all(body["maxTimeMS"] == 10_000 for _, body in sent)
    assert sent[0][1]["limit"] == 2 and sent[1][1]["pipeline"][-1] == {"$limit": 201}


def test_a_slow_query_is_stopped_by_the_server(mongo_server: MongoServer) -> None:
    connector = MongoConnector("slow", mongo_server.url, collections=ALLOWED, timeout_s=0.3)
    try:
        connector.object_names()
        started = time.perf_counter()
        with pytest.raises(QueryExecutionError, match=r"ran longer than 0\.3 s and was stopped"):
            connector.aggregate("orders", HEAVY)
        assert time.perf_counter() - started < 5
        assert connector.find("orders", limit=1).row_count == 1  # the server is free again
    finally:
        connector.close()


async def test_the_tool_reports_a_timeout_as_an_error_the_model_reads(
    mongo_server: MongoServer,
) -> None:
    connector = MongoConnector("slow", mongo_server.url, collections=ALLOWED, timeout_s=0.3)
    try:
        tool = connector.tools()[0]
        assert tool.timeout_s == pytest.approx(10.3)
        result = await tool.run(
            {"collection": "orders", "operation": "aggregate", "pipeline": HEAVY}
        )
        assert result.is_error and "ran longer than 0.3 s" in result.content
    finally:
        connector.close()


def test_server_errors_are_clear(shop: MongoConnector) -> None:
    with pytest.raises(QueryExecutionError, match="MongoDB refused the query: ") as refused:
        shop.aggregate("orders", [{"$group": {"total": {"$sum": "$total"}}}])  # no _id
    assert "full error" not in str(refused.value)


# -- the tool -----------------------------------------------------------------------------------


async def test_tool_accepts_json_strings_and_objects(shop: MongoConnector) -> None:
    (tool,) = shop.tools()
    assert tool.name == "query_shop"
    schema = tool.spec()["input_schema"]
    assert schema["required"] == ["collection"]
    assert set(schema["properties"]) == {
        "collection", "operation", "filter", "projection", "sort", "limit", "pipeline"
    }  # fmt: skip
    as_text = await tool.run(
        {"collection": "orders", "filter": '{"customer_id": {"$oid": "' + str(oid(1, 5)) + '"}}',
         "sort": '{"_id": 1}', "limit": "3"}
    )  # fmt: skip
    as_objects = await tool.run(
        {"collection": "orders", "filter": {"customer_id": {"$oid": str(oid(1, 5))}},
         "sort": {"_id": 1}, "limit": 3}
    )  # fmt: skip
    assert not as_text.is_error and not as_objects.is_error
    pd.testing.assert_frame_equal(as_text.artifact.df, as_objects.artifact.df)
    assert as_text.artifact.row_count == 3
    assert as_text.content == as_objects.content and as_text.content.startswith("3 rows")


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"collection": "orders", "limit": 0}, "limit: Input should be greater than or equal to 1"),
        ({"collection": "orders", "operation": "delete"}, "operation: Input should be 'find'"),
        ({"collection": "orders", "update": {}}, "update: Extra inputs are not permitted"),
        ({"filter": {}}, "collection: Field required"),
        ({"collection": "orders", "operation": "aggregate"}, "needs a pipeline"),
    ],
)
async def test_bad_tool_input_is_an_error_the_model_can_fix(
    shop: MongoConnector, raw: dict, fragment: str
) -> None:
    result = await shop.tools()[0].run(raw)
    assert result.is_error and fragment in result.content, result.content


def test_object_names_hide_system_and_unlisted_collections(shop: MongoConnector) -> None:
    assert shop.object_names() == list(ALLOWED)
    with pytest.raises(UnsafeQueryError, match="use one of: customers, events, orders"):
        shop.find("internal_notes")


# -- configuration, secrets, closing --------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "options", "fragment"),
    [
        (("Shop", "mongodb://h/db"), {}, "snake_case"),
        (("shop", "mongodb://h"), {}, "put it in the URL (mongodb://host:27017/shop)"),
        (("shop", "postgresql://h/db"), {}, "starts with mongodb:// or mongodb+srv://"),
        (("shop", "mongodb://h/db"), {"collections": "orders"}, "not the string 'orders'"),
        (("shop", "mongodb://h/db"), {"collections": ["system.js"]}, "system collection"),
        (("shop", "mongodb://h/db"), {"row_limit": 0}, "row_limit must be a whole number"),
        (("shop", "mongodb://h/db"), {"sample_size": 0}, "sample_size must be"),
        (("shop", "mongodb://h/db"), {"max_depth": 11}, "max_depth must be"),
        (("shop", "mongodb://h/db"), {"timeout_s": -1}, "timeout_s must be a positive"),
        (("shop", "mongodb://h/db"), {"max_value_bytes": 0}, "max_value_bytes must be a posit"),
        (("shop", "mongodb://h/db"), {"max_result_bytes": "16MB"}, "max_result_bytes must be"),
        (
            ("shop", "mongodb://h/db"),
            {"max_value_bytes": 2 << 20, "max_result_bytes": 1 << 20},
            "cannot exceed max_result_bytes",
        ),
        (("shop", "mongodb://h/a.b"), {}, "not a valid MongoDB database name"),
        (("shop", "mongodb://h/db"), {"database": 5}, "database must be a name"),
        (("shop", "mongodb://h:99999/db"), {}, "cannot use the MongoDB URL mongodb://h:99999/db"),
    ],
)
def test_configuration_errors_say_what_to_fix(args, options, fragment) -> None:
    with pytest.raises(ConfigurationError) as error:
        MongoConnector(*args, **options)
    assert fragment in str(error.value), str(error.value)


def test_the_password_is_masked_registered_and_never_shown() -> None:
    secret = "s3cret-Mongo-pass-77"
    connector = MongoConnector(
        "remote", f"mongodb://analyst:{secret}@127.0.0.1:9/shop?authSource=admin", timeout_s=0.5
    )
    try:
        assert connector.target == "mongodb://analyst:[REDACTED]@127.0.0.1:9/shop?authSource=admin"
        assert redact(f"x {secret} y") == "x [REDACTED] y"
        with pytest.raises(QueryExecutionError) as unreachable:
            connector.object_names()
        message = str(unreachable.value)
        assert message.startswith("could not read the collections of 'remote': MongoDB at ")
        assert message.endswith("check the host, port and that it runs") and len(message) < 300
        assert secret not in message and "[REDACTED]" in message
    finally:
        connector.close()


def test_database_option_wins_over_the_url(mongo_server: MongoServer) -> None:
    connector = MongoConnector("shop2", mongo_server.base_url + "/ignored", database="shop")
    try:
        assert connector.database_name == "shop"
        assert "orders" in connector.object_names()
    finally:
        connector.close()


def test_close_closes_the_client_it_created(mongo_server: MongoServer) -> None:
    connector = MongoConnector("closing", mongo_server.url, collections=ALLOWED)
    assert connector.find("orders", limit=1).row_count == 1
    connector.close()
    with pytest.raises(QueryExecutionError, match="was closed"):
        connector.find("orders", limit=1)
    with pytest.raises(pymongo.errors.InvalidOperation):
        connector.client.admin.command("ping")


def test_close_leaves_a_passed_client_to_its_owner(mongo_server: MongoServer) -> None:
    client: pymongo.MongoClient = pymongo.MongoClient(mongo_server.base_url)
    try:
        connector = MongoConnector("borrowed", mongo_server.url, client=client)
        assert connector.client is client
        connector.close()
        assert client.admin.command("ping")["ok"] == 1
        assert connector.find("orders", {"_id": ObjectId(str(oid(2, 0)))}).row_count == 1
    finally:
        client.close()


def test_importing_the_package_loads_no_driver() -> None:
    """pymongo (and bson) load when a connector is created, not when relay_nb is imported."""
    code = (
        "import sys, relay_nb.connectors.mongo as m; "
        "assert m.MongoConnector.kind == 'mongo'; "
        "print(sorted(n for n in ('pymongo', 'bson') if n in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
