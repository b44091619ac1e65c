"""A scripted local server that speaks the OpenAI Chat Completions wire format.

Runtime tests drive the real ``openai`` SDK against this server instead of mocking it, so the
request the SDK builds, its HTTP error handling and its SSE parser are all exercised. It is
what a local Ollama, vLLM or llama.cpp server looks like to a client: it binds 127.0.0.1 on
an ephemeral port (so the ``"loopback"`` model-request scope lets it through), answers
``POST /v1/chat/completions`` from a queue of scripted replies, and records every request::

    with OpenAIStub() as stub:
        stub.enqueue(ChatReply(text="hello"), ErrorReply(status=503))
        runtime = OpenAICompatibleRuntime("llama3.2", base_url=stub.base_url)
        ...
        assert stub.requests[0].body["max_tokens"] == 4096

A reply is a :class:`ChatReply` (JSON, or SSE when the request asked for ``"stream": true``),
an :class:`ErrorReply`, a :class:`DropConnection`, a :class:`Delay`, or a callable that gets
the :class:`RecordedRequest` and returns one of those: a scripted model that reads what the
client sent (say, a tool result) and answers from it. ``GET /v1/models`` lists
:data:`STUB_MODEL`. Request recording, ``Delay``/abandon detection and the connection
plumbing mirror :mod:`relay_nb.testing.anthropic_stub`, whose generic helpers are reused.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import socketserver
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self, TypeAlias

from relay_nb.testing.anthropic_stub import RecordedRequest, _json_object, _peer_state

__all__ = [
    "STUB_MODEL",
    "ChatReply",
    "Delay",
    "DropConnection",
    "ErrorReply",
    "FunctionCall",
    "OpenAIStub",
    "RecordedRequest",
    "Reply",
    "StreamFault",
]

STUB_MODEL = "stub-served-model-1"
"""The model a :class:`ChatReply` reports unless told otherwise (differs from any request's)."""

_CHAT_PATH = "/v1/chat/completions"
_POLL_S = 0.02
_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    409: "invalid_request_error",
    422: "invalid_request_error",
    429: "requests",
}


@dataclass(frozen=True, kw_only=True)
class FunctionCall:
    """One ``tool_calls`` entry. ``arguments`` is an object (sent as JSON) or raw text, to
    script a model that writes broken JSON. ``id=""`` gets a unique ``call_stub_N``;
    ``id=None`` leaves the id out, as some local servers do."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = ""

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))


@dataclass(frozen=True, kw_only=True)
class StreamFault:
    """Break a streamed reply after ``after_deltas`` text deltas have been sent.

    ``"drop"`` closes the socket in the middle of the chunked body, ``"truncate"`` ends the
    body cleanly without a finish reason or ``[DONE]`` (a misbehaving proxy), ``"error"``
    sends an ``{"error": {...}}`` chunk with ``error_type`` and ``error_code`` (as servers do
    when they fail mid-generation) and ends the stream.
    """

    after_deltas: int = 0
    kind: Literal["drop", "truncate", "error"] = "drop"
    error_type: str | None = "server_error"
    error_code: int | str | None = None
    message: str = "stub stream failure"


@dataclass(frozen=True, kw_only=True)
class ChatReply:
    """A successful completion, sent as one JSON object or as an SSE stream of chunks.

    ``text`` may be a sequence of strings: the streamed ``content`` deltas, whose
    concatenation is the JSON reply's content. ``model=None`` leaves the model out.
    ``finish_reason=None`` means ``"tool_calls"`` when there are calls, else ``"stop"``.
    ``cached_tokens`` adds ``prompt_tokens_details``; ``usage=False`` sends no usage at all
    (as some servers do). ``event_delay_s`` pauses before each SSE chunk.
    """

    text: str | Sequence[str] = ""
    tool_calls: Sequence[FunctionCall] = ()
    model: str | None = STUB_MODEL
    finish_reason: str | None = None
    prompt_tokens: int = 12
    completion_tokens: int = 7
    cached_tokens: int | None = None
    usage: bool = True
    refusal: str | None = None
    event_delay_s: float = 0.0
    stream_fault: StreamFault | None = None

    @property
    def text_deltas(self) -> list[str]:
        if isinstance(self.text, str):
            return [self.text] if self.text else []
        return [chunk for chunk in self.text if chunk]

    @property
    def full_text(self) -> str:
        return "".join(self.text_deltas)

    @property
    def effective_finish_reason(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    def usage_json(self) -> dict[str, Any] | None:
        if not self.usage:
            return None
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        return usage


@dataclass(frozen=True, kw_only=True)
class ErrorReply:
    """An HTTP error with an OpenAI-style body ``{"error": {"message", "type", "code"}}``."""

    status: int
    message: str = "stub error"
    error_type: str | None = None
    code: str | int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        kind = self.error_type or _ERROR_TYPES.get(self.status, "server_error")
        return {"error": {"message": self.message, "type": kind, "param": None, "code": self.code}}


@dataclass(frozen=True)
class DropConnection:
    """Close the connection after reading the request, without sending any response."""


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds`` (cut short if the client disconnects or the stub stops), then reply."""

    seconds: float
    then: Reply = field(default_factory=lambda: ChatReply(text="late"))


Reply: TypeAlias = (
    "ChatReply | ErrorReply | DropConnection | Delay | Callable[[RecordedRequest], Reply]"
)


class OpenAIStub:
    """The server: start it with ``with`` (or :meth:`start`/:meth:`close`), script, assert.

    Thread-safe: replies are consumed and requests recorded under one lock, so concurrent
    requests each get exactly one scripted reply, in arrival order.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._replies: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._abandoned = 0
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: _StubServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError("OpenAIStub is already running")
        self._stopping.clear()
        self._server = _StubServer(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"openai-stub-{self.port}",
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
            raise RuntimeError("OpenAIStub is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give a client as its base URL (the SDK appends ``/chat/completions``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def enqueue(self, *replies: Reply) -> None:
        """Append replies; each request consumes the oldest one (none left: a 500 saying so)."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies no request has consumed yet."""
        with self._lock:
            return len(self._replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every chat request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def abandoned(self) -> int:
        """Requests whose client hung up while a :class:`Delay` was pending (abort, timeout)."""
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

    def _record(self, request: RecordedRequest) -> Reply | None:
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

    def __init__(self, stub: OpenAIStub) -> None:
        self.stub = stub
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which can stall on a slow resolver.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    server: _StubServer
    # HTTP/1.1 so a stream can be chunked (a mid-stream drop is then a broken transfer, not
    # a clean end); every response says "Connection: close", so no keep-alive socket is
    # left for a client to reuse after the stub changed its script.
    protocol_version = "HTTP/1.1"
    timeout = 10.0

    def setup(self) -> None:
        super().setup()
        self.server.stub._track(self.connection, active=True)

    def finish(self) -> None:
        self.server.stub._track(self.connection, active=False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: test output should show the test's own failures, not an access log."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = _json_object(raw)
        if self.path.split("?", 1)[0] != _CHAT_PATH:
            self._reply(ErrorReply(status=404, message=f"the stub does not serve {self.path}"))
            return
        recorded = RecordedRequest(
            method="POST",
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
            raw_body=raw,
        )
        reply = self.server.stub._record(recorded)
        if reply is None:
            reply = ErrorReply(status=500, message="OpenAIStub has no scripted reply left")
        while callable(reply):
            try:
                reply = reply(recorded)
            except Exception as exc:  # a broken script must fail the test, not hang it
                reply = ErrorReply(status=500, message=f"stub reply raised {exc!r}")
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        self._reply(reply, stream=body.get("stream") is True, include_usage=include_usage)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/v1/models":
            model = {"id": STUB_MODEL, "object": "model", "created": 0, "owned_by": "stub"}
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._send_json(200, {"object": "list", "data": [model]}, {})
            return
        self._reply(ErrorReply(status=404, message=f"the stub does not serve GET {self.path}"))

    def _reply(self, reply: Reply, *, stream: bool = False, include_usage: bool = False) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):  # the client may be gone; that is its business
            self._send(reply, stream=stream, include_usage=include_usage)

    def _send(self, reply: Reply, *, stream: bool, include_usage: bool) -> None:
        if isinstance(reply, Delay):
            if self._wait_or_abandon(reply.seconds):
                self._send(reply.then, stream=stream, include_usage=include_usage)
        elif isinstance(reply, DropConnection):
            return
        elif isinstance(reply, ErrorReply):
            self._send_json(reply.status, reply.body(), reply.headers)
        elif isinstance(reply, ChatReply):
            if stream:
                self._send_stream(reply, include_usage=include_usage)
            else:
                self._send_json(200, _completion_json(reply, self.server.stub), {})
        else:
            self._send_json(500, ErrorReply(status=500, message="not a reply").body(), {})

    def _wait_or_abandon(self, seconds: float) -> bool:
        """Sleep in short slices; False if the client hung up or the stub is stopping."""
        stub = self.server.stub
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if stub._stopping.is_set():
                return False
            state = _peer_state(self.connection, min(_POLL_S, left))
            if state == "closed":
                if not stub._stopping.is_set():  # close() cuts sockets too; not the client
                    stub._note_abandoned()
                return False
            if state == "data":  # unexpected bytes: keep waiting without spinning
                stub._stopping.wait(min(_POLL_S, left))
        return not stub._stopping.is_set()

    def _start(self, status: int, content_type: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("x-request-id", self.server.stub._next_id("req"))
        self.send_header("connection", "close")
        for name, value in headers.items():
            self.send_header(name, value)

    def _send_json(self, status: int, payload: dict[str, Any], headers: Mapping[str, str]) -> None:
        data = json.dumps(payload).encode()
        self._start(status, "application/json", headers)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, reply: ChatReply, *, include_usage: bool) -> None:
        self._start(200, "text/event-stream", {"cache-control": "no-cache"})
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in _stream_events(reply, self.server.stub, include_usage=include_usage):
            if reply.event_delay_s and not self._wait_or_abandon(reply.event_delay_s):
                return
            if event == "drop":
                return
            if event == "truncate":
                break
            payload = event if isinstance(event, str) else json.dumps(event)
            data = f"data: {payload}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def _call_json(call: FunctionCall, call_id: str | None, arguments: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }
    if call_id is not None:
        entry["id"] = call_id
    return entry


def _call_id(call: FunctionCall, stub: OpenAIStub) -> str | None:
    if call.id is None:
        return None
    return call.id or stub._next_id("call")


def _completion_json(reply: ChatReply, stub: OpenAIStub) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.full_text or None,
        "refusal": reply.refusal,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            _call_json(call, _call_id(call, stub), call.arguments_text())
            for call in reply.tool_calls
        ]
    completion: dict[str, Any] = {
        "id": stub._next_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.effective_finish_reason,
                "logprobs": None,
            }
        ],
    }
    if reply.model is not None:
        completion["model"] = reply.model
    usage = reply.usage_json()
    if usage is not None:
        completion["usage"] = usage
    return completion


_StreamItem: TypeAlias = dict[str, Any] | str


def _stream_events(
    reply: ChatReply, stub: OpenAIStub, *, include_usage: bool
) -> Iterator[_StreamItem]:
    """The API's chunk sequence, cut short where a :class:`StreamFault` says."""
    envelope: dict[str, Any] = {
        "id": stub._next_id("chatcmpl"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
    }
    if reply.model is not None:
        envelope["model"] = reply.model

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {**envelope, "choices": [choice]}

    yield chunk({"role": "assistant", "content": ""})
    fault = reply.stream_fault
    for sent, text in enumerate(reply.text_deltas):
        if fault is not None and sent >= fault.after_deltas:
            break
        yield chunk({"content": text})
    if fault is not None:
        if fault.kind == "error":
            error = {"message": fault.message, "type": fault.error_type, "code": fault.error_code}
            yield {"error": error}
            yield "truncate"
        else:
            yield fault.kind
        return
    if reply.refusal:
        yield chunk({"refusal": reply.refusal})
    for index, call in enumerate(reply.tool_calls):
        arguments = call.arguments_text()
        middle = len(arguments) // 2  # two partial chunks, as the API splits arguments
        head = _call_json(call, _call_id(call, stub), arguments[:middle])
        yield chunk({"tool_calls": [{"index": index, **head}]})
        tail = {"index": index, "function": {"arguments": arguments[middle:]}}
        yield chunk({"tool_calls": [tail]})
    yield chunk({}, reply.effective_finish_reason)
    usage = reply.usage_json()
    if include_usage and usage is not None:
        yield {**envelope, "choices": [], "usage": usage}
    yield "[DONE]"
