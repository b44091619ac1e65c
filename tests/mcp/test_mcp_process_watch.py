"""The server process is watched from its spawn: a server that dies while idle is noticed
(the next call reconnects), its process group is ended at once and never signalled again
(its pid may lead an unrelated group by then), requests racing close() fail as
ConnectorErrors, and the SDK spawn hook is installed only over what it expects."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import types
import warnings

import pytest
from mcp_support import stdio_connector, wait_until

import relay_nb.connectors.mcp.client as client_module
import relay_nb.connectors.mcp.process as process_module
from relay_nb.connectors.mcp.process import install_spawn_hook
from relay_nb.errors import ConnectorError

pytestmark = [
    pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)"),
    pytest.mark.slow,  # real server processes and their process groups watched: ~8 s
]


def _can_unshare_pids() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = ["unshare", "-p", "-f", "--mount-proc", "true"]
    return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0


def test_a_server_that_dies_idle_is_noticed_and_the_next_call_reconnects() -> None:
    connector = stdio_connector("idle")
    try:
        first = int(connector.call_tool("server_pid").content)
        conn = connector._host._conn
        os.kill(first, signal.SIGKILL)  # no request in flight
        assert wait_until(lambda: conn is not None and not conn.usable)
        second = int(connector.call_tool("server_pid").content)  # no "closed the connection"
        assert second != first
    finally:
        connector.close()


# Runs in a new pid namespace: the pid of the killed server is handed to an unrelated
# process group leader (ns_last_pid), which close() must leave alone.
_PID_REUSE = textwrap.dedent(
    """
    import os, signal, subprocess, sys
    sys.path.insert(0, sys.argv[1])
    from mcp_support import stdio_connector, wait_until
    c = stdio_connector("reuse")
    pid = int(c.call_tool("server_pid").content)
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not os.path.exists(f"/proc/{pid}"))
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid - 1))
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
    assert victim.pid == pid and os.getpgid(victim.pid) == pid, (victim.pid, pid)
    c.close()
    code = victim.poll()
    victim.kill()
    victim.wait()
    print("VICTIM", code)
    """
)


@pytest.mark.skipif(not _can_unshare_pids(), reason="needs root and unshare -p")
def test_close_never_signals_a_group_whose_leader_exited_and_whose_pid_was_reused() -> None:
    here = os.path.dirname(__file__)
    done = subprocess.run(
        ["unshare", "-p", "-f", "--mount-proc", sys.executable, "-c", _PID_REUSE, here],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=os.path.dirname(os.path.dirname(here)),
    )
    assert "VICTIM None" in done.stdout, done.stdout + done.stderr


def test_a_call_racing_close_is_a_connector_error_and_leaves_nothing(monkeypatch) -> None:
    """The caller is held between finding the loop and scheduling on it until close() has
    run (or, once scheduling is under close()'s lock, until the hold gives up)."""
    connector = stdio_connector("race")
    connector.tools()
    pid = int(connector.call_tool("server_pid").content)
    original = asyncio.run_coroutine_threadsafe
    holding, closed = threading.Event(), threading.Event()

    def held(coro, loop):  # type: ignore[no-untyped-def]
        if threading.current_thread().name == "caller":
            holding.set()
            closed.wait(0.5)
        return original(coro, loop)

    monkeypatch.setattr(client_module.asyncio, "run_coroutine_threadsafe", held)
    outcome: list[BaseException | object] = []

    def call() -> None:
        try:
            outcome.append(connector.call_tool("list_files"))
        except BaseException as exc:
            outcome.append(exc)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        caller = threading.Thread(target=call, name="caller")
        caller.start()
        assert holding.wait(10)
        closer = threading.Thread(target=lambda: (connector.close(), closed.set()))
        closer.start()
        caller.join(20)
        closer.join(20)
    assert isinstance(outcome[0], ConnectorError), outcome
    assert "never awaited" not in " ".join(str(w.message) for w in caught)
    assert not connector._host._thread.is_alive()
    assert wait_until(lambda: not os.path.exists(f"/proc/{pid}"))


def test_the_spawn_hook_wraps_only_a_coroutine_function(monkeypatch, caplog) -> None:
    monkeypatch.setattr(process_module, "_warned", False)
    caplog.set_level(logging.INFO, logger="relay_nb.connectors.mcp")

    def sync_spawn() -> None: ...

    renamed = types.SimpleNamespace()
    changed = types.SimpleNamespace(_create_platform_compatible_process=sync_spawn)
    assert install_spawn_hook(renamed) is False
    assert install_spawn_hook(changed) is False
    assert changed._create_platform_compatible_process is sync_spawn
    assert "not tracked" in caplog.text

    async def spawn() -> object:
        return "process"

    current = types.SimpleNamespace(_create_platform_compatible_process=spawn)
    assert install_spawn_hook(current) is True
    wrapped = current._create_platform_compatible_process
    assert wrapped is not spawn
    assert install_spawn_hook(current) is True
    assert current._create_platform_compatible_process is wrapped  # wrapped once
    seen: list[object] = []
    token = process_module.SPAWNED.set(seen.append)
    try:
        assert asyncio.run(wrapped()) == "process"
    finally:
        process_module.SPAWNED.reset(token)
    assert seen == ["process"]
