"""What the local provider stubs share: a loopback HTTP server answering scripted replies.

:class:`~relay_nb.testing.anthropic_stub.AnthropicStub` and
:class:`~relay_nb.testing.openai_stub.OpenAIStub` speak different APIs but run the same way:
a threaded server on 127.0.0.1, a queue of replies each request consumes in arrival order,
a record of every request, delays a client may abandon (an abort, a timeout), and a
``close()`` that cuts open connections and joins every thread. That part lives here once;
each stub adds its paths, its reply types and its JSON.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import select
import socket
import socketserver
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Generic, Literal, Self, TypeVar, cast

__all__ = [
    "RecordedRequest",
    "ScriptedStub",
    "StreamedText",
    "StubHandler",
    "json_object",
    "peer_state",
]

ReplyT = TypeVar("ReplyT")
StubT = TypeVar("StubT", bound="ScriptedStub[Any]")

POLL_S = 0.02
"""How often a delayed reply looks whether its client hung up."""


@dataclass(frozen=True, kw_only=True)
class StreamedText:
    """What a scripted reply says: ``text``, or a sequence of strings that are the streamed
    deltas (their concatenation is the whole text). Both provider stubs' replies extend it."""

    text: str | Sequence[str] = ""

    @property
    def text_deltas(self) -> list[str]:
        """The chunks a stream sends; a plain string goes out in one delta."""
        if isinstance(self.text, str):
            return [self.text] if self.text else []
        return [chunk for chunk in self.text if chunk]

    @property
    def full_text(self) -> str:
        return "".join(self.text_deltas)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the stub received it. Header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw_body: bytes


class ScriptedStub(Generic[ReplyT]):
    """The server: start it with ``with`` (or :meth:`start`/:meth:`close`), script, assert.

    Thread-safe: replies are consumed and requests recorded under one lock, so concurrent
    requests each get exactly one scripted reply, in arrival order.
    """

    handler: ClassVar[type[StubHandler[Any]]]
    """The request handler class of the API the stub speaks."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._replies: deque[ReplyT] = deque()
        self._requests: list[RecordedRequest] = []
        self._abandoned = 0
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: _StubServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        name = type(self).__name__
        if self._server is not None:
            raise RuntimeError(f"{name} is already running")
        self._stopping.clear()
        self._server = _StubServer(self, self.handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"{name}-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, cut open connections and join every thread; idempotent."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()  # joins the handler threads (block_on_close)
        thread.join()
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- scripting and inspection ----------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return int(self._server.server_address[1])

    def enqueue(self, *replies: ReplyT) -> None:
        """Append replies; each request consumes the oldest one.

        A request that finds the queue empty gets a 500 error saying so.
        """
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies no request has consumed yet."""
        with self._lock:
            return len(self._replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def abandoned(self) -> int:
        """Requests whose client hung up while a delayed reply was pending (abort, timeout)."""
        with self._lock:
            return self._abandoned

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` requests have arrived; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._requests) >= count, timeout)

    def wait_for_abandoned(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` delayed requests were abandoned by their client."""
        with self._lock:
            return self._lock.wait_for(lambda: self._abandoned >= count, timeout)

    # -- called from handler threads -------------------------------------------------------

    def _record(self, request: RecordedRequest) -> ReplyT | None:
        with self._lock:
            self._requests.append(request)
            reply = self._replies.popleft() if self._replies else None
            self._lock.notify_all()
            return reply

    def _note_abandoned(self) -> None:
        with self._lock:
            self._abandoned += 1
            self._lock.notify_all()

    def _track(self, conn: socket.socket, *, active: bool) -> None:
        with self._lock:
            if not active:
                self._connections.discard(conn)
            elif self._stopping.is_set():  # accepted just as close() ran: cut it right away
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
            else:
                self._connections.add(conn)

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}_stub_{next(self._ids)}"


class _StubServer(ThreadingHTTPServer):
    daemon_threads = False  # so server_close() joins handler threads: nothing outlives close()
    block_on_close = True

    def __init__(self, stub: ScriptedStub[Any], handler: type[StubHandler[Any]]) -> None:
        self.stub = stub
        super().__init__(("127.0.0.1", 0), handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which can stall on a slow resolver.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", int(self.server_address[1])


class StubHandler(BaseHTTPRequestHandler, Generic[StubT]):
    """Connection tracking, abandonable waits and JSON responses; subclasses route requests
    (``StubT``: the stub class whose ``handler`` the subclass is)."""

    # HTTP/1.1 so a stream can be chunked (a mid-stream drop is then a broken transfer, not
    # a clean end); every response says "Connection: close", so no keep-alive socket is
    # left for a client to reuse after the stub changed its script.
    protocol_version = "HTTP/1.1"
    timeout = 10.0  # a client that connects and never sends cannot pin a thread for long
    request_id_header: ClassVar[str] = "request-id"

    @property
    def stub(self) -> StubT:
        """The stub this request is served for."""
        # a handler runs only in the _StubServer its stub's start() made (the server
        # attribute is typed as any BaseServer), and that stub's handler is this class
        return cast(StubT, cast(_StubServer, self.server).stub)

    def setup(self) -> None:
        super().setup()
        self.stub._track(self.connection, active=True)

    def finish(self) -> None:
        self.stub._track(self.connection, active=False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: test output should show the test's own failures, not an access log."""

    def _wait_or_abandon(self, seconds: float) -> bool:
        """Sleep in short slices; False if the client hung up or the stub is stopping."""
        stub = self.stub
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if stub._stopping.is_set():
                return False
            state = peer_state(self.connection, min(POLL_S, left))
            if state == "closed":
                if not stub._stopping.is_set():  # close() cuts sockets too; not the client
                    stub._note_abandoned()
                return False
            if state == "data":  # unexpected bytes: keep waiting without spinning
                stub._stopping.wait(min(POLL_S, left))
        return not stub._stopping.is_set()

    def _start(self, status: int, content_type: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header(self.request_id_header, self.stub._next_id("req"))
        self.send_header("connection", "close")
        for name, value in headers.items():
            self.send_header(name, value)

    def _send_json(self, status: int, payload: dict[str, Any], headers: Mapping[str, str]) -> None:
        data = json.dumps(payload).encode()
        self._start(status, "application/json", headers)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def json_object(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object, or ``{}`` when it is anything else."""
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def peer_state(conn: socket.socket, wait_s: float) -> Literal["idle", "data", "closed"]:
    """Whether the client, within ``wait_s``, closed its end (readable, nothing to read)."""
    readable, _, _ = select.select([conn], [], [], wait_s)
    if not readable:
        return "idle"
    try:
        return "data" if conn.recv(1, socket.MSG_PEEK) else "closed"
    except OSError:
        return "closed"
