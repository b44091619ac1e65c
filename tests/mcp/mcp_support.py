"""Helpers for the MCP tests: start the test server over HTTP, build connectors."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import Any

from relay_nb.connectors.mcp import MCP
from relay_nb.connectors.mcp.connector import MCPConnector
from relay_nb.tools import Tool

SERVER = [sys.executable, "-m", "relay_nb.testing.mcp_server"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_http_server(*extra: str, port: int | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """The test server on ``port`` (default: a free one), once it accepts connections; its
    /mcp URL."""
    port = port or free_port()
    process = subprocess.Popen(
        [*SERVER, "--transport", "http", "--port", str(port), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError("the MCP test server did not start listening") from None
            time.sleep(0.05)
    return process, f"http://127.0.0.1:{port}/mcp"


def stop(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait(timeout=10)


def stdio_connector(connector_id: str = "files", **options: Any) -> MCPConnector:
    options.setdefault("timeout_s", 10)
    return MCP(command=SERVER, **options).build_connector(connector_id)


def by_name(connector: MCPConnector) -> dict[str, Tool]:
    return {tool.name: tool for tool in connector.tools()}


def process_gone(pid: int) -> bool:
    """No such process, or only a zombie waiting for PID 1 to reap it (Linux ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def wait_until(check: Any, *, attempts: int = 200, pause_s: float = 0.05) -> bool:
    """Poll ``check()`` until true (or give up): for what another thread finishes."""
    for _ in range(attempts):
        if check():
            return True
        time.sleep(pause_s)
    return bool(check())
