"""The deterministic ``shop`` dataset for the Mongo connector tests.

Run by ``scripts/services start`` (``.venv/bin/python tests/connectors/mongo/seed_mongo.py
URL``) and by the test session fixture, both through :func:`ensure`, which re-seeds only when
the data differs (SecantusDB runs with ``:memory:`` storage, so every server start is empty).

What it holds, and why:

* ``customers`` (40): nested ``address.geo`` three levels deep, ``tags`` arrays, ``email``
  null for some, ``address`` missing for some (an optional field), ObjectId ``_id``s;
* ``orders`` (240, more than the default row limit of 200): ``items`` arrays of objects,
  ``customer_id`` ObjectIds, ``ordered_at`` dates, ``shipped_at`` date-or-null, ``note``
  only on some;
* ``products`` (20): string ``_id``, Decimal128 ``price``, ``category`` sometimes null;
* ``events`` (60): ``payload.meta.source.name`` nested deeper than the default max_depth;
* ``tickets`` (12): the Extended JSON types a query may name — DBRefs to ``customers``
  (with ``$db`` on even tickets, without on odd ones) and to ``orders``, a UUID (binary
  subtype 4), an Int64 past 2**53, a Timestamp, a Decimal128, a date and a subtype-0 binary;
* ``internal_notes``: a collection the tests leave off the allowlist (it holds a fake key);
* ``system.js``: a ``system.`` collection, never visible to the connector;
* ``paid_orders``: a view on ``orders``.

Only pymongo is imported: the script runs without relay_nb on the path.
"""

from __future__ import annotations

import datetime as dt
import random
import sys
from decimal import Decimal
from typing import Any

__all__ = ["EXPECTED_COUNTS", "ensure", "oid", "seed"]

DATABASE = "shop"
STATUSES = ("paid", "shipped", "delivered", "cancelled", "pending")
CITIES = (("Berlin", "DE"), ("Lyon", "FR"), ("Porto", "PT"), ("Oslo", "NO"), ("Graz", "AT"))
CATEGORIES = ("books", "games", "garden", None)
EXPECTED_COUNTS = {
    "customers": 40,
    "orders": 240,
    "products": 20,
    "events": 60,
    "tickets": 12,
    "internal_notes": 3,
    "system.js": 1,
}
FAKE_KEY = "sk-relay-mongo-test-only-0000"
_EPOCH = dt.datetime(2025, 1, 1)


def oid(kind: int, number: int) -> Any:
    """A fixed ObjectId: tests can name one without reading the data first."""
    from bson import ObjectId

    return ObjectId(f"{0x65000000 + kind:08x}{number:016x}")


def _customers(rng: random.Random) -> list[dict[str, Any]]:
    docs = []
    for i in range(EXPECTED_COUNTS["customers"]):
        city, country = CITIES[i % len(CITIES)]
        doc: dict[str, Any] = {
            "_id": oid(1, i),
            "name": f"Customer {i:02d}",
            "email": None if i % 7 == 3 else f"customer{i:02d}@example.test",
            "plan": ("free", "pro", "team", None)[i % 4],
            "tags": [t for t in ("vip", "newsletter", "beta") if rng.random() < 0.4],
            "created_at": _EPOCH + dt.timedelta(days=i * 3, hours=i % 24),
        }
        if i % 5 != 4:
            doc["address"] = {
                "city": city,
                "country": country,
                "geo": {"lat": round(40 + i * 0.37, 4), "lon": round(-3 + i * 0.21, 4)},
            }
        docs.append(doc)
    return docs


def _products() -> list[dict[str, Any]]:
    from bson import Decimal128

    return [
        {
            "_id": f"SKU-{i:03d}",
            "name": f"Product {i:02d}",
            "category": CATEGORIES[i % len(CATEGORIES)],
            "price": Decimal128(Decimal(5 + i * 2) + Decimal("0.99")),
            "stock": (i * 7) % 23,
        }
        for i in range(EXPECTED_COUNTS["products"])
    ]


def _orders(rng: random.Random) -> list[dict[str, Any]]:
    docs = []
    for i in range(EXPECTED_COUNTS["orders"]):
        items = []
        for _ in range(1 + i % 3):
            sku = rng.randrange(EXPECTED_COUNTS["products"])
            items.append(
                {
                    "sku": f"SKU-{sku:03d}",
                    "qty": 1 + rng.randrange(3),
                    "price": round(5.99 + 2 * sku, 2),
                }
            )
        status = STATUSES[i % len(STATUSES)]
        ordered_at = _EPOCH + dt.timedelta(days=i // 2, minutes=37 * i % 1440)
        doc: dict[str, Any] = {
            "_id": oid(2, i),
            "customer_id": oid(1, i % EXPECTED_COUNTS["customers"]),
            "status": status,
            "total": round(sum(item["qty"] * item["price"] for item in items), 2),
            "items": items,
            "ordered_at": ordered_at,
            "shipped_at": ordered_at + dt.timedelta(days=2)
            if status in ("shipped", "delivered")
            else None,
        }
        if i % 9 == 0:
            doc["note"] = "gift wrap" if i % 2 else "leave at door"
        docs.append(doc)
    return docs


def _events() -> list[dict[str, Any]]:
    return [
        {
            "_id": oid(3, i),
            "type": ("view", "click", "purchase")[i % 3],
            "user_id": oid(1, i % EXPECTED_COUNTS["customers"]),
            "ts": _EPOCH + dt.timedelta(hours=i * 5),
            "payload": {"x": i, "meta": {"source": {"name": ("web", "app")[i % 2]}}},
        }
        for i in range(EXPECTED_COUNTS["events"])
    ]


def _tickets() -> list[dict[str, Any]]:
    import uuid

    from bson import Binary, Decimal128, Int64, Timestamp
    from bson.dbref import DBRef

    return [
        {
            "_id": oid(4, i),
            "customer": DBRef("customers", oid(1, i % 4), DATABASE if i % 2 == 0 else None),
            "order": DBRef("orders", oid(2, i)),
            "trace": Binary.from_uuid(uuid.UUID(int=0x1000 + i)),
            "sequence": Int64(9_007_199_254_740_993 + i),
            "opened_at": _EPOCH + dt.timedelta(days=i, hours=3),
            "logged": Timestamp(1_735_689_600 + i * 3600, 1),
            "refund": Decimal128(f"{i}.25"),
            "attachment": Binary(bytes([i, i + 1]), 0),
        }
        for i in range(EXPECTED_COUNTS["tickets"])
    ]


def _internal_notes() -> list[dict[str, Any]]:
    return [
        {"_id": i, "owner": "ops", "api_key": f"{FAKE_KEY}{i}"}
        for i in range(EXPECTED_COUNTS["internal_notes"])
    ]


def seed(url: str, database: str = DATABASE) -> None:
    """Drop ``database`` and write the dataset (and the view) again."""
    import pymongo
    from bson import Code

    rng = random.Random(20250101)
    with pymongo.MongoClient(url, serverSelectionTimeoutMS=10_000) as client:
        client.drop_database(database)
        db = client[database]
        db.customers.insert_many(_customers(rng))
        db.products.insert_many(_products())
        db.orders.insert_many(_orders(rng))
        db.events.insert_many(_events())
        db.tickets.insert_many(_tickets())
        db.internal_notes.insert_many(_internal_notes())
        db["system.js"].insert_one({"_id": "leak", "value": Code("function () { return 1 }")})
        db.create_collection(
            "paid_orders", viewOn="orders", pipeline=[{"$match": {"status": "paid"}}]
        )


def ensure(url: str, database: str = DATABASE) -> str:
    """Seed unless the data is already there; returns "seeded" or "already seeded"."""
    import pymongo

    with pymongo.MongoClient(url, serverSelectionTimeoutMS=10_000) as client:
        db = client[database]
        listed = {c["name"]: c.get("type") for c in db.list_collections()}
        current = {name: db[name].count_documents({}) for name in EXPECTED_COUNTS if name in listed}
        if current == EXPECTED_COUNTS and listed.get("paid_orders") == "view":
            return "already seeded"
    seed(url, database)
    return "seeded"


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: seed_mongo.py MONGODB_URL [DATABASE]")
    target = sys.argv[2] if len(sys.argv) == 3 else DATABASE
    print(f"mongo {target}: {ensure(sys.argv[1], target)}")
