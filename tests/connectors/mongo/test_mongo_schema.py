"""Schema inference from sampled documents and the Mongo prompt context.

Inference and rendering run on hand-written documents; the prompt, the allowlist, sampling
commands and refresh run against the real server.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Iterator

import pymongo
import pytest
from bson import Decimal128, ObjectId
from mongo_support import ALLOWED, CommandLog, MongoServer

from relay_nb.connectors.mongo import MongoConnector
from relay_nb.connectors.mongo.operators import STAGES
from relay_nb.connectors.mongo.schema import (
    CollectionInfo,
    MongoCatalog,
    infer_shape,
    rank_collections,
    render_collections,
)
from relay_nb.errors import ConfigurationError


def test_shape_shows_types_unions_nulls_and_optional_fields() -> None:
    documents = [
        {
            "_id": ObjectId(),
            "type": "view",
            "ts": dt.datetime(2025, 1, 1),
            "payload": {"x": 1},
            "tags": ["a"],
            "plan": "pro",
            "n": 1,
        },
        {
            "_id": ObjectId(),
            "type": "click",
            "ts": dt.datetime(2025, 1, 2),
            "payload": {"x": 2, "y": 2.5},
            "tags": [],
            "plan": None,
            "n": "one",
            "price": Decimal128("1.5"),
        },
    ]
    shape, fields = infer_shape(documents, max_depth=3)
    assert shape == (
        "{ _id: objectid, type: string, ts: date, payload: { x: int, y?: double }, "
        "tags: array<string>, plan: string|null, n: int|string, price?: decimal }"
    )
    assert fields == (
        "_id",
        "type",
        "ts",
        "payload",
        "payload.x",
        "payload.y",
        "tags",
        "plan",
        "n",
        "price",
    )


def test_arrays_of_objects_and_depth_collapse() -> None:
    documents = [{"items": [{"sku": "A", "qty": 1}, {"sku": "B"}], "a": {"b": {"c": {"d": 1}}}}]
    shallow, _ = infer_shape(documents, max_depth=1)
    assert shallow == "{ items: array<{ sku: string, qty?: int }>, a: { b: object } }"
    deep, fields = infer_shape(documents, max_depth=3)
    assert "a: { b: { c: { d: int } } }" in deep
    assert "a.b.c.d" in fields and "items.sku" in fields


def test_odd_field_names_are_quoted_and_wide_objects_capped() -> None:
    shape, _ = infer_shape([{"first name": 1, "a.b": 2, "ok_1": 3}], max_depth=2)
    assert shape == '{ "first name": int, "a.b": int, ok_1: int }'
    wide, _ = infer_shape([{f"f{i}": i for i in range(45)}], max_depth=1)
    assert wide.endswith("f39: int, …+5 fields }")
    assert infer_shape([], max_depth=3)[0] == "{ } (no documents sampled)"


def _catalog() -> MongoCatalog:
    def info(name: str, fields: tuple[str, ...]) -> CollectionInfo:
        shape = "{ " + ", ".join(f"{f}: string" for f in fields) + " }"
        return CollectionInfo(name=name, sampled=3, estimated_count=3, shape=shape, fields=fields)

    return MongoCatalog(
        database="shop",
        sample_size=3,
        collections=(
            info("audit_log", ("actor", "action")),
            info("customers", ("name", "email", "plan")),
            info("invoices", ("customer_id", "amount", "due_date")),
            info("shipments", ("carrier", "tracking")),
        ),
    )


def test_ranking_prefers_collection_names_then_fields() -> None:
    ranked = [c.name for c in rank_collections(_catalog(), "customers on the pro plan")]
    assert ranked[0] == "customers"
    both = [c.name for c in rank_collections(_catalog(), "which customers have unpaid invoices?")]
    assert both[:2] == ["invoices", "customers"]  # invoices also has customer_id
    by_field = [c.name for c in rank_collections(_catalog(), "tracking numbers per carrier")]
    assert by_field[0] == "shipments"
    assert [c.name for c in rank_collections(_catalog(), "hello")] == [
        "audit_log",
        "customers",
        "invoices",
        "shipments",
    ]


def test_capped_rendering_keeps_the_relevant_and_names_the_rest() -> None:
    catalog = _catalog()
    full = render_collections(catalog)
    assert full.count("\n") == 3
    capped = render_collections(catalog, max_tokens=50, question="tracking of shipments")
    assert "- shipments (~3 docs) { carrier" in capped
    assert "customers (~3 docs)" not in capped
    assert re.search(r"… 3 more collection\(s\), schema not shown: .*customers", capped)


# -- against the server -------------------------------------------------------------------------


def test_prompt_lists_allowed_collections_with_inferred_types(shop: MongoConnector) -> None:
    text = shop.prompt_context()
    assert text.startswith("### Mongo connector: shop — database shop, read-only\n")
    assert "Query with query_shop" in text and '{"$oid": "…"}' in text
    assert "fields outside the sample may exist" in text
    assert "customers (~40 docs) { _id: objectid, name: string, email: string|null" in text
    assert "tags: array<string>, created_at: date" in text
    assert "address?: { city: string, country: string, geo: { lat: double, lon: double } }" in text
    assert "items: array<{ sku: string, qty: int, price: double }>" in text
    assert "shipped_at: date|null, note?: string" in text
    assert "- view paid_orders {" in text
    assert "payload: { x: int, meta: { source: { name: string } } }" in text
    assert "price: decimal" in text
    assert "internal_notes" not in text and "system.js" not in text and "api_key" not in text
    assert "at most 200 documents per query" in text and "each query stops after 10 s" in text
    assert all(stage in text for stage in STAGES)
    assert shop.object_names() == list(ALLOWED)


def test_without_an_allowlist_only_system_collections_are_hidden(mongo_server: MongoServer) -> None:
    connector = MongoConnector("all", mongo_server.url, max_depth=1, name="All of shop")
    try:
        names = connector.object_names()
        assert names == sorted(names) and "internal_notes" in names and "orders" in names
        assert not any(name.startswith("system.") for name in names)
        text = connector.prompt_context()
        assert text.startswith("### Mongo connector: all (All of shop)")
        assert "payload: { x: int, meta: object }" in text  # max_depth=1
        assert "system.js" not in text
    finally:
        connector.close()


def test_capped_prompt_ranks_by_the_question(shop: MongoConnector) -> None:
    text = shop.prompt_context(max_tokens=450, question="events from the app per type")
    assert "- events (~60 docs)" in text
    assert "more collection(s)" in text and "Hard rules" in text
    assert len(text) // 4 <= 450 + 10


def test_one_bounded_sample_per_collection_with_max_time(mongo_server: MongoServer) -> None:
    log = CommandLog()
    client: pymongo.MongoClient = pymongo.MongoClient(mongo_server.base_url, event_listeners=[log])
    connector = MongoConnector(
        "shop", mongo_server.url, collections=ALLOWED, sample_size=7, timeout_s=4, client=client
    )
    try:
        connector.prompt_context()
        connector.prompt_context()  # cached: no second sampling
        samples = [body for name, body in log.commands if name == "aggregate"]
        assert sorted(body["aggregate"] for body in samples) == sorted(ALLOWED)
        assert all(body["pipeline"] == [{"$sample": {"size": 7}}] for body in samples)
        assert all(body["maxTimeMS"] == 4000 for body in samples)
        listings = [body for name, body in log.commands if name == "listCollections"]
        assert len(listings) == 1
    finally:
        connector.close()
        client.close()


@pytest.fixture
def scratch(mongo_server: MongoServer) -> Iterator[tuple[pymongo.MongoClient, str]]:
    """A throwaway database on the same server, for tests that must change data."""
    name = f"relay_scratch_{uuid.uuid4().hex[:8]}"
    client: pymongo.MongoClient = pymongo.MongoClient(mongo_server.base_url)
    try:
        yield client, name
    finally:
        client.drop_database(name)
        client.close()


def test_refresh_samples_again(scratch, mongo_server: MongoServer) -> None:
    client, name = scratch
    client[name].first.insert_one({"a": 1})
    connector = MongoConnector("scratch", mongo_server.base_url, database=name)
    try:
        assert connector.object_names() == ["first"]
        client[name].second.insert_one({"b": "x"})
        client[name].first.insert_one({"a": "now text", "c": True})
        assert connector.object_names() == ["first"]  # cached
        connector.refresh()
        assert connector.object_names() == ["first", "second"]
        text = connector.prompt_context()
        assert "first (~2 docs) { _id: objectid, a: int|string, c?: bool }" in text
    finally:
        connector.close()


def test_empty_database_and_unknown_allowlist_entries(scratch, mongo_server: MongoServer) -> None:
    _, name = scratch
    empty = MongoConnector("empty", mongo_server.base_url, database=name)
    try:
        assert "(no collections)" in empty.prompt_context()
    finally:
        empty.close()
    typo = MongoConnector("shop", mongo_server.url, collections=["orders", "custmers"])
    try:
        with pytest.raises(ConfigurationError, match=r"'custmers' \(did you mean 'customers'\?\)"):
            typo.object_names()
    finally:
        typo.close()
