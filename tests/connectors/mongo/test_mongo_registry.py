"""The Mongo connector through relay.connect and relay.config.json; no leaked clients."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from mongo_support import ALLOWED, MongoServer

from relay_nb import Relay, ScriptedRuntime
from relay_nb.connectors.mongo import MongoConnector


def url(server: MongoServer) -> str:
    return f"{server.base_url.rstrip('/')}/{server.database}"


def test_relay_connect_builds_a_mongo_connector_from_a_url(mongo_server: MongoServer) -> None:
    relay = Relay(ScriptedRuntime(), ledger=False)
    events = relay.connect("events", url(mongo_server), collections=list(ALLOWED))
    assert isinstance(events, MongoConnector)
    status = relay.connector_status().set_index("id").loc["events"]
    assert (status["type"], status["status"]) == ("mongo", "ok")
    assert status["objects"].split(", ") == list(ALLOWED)
    relay.close()


def test_a_config_file_with_the_relay_e_spellings(
    mongo_server: MongoServer, tmp_path: Path
) -> None:
    path = tmp_path / "relay.config.json"
    path.write_text(
        json.dumps(
            {
                "connectors": [
                    {
                        "type": "mongo",
                        "id": "events",
                        "config": {
                            "url": url(mongo_server),
                            "sampleSize": 5,
                            "collectionAllowlist": list(ALLOWED)[:1],
                            "maxValueBytes": 4096,
                            "max_result_bytes": 1 << 20,
                        },
                    }
                ]
            }
        )
    )
    relay = Relay(ScriptedRuntime(), ledger=False, config=path)
    events = relay.connectors["events"]
    assert events.sample_size == 5  # type: ignore[attr-defined]
    assert events.max_value_bytes == 4096  # type: ignore[attr-defined]
    assert events.max_result_bytes == 1 << 20  # type: ignore[attr-defined]
    assert events.object_names() == list(ALLOWED)[:1]
    relay.close()


def test_replace_and_disconnect_close_the_client(mongo_server: MongoServer) -> None:
    relay = Relay(ScriptedRuntime(), ledger=False)

    def cycle() -> None:
        for _ in range(2):  # the second connect replaces (and must close) the first
            relay.connect("events", url(mongo_server), collections=list(ALLOWED)).object_names()
        relay.disconnect("events")

    cycle()
    fds, threads = len(os.listdir("/proc/self/fd")), threading.active_count()
    for _ in range(5):
        cycle()
    threading.Event().wait(0.5)  # pymongo's monitor threads stop asynchronously after close()
    assert len(os.listdir("/proc/self/fd")) <= fds
    assert threading.active_count() <= threads
    relay.close()
