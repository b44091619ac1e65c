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
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
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
class ChatReply(StreamedText):
    """A successful completion, sent as one JSON object or as an SSE stream of chunks.

    ``text`` may be a sequence of strings: the streamed ``content`` deltas, whose
    concatenation is the JSON reply's content. ``model=None`` leaves the model out.
    ``finish_reason=None`` means ``"tool_calls"`` when there are calls, else ``"stop"``.
    ``cached_tokens`` adds ``prompt_tokens_details``; ``usage=False`` sends no usage at all
    (as some servers do). ``event_delay_s`` pauses before each SSE chunk.
    """

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


class OpenAIStub(ScriptedStub["Reply"]):
    """The Chat Completions stub; see :class:`~relay_nb.testing.stub_server.ScriptedStub`.

    A reply may also be a callable that builds the reply from the recorded request.
    """

    # -- scripting and inspection ----------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The URL to give a client as its base URL (the SDK appends ``/chat/completions``)."""
        return f"http://127.0.0.1:{self.port}/v1"


class _Handler(StubHandler[OpenAIStub]):
    request_id_header = "x-request-id"

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json_object(raw)
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
        reply = self.stub._record(recorded)
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
                self._send_json(200, _completion_json(reply, self.stub), {})
        else:
            self._send_json(500, ErrorReply(status=500, message="not a reply").body(), {})

    def _send_stream(self, reply: ChatReply, *, include_usage: bool) -> None:
        self._start(200, "text/event-stream", {"cache-control": "no-cache"})
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in _stream_events(reply, self.stub, include_usage=include_usage):
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


OpenAIStub.handler = _Handler  # defined after the stub it serves
