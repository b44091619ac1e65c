"""A hostile local API on 127.0.0.1 that echoes every credential it receives.

APIs echo: error pages quote the request, debug endpoints return the headers, search
providers put tracking tokens in result URLs. This server does all of it at once, so a
credential relay_nb sends comes straight back in every field a connector might show — the
body, the title and description of an OpenAPI document, search hits (title, URL, snippet),
error details and response headers. ``status`` makes it refuse (401) or answer (200);
``mode`` picks the answer's shape: ``"http"`` (JSON records), ``"tavily"``, ``"brave"`` or
``"serper"``. Each request is recorded, so a test can assert the credential did arrive.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["EchoServer", "Received"]

SEARCH_PATHS = {"tavily": "/search", "brave": "/res/v1/web/search", "serper": "/search"}


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: str

    def everything(self) -> str:
        return json.dumps(
            {"method": self.method, "path": self.path, "headers": self.headers, "body": self.body}
        )


class EchoServer:
    def __init__(self) -> None:
        self.status = 401
        self.mode = "http"
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> EchoServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def record(self, received: Received) -> None:
        with self._lock:
            self.requests.append(received)

    def answer(self, received: Received) -> tuple[int, Any, dict[str, str]]:
        """Status, JSON payload and extra headers — each of them quoting the request."""
        echo = received.everything()
        credential = " ".join(
            value
            for name, value in received.headers.items()
            if name.lower() in ("authorization", "x-api-key", "x-subscription-token")
        )
        link = f"https://example.com/r?tracking={credential.replace(' ', '+')}"
        headers = {
            "WWW-Authenticate": f'Bearer error="invalid_token", received="{credential}"',
            "X-Echo-Query": urlsplit(received.path).query,
        }
        if self.status != 200:
            error = {"error": echo, "message": echo, "detail": {"error": echo}, "code": "DENIED"}
            return self.status, {**error, "type": "ErrorResponse", "received": echo}, headers
        if urlsplit(received.path).path.endswith("/openapi.json"):
            document = {
                "openapi": "3.0.3",
                "info": {"title": f"Echo of {credential}", "version": "1", "description": echo},
                "paths": {
                    "/echo": {
                        "get": {
                            "summary": f"Echo for {credential}",
                            "description": echo,
                            "parameters": [
                                {"name": "q", "in": "query", "description": echo},
                            ],
                        }
                    }
                },
            }
            return 200, document, headers
        hit = {"title": f"Hit for {credential}", "url": link, "snippet": echo}
        if self.mode == "tavily":
            payload: Any = {"results": [{**hit, "content": echo}]}
        elif self.mode == "brave":
            payload = {"type": "search", "web": {"results": [{**hit, "description": echo}]}}
        elif self.mode == "serper":
            payload = {"organic": [{"title": hit["title"], "link": link, "snippet": echo}]}
        else:
            payload = [{"echo": echo, "credential": credential, "link": link}]
        return 200, payload, headers


def _handler(server: EchoServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
            received = Received(self.command, self.path, dict(self.headers.items()), body)
            server.record(received)
            status, payload, headers = server.answer(received)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # request lines would carry the query-string secrets to stderr

    return Handler
