"""The MCP client session's life: crashes and timeouts are tool errors, never a hung turn;
a server that never answers fails at connect; close() leaves no child process behind."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading

import pytest
from mcp_support import by_name, process_gone, stdio_connector, wait_until

from relay_nb.connectors.mcp import MCP
from relay_nb.errors import ConnectorError


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def server_pid(connector) -> int:
    return int(connector.call_tool("server_pid").content)


def mcp_threads(connector_id: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"relay-mcp-{connector_id}"]


async def test_a_crash_mid_call_is_a_tool_error_and_the_next_call_reconnects() -> None:
    connector = stdio_connector("crashy")
    try:
        tools = by_name(connector)
        first_pid = int((await tools["crashy_server_pid"].run({})).content)
        crashed = await asyncio.wait_for(tools["crashy_crash"].run({}), 30)
        assert crashed.is_error
        assert "closed the connection during the call to its tool 'crash'" in crashed.content
        assert "exited or crashed" in crashed.content
        again = await tools["crashy_server_pid"].run({})  # a fresh server process
        assert not again.is_error
        assert int(again.content) != first_pid and not alive(first_pid)
        listed = await tools["crashy_list_files"].run({})
        assert not listed.is_error and "readme.md" in listed.content
    finally:
        connector.close()


async def test_a_crashed_http_server_is_a_tool_error_then_unreachable(own_http_server) -> None:
    process, url = own_http_server
    connector = MCP(url=url, timeout_s=10).build_connector("remote")
    try:
        tools = by_name(connector)
        crashed = await asyncio.wait_for(tools["remote_crash"].run({}), 30)
        assert crashed.is_error and "the server went away" in crashed.content
        assert process.wait(timeout=10) == 3
        later = await asyncio.wait_for(tools["remote_list_files"].run({}), 30)
        assert later.is_error
        assert "could not be reached" in later.content and "is the server running?" in later.content
    finally:
        connector.close()


async def test_a_slow_call_times_out_as_a_tool_error_and_the_server_stays_usable() -> None:
    connector = stdio_connector("sleepy", timeout_s=1)
    try:
        tools = by_name(connector)
        assert tools["sleepy_slow"].timeout_s is not None  # the outer bound is there too
        slow = await asyncio.wait_for(tools["sleepy_slow"].run({"seconds": 30}), 20)
        assert slow.is_error
        assert "did not answer the call to its tool 'slow' within 1 s" in slow.content
        quick = await tools["sleepy_slow"].run({"seconds": 0})
        assert not quick.is_error and quick.content == "waited 0.0 s"
    finally:
        connector.close()


async def test_a_turn_cancelled_mid_call_cancels_the_request() -> None:
    connector = stdio_connector("cancel", timeout_s=60)  # only the cancellation can end it
    try:
        tool = by_name(connector)["cancel_slow"]

        def calls() -> dict[str, int]:
            return json.loads(connector.call_tool("slow_calls").content)

        with pytest.raises(TimeoutError):
            await asyncio.wait_for(tool.run({"seconds": 30}), 0.5)
        # the server saw the request cancelled (not left running on the host's loop)
        await asyncio.to_thread(wait_until, lambda: calls()["cancelled"] == 1, attempts=60)
        assert calls() == {"running": 0, "cancelled": 1, "finished": 0}
        after = await tool.run({"seconds": 0})
        assert not after.is_error
        assert calls() == {"running": 0, "cancelled": 1, "finished": 1}
    finally:
        connector.close()


def test_close_stops_the_server_process_and_the_thread() -> None:
    connector = stdio_connector("closing")
    pid = server_pid(connector)
    assert alive(pid) and len(mcp_threads("closing")) == 1
    connector.close()
    assert not alive(pid)
    assert mcp_threads("closing") == []
    connector.close()  # twice is fine
    with pytest.raises(ConnectorError, match="is closed; connect it again"):
        connector.call_tool("list_files")


async def test_closing_during_a_call_ends_the_call_with_a_tool_error() -> None:
    connector = stdio_connector("busy")
    tool = by_name(connector)["busy_slow"]
    call = asyncio.ensure_future(tool.run({"seconds": 30}))
    await asyncio.sleep(0.5)  # the request is on its way
    await asyncio.to_thread(connector.close)
    result = await asyncio.wait_for(call, 20)
    assert result.is_error
    assert "was disconnected during the call to its tool 'slow'" in result.content


def test_a_server_that_never_answers_fails_at_connect_within_the_timeout(tmp_path) -> None:
    pid_file = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    silent = MCP(command=[sys.executable, "-c", script], connect_timeout_s=1).build_connector(
        "silent"
    )
    try:
        with pytest.raises(ConnectorError, match="did not complete the MCP handshake within 1 s"):
            silent.tools()
    finally:
        silent.close()
    assert mcp_threads("silent") == []
    assert process_gone(int(pid_file.read_text()))  # the server process too, not only the thread


def test_a_missing_command_is_a_clear_error() -> None:
    missing = MCP(command=["relay-no-such-mcp-server"]).build_connector("missing")
    try:
        with pytest.raises(ConnectorError, match="command 'relay-no-such-mcp-server' was not"):
            missing.tools()
    finally:
        missing.close()


def test_an_http_server_nobody_runs_is_unreachable() -> None:
    from mcp_support import free_port

    nobody = MCP(url=f"http://127.0.0.1:{free_port()}/mcp", timeout_s=5).build_connector("nobody")
    try:
        with pytest.raises(ConnectorError, match=r"could not be reached at http://127\.0\.0\.1"):
            nobody.tools()
    finally:
        nobody.close()


def test_a_server_that_exits_at_start_shows_its_stderr_redacted(monkeypatch) -> None:
    secret = "sk-mcp-test-4f9a8b7c6d5e"
    monkeypatch.setenv("MCP_TEST_API_TOKEN", secret)
    script = (
        "import os, sys; sys.stderr.write('bad config, token ' + os.environ['MCP_TEST_API_TOKEN']"
        " + chr(10)); sys.exit(2)"
    )
    broken = MCP(
        command=[sys.executable, "-c", script], env=["MCP_TEST_API_TOKEN"], connect_timeout_s=10
    ).build_connector("broken")
    try:
        with pytest.raises(ConnectorError) as raised:
            broken.tools()
        message = str(raised.value)
        assert "bad config, token [REDACTED]" in message
        assert secret not in message
        assert secret not in broken.stderr_tail() and "[REDACTED]" in broken.stderr_tail()
    finally:
        broken.close()


def test_catalog_is_cached_until_refresh(stdio_files) -> None:
    first = stdio_files.catalog
    pid = server_pid(stdio_files)
    assert stdio_files.catalog is first and stdio_files.server_tools() == list(first.tools)
    stdio_files.refresh()  # lists again now, on the same server process
    second = stdio_files.catalog
    assert second is not first and second.tools == first.tools
    assert stdio_files.catalog is second
    assert server_pid(stdio_files) == pid


def test_the_connect_check_waits_as_long_as_the_server_may_take_to_start() -> None:
    """A stdio server starts a Python interpreter and imports its SDK: on a busy machine that
    takes longer than the generic 10 s check. The check waits at least the connector's own
    startup allowance (connect_timeout_s + timeout_s), so a slow start is not 'unreachable'."""
    from mcp_support import SERVER

    from relay_nb import Relay, ScriptedRuntime
    from relay_nb.connectors.mcp import MCP

    relay = Relay(ScriptedRuntime([]), ledger=False)
    try:
        # 0.01 s is far less than any server start: only the connector's allowance lets it pass
        connector = relay.connect("drive", MCP(command=SERVER, timeout_s=10), check_timeout_s=0.01)
        assert connector.startup_timeout_s == 40 and "drive" in relay.connectors
    finally:
        relay.close()


async def test_a_server_that_did_not_answer_in_time_is_stopped_and_started_again() -> None:
    """A red team's server wrote to stdout without end and without a newline: after the
    call's timeout the reader in the notebook's process kept growing that line (364 MB in
    4 minutes, a core busy) until close(). Now a server that did not answer is stopped, and
    the next call starts a fresh one."""
    connector = stdio_connector("flood", timeout_s=2)
    try:
        tools = by_name(connector)
        pid = int((await tools["flood_server_pid"].run({})).content)
        flooded = await tools["flood_endless_line"].run({})
        assert flooded.is_error and "the server was stopped" in flooded.content
        assert await asyncio.to_thread(wait_until, lambda: not alive(pid), attempts=100)
        again = await tools["flood_server_pid"].run({})
        assert not again.is_error and int(again.content) != pid
    finally:
        connector.close()
