"""The process group of a stdio MCP server: recorded at spawn, ended when the session ends.

The MCP SDK starts a stdio server in a new session (``start_new_session=True``), so the
server leads its own process group and any helper it starts (a language server, a browser, a
database proxy) joins that group. On shutdown the SDK closes the server's stdin and kills the
group only if the server has not exited within its grace period; a server that exits promptly
leaves its helpers running, re-parented to PID 1. After the transport has closed — on
``close()`` and after a crash alike — the host therefore ends what is left of the group:
SIGTERM, a short grace, SIGKILL.

The SDK does not expose the process it starts, so :func:`install_spawn_hook` wraps its spawn
function once to record each pid (checked to be its own group leader) in a list the calling
task provides through :data:`SPAWNED`. If a future SDK renames that function, nothing is
recorded and only the SDK's own clean-up happens (logged once at debug level).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import signal
import threading
import time
from typing import Any

__all__ = ["SPAWNED", "end_process_group", "install_spawn_hook"]

logger = logging.getLogger("relay_nb.connectors.mcp")

SPAWNED: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar(
    "relay_mcp_spawned", default=None
)
"""Set by the task that enters a stdio transport: the pids of the servers it starts."""

_SPAWN_FUNCTION = "_create_platform_compatible_process"
_install_lock = threading.Lock()
_POLL_S = 0.02


def install_spawn_hook(stdio_module: Any) -> None:
    """Wrap ``stdio_module``'s spawn function (idempotent) to record each server's pid."""
    with _install_lock:
        original = getattr(stdio_module, _SPAWN_FUNCTION, None)
        if original is None:
            logger.debug(
                "the MCP SDK has no %s; server process groups are not tracked", _SPAWN_FUNCTION
            )
            return
        if getattr(original, "_relay_records_pid", False):
            return

        async def spawn(*args: Any, **kwargs: Any) -> Any:
            process = await original(*args, **kwargs)
            pids = SPAWNED.get()
            pid = getattr(process, "pid", None)
            if pids is not None and isinstance(pid, int) and _leads_own_group(pid):
                pids.append(pid)
            return process

        spawn._relay_records_pid = True  # type: ignore[attr-defined]
        setattr(stdio_module, _SPAWN_FUNCTION, spawn)


def _leads_own_group(pid: int) -> bool:
    """Only a group the server leads may be signalled: never the notebook's own group."""
    if not hasattr(os, "killpg"):
        return False
    try:
        return os.getpgid(pid) == pid and pid != os.getpgid(0)
    except OSError:
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def end_process_group(pgid: int, *, grace_s: float = 1.0) -> bool:
    """SIGTERM the group ``pgid`` if any process is left in it, SIGKILL after ``grace_s``.

    Safe after the leader is gone: a process group id is not reused while a member lives.
    Returns whether anything was left to end. (A helper already exited but not yet reaped by
    PID 1 counts as alive until the grace runs out; the SIGKILL is then a no-op.)
    """
    if not _group_alive(pgid):
        return False
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    try:
        # nothing signals that a process group is empty, so poll
        while _group_alive(pgid) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(_POLL_S)
    finally:  # also when cancelled while waiting: nothing of the group may outlive the host
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
    return True
