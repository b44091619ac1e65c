"""Mongo results bounded in bytes while they are read (issue 17, class 3).

The data: a scratch database whose ``seed`` collection holds one document with a 1 MiB string,
and a view ``blobs`` on it that builds :data:`BLOBS` documents of 10 MiB each (ten copies of
the string). A view, not stored documents, because of SecantusDB's own limits: its storage is
an in-memory WiredTiger cache of 128 MiB (``scripts/services``) that also holds an oplog of
every inserted document for an hour (3600 s retention, 100,000 entries); a handful of stored
10 MiB documents filled it (``WT_CACHE_FULL``: every later write failed, other tests' seeding
included) and dropping them does not give the oplog's copies back. Documents are at most
16 MiB there (``maxBsonObjectSize``), a batch at most 16 MiB, a message 48 MB.

The peak memory of a read is measured in a fresh process (``rss_probe.py``, with
:class:`relay_nb.testing.memory.PeakGrowth`): plain pymongo's ``list(cursor)`` is shown to
hold far more than the 16 MiB cap first, so the connector's bound cannot hold vacuously.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from mongo_support import CommandLog, MongoServer

from relay_nb.connectors.bounds import CLIP_MARK, DEFAULT_MAX_RESULT_BYTES
from relay_nb.connectors.mongo import MongoConnector
from relay_nb.connectors.mongo.fetch import Reading, first_batch, read_documents
from relay_nb.connectors.results import preview_for_model
from relay_nb.errors import QueryExecutionError

MIB = 1 << 20
BLOBS = 16
"""Documents the view builds: 160 MiB in all, ten times the default result limit."""
DOCUMENT = 10 * MIB
PROBE = Path(__file__).with_name("rss_probe.py")
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def big(mongo_server: MongoServer) -> Iterator[tuple[MongoServer, str]]:
    """The scratch database with ``seed`` (1 MiB stored) and the ``blobs`` view."""
    name = f"relay_bounds_{uuid.uuid4().hex[:8]}"
    client: pymongo.MongoClient = pymongo.MongoClient(mongo_server.base_url)
    db = client[name]
    try:
        db.seed.insert_one({"_id": 0, "s": "x" * MIB})
        db.create_collection(
            "blobs",
            viewOn="seed",
            pipeline=[
                {"$project": {"i": {"$range": [0, BLOBS]}, "s": 1}},
                {"$unwind": "$i"},
                {"$project": {"_id": "$i", "n": "$i", "text": {"$concat": ["$s"] * 10}}},
            ],
        )
        yield mongo_server, name
    finally:
        client.drop_database(name)
        client.close()


@pytest.fixture
def logged(big: tuple[MongoServer, str]) -> Iterator[tuple[MongoConnector, CommandLog]]:
    server, name = big
    log = CommandLog()
    client: pymongo.MongoClient = pymongo.MongoClient(server.base_url, event_listeners=[log])
    connector = MongoConnector(
        "big", server.base_url, database=name, collections=["blobs", "seed"], client=client
    )
    try:
        yield connector, log
    finally:
        connector.close()
        client.close()


def _probe(server: MongoServer, database: str, mode: str, pipeline: Any = ()) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            str(PROBE),
            server.base_url,
            database,
            "blobs",
            mode,
            json.dumps(pipeline),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def _clipped(text: str, limit: int) -> bool:
    """Cut to the value limit (counted in UTF-8 bytes, the mark included), mark at the end."""
    return text.endswith(CLIP_MARK) and limit - 16 < len(text.encode()) <= limit


def _seed_state(connector: MongoConnector) -> list[dict[str, Any]]:
    return list(connector.client[connector.database_name].seed.find({}))


# -- memory, measured in a process of its own ----------------------------------------------------


def test_raw_pymongo_holds_the_whole_result_the_connector_a_bounded_part(
    big: tuple[MongoServer, str],
) -> None:
    server, name = big
    raw = _probe(server, name, "raw-find")
    # shown harmful first: list(cursor) holds every 10 MiB document decoded
    assert raw["rows"] == BLOBS and raw["bytes_held"] == BLOBS * DOCUMENT
    assert raw["growth"] > 8 * DEFAULT_MAX_RESULT_BYTES, raw

    for mode, pipeline in (("connector-find", ()), ("connector-aggregate", [{"$match": {}}])):
        bounded = _probe(server, name, mode, pipeline)
        # the catalog pass and the query together: a few documents in flight, never all
        assert bounded["growth"] < 128 * MIB, bounded
        assert bounded["growth"] < raw["growth"] * 0.6, (bounded, raw)
        assert (bounded["rows"], bounded["limit"]) == (1, "bytes"), bounded
        assert MIB - 16 < bounded["longest_value"] <= MIB, bounded  # cut to max_value_bytes


# -- what the connector keeps, says and sends ----------------------------------------------------


def test_reading_stops_at_the_byte_limit_clips_values_and_kills_the_cursor(
    logged: tuple[MongoConnector, CommandLog],
) -> None:
    connector, log = logged
    connector.object_names()
    before = _seed_state(connector)
    log.clear()

    result = connector.find("blobs", sort={"_id": 1})

    assert (result.row_count, result.truncated, result.limit) == (1, True, "bytes")
    text = result.df.loc[0, "text"]
    assert _clipped(text, MIB) and text.startswith("x" * 1000)
    stopped, clipped = result.notes
    assert stopped.startswith(
        "stopped reading after 1 documents: the next one would pass the 16 MiB"
    )
    assert clipped.startswith("1 value longer than 1 MiB (max_value_bytes) cut")
    preview = preview_for_model(result)
    assert preview.startswith("1 row (stopped at the result's byte limit; more rows may exist)")
    assert f"note: {stopped}" in preview and len(preview) <= 4000

    sent = [(name, body) for name, body in log.commands if name not in ("endSessions",)]
    names = [name for name, _ in sent]
    assert names == ["find", "getMore", "killCursors"], names  # the rest is never sent
    assert sent[0][1]["batchSize"] == 201  # 16 MiB at 64 KiB a document: the whole row limit
    assert sent[1][1]["batchSize"] == 2  # 6 MiB left at 10 MiB a document: the floor

    again = connector.find("blobs", projection={"n": 1, "_id": 0}, sort={"n": 1})
    assert again.row_count == BLOBS and not again.truncated and again.notes == ()
    assert list(again.df["n"]) == list(range(BLOBS))
    assert _seed_state(connector) == before


def test_aggregate_is_bounded_the_same_way_and_limits_are_options(
    big: tuple[MongoServer, str],
) -> None:
    server, name = big
    connector = MongoConnector(
        "big",
        server.base_url,
        database=name,
        collections=["blobs"],
        max_value_bytes=64 << 10,
        max_result_bytes=25 * MIB,
    )
    try:
        result = connector.aggregate("blobs", [{"$sort": {"n": -1}}])
        assert (result.row_count, result.truncated, result.limit) == (2, True, "bytes")
        assert list(result.df["n"]) == [BLOBS - 1, BLOBS - 2]
        assert all(_clipped(t, 64 << 10) for t in result.df["text"])
        assert result.notes[0].startswith("stopped reading after 2 documents")
        assert result.notes[1].startswith("2 values longer than 64 KiB (max_value_bytes) cut")
        lengths = connector.aggregate(
            "blobs", [{"$project": {"n": 1, "size": {"$strLenCP": "$text"}}}]
        )
        assert lengths.row_count == BLOBS and set(lengths.df["size"]) == {DOCUMENT}
        assert (lengths.truncated, lengths.limit) == (False, "rows")
    finally:
        connector.close()


def test_a_first_document_over_the_limit_is_an_error_that_says_what_to_do(
    big: tuple[MongoServer, str],
) -> None:
    server, name = big
    connector = MongoConnector(
        "big", server.base_url, database=name, collections=["blobs"], max_result_bytes=4 * MIB
    )
    try:
        with pytest.raises(QueryExecutionError, match="first document is larger than 4 MiB") as e:
            connector.find("blobs")
        assert "projection" in str(e.value) and "$substrCP" in str(e.value)
        assert connector.find("blobs", projection={"text": 0}).row_count == BLOBS
    finally:
        connector.close()


def test_the_catalog_pass_samples_within_the_byte_limit(
    logged: tuple[MongoConnector, CommandLog],
) -> None:
    connector, log = logged
    catalog = connector.catalog
    blobs = next(info for info in catalog.collections if info.name == "blobs")
    # two collections share 16 MiB: the first 10 MiB document is always observed, the next
    # read passes the 8 MiB share, is never observed, and the cursor is killed
    assert blobs.sampled == 1 and "text: string" in blobs.shape
    sampled = [name for name, body in log.commands if body.get("aggregate") == "blobs"]
    assert sampled == ["aggregate"]
    assert "killCursors" in [name for name, _ in log.commands]


# -- batch sizing, without a server --------------------------------------------------------------


class _Cursor:
    """Documents of the given sizes; records the batch size set before each read."""

    def __init__(self, sizes: list[int]) -> None:
        self.documents = iter([{"s": "x" * size} for size in sizes])
        self.sizes: list[int | None] = []
        self._batch: int | None = None

    def batch_size(self, size: int) -> None:
        self._batch = size

    def __next__(self) -> dict[str, str]:
        self.sizes.append(self._batch)
        return next(self.documents)


def _read(sizes: list[int], limit: int, room: int) -> tuple[_Cursor, Reading, list[int]]:
    cursor, reading, left, taken = _Cursor(sizes), Reading(), [room], []
    documents = read_documents(cursor, limit=limit, room=lambda: left[0], reading=reading)  # type: ignore[arg-type]
    for document in documents:
        taken.append(len(document["s"]))
        left[0] -= len(document["s"])
    return cursor, reading, taken


def test_batches_are_sized_to_the_room_left() -> None:
    assert first_batch(16 * MIB, 201) == 201 and first_batch(MIB, 201) == 16
    assert first_batch(1000, 201) == 1
    cursor, reading, taken = _read([MIB, 2 * MIB, MIB, MIB], limit=10, room=10 * MIB)
    # before the 2nd read: 9 MiB left at 1 MiB a document; before the 3rd: 7 MiB at 2 MiB
    # (the largest so far); then 6 and 5 MiB at 2 MiB
    assert cursor.sizes == [None, 8, 3, 2, 2]
    assert taken == [MIB, 2 * MIB, MIB, MIB] and not reading.more and reading.read == 4
    # the rows left cap a batch too (one past the limit is read to tell "more")
    cursor, reading, taken = _read([MIB, 2 * MIB, MIB, MIB], limit=3, room=10 * MIB)
    assert cursor.sizes == [None, 3, 2, 2]
    assert taken == [MIB, 2 * MIB, MIB] and reading.more and reading.read == 3
