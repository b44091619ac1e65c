"""A scripted local server that speaks the Anthropic Messages API wire format.

Runtime tests drive the real ``anthropic`` SDK against this server instead of mocking it, so
the request the SDK builds, its HTTP error handling and its SSE parser are all exercised. The
server binds 127.0.0.1 on an ephemeral port (so the ``"loopback"`` model-request scope lets
it through), answers ``POST /v1/messages`` from a queue of scripted replies, and records every
request it received::

    with AnthropicStub() as stub:
        stub.enqueue(MessageReply(text="hello"), ErrorReply(status=529))
        runtime = AnthropicRuntime(api_key="test-key", base_url=stub.base_url)
        ...
        assert stub.requests[0].body["max_tokens"] == 4096

A reply is one of :class:`MessageReply` (JSON, or SSE when the request asked for
``"stream": true``), :class:`ErrorReply`, :class:`DropConnection` or :class:`Delay`.

The stub also serves the Message Batches API: ``POST /v1/messages/batches`` (create),
``GET /v1/messages/batches/{id}`` (retrieve), ``GET /v1/messages/batches/{id}/results`` (the
JSONL file the batch's ``results_url`` names, which points back at the stub) and
``POST /v1/messages/batches/{id}/cancel``. A create takes one reply per item from the same
queue, in item order: a :class:`MessageReply` is a ``succeeded`` item, an :class:`ErrorReply`
an ``errored`` one with that error's type, an :class:`UnprocessedReply` a ``canceled`` or
``expired`` item or one missing from the results. A batch reports ``in_progress`` for
``batch_in_progress_polls`` retrieves, then ``ended``; its results come in reverse item
order unless ``batch_results_order = "given"``, since the API promises no order. Batch
requests are recorded in :attr:`AnthropicStub.requests` too (GETs with an empty body), and
:meth:`AnthropicStub.enqueue_batch_faults` scripts failures of the batch calls themselves::

    stub.batch_in_progress_polls = 2
    stub.enqueue(MessageReply(text="ok"), ErrorReply(status=529))
    outcomes = await runtime.invoke_batch([request_a, request_b])
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
from collections import deque
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from relay_nb.testing.stub_server import (
    RecordedRequest,
    ScriptedStub,
    StreamedText,
    StubHandler,
    json_object,
)

__all__ = [
    "STUB_MODEL",
    "AnthropicStub",
    "BatchFault",
    "Delay",
    "DropConnection",
    "ErrorReply",
    "MessageReply",
    "RecordedRequest",
    "Reply",
    "StreamFault",
    "StubBatch",
    "TokenCountReply",
    "ToolUse",
    "UnprocessedReply",
]

STUB_MODEL = "claude-stub-served-1"
"""The model a :class:`MessageReply` reports unless told otherwise (differs from any alias)."""

_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_BATCHES_PATH = "/v1/messages/batches"


@dataclass(frozen=True, kw_only=True)
class ToolUse:
    """A ``tool_use`` content block; an empty ``id`` gets a unique ``toolu_stub_N``."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True, kw_only=True)
class StreamFault:
    """Break a streamed reply after ``after_deltas`` text deltas have been sent.

    ``kind`` is how it breaks: ``"drop"`` closes the socket in the middle of the chunked body
    (the client sees a broken transfer), ``"truncate"`` ends the body cleanly without the
    closing events (as a misbehaving proxy might), ``"error"`` sends an SSE ``error`` event of
    ``error_type`` (as the API does when it overloads mid-stream) and ends the stream.
    """

    after_deltas: int = 0
    kind: Literal["drop", "truncate", "error"] = "drop"
    error_type: str = "overloaded_error"
    message: str = "stub stream failure"


@dataclass(frozen=True, kw_only=True)
class MessageReply(StreamedText):
    """A successful Messages API reply, sent as JSON or as an SSE stream.

    ``text`` may be a sequence of strings: they are the streamed ``text_delta`` chunks, and
    their concatenation is the JSON text. ``model=None`` leaves the model out of the body, as
    some Anthropic-compatible servers do. ``stop_reason=None`` means ``"tool_use"`` when there
    are tool uses, else ``"end_turn"``. ``event_delay_s`` pauses before each SSE event so a
    test can act mid-stream. ``stream_fault`` only applies to streamed replies.
    """

    tool_uses: Sequence[ToolUse] = ()
    model: str | None = STUB_MODEL
    stop_reason: str | None = None
    input_tokens: int = 12
    output_tokens: int = 7
    cache_creation_input_tokens: int | None = None
    cache_creation_1h_input_tokens: int | None = None
    """Sent as ``cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}``,
    the API's split of the cache writes by lifetime."""
    cache_read_input_tokens: int | None = None
    event_delay_s: float = 0.0
    stream_fault: StreamFault | None = None

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if self.tool_uses else "end_turn"

    def usage(self) -> dict[str, Any]:
        """The usage object, with the cache fields only when they were scripted."""
        usage: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        if self.cache_creation_input_tokens is not None:
            usage["cache_creation_input_tokens"] = self.cache_creation_input_tokens
        if self.cache_creation_1h_input_tokens is not None:
            long = self.cache_creation_1h_input_tokens
            usage["cache_creation"] = {
                "ephemeral_5m_input_tokens": (self.cache_creation_input_tokens or 0) - long,
                "ephemeral_1h_input_tokens": long,
            }
        if self.cache_read_input_tokens is not None:
            usage["cache_read_input_tokens"] = self.cache_read_input_tokens
        return usage


@dataclass(frozen=True, kw_only=True)
class ErrorReply:
    """An HTTP error with an Anthropic-style body ``{"type": "error", "error": {...}}``.

    ``error_type`` defaults to the API's type for the status (``api_error`` if unknown).
    ``headers`` are sent as given, e.g. ``{"retry-after": "7"}``.
    """

    status: int
    message: str = "stub error"
    error_type: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        kind = self.error_type or _ERROR_TYPES.get(self.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": self.message}}


@dataclass(frozen=True)
class DropConnection:
    """Close the connection after reading the request, without sending any response."""


@dataclass(frozen=True)
class Delay:
    """Wait ``seconds`` (cut short if the client disconnects or the stub stops), then reply."""

    seconds: float
    then: Reply = field(default_factory=lambda: MessageReply(text="late"))


@dataclass(frozen=True)
class TokenCountReply:
    """The answer to ``POST /v1/messages/count_tokens``."""

    input_tokens: int


@dataclass(frozen=True)
class UnprocessedReply:
    """A Message Batch item the batch never processed.

    ``"canceled"`` and ``"expired"`` are reported as such in the results; ``"missing"`` leaves
    the item out of the results file altogether, as a faulty server might. Outside a batch
    this reply is answered with a 500 ``api_error``.
    """

    kind: Literal["canceled", "expired", "missing"] = "canceled"


Reply: TypeAlias = (
    MessageReply | ErrorReply | DropConnection | Delay | TokenCountReply | UnprocessedReply
)

BatchFault: TypeAlias = ErrorReply | DropConnection | Delay | None
"""How one Message Batches call (create, retrieve, results, cancel) is answered.

``None`` serves it normally, an :class:`ErrorReply` or :class:`DropConnection` replaces the
answer, and a :class:`Delay` waits first (a client that hangs up meanwhile is counted in
:attr:`AnthropicStub.abandoned`), then applies its ``then`` if that is an error or a drop and
serves the call normally otherwise.
"""


@dataclass
class StubBatch:
    """One Message Batch as the stub holds it; :attr:`AnthropicStub.batches` gives copies."""

    id: str
    custom_ids: list[str]
    results: list[dict[str, Any] | None]
    """Each item's result object; ``None`` is an item left out of the results file."""
    polls_left: int
    created_at: str
    expires_at: str
    status: Literal["in_progress", "canceling", "ended"] = "in_progress"
    polls: int = 0
    """How many retrieves this batch has answered."""
    cancel_initiated_at: str | None = None
    ended_at: str | None = None

    @property
    def cancel_requested(self) -> bool:
        return self.cancel_initiated_at is not None

    def advance(self) -> None:
        """One retrieve: ``in_progress`` while polls are left, then ``ended``."""
        self.polls += 1
        if self.status == "canceling":
            self._end()
        elif self.status == "in_progress":
            if self.polls_left > 0:
                self.polls_left -= 1
            else:
                self._end()

    def cancel(self) -> None:
        """Start cancelling: nothing has been processed yet, so every item ends canceled."""
        if self.status == "in_progress":
            self.status = "canceling"
            self.cancel_initiated_at = _now()
            self.results = [
                {"type": "canceled"} if result is not None else None for result in self.results
            ]

    def _end(self) -> None:
        self.status = "ended"
        self.ended_at = _now()

    def to_json(self, results_base_url: str) -> dict[str, Any]:
        """The API's ``message_batch`` object."""
        ended = self.status == "ended"
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        if ended:
            for result in self.results:
                if result is not None and result.get("type") in counts:
                    counts[result["type"]] += 1
        else:
            counts["processing"] = len(self.results)
        results_url = f"{results_base_url}{_BATCHES_PATH}/{self.id}/results" if ended else None
        return {
            "id": self.id,
            "type": "message_batch",
            "processing_status": self.status,
            "request_counts": counts,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "ended_at": self.ended_at,
            "archived_at": None,
            "cancel_initiated_at": self.cancel_initiated_at,
            "results_url": results_url,
        }

    def results_jsonl(self, order: Literal["given", "reversed"]) -> bytes:
        lines = [
            json.dumps({"custom_id": key, "result": result}) + "\n"
            for key, result in zip(self.custom_ids, self.results, strict=True)
            if result is not None
        ]
        if order == "reversed":
            lines.reverse()
        return "".join(lines).encode()


def _now(after: dt.timedelta = dt.timedelta()) -> str:
    """An RFC 3339 UTC timestamp, as the API writes them."""
    return (dt.datetime.now(dt.UTC) + after).isoformat().replace("+00:00", "Z")


class AnthropicStub(ScriptedStub["Reply"]):
    """The Messages API stub; see :class:`~relay_nb.testing.stub_server.ScriptedStub`.

    Message Batches calls are scripted separately (:meth:`enqueue_batch_faults`).
    """

    def __init__(self) -> None:
        super().__init__()
        self._batch_faults: deque[BatchFault] = deque()
        self._batches: dict[str, StubBatch] = {}
        self.batch_in_progress_polls = 0
        """How many retrieves a new batch answers ``in_progress`` before it has ``ended``."""
        self.batch_results_order: Literal["given", "reversed"] = "reversed"
        """The order of a batch's results file (the API promises none, so reversed by default)."""
        self.results_base_url: str | None = None
        """Where a batch's ``results_url`` points; ``None`` is the stub itself."""

    # -- scripting and inspection ----------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The URL to give a client as its base URL (the SDK appends ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"

    def enqueue_batch_faults(self, *faults: BatchFault) -> None:
        """Script the next Message Batches calls (create, retrieve, results or cancel, in the
        order they arrive); each call consumes the oldest fault, and once none is left calls
        are served normally. See :data:`BatchFault`."""
        with self._lock:
            self._batch_faults.extend(faults)

    @property
    def batches(self) -> dict[str, StubBatch]:
        """A snapshot of every batch created so far, by id."""
        with self._lock:
            return {key: dataclasses.replace(batch) for key, batch in self._batches.items()}

    # -- called from handler threads -------------------------------------------------------

    def _record_batch_call(self, request: RecordedRequest) -> BatchFault:
        """Record a Message Batches call; its scripted fault, if any (no reply is consumed)."""
        with self._lock:
            self._requests.append(request)
            fault = self._batch_faults.popleft() if self._batch_faults else None
            self._lock.notify_all()
            return fault

    def _answer_batch_call(
        self, method: str, path: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any] | bytes]:
        """The status and JSON object (or JSONL bytes, for results) a batch call gets."""
        parts = path[len(_BATCHES_PATH) :].strip("/").split("/")
        not_served = 404, _error_body(404, f"the stub does not serve {method} {path}")
        with self._lock:
            if parts == [""]:
                return self._create_batch(body) if method == "POST" else not_served
            batch = self._batches.get(parts[0])
            if batch is None:
                return 404, _error_body(404, f"the stub has no batch {parts[0]!r}")
            if method == "GET" and len(parts) == 1:
                batch.advance()
                return 200, batch.to_json(self.results_base_url or self.base_url)
            if method == "GET" and parts[1:] == ["results"]:
                if batch.status != "ended":
                    return 400, _error_body(400, "the batch has not ended yet")
                return 200, batch.results_jsonl(self.batch_results_order)
            if method == "POST" and parts[1:] == ["cancel"]:
                batch.cancel()
                return 200, batch.to_json(self.results_base_url or self.base_url)
        return not_served

    def _create_batch(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Called with the lock held: take one reply per item, in item order."""
        items = body.get("requests")
        if (
            not isinstance(items, list)
            or not items
            or not all(
                isinstance(item, dict)
                and isinstance(item.get("custom_id"), str)
                and isinstance(item.get("params"), dict)
                for item in items
            )
            or len({item["custom_id"] for item in items}) != len(items)
        ):
            return 400, _error_body(400, "requests must be a non-empty list of unique items")
        results = [
            _batch_item_result(self._replies.popleft() if self._replies else None, self)
            for _ in items
        ]
        batch = StubBatch(
            id=self._next_id("msgbatch"),
            custom_ids=[item["custom_id"] for item in items],
            results=results,
            polls_left=self.batch_in_progress_polls,
            created_at=_now(),
            expires_at=_now(after=dt.timedelta(hours=24)),
        )
        self._batches[batch.id] = batch
        return 200, batch.to_json(self.results_base_url or self.base_url)


class _Handler(StubHandler[AnthropicStub]):
    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json_object(raw)
        recorded = RecordedRequest(
            method="POST",
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
            raw_body=raw,
        )
        if _is_batch_path(self.path):
            self._serve_batch_call(recorded)
            return
        reply = self.stub._record(recorded)
        if self.path.split("?", 1)[0] not in ("/v1/messages", "/v1/messages/count_tokens"):
            reply = ErrorReply(status=404, message=f"the stub does not serve {self.path}")
        elif reply is None:
            reply = ErrorReply(status=500, message="AnthropicStub has no scripted reply left")
        self._reply(reply, stream=body.get("stream") is True)

    def do_GET(self) -> None:
        if _is_batch_path(self.path):
            headers = {name.lower(): value for name, value in self.headers.items()}
            self._serve_batch_call(RecordedRequest("GET", self.path, headers, {}, b""))
            return
        self._reply(ErrorReply(status=404, message="the stub only serves POST /v1/messages"))

    def _serve_batch_call(self, recorded: RecordedRequest) -> None:
        stub = self.stub
        fault = stub._record_batch_call(recorded)
        self.close_connection = True
        if isinstance(fault, Delay):
            if not self._wait_or_abandon(fault.seconds):
                return
            fault = fault.then if isinstance(fault.then, ErrorReply | DropConnection) else None
        if fault is not None:
            self._reply(fault)
            return
        path = recorded.path.split("?", 1)[0]
        status, payload = stub._answer_batch_call(recorded.method, path, recorded.body)
        with contextlib.suppress(OSError):  # the client may be gone; that is its business
            if isinstance(payload, bytes):
                self._start(status, "application/binary", {})
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            else:
                self._send_json(status, payload, {})

    def _reply(self, reply: Reply, *, stream: bool = False) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):  # the client may be gone; that is its business
            self._send(reply, stream=stream)

    def _send(self, reply: Reply, *, stream: bool) -> None:
        if isinstance(reply, Delay):
            if self._wait_or_abandon(reply.seconds):
                self._send(reply.then, stream=stream)
        elif isinstance(reply, DropConnection):
            return
        elif isinstance(reply, ErrorReply):
            self._send_json(reply.status, reply.body(), reply.headers)
        elif isinstance(reply, TokenCountReply):
            self._send_json(200, {"input_tokens": reply.input_tokens}, {})
        elif isinstance(reply, UnprocessedReply):
            self._send_json(500, _error_body(500, "UnprocessedReply is for batch items"), {})
        elif stream:
            self._send_stream(reply)
        else:
            self._send_json(200, _message_json(reply, self.stub), {})

    def _send_stream(self, reply: MessageReply) -> None:
        self._start(200, "text/event-stream", {"cache-control": "no-cache"})
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in _stream_events(reply, self.stub):
            if reply.event_delay_s and not self._wait_or_abandon(reply.event_delay_s):
                return
            if event == "drop":
                return
            if event == "truncate":
                break
            data = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


def _is_batch_path(path: str) -> bool:
    path = path.split("?", 1)[0]
    return path == _BATCHES_PATH or path.startswith(_BATCHES_PATH + "/")


def _error_body(status: int, message: str) -> dict[str, Any]:
    return ErrorReply(status=status, message=message).body()


def _batch_item_result(reply: Reply | None, stub: AnthropicStub) -> dict[str, Any] | None:
    """A batch item's result object for a scripted reply; ``None``: left out of the results."""
    while isinstance(reply, Delay):  # a batch item has no connection to delay
        reply = reply.then
    if reply is None:
        return {"type": "errored", "error": _error_body(500, "no scripted reply left")}
    if isinstance(reply, MessageReply):
        return {"type": "succeeded", "message": _message_json(reply, stub)}
    if isinstance(reply, ErrorReply):
        return {"type": "errored", "error": reply.body()}
    if isinstance(reply, UnprocessedReply):
        return None if reply.kind == "missing" else {"type": reply.kind}
    return {"type": "errored", "error": _error_body(500, "not a batch item reply")}


def _message_json(reply: MessageReply, stub: AnthropicStub) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.full_text:
        content.append({"type": "text", "text": reply.full_text})
    content += [_tool_use_block(tool, stub, with_input=True) for tool in reply.tool_uses]
    return _message_envelope(reply, stub, content, reply.effective_stop_reason, reply.usage())


def _message_envelope(
    reply: MessageReply,
    stub: AnthropicStub,
    content: list[dict[str, Any]],
    stop_reason: str | None,
    usage: dict[str, int],
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": stub._next_id("msg"),
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }
    if reply.model is not None:
        message["model"] = reply.model
    return message


def _tool_use_block(tool: ToolUse, stub: AnthropicStub, *, with_input: bool) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": tool.id or stub._next_id("toolu"),
        "name": tool.name,
        "input": dict(tool.input) if with_input else {},
    }


_StreamItem: TypeAlias = dict[str, Any] | Literal["drop", "truncate"]


def _stream_events(reply: MessageReply, stub: AnthropicStub) -> Iterator[_StreamItem]:
    """The API's event sequence, cut short where a :class:`StreamFault` says."""
    start_usage = {**reply.usage(), "output_tokens": 1}
    envelope = _message_envelope(reply, stub, [], None, start_usage)
    yield {"type": "message_start", "message": envelope}
    index = 0
    if reply.text_deltas or reply.stream_fault is not None:
        completed = yield from _text_block_events(reply, index)
        if not completed:
            return
        index += 1
    for tool in reply.tool_uses:
        yield from _tool_block_events(tool, stub, index)
        index += 1
    delta = {"stop_reason": reply.effective_stop_reason, "stop_sequence": None}
    yield {"type": "message_delta", "delta": delta, "usage": reply.usage()}
    yield {"type": "message_stop"}


def _text_block_events(reply: MessageReply, index: int) -> Generator[_StreamItem, None, bool]:
    """One text block; returns False if a fault ended the stream inside it."""
    yield {
        "type": "content_block_start",
        "index": index,
        "content_block": {"type": "text", "text": ""},
    }
    yield {"type": "ping"}
    fault = reply.stream_fault
    for sent, chunk in enumerate(reply.text_deltas):
        if fault is not None and sent >= fault.after_deltas:
            break
        delta = {"type": "text_delta", "text": chunk}
        yield {"type": "content_block_delta", "index": index, "delta": delta}
    if fault is not None:
        yield from _fault_events(fault)
        return False
    yield {"type": "content_block_stop", "index": index}
    return True


def _fault_events(fault: StreamFault) -> Iterator[_StreamItem]:
    if fault.kind == "error":
        yield {"type": "error", "error": {"type": fault.error_type, "message": fault.message}}
        yield "truncate"
    else:
        yield fault.kind


def _tool_block_events(tool: ToolUse, stub: AnthropicStub, index: int) -> Iterator[_StreamItem]:
    block = _tool_use_block(tool, stub, with_input=False)
    yield {"type": "content_block_start", "index": index, "content_block": block}
    arguments = json.dumps(dict(tool.input))
    middle = len(arguments) // 2  # two partial chunks, as the API splits tool input JSON
    for part in (arguments[:middle], arguments[middle:]):
        delta = {"type": "input_json_delta", "partial_json": part}
        yield {"type": "content_block_delta", "index": index, "delta": delta}
    yield {"type": "content_block_stop", "index": index}


AnthropicStub.handler = _Handler  # defined after the stub it serves
