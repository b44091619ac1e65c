"""Fixtures: the shop API and a "foreign" server, both real, on 127.0.0.1.

The servers live in ``http_live_server.py``; they are started once per session and their
request logs are cleared for each test. Every test that uses ``api`` also checks, at the end,
that nothing reached the foreign server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from http_live_server import LiveServer, start_server

from relay_nb.connectors.http import HTTPConnector


@pytest.fixture(scope="session")
def _servers() -> Iterator[tuple[LiveServer, LiveServer]]:
    api, foreign = start_server(), start_server()
    api.foreign_url = foreign.url
    yield api, foreign
    for state in (api, foreign):
        state.server.shutdown()
        state.server.server_close()


@pytest.fixture
def foreign(_servers: tuple[LiveServer, LiveServer]) -> Iterator[LiveServer]:
    """The host nothing may ever reach; every test ends by checking it saw no request."""
    server = _servers[1]
    server.clear()
    yield server
    assert server.requests == [], "a request reached the foreign server"


@pytest.fixture
def api(_servers: tuple[LiveServer, LiveServer], foreign: LiveServer) -> LiveServer:
    server = _servers[0]
    server.clear()
    return server


@pytest.fixture
def shop(api: LiveServer) -> HTTPConnector:
    """GET-only connector on ``/v1`` with the OpenAPI document served by the API itself."""
    return HTTPConnector(
        "shop",
        api.base,
        openapi=api.url + "/openapi.json",
        timeout_s=5.0,
        max_response_bytes=20_000,
        row_limit=50,
    )
