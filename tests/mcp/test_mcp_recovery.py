"""Recovering from a server that goes away, and leaving nothing behind: an expired schema
with a dead server still answers the turn, close() and crashes end the server's helper
processes, close() during connect is prompt and a ConnectorError, a failed reconnect is
retried after a back-off, and invalidate() never waits on the server."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest
from mcp_support import (
    process_gone,
    start_http_server,
    stdio_connector,
    stop,
    wait_until,
)

from relay_nb import Relay, ScriptedRuntime
from relay_nb.connectors.mcp import MCP
from relay_nb.connectors.mcp.client import MCPClientHost
from relay_nb.errors import ConnectorError
from relay_nb.runtime.types import ToolResultPart

pytestmark = [
    pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)"),
    pytest.mark.slow,  # real server processes crashed, killed and restarted: ~14 s
]


def test_an_expired_schema_with_a_dead_server_still_answers_the_turn() -> None:
    process, url = start_http_server()
    model = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "docs_list_files", "input": {}, "id": "c1"}]},
            {"text": "the server is down"},
        ]
    )
    relay = Relay(model, ledger=False, schema_ttl_s=0.01)
    try:
        relay.connect("docs", MCP(url=url, timeout_s=5))
        stop(process)  # the server goes away (a crash, a restart, a laptop asleep)
        time.sleep(0.05)  # and the schema TTL runs out
        turn = relay.ask("list the files")
        assert turn.answer == "the server is down"
        system = model.requests[0].messages[0].text()
        assert "docs_list_files" in system  # the last good listing, kept
        assert "listing its tools again failed" in system
        assert "docs_list_files" in [t.name for t in model.requests[0].tools]
        (result,) = [
            p
            for m in model.requests[1].messages
            for p in m.parts()
            if isinstance(p, ToolResultPart)
        ]
        assert result.is_error and "docs" in result.content
    finally:
        relay.close()


def test_after_expiry_a_new_listing_is_read_in_the_background_and_swapped_in(stdio_files) -> None:
    first = stdio_files.catalog
    stdio_files.invalidate()  # returns at once; the re-list runs in the background
    assert stdio_files.catalog is first  # nothing read on this thread
    context = stdio_files.prompt_context()  # waits briefly for the re-list
    assert "files_sales_by_region" in context
    assert wait_until(lambda: stdio_files.catalog is not first)
    assert stdio_files.catalog.tools == first.tools


def test_invalidate_never_waits_for_a_read_in_progress() -> None:
    connector = stdio_connector("stuck", timeout_s=1)
    try:
        connector.tools()
        pid = int(connector.call_tool("server_pid").content)
        os.kill(pid, signal.SIGSTOP)  # a wedged server: every request runs out its timeout
        try:
            reading = threading.Thread(target=connector.documents)
            reading.start()
            time.sleep(0.3)  # the read is under way: three resources, each waits out 1 s
            connector.invalidate()  # the registry calls this on the turn's event loop
            assert reading.is_alive()  # it returned while the resources were still being read
        finally:
            os.kill(pid, signal.SIGCONT)
        reading.join(30)
        assert not reading.is_alive()
    finally:
        connector.close()


def test_a_crash_and_close_end_the_helpers_a_server_started() -> None:
    connector = stdio_connector("spawner", args=["--spawn-helper"])
    try:
        server = int(connector.call_tool("server_pid").content)
        helper = int(connector.call_tool("helper_pid").content)
        assert helper > 0 and not process_gone(helper)
        assert os.getpgid(helper) == server == os.getpgid(server)  # the server leads its group
        with pytest.raises(ConnectorError, match="exited or crashed"):
            connector.call_tool("crash")  # the server exits at once, its helper lives on
        assert wait_until(lambda: process_gone(helper))  # ended as the session wound down
        server = int(connector.call_tool("server_pid").content)  # reconnected: a new server
        helper = int(connector.call_tool("helper_pid").content)  # and a new helper
        assert not process_gone(helper)
    finally:
        connector.close()
    assert process_gone(server) and process_gone(helper)  # close() ends them both


def test_close_while_connecting_is_prompt_and_a_connector_error(tmp_path) -> None:
    pid_file = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    connector = MCP(command=[sys.executable, "-c", script]).build_connector("slowstart")
    outcome: list[BaseException] = []

    def connect() -> None:
        try:
            connector.tools()
        except BaseException as exc:
            outcome.append(exc)

    waiting = threading.Thread(target=connect)
    waiting.start()
    assert wait_until(lambda: pid_file.exists() and pid_file.read_text())
    connector.close()  # well inside the 30 s connect timeout
    waiting.join(20)
    assert not waiting.is_alive()
    (error,) = outcome
    assert isinstance(error, ConnectorError)
    assert "'slowstart' was closed while connecting" in str(error)
    assert process_gone(int(pid_file.read_text()))


def test_a_failed_reconnect_is_retried_after_a_back_off_or_at_refresh(monkeypatch) -> None:
    process, url = start_http_server()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    connector = MCP(url=url, timeout_s=5).build_connector("docs")

    def server_goes_away() -> None:
        stop(process)
        with pytest.raises(ConnectorError, match="closed the connection"):
            connector.call_tool("list_files")
        with pytest.raises(ConnectorError) as failed:  # the reconnect fails: nobody listens
            connector.call_tool("list_files")
        assert "could not be reached" in str(failed.value)
        assert "relay.refresh('docs') reconnects now" in str(failed.value)

    try:
        assert connector.call_tool("list_files").content.startswith("notes/")
        server_goes_away()
        process, _ = start_http_server(port=port)  # the server is back
        with pytest.raises(ConnectorError, match=r"relay\.refresh\('docs'\)"):
            connector.call_tool("list_files")  # within the back-off: fails fast, same hint
        connector.refresh()  # what relay.refresh("docs") calls: reconnects at once
        assert connector.call_tool("list_files").content.startswith("notes/")

        server_goes_away()
        process, _ = start_http_server(port=port)
        monkeypatch.setattr(MCPClientHost, "reconnect_backoff_s", 0.0)  # the back-off is over
        assert connector.call_tool("list_files").content.startswith("notes/")
    finally:
        connector.close()
        stop(process)
