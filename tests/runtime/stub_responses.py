"""A local OpenAI Responses API (``POST /v1/responses``, streamed as server-sent events) for
the real Codex CLI to talk to: the wire shapes of OpenAI's API reference (``response.created``,
``response.output_item.added``/``done``, ``response.output_text.delta``,
``response.completed`` with ``usage``), nothing the CLI's own code was read for.

A test queues what the next requests get — a text (also a structured answer, which is JSON
text), an HTTP error status, or no answer at all — and reads every request body back (the
tools the CLI offered the model, its prompt, its output schema). Loopback only; a thread.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Reply", "ResponsesStub"]

USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 40},
    "output_tokens": 7,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 107,
}


@dataclass(frozen=True)
class Reply:
    """What one request gets: ``text`` streamed as the assistant's message; else HTTP
    ``status`` with an error body; ``hang`` seconds without a byte first."""

    text: str = ""
    status: int = 200
    hang: float = 0.0


class ResponsesStub:
    """The server; ``with ResponsesStub() as stub:``, then ``stub.base_url``."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.otherwise = Reply(text="(no reply queued)")
        """What a request gets once the queue is empty."""
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def __enter__(self) -> ResponsesStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def next_reply(self) -> Reply:
        return self.replies.popleft() if self.replies else self.otherwise


def _events(text: str) -> bytes:
    message = {
        "id": "msg_stub_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    response = {
        "id": "resp_stub_1",
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": "gpt-5",
        "output": [],
    }
    started = {**message, "status": "in_progress", "content": []}
    done = {**response, "status": "completed", "output": [message], "usage": USAGE}
    events = [
        ("response.created", {"response": response}),
        ("response.output_item.added", {"output_index": 0, "item": started}),
        (
            "response.output_text.delta",
            {"item_id": "msg_stub_1", "output_index": 0, "content_index": 0, "delta": text},
        ),
        ("response.output_item.done", {"output_index": 0, "item": message}),
        ("response.completed", {"response": done}),
    ]
    return b"".join(
        f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
        for kind, data in events
    )


def _handler(stub: ResponsesStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # the CLI may list models
            listing = {"object": "list", "data": [{"id": "gpt-5", "object": "model"}]}
            self._send(200, json.dumps(listing).encode(), "application/json")

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                stub.requests.append(json.loads(raw))
            except ValueError:
                stub.requests.append({"unreadable": raw[:200].decode("latin-1")})
            reply = stub.next_reply()
            if reply.hang:
                time.sleep(reply.hang)
            if reply.status != 200:
                error = {"error": {"message": f"stub status {reply.status}", "type": "stub"}}
                self._send(reply.status, json.dumps(error).encode(), "application/json")
                return
            self._send(200, _events(reply.text), "text/event-stream")

    return Handler
