"""Real MongoDB-wire servers for the Mongo connector tests, seeded with ``seed_mongo``.

SecantusDB comes from ``scripts/services start`` (``RELAY_TEST_SECANTUS_URL``); a real
``mongod`` joins as a second parametrization when ``RELAY_TEST_MONGO_URL`` is set. A missing
or unreachable server skips locally and *fails* under ``CI=true`` (the shared
``_unavailable`` helper of ``tests/connectors/conftest.py``).

``RELAY_TEST_MONGO_URL`` must name a throwaway server: the database in its path (default
``shop``) is dropped and re-seeded whenever its data differs from ``seed_mongo``'s.

Fixtures: ``mongo_server`` (parametrized), ``secantus_server``, ``shop`` (a shared connector
on the allowlisted collections; never close it) and ``watch`` (a shared connector whose
client logs every command it sends, for "nothing reached the server" checks; the log is
emptied for each test). Helpers live in ``mongo_support``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pymongo
import pytest
import seed_mongo
from mongo_support import ALLOWED, CommandLog, MongoServer, Watched

from relay_nb.connectors.mongo import MongoConnector


def _load_parent_conftest() -> Any:
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("relay_connectors_conftest_for_mongo", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


_unavailable = _load_parent_conftest()._unavailable


def _server(kind: str, env: str) -> MongoServer:
    base = os.environ.get(env)
    if not base:
        _unavailable(f"{kind}: {env} is not set")
    assert base
    try:
        with pymongo.MongoClient(base, serverSelectionTimeoutMS=3000) as client:
            client.admin.command("ping")
    except pymongo.errors.PyMongoError as exc:
        _unavailable(f"{kind} at {env} is unreachable: {type(exc).__name__}")
    database = urlsplit(base).path.lstrip("/") or seed_mongo.DATABASE
    seed_mongo.ensure(base, database)
    return MongoServer(kind=kind, base_url=base, database=database)


_KINDS = {"secantus": ("SecantusDB", "RELAY_TEST_SECANTUS_URL")}
if os.environ.get("RELAY_TEST_MONGO_URL"):
    _KINDS["mongod"] = ("mongod", "RELAY_TEST_MONGO_URL")


@pytest.fixture(scope="session")
def secantus_server() -> MongoServer:
    return _server(*_KINDS["secantus"])


@pytest.fixture(scope="session", params=list(_KINDS))
def mongo_server(request: pytest.FixtureRequest) -> MongoServer:
    """SecantusDB, and a real mongod when ``RELAY_TEST_MONGO_URL`` is set."""
    if request.param == "secantus":
        return request.getfixturevalue("secantus_server")
    return _server(*_KINDS[request.param])


@pytest.fixture(scope="session")
def shop(mongo_server: MongoServer) -> Iterator[MongoConnector]:
    """Shared across tests (sampling costs a round trip per collection): do not close it;
    tests that close, refresh or reconfigure make their own connector."""
    connector = MongoConnector("shop", mongo_server.url, collections=ALLOWED, timeout_s=10)
    yield connector
    connector.close()


@pytest.fixture(scope="session")
def _watched(mongo_server: MongoServer) -> Iterator[Watched]:
    log = CommandLog()
    client: pymongo.MongoClient = pymongo.MongoClient(
        mongo_server.base_url, event_listeners=[log], serverSelectionTimeoutMS=5000
    )
    connector = MongoConnector(
        "shop", mongo_server.url, collections=ALLOWED, timeout_s=10, client=client
    )
    connector.object_names()  # sample now, so later commands are the query's alone
    log.clear()
    try:
        yield Watched(connector=connector, log=log, client=client, server=mongo_server)
    finally:
        connector.close()
        client.close()


@pytest.fixture
def watch(_watched: Watched) -> Watched:
    """The shared watched connector with an empty command log."""
    _watched.log.clear()
    return _watched
