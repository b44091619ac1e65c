"""A real MCP server (``relay_nb.testing.mcp_server``) over stdio and over streamable HTTP on
127.0.0.1, and MCP connectors to it.

The stdio connector starts the server as its child process; the HTTP server is started here
on a free port, waited for until it listens, and killed afterwards. Connectors that only
read share one server per module (a start costs about a second); tests that crash, time
out or close a server get their own.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from mcp_support import start_http_server, stdio_connector, stop

from relay_nb.connectors.mcp import MCP
from relay_nb.connectors.mcp.connector import MCPConnector


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    process, url = start_http_server()
    yield url
    stop(process)


@pytest.fixture
def own_http_server() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A server of the test's own, for tests that crash it."""
    process, url = start_http_server()
    yield process, url
    stop(process)


@pytest.fixture(scope="module")
def stdio_files() -> Iterator[MCPConnector]:
    connector = stdio_connector()
    yield connector
    connector.close()


@pytest.fixture(scope="module")
def http_docs(http_url: str) -> Iterator[MCPConnector]:
    connector = MCP(url=http_url, timeout_s=10).build_connector("docs")
    yield connector
    connector.close()


@pytest.fixture(params=["stdio", "http"])
def connector(request: pytest.FixtureRequest) -> MCPConnector:
    """The shared stdio connector (id ``files``), then the shared HTTP one (id ``docs``)."""
    return request.getfixturevalue("stdio_files" if request.param == "stdio" else "http_docs")
