"""The process group of a stdio MCP server: watched from spawn, ended when its leader exits.

The MCP SDK starts a stdio server in a new session (``start_new_session=True``), so the
server leads its own process group and any helper it starts (a language server, a browser, a
database proxy) joins that group. On shutdown the SDK closes the server's stdin and kills the
group only if the server has not exited within its grace period; a server that exits promptly
leaves its helpers running, re-parented to PID 1. The host therefore ends what is left of the
group: SIGTERM, a short grace, SIGKILL.

When: as soon as the leader is seen to exit (:meth:`ServerGroup.wait_exit`), whether it crashed,
was closed, or died while idle. Then, and only then, the group id is safe to signal without
its leader: the kernel does not hand out a pid still in use as a process group id, so while
a helper lives the group id cannot belong to anyone else, and once the group is empty a
reused pid is seen (its ``/proc`` start time differs) and left alone. After that the pid is
forgotten: a group whose leader exited is never signalled later, when the pid may lead some
unrelated process group. A leader never seen exiting is signalled only while ``/proc`` shows
the very process spawned (same start time).

The SDK does not expose the process it starts, so :func:`install_spawn_hook` wraps its
private spawn function once (only if it still exists and is a coroutine function) to hand
each process to a callback the calling task provides through :data:`SPAWNED`. If a future SDK
changes that function, nothing is tracked and only the SDK's own clean-up happens (logged
once at info level).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["SPAWNED", "ServerGroup", "end_process_group", "install_spawn_hook"]

logger = logging.getLogger("relay_nb.connectors.mcp")

SPAWNED: contextvars.ContextVar[Callable[[Any], None] | None] = contextvars.ContextVar(
    "relay_mcp_spawned", default=None
)
"""Set by the task that enters a stdio transport: called with each server process started."""

_SPAWN_FUNCTION = "_create_platform_compatible_process"
_install_lock = threading.Lock()
_POLL_S = 0.02
_WATCH_POLL_S = 0.05
"""How often the leader's exit status is looked at (not ``wait()``: on asyncio it also waits
for the pipes to close, which a helper holding them open would delay indefinitely)."""
_warned = False


def install_spawn_hook(stdio_module: Any) -> bool:
    """Wrap ``stdio_module``'s spawn function (idempotent) to report each server process;
    whether the hook is in place."""
    global _warned
    with _install_lock:
        original = getattr(stdio_module, _SPAWN_FUNCTION, None)
        if getattr(original, "_relay_reports_process", False):
            return True
        if original is None or not inspect.iscoroutinefunction(original):
            if not _warned:
                _warned = True
                logger.info(
                    "the MCP SDK has no coroutine %s; stdio server process groups are not "
                    "tracked (helpers a server leaves behind rely on the SDK's own clean-up)",
                    _SPAWN_FUNCTION,
                )
            return False

        async def spawn(*args: Any, **kwargs: Any) -> Any:
            process = await original(*args, **kwargs)
            report = SPAWNED.get()
            if report is not None:
                report(process)
            return process

        spawn._relay_reports_process = True  # type: ignore[attr-defined]
        setattr(stdio_module, _SPAWN_FUNCTION, spawn)
        return True


class ServerGroup:
    """A spawned server and the process group it leads, tracked until the leader exits."""

    def __init__(self, process: Any, pid: int, start_time: str | None) -> None:
        self.process = process
        self.pid: int | None = pid
        """The leader's pid, which is also the group id; None once forgotten."""
        self.start_time = start_time
        self.ended = False
        self.watcher: asyncio.Task[None] | None = None

    @classmethod
    def track(cls, process: Any) -> ServerGroup | None:
        """A group for ``process`` if it leads its own group (never the notebook's)."""
        pid = getattr(process, "pid", None)
        if not isinstance(pid, int) or not _leads_own_group(pid):
            return None
        return cls(process, pid, _start_time(pid))

    @property
    def exited(self) -> bool:
        return getattr(self.process, "returncode", None) is not None

    async def wait_exit(self) -> None:
        """Return once the leader has exited (been reaped)."""
        while not self.exited:  # noqa: ASYNC110 - nothing else signals a reaped child here
            await asyncio.sleep(_WATCH_POLL_S)

    async def end(self) -> bool:
        """End what is left of the group, if it can still be ours; then forget the pid."""
        pid = self.pid
        if pid is None or self.ended:
            return False
        self.ended = True
        try:
            if not self._still_ours(pid):
                return False
            return await end_process_group(pid)
        finally:
            self.pid = None

    def _still_ours(self, pid: int) -> bool:
        current = _start_time(pid)
        if self.exited:
            # reaped: a live /proc entry is a new process that reused the pid, and then the
            # group is empty (a pid in use as a group id is never handed out)
            return current is None
        # not seen exiting: signal only the very process spawned (alive or a zombie)
        return self.start_time is None or current == self.start_time


def _start_time(pid: int) -> str | None:
    """The process's start time (``/proc/<pid>/stat`` field 22), None if there is none."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


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

    Call it only for a group known to be ours (:meth:`ServerGroup.end` checks). Returns
    whether anything was left to end. (A helper already exited but not yet reaped by PID 1
    counts as alive until the grace runs out; the SIGKILL is then a no-op.)
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
