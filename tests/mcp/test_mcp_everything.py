"""The MCP connector against the reference server as it ships: ``@modelcontextprotocol/
server-everything`` at the version ``scripts/setup`` pins (issue 36), over stdio and
streamable HTTP. Its tools cover every content type (text, an image beside text, structured
content, resource links and references), progress, and a slow operation; its ``get-env``
tool shows what environment the server was given. Slow: a Node process per connector."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_support import free_port, stop

from relay_nb.connectors.mcp import MCP
from relay_nb.connectors.mcp.connector import MCPConnector

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / ".clis" / "node_modules" / ".bin" / "mcp-server-everything"
VERSION = "2026.8.31"
CANARY = "sk-ant-api03-CANARY-never-for-an-mcp-server-0123456789"


@pytest.fixture(scope="module")
def everything() -> str:
    if not EVERYTHING.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{EVERYTHING} is missing: run scripts/setup (it installs {VERSION})")
        pytest.skip(f"no {EVERYTHING}: run scripts/setup")
    return str(EVERYTHING)


@pytest.fixture(scope="module", params=["stdio", "http"])
def server(request: pytest.FixtureRequest, everything: str) -> Iterator[MCPConnector]:
    if request.param == "stdio":
        os.environ["RELAY_TEST_CANARY_KEY"] = CANARY  # in the notebook's environment only
        connector = MCP(command=[everything, "stdio"], timeout_s=20).build_connector("every")
        try:
            yield connector
        finally:
            connector.close()
            os.environ.pop("RELAY_TEST_CANARY_KEY", None)
        return
    port = free_port()
    process = subprocess.Popen(
        [everything, "streamableHttp"],
        env={"PATH": os.environ["PATH"], "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        connector = None
        while connector is None:
            try:
                connector = MCP(url=f"http://127.0.0.1:{port}/mcp", timeout_s=20).build_connector(
                    "every"
                )
                connector.tools()
            except Exception:
                connector = None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        yield connector
        connector.close()
    finally:
        stop(process)


def run(connector: MCPConnector, tool: str, arguments: dict):
    return asyncio.run({t.name: t for t in connector.tools()}[f"every_{tool}"].run(arguments))


def test_the_reference_server_s_tools_are_offered_and_answer(server: MCPConnector) -> None:
    names = {t.name for t in server.tools()}
    assert {"every_echo", "every_get-sum", "every_get-tiny-image"} <= names
    assert run(server, "echo", {"message": "hi"}).content == "Echo: hi"
    assert "5" in run(server, "get-sum", {"a": 2, "b": 3}).content
    # text, an image, text: the image's placeholder stands between them, whole
    image = run(server, "get-tiny-image", {}).content
    assert "[image (image/png," in image and "not shown to the model]" in image
    assert image.rstrip().endswith("The image above is the MCP logo.")
    structured = run(server, "get-structured-content", {"location": "New York"})
    assert not structured.is_error and structured.content
    links = run(server, "get-resource-links", {"count": 3})
    assert not links.is_error and "[resource link:" in links.content
    context = server.prompt_context()
    assert "Server: mcp-servers/everything" in context and "every_echo" in context


def test_a_long_operation_with_progress_completes(server: MCPConnector) -> None:
    started = time.monotonic()
    done = run(server, "trigger-long-running-operation", {"duration": 2, "steps": 4})
    assert not done.is_error and "completed" in done.content
    assert time.monotonic() - started < 15


def test_the_server_gets_only_the_environment_it_is_given(server: MCPConnector) -> None:
    shown = run(server, "get-env", {})
    assert not shown.is_error and "PATH" in shown.content
    assert CANARY not in shown.content and "RELAY_TEST_CANARY_KEY" not in shown.content


def test_a_slow_call_ends_at_the_timeout_and_the_next_call_answers(everything: str) -> None:
    connector = MCP(command=[everything, "stdio"], timeout_s=2).build_connector("every")
    try:
        slow = run(connector, "trigger-long-running-operation", {"duration": 30, "steps": 3})
        assert slow.is_error and "within 2 s" in slow.content
        assert run(connector, "echo", {"message": "again"}).content == "Echo: again"
    finally:
        connector.close()
