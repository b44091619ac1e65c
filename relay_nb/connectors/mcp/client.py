"""``MCPClientHost``: one MCP client session, kept alive on a background event loop.

The SDK's client is an anyio async context: entered and exited in the same task, with task
groups reading the transport for as long as it is open. A notebook has no task that lives
that long (each cell, each turn, runs on whatever loop is current), so the connector owns a
daemon thread running its own event loop, started lazily on first use. One *holder* task
there enters the client and waits; every request runs as its own task on that loop and the
caller awaits it from its own loop (``asyncio.wrap_future``) without blocking it, or blocks
on it from sync code.

Failure is bounded everywhere: connecting (start-up and handshake) has its own timeout, every
request its timeout, and a request races the connection's death — a server that crashes
mid-call fails the call at once, not when the timeout runs out. The next request after a
crash reconnects (a fresh process); if that fails too, requests fail fast for
:attr:`MCPClientHost.reconnect_backoff_s`, then the next one tries again (:meth:`reset`, which
``relay.refresh(id)`` reaches, allows it at once). :meth:`close` ends the session — a server
still connecting is cancelled, not waited for — and joins the thread.

Processes: the SDK starts a stdio server in its own session (process group); on shutdown it
closes the server's stdin and kills the group only if the server has not exited within 2 s.
The host watches the server process from its spawn: once it exits (closed, crashed, or died
while idle) the connection is marked lost — the next request reconnects instead of failing
on a dead pipe — and whatever is left of its group (helpers the server started) is ended at
once with SIGTERM, then SIGKILL; the pid is then forgotten, so a later ``close()`` never
signals a group id the system may have reused (:mod:`relay_nb.connectors.mcp.process`).

Server stderr is read into a short ring buffer of length-capped lines (and the debug log);
it is redacted before it is kept, logged or quoted, since a server may print its own
credentials. A streamable-HTTP reply is read up to :attr:`MCPClientHost.max_message_bytes`
(:mod:`~relay_nb.connectors.mcp.transport`, which also says why stdio is not bounded there).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from relay_nb.connectors.bounds import DEFAULT_MAX_RESULT_BYTES
from relay_nb.connectors.mcp.process import SPAWNED, ServerGroup, install_spawn_hook
from relay_nb.connectors.mcp.spec import Launch
from relay_nb.connectors.mcp.text import clip, redacted_clip
from relay_nb.connectors.mcp.transport import IDENTITY, cap_response, message_limit, refusal
from relay_nb.errors import ConfigurationError, ConnectorError
from relay_nb.redaction import redact

if TYPE_CHECKING:
    from mcp import Client

__all__ = ["MCPClientHost", "import_sdk"]

T = TypeVar("T")
logger = logging.getLogger("relay_nb.connectors.mcp")

_CLOSE_TIMEOUT_S = 15.0
"""Room for the SDK's shutdown: stdin closed, 2 s grace, SIGTERM, 2 s, SIGKILL."""
_STDERR_LINES = 40
_STDERR_LINE_CHARS = 1000
"""Longer stderr lines are kept cut (a server dumping a blob on one line cannot fill memory)."""
_STDERR_DRAIN_WAIT_S = 1.0
_STDERR_OVERLAP = 256
"""Read past the cut before redacting, so a secret straddling it is still found whole."""
_QUOTED_STDERR_CHARS = 300
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001


def import_sdk() -> Any:
    """The ``mcp`` package, or a ConfigurationError saying how to install it."""
    try:
        import mcp
    except ImportError:
        raise ConfigurationError(
            "MCP servers need the official MCP SDK: pip install 'relay-nb[mcp]'"
        ) from None
    return mcp


class _Connection:
    """One client session (one server process, for stdio); lives on the host's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.ready: asyncio.Future[Client] = loop.create_future()
        self.stop = asyncio.Event()
        self.dead = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.cancelled = False
        """Its holder was cancelled (once only: a second native cancel would break into the
        SDK's shielded shutdown of the server process)."""
        self.groups: list[ServerGroup] = []
        """The stdio server (leading its own process group), watched from its spawn."""
        self.lost = False
        """Set when a request saw the connection close or the server was seen to exit: the
        next request reconnects at once, while this one's holder still winds down."""

    @property
    def usable(self) -> bool:
        return not (self.lost or self.dead.is_set())


class MCPClientHost:
    """Runs requests against one MCP server; see the module docstring."""

    reconnect_backoff_s = 5.0
    """After a failed reconnect, requests fail fast this long before one tries again."""

    def __init__(
        self,
        launch: Launch,
        *,
        label: str,
        connect_timeout_s: float,
        timeout_s: float,
        max_message_bytes: int = message_limit(DEFAULT_MAX_RESULT_BYTES),
    ) -> None:
        self.launch = launch
        self.label = label
        self.connect_timeout_s = connect_timeout_s
        self.timeout_s = timeout_s
        self.max_message_bytes = max_message_bytes
        """The largest reply read over streamable HTTP (:mod:`.transport`; stdio has no
        bound the SDK allows)."""
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        self._conn: _Connection | None = None
        self._conns: set[_Connection] = set()
        """Every connection whose holder task has not finished (lives on the host's loop)."""
        self._broken: tuple[ConnectorError, float] | None = None
        """A failed reconnect and when it failed: requests fail fast with it for a while."""
        self._stderr: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)
        self._drains: list[tuple[threading.Thread, Any]] = []
        """Each stderr reader thread and the write end of its pipe."""

    # ------------------------------------------------------------------ any thread
    def run(self, op: Callable[[Client], Awaitable[T]], *, what: str) -> T:
        """Run ``op(client)`` and block until it is done (sync code, any thread)."""
        future = self._submit(op, what)
        try:
            return future.result(timeout=self.connect_timeout_s + self.timeout_s + 5)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise self._error(f"did not answer {what} in time") from None
        except concurrent.futures.CancelledError:  # the host's loop stopped under it
            raise self._closed_during(what) from None

    async def arun(self, op: Callable[[Client], Awaitable[T]], *, what: str) -> T:
        """Run ``op(client)`` on the host's loop; awaiting it never blocks the caller's loop,
        and cancelling the caller cancels the request."""
        future = self._submit(op, what)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if future.cancelled() and self._closed and not (task and task.cancelling()):
                raise self._closed_during(what) from None  # closed, not the caller cancelled
            raise

    def stderr_tail(self, lines: int = 5) -> str:
        """The server's last stderr lines, redacted (stdio servers only).

        A server that has ended may still have lines in its pipe: readers whose write end is
        closed are given a moment to reach the end, so its last words are not missed."""
        for thread, writer in list(self._drains):
            if writer.closed:
                thread.join(timeout=_STDERR_DRAIN_WAIT_S)
                if not thread.is_alive():
                    self._drains.remove((thread, writer))
        tail = "\n".join(list(self._stderr)[-lines:])
        return redact(tail, extra=self.launch.secrets)

    def reset(self) -> None:
        """Allow reconnecting at once after a failed reconnect (``refresh()``)."""
        self._broken = None

    def close(self) -> None:
        """End the session, stop the server process and the thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if threading.current_thread() is thread:  # closed from inside a request: stop later
            loop.call_soon(lambda: asyncio.ensure_future(self._shutdown_and_stop(loop)))
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(_CLOSE_TIMEOUT_S)
        except Exception as exc:  # a wedged transport must not stop the kernel from exiting
            logger.warning(
                "MCP server %r did not shut down cleanly: %s", self.label, self._redacted(exc)
            )
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)

    # ------------------------------------------------------------------ the host's loop
    def _submit(
        self, op: Callable[[Client], Awaitable[T]], what: str
    ) -> concurrent.futures.Future[T]:
        # scheduled under the lock close() sets _closed under: a request is either on the
        # loop before close() sweeps it, or refused — never handed to a loop already closed
        with self._lock:
            loop = self._ensure_loop()
            if threading.current_thread() is self._thread:
                raise ConnectorError("an MCP request cannot wait for another on the same thread")
            coro = self._execute(op, what)
            try:
                return asyncio.run_coroutine_threadsafe(coro, loop)
            except RuntimeError:  # the loop is gone (its thread died): never leak the coroutine
                coro.close()
                raise self._error("was closed; connect it again") from None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        """The host's loop, started on first use; the caller holds ``_lock``."""
        if self._closed:
            raise ConnectorError(f"the MCP connector {self.label!r} is closed; connect it again")
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=_run_loop, args=(loop,), name=f"relay-mcp-{self.label}", daemon=True
            )
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    async def _execute(self, op: Callable[[Client], Awaitable[T]], what: str) -> T:
        conn = await self._connected()
        assert conn.ready.done()
        request = asyncio.ensure_future(op(conn.ready.result()))
        died = asyncio.ensure_future(conn.dead.wait())
        try:
            done, _ = await asyncio.wait(
                {request, died}, timeout=self.timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            died.cancel()
            if not request.done():
                request.cancel()
                with contextlib.suppress(BaseException):
                    await request
        if request in done and request.cancelled():  # the session was torn down under it
            conn.lost = True
            raise self._lost(what)
        if request in done:
            try:
                return request.result()
            except Exception as exc:
                raise self._request_error(exc, what, conn) from None
        if died in done:
            conn.lost = True
            raise self._lost(what)
        restarted = ""
        if self.launch.transport == "stdio":
            # a server that did not answer may still be writing (a line that never ends
            # grows in this process's reader): it is stopped, the next request starts anew
            conn.lost = True
            conn.stop.set()
            restarted = "; the server was stopped, the next call starts it again"
        raise self._error(
            f"did not answer {what} within {self.timeout_s:g} s; the request was cancelled "
            f"(ask for less, or raise timeout_s){restarted}"
        )

    async def _connected(self) -> _Connection:
        """The live connection, connecting (or reconnecting after a crash) if needed."""
        if self._closed:  # scheduled just before close(): start no server it cannot sweep
            raise self._error("was closed; connect it again")
        conn = self._conn
        if conn is None or not conn.usable:
            if self._broken is not None:
                error, failed_at = self._broken
                if time.monotonic() - failed_at < self.reconnect_backoff_s:
                    raise error
                self._broken = None  # the back-off is over: try once more
            reconnecting = conn is not None
            conn = self._conn = _Connection(asyncio.get_running_loop())
            conn.task = asyncio.ensure_future(self._hold(conn))
            self._conns.add(conn)
            conn.task.add_done_callback(lambda _task, c=conn: self._conns.discard(c))
        else:
            reconnecting = False
        try:
            await asyncio.wait_for(asyncio.shield(conn.ready), self.connect_timeout_s)
        except TimeoutError:
            self._abandon(conn)
            error = self._error(
                f"did not complete the MCP handshake within {self.connect_timeout_s:g} s"
                + self._stderr_note()
                + "; check that the command starts an MCP server speaking on stdout"
                if self.launch.transport == "stdio"
                else f"did not complete the MCP handshake within {self.connect_timeout_s:g} s; "
                "check the URL (it usually ends in /mcp)"
            )
            if reconnecting:
                error = self._broke(error)
            raise error from None
        except ConnectorError as exc:
            if reconnecting:
                raise self._broke(exc) from None
            raise
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if conn.ready.cancelled() and task is not None and not task.cancelling():
                raise self._error("was closed while connecting") from None
            raise  # the caller's own cancellation
        return conn

    @staticmethod
    def _abandon(conn: _Connection) -> None:
        """Stop a connection that is still connecting: cancel its holder, once."""
        conn.stop.set()
        if conn.task is not None and not conn.cancelled:
            conn.cancelled = True
            conn.task.cancel()

    def _broke(self, error: ConnectorError) -> ConnectorError:
        """Remember a failed reconnect; the error says how to retry at once."""
        text = str(error)
        hinted = ConnectorError(
            f"{text}{' ' if text.endswith(('.', '?')) else '. '}The first call "
            f"{self.reconnect_backoff_s:g} s after this tries to reconnect; "
            f"relay.refresh({self.label!r}) reconnects now"
        )
        self._broken = (hinted, time.monotonic())
        return hinted

    async def _hold(self, conn: _Connection) -> None:
        """Enter the client, publish it, and keep it open until asked to stop; then end
        what is left of the server's process group."""
        stderr_file = None
        loop = asyncio.get_running_loop()
        # this task's context: the spawn hook hands the server process to it
        SPAWNED.set(lambda process: self._track(conn, process))
        try:
            warm = loop.run_in_executor(None, _warm_validator)  # meanwhile the server starts
            async with contextlib.AsyncExitStack() as stack:
                mcp = import_sdk()
                if self.launch.transport == "stdio":
                    from mcp.client import stdio
                    from mcp.client.stdio import stdio_client

                    install_spawn_hook(stdio)
                    stderr_file = self._stderr_pipe()
                    params = mcp.StdioServerParameters(
                        command=self.launch.command,
                        args=list(self.launch.args),
                        env=self.launch.env or None,
                        cwd=self.launch.cwd,
                    )
                    transport = stdio_client(params, errlog=stderr_file)
                else:
                    import httpx2
                    from mcp.client.streamable_http import streamable_http_client

                    http = await stack.enter_async_context(
                        httpx2.AsyncClient(
                            headers={**IDENTITY, **self.launch.headers},
                            timeout=httpx2.Timeout(self.connect_timeout_s, read=300),
                            event_hooks={"response": [cap_response(self.max_message_bytes)]},
                        )
                    )
                    transport = streamable_http_client(
                        self.launch.url,
                        http_client=http,
                        max_sse_event_size=self.max_message_bytes,
                    )
                client = await stack.enter_async_context(
                    mcp.Client(transport, read_timeout_seconds=self.timeout_s)
                )
                await warm  # part of connecting, not of the first call's timeout
                if not conn.ready.done():
                    conn.ready.set_result(client)
                await conn.stop.wait()
        except asyncio.CancelledError:
            if not conn.ready.done():
                conn.ready.cancel()
        except BaseException as exc:  # an ExceptionGroup from the transport's task group
            if not conn.ready.done():
                if stderr_file is not None:  # so the error below waits for the server's
                    stderr_file.close()  # last words (the reader can lag under load)
                conn.ready.set_exception(self._connect_error(exc))
            else:
                logger.info(
                    "MCP server %r connection ended: %s", self.label, self._redacted(_leaf(exc))
                )
        finally:
            try:
                for group in conn.groups:  # helpers a promptly exiting server left behind
                    await self._end_group(group)
            finally:
                conn.dead.set()
                if stderr_file is not None:
                    stderr_file.close()

    def _track(self, conn: _Connection, process: Any) -> None:
        """Watch a spawned server: its exit marks the connection lost and ends its group."""
        group = ServerGroup.track(process)
        if group is None:
            return
        conn.groups.append(group)

        def exited() -> None:
            conn.lost = True  # the next request reconnects rather than fail on a dead pipe
            conn.stop.set()

        group.watcher = asyncio.ensure_future(self._watch(group, exited))

    async def _watch(self, group: ServerGroup, exited: Callable[[], None]) -> None:
        await group.wait_exit()
        exited()
        if await group.end():
            logger.info("MCP server %r: ended processes left in its group", self.label)

    async def _end_group(self, group: ServerGroup) -> None:
        """At the end of a session: let the watcher end a group whose leader exited; end
        one whose leader is still running (the SDK gave up on it) here."""
        watcher = group.watcher
        if watcher is not None and not watcher.done():
            if group.exited or group.ended:
                await asyncio.wait({watcher})
            else:
                watcher.cancel()
        if await group.end():
            logger.info("MCP server %r: ended processes left in its group", self.label)

    def _stderr_pipe(self) -> Any:
        """A file the server's stderr goes to; a daemon thread keeps its last lines."""
        read_fd, write_fd = os.pipe()
        reader = os.fdopen(read_fd, "r", encoding="utf-8", errors="replace")
        lines = self._stderr
        label = self.label
        secrets = self.launch.secrets

        def drain() -> None:
            skipping = False  # the rest of a line already kept cut
            with reader:
                while chunk := reader.readline(_STDERR_LINE_CHARS + _STDERR_OVERLAP):
                    complete = chunk.endswith("\n")
                    if not skipping:
                        text = redact(chunk.rstrip("\r\n"), extra=secrets)
                        if len(text) > _STDERR_LINE_CHARS or not complete:
                            text = clip(text, _STDERR_LINE_CHARS) + " [line cut]"
                        lines.append(text)
                        logger.debug("MCP server %r: %s", label, text)
                    skipping = not complete

        thread = threading.Thread(target=drain, name=f"relay-mcp-stderr-{label}", daemon=True)
        thread.start()
        writer = os.fdopen(write_fd, "w", encoding="utf-8")
        self._drains = [(t, w) for t, w in self._drains if t.is_alive()]  # earlier connections'
        self._drains.append((thread, writer))
        return writer

    async def _shutdown(self) -> None:
        holders = []
        for conn in list(self._conns):
            if not conn.ready.done():  # still connecting: do not sit out its handshake
                self._abandon(conn)
                conn.ready.cancel()  # also when the holder had not started yet
            conn.stop.set()
            if conn.task is not None:
                holders.append(conn.task)
        if holders:
            await asyncio.wait(holders, timeout=_CLOSE_TIMEOUT_S - 1)

    async def _shutdown_and_stop(self, loop: asyncio.AbstractEventLoop) -> None:
        await self._shutdown()
        loop.stop()

    # ------------------------------------------------------------------ errors
    def _error(self, message: str) -> ConnectorError:
        return ConnectorError(
            f"MCP server {self.label!r} {redact(message, extra=self.launch.secrets)}"
        )

    def _redacted(self, exc: BaseException) -> str:
        """An exception for the log: its type and its redacted, clipped text."""
        return f"{type(exc).__name__}: {self._quote(str(exc))}"

    def _quote(self, text: str, limit: int = 300) -> str:
        """What a server or library said, for an error message: redacted, then clipped (in
        that order, so a secret at the cut cannot leak half of itself)."""
        return redacted_clip(text, limit, secrets=self.launch.secrets, one_line=True)

    def _closed_during(self, what: str) -> ConnectorError:
        if self._closed:
            return self._lost(what)
        return self._error(f"stopped answering during {what}; the request did not complete")

    def _lost(self, what: str) -> ConnectorError:
        if self._closed:
            return self._error(f"was disconnected during {what}; the request did not complete")
        how = "exited or crashed" if self.launch.transport == "stdio" else "went away"
        return self._error(
            f"closed the connection during {what} (the server {how}); the request did not "
            "complete. The next call starts a new connection"
        )

    def _request_error(self, exc: Exception, what: str, conn: _Connection) -> ConnectorError:
        code = getattr(exc, "code", None)
        message = str(getattr(exc, "message", "") or "")
        bounded = refusal(message, self.max_message_bytes)
        if type(exc).__name__ == "MCPError" and bounded:  # the session itself is fine
            return self._error(f"{bounded} ({what})")
        if type(exc).__name__ == "MCPError" and code == _CONNECTION_CLOSED:
            conn.lost = True
            conn.stop.set()
            return self._lost(what)
        if type(exc).__name__ == "MCPError" and code == _REQUEST_TIMEOUT:
            return self._error(f"did not answer {what} within {self.timeout_s:g} s")
        if type(exc).__name__ == "MCPError":
            return self._error(f"refused {what}: {self._quote(message)} (MCP error {code})")
        if isinstance(exc, ConnectorError):
            return exc
        return self._error(f"failed {what}: {type(exc).__name__}: {self._quote(str(exc))}")

    def _connect_error(self, exc: BaseException) -> ConnectorError:
        leaf = _leaf(exc)
        if isinstance(leaf, ConfigurationError):
            return ConnectorError(str(leaf))
        if isinstance(leaf, FileNotFoundError) and self.launch.transport == "stdio":
            return self._error(
                f"could not be started: command {self.launch.command!r} was not found; give "
                "its full path or check PATH"
            )
        if isinstance(leaf, PermissionError) and self.launch.transport == "stdio":
            return self._error(f"could not be started: {self.launch.command!r} is not executable")
        if type(leaf).__name__ == "MCPError" and getattr(leaf, "code", None) == _CONNECTION_CLOSED:
            return self._error(
                "closed the connection during the MCP handshake" + self._stderr_note()
            )
        name = type(leaf).__name__
        if name.startswith(("Connect", "Remote")) or isinstance(leaf, OSError):
            return self._error(
                f"could not be reached at {self.launch.target} ({name}); is the server running?"
            )
        return self._error(
            f"could not connect: {name}: {self._quote(str(leaf))}" + self._stderr_note()
        )

    def _stderr_note(self) -> str:
        tail = self.stderr_tail(3)
        return (
            f". Its stderr ended with: {clip(tail, _QUOTED_STDERR_CHARS, one_line=True)}"
            if tail
            else ""
        )


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def _warm_validator() -> None:
    """Import jsonschema, which the SDK loads on the first call of a tool with an output
    schema: it can take seconds, which would otherwise count against that call's timeout."""
    with contextlib.suppress(Exception):
        import jsonschema  # noqa: F401


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
