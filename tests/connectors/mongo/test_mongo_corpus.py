"""The Mongo guard corpora, run through the real tool against a real server.

Refusals (``corpus/mongo_refused.yaml``): every entry must come back to the model as
``<rule>: …``, the direct Python API must raise ``UnsafeQueryError`` with the same rule, the
client must have sent the server no command at all, and the server must show nothing changed
(collections, counts, databases and — on SecantusDB — its write counters). A control test
proves that check sees a real write, and that the server would have honoured a ``$out``.

Entries marked ``hides`` or ``drops`` are first shown harmful without the connector's strict
decoder: plain ``bson.json_util`` keeps the key where a walk of dicts and lists cannot see it
although it is still encoded for the server (``hides``), or silently loses it (``drops``).

Benign queries (``corpus/mongo_benign.yaml``) must return exactly what the server returns for
the same query run directly, cut at the row limit.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import bson
import pandas as pd
import pytest
import yaml
from bson import json_util
from bson.code import Code
from bson.dbref import DBRef
from mongo_support import ALLOWED, Watched, server_state

from relay_nb.connectors.mongo import MongoConnector
from relay_nb.connectors.mongo.values import documents_frame
from relay_nb.errors import UnsafeQueryError

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
REFUSED = yaml.safe_load((CORPUS / "mongo_refused.yaml").read_text(encoding="utf-8"))
BENIGN = yaml.safe_load((CORPUS / "mongo_benign.yaml").read_text(encoding="utf-8"))


def _decode(value: Any) -> Any:
    """The oracle's own decoding: plain bson.json_util, as a developer would write it."""
    return json_util.loads(value if isinstance(value, str) else json.dumps(value))


_QUERY_PARTS = ("filter", "projection", "sort", "pipeline")
HIDING = [entry for entry in REFUSED if "hides" in entry or "drops" in entry]


def _walked_keys(value: Any) -> set[str]:
    """Every key a walk of dicts and lists sees: what the guard saw before issue 17."""
    if isinstance(value, dict):
        return set(value).union(*(_walked_keys(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_walked_keys(item) for item in value))
    return set()


def _tool_only(spec: dict[str, Any]) -> bool:
    """Find options on an aggregate (or a pipeline on a find) exist only as tool input."""
    if spec.get("operation") == "aggregate":
        return bool(set(spec) - {"collection", "operation", "pipeline"})
    return "pipeline" in spec


def _direct(connector: MongoConnector, spec: dict[str, Any]) -> Any:
    if spec.get("operation") == "aggregate":
        return connector.aggregate(spec["collection"], spec.get("pipeline"))
    options = {k: spec[k] for k in ("filter", "projection", "sort", "limit") if k in spec}
    return connector.find(spec["collection"], **options)


def test_corpora_are_well_formed() -> None:
    for corpus in (REFUSED, BENIGN):
        ids = [entry["id"] for entry in corpus]
        assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
        assert all(set(entry) >= {"id", "input"} for entry in corpus)
    rules = Counter(entry["rule"] for entry in REFUSED)
    # every refusal family the guard has, each exercised more than once
    for rule in (
        "javascript",
        "write_stage",
        "admin_stage",
        "stage_not_allowed",
        "operator_not_allowed",
        "collection_not_allowed",
        "system_collection",
        "invalid_json",
        "bad_limit",
    ):
        assert rules[rule] >= 2, rule
    assert len(REFUSED) >= 80 and len(BENIGN) >= 30
    assert len(HIDING) >= 25 and all(e["rule"] in ("invalid_json", "javascript") for e in HIDING)


@pytest.mark.parametrize("entry", REFUSED, ids=[e["id"] for e in REFUSED])
async def test_refused_nothing_reaches_the_server(entry: dict[str, Any], watch: Watched) -> None:
    before = server_state(watch.client, watch.server.database)
    watch.log.clear()

    result = await watch.connector.tools()[0].run(entry["input"])

    assert result.is_error, result.content
    assert result.rule == entry["rule"], result.content
    assert len(result.content) < 400  # short enough to read, long enough to say what to do
    if not _tool_only(entry["input"]):
        with pytest.raises(UnsafeQueryError) as refused:
            _direct(watch.connector, entry["input"])
        assert refused.value.rule == entry["rule"]
    assert watch.log.names() == []  # refused before a single command left the client
    assert server_state(watch.client, watch.server.database) == before
    target = entry.get("creates")
    if target and target.startswith("db:"):
        assert target[3:] not in watch.client.list_database_names()
    elif target:
        assert target not in watch.client[watch.server.database].list_collection_names()


@pytest.mark.parametrize("entry", HIDING, ids=[e["id"] for e in HIDING])
def test_plain_json_util_hides_or_drops_the_key(entry: dict[str, Any]) -> None:
    """Without the strict decoder the entry is harmful, so its refusal is not vacuous: the key
    is in the input, a dict/list walk of json_util's result never meets it, and the BSON
    sent to the server still holds it (``hides``: in a DBRef's extra fields or ``$id``, in
    a Code's scope) or has lost it (``drops``: what would run is not what was written)."""
    key = entry.get("hides") or entry["drops"]
    parts = {k: v for k, v in entry["input"].items() if k in _QUERY_PARTS}
    assert key in json.dumps(parts)
    decoded = {k: _decode(v) for k, v in parts.items()}
    assert key not in _walked_keys(decoded)
    wire = bson.encode({"query": decoded})
    if "hides" in entry:
        assert key.encode() in wire
        assert _carriers(decoded), "json_util made no DBRef or Code of it"
    else:
        assert key.encode() not in wire


def _carriers(value: Any) -> list[Any]:
    """The DBRef and Code values json_util made: where a dict/list walk stops."""
    if isinstance(value, (DBRef, Code)):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [found for item in items for found in _carriers(item)]


def test_the_write_check_sees_real_writes(watch: Watched) -> None:
    """Control: without the guard the server runs ``$out`` — and ``server_state`` notices."""
    scratch = f"relay_scratch_{uuid.uuid4().hex[:8]}"
    db = watch.client[scratch]
    try:
        db.source.insert_many([{"n": i} for i in range(3)])
        before = server_state(watch.client, scratch)
        list(db.source.aggregate([{"$match": {"n": {"$gte": 1}}}, {"$out": "copied"}]))
        after = server_state(watch.client, scratch)
        assert after != before
        assert after["collections"]["copied"] == 2
    finally:
        watch.client.drop_database(scratch)


@pytest.mark.parametrize("entry", BENIGN, ids=[e["id"] for e in BENIGN])
async def test_benign_matches_the_server(entry: dict[str, Any], shop: MongoConnector) -> None:
    spec = entry["input"]
    result = await shop.tools()[0].run(spec)
    assert not result.is_error, result.content
    got = result.artifact

    collection = shop.client[shop.database_name][spec["collection"]]
    if spec.get("operation") == "aggregate":
        raw = list(collection.aggregate(_decode(spec["pipeline"])))
    else:
        sort = _decode(spec["sort"]) if "sort" in spec else None
        raw = list(
            collection.find(
                _decode(spec.get("filter", {})),
                _decode(spec["projection"]) if "projection" in spec else None,
                sort=list(sort.items()) if isinstance(sort, dict) else sort,
                limit=spec.get("limit", 0),
            )
        )
    expected = documents_frame(raw[: shop.row_limit], max_depth=shop.max_depth)

    assert got.language == "mongo" and got.connector_id == "shop"
    assert got.row_count == len(got.df) == min(len(raw), shop.row_limit)
    assert got.truncated is entry.get("truncated", False)
    assert got.row_count == entry["rows"] if "rows" in entry else got.row_count > 0
    pd.testing.assert_frame_equal(got.df, expected)
    assert json.loads(got.executed_sql)["maxTimeMS"] == shop.max_time_ms
    assert spec["collection"] == got.tables[0] and set(got.tables) <= set(ALLOWED)
