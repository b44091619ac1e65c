"""Local stand-ins for the Tavily, Brave and Serper search APIs, on real sockets.

Each ``FakeSearchAPI`` is a ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) speaking one
provider's documented wire format: it checks the method, the path and the key exactly where
the real API expects it, answers a wrong or missing key with that provider's real refusal
(Tavily 401, Brave 422 ``SUBSCRIPTION_TOKEN_INVALID``, Serper 403), and otherwise returns
hits derived from the query text and the requested count, so a test can tell that both
arrived. Every request is recorded (method, path, query string, headers, body).

Knobs: ``delay_s`` (a slow service), ``canned`` (the next answers are a fixed
status/body/headers, e.g. HTML from a proxy, a 429, a 503), ``extra_hits`` (send more hits
than asked, as Serper can) and ``trickle_s`` (send the body one byte per interval).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

PROVIDER_NAMES = ("tavily", "brave", "serper")
PATHS = {"tavily": "/search", "brave": "/res/v1/web/search", "serper": "/search"}
METHODS = {"tavily": "POST", "brave": "GET", "serper": "POST"}
KEY_ENVS = {"tavily": "TAVILY_API_KEY", "brave": "BRAVE_API_KEY", "serper": "SERPER_API_KEY"}
KEY_PREFIXES = {"tavily": "tvly-dev-", "brave": "BSA", "serper": ""}
DOMAINS = ("en.wikipedia.org", "www.example.com", "docs.python.org", "news.example.net")
NOTHING = "zzqx nothing matches this"
"""A query every fake answers with zero hits, the way each provider does."""


@dataclass
class Recorded:
    """One request as it reached the server."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def everything(self) -> str:
        """The whole request as text (to look for a key anywhere)."""
        return f"{self.method} {self.path} {self.query} {self.headers} {self.body!r}"

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Canned:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


class FakeSearchAPI:
    """One provider's API on a real local socket."""

    def __init__(self, provider: str, key: str) -> None:
        self.provider = provider
        self.key = key
        self.requests: list[Recorded] = []
        self.delay_s = 0.0
        self.canned: Canned | None = None
        self.extra_hits = 0
        self.trickle_s = 0.0
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def endpoint(self) -> str:
        return self.base + PATHS[self.provider]

    def close(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def sleep(self) -> None:
        deadline = time.monotonic() + self.delay_s
        while time.monotonic() < deadline and not self._stop.is_set():
            time.sleep(0.02)

    def asked(self, index: int = -1) -> tuple[str, int]:
        """The query and count of a recorded request, read the way the provider reads them."""
        rec = self.requests[index]
        if self.provider == "brave":
            return rec.query["q"][0], int(rec.query["count"][0])
        body = rec.json()
        if self.provider == "tavily":
            return body["query"], body["max_results"]
        return body["q"], body["num"]

    # -- the provider's behaviour ----------------------------------------------------------
    def answer(self, rec: Recorded) -> tuple[int, Any]:
        expected_path = PATHS[self.provider]
        if rec.path != expected_path:
            return 404, {"message": "Not Found"}
        if rec.method != METHODS[self.provider]:
            return 405, {"message": "Method Not Allowed"}
        return getattr(self, f"_{self.provider}")(rec)

    def _tavily(self, rec: Recorded) -> tuple[int, Any]:
        if rec.headers.get("authorization") != f"Bearer {self.key}":
            return 401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}
        body = _json_or_none(rec.body)
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return 400, {"detail": {"error": "Invalid request: query is required."}}
        count = body.get("max_results", 5)
        if not isinstance(count, int) or not 0 <= count <= 20:
            return 400, {"detail": {"error": "max_results must be between 0 and 20."}}
        results = [
            {
                "title": title,
                "url": url,
                "content": f"## {title}\n{snippet} See [the source]({url}) &amp; more.",
                "score": round(0.9 - i / 50, 3),
                "raw_content": None,
            }
            for i, (title, url, snippet) in enumerate(_hits(body["query"], count + self.extra_hits))
        ]
        return 200, {
            "query": body["query"],
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": results,
            "response_time": 0.41,
            "request_id": str(uuid.uuid4()),
        }

    def _brave(self, rec: Recorded) -> tuple[int, Any]:
        if rec.headers.get("x-subscription-token") != self.key:
            return 422, {
                "type": "ErrorResponse",
                "error": {
                    "id": str(uuid.uuid4()),
                    "status": 422,
                    "code": "SUBSCRIPTION_TOKEN_INVALID",
                    "detail": "The provided subscription token is invalid.",
                    "meta": {"component": "authentication"},
                },
                "time": int(time.time()),
            }
        query = rec.query.get("q", [""])[0]
        count = int(rec.query.get("count", ["20"])[0])
        if not query or not 1 <= count <= 20:
            return 422, {
                "type": "ErrorResponse",
                "error": {
                    "status": 422,
                    "code": "VALIDATION",
                    "detail": "Unable to validate request parameter(s)",
                    "meta": {},
                },
            }
        answer: dict[str, Any] = {
            "type": "search",
            "query": {"original": query, "more_results_available": True},
            "mixed": {"type": "mixed", "main": [], "top": [], "side": []},
        }
        hits = _hits(query, count + self.extra_hits)
        if hits:
            answer["web"] = {
                "type": "search",
                "family_friendly": True,
                "results": [
                    {
                        "type": "search_result",
                        "title": title.replace(query, f"<strong>{query}</strong>", 1),
                        "url": url,
                        "description": snippet.replace(query, f"<strong>{query}</strong>")
                        + " Facts &amp; figures.",
                        "is_source_local": False,
                        "language": "en",
                        "profile": {"name": urlsplit(url).hostname, "url": url},
                    }
                    for title, url, snippet in hits
                ],
            }
        return 200, answer

    def _serper(self, rec: Recorded) -> tuple[int, Any]:
        if rec.headers.get("x-api-key") != self.key:
            return 403, {"message": "Unauthorized.", "statusCode": 403}
        body = _json_or_none(rec.body)
        if not isinstance(body, dict) or not isinstance(body.get("q"), str):
            return 400, {"message": "Missing query parameter", "statusCode": 400}
        count = body.get("num", 10)
        organic = [
            {"title": title, "link": url, "snippet": snippet, "position": i + 1}
            for i, (title, url, snippet) in enumerate(_hits(body["q"], count + self.extra_hits))
        ]
        answer: dict[str, Any] = {
            "searchParameters": {
                "q": body["q"],
                "type": "search",
                "num": count,
                "engine": "google",
            },
            "relatedSearches": [{"query": f"{body['q']} explained"}],
            "credits": 1,
        }
        if organic:
            answer["organic"] = organic
        return 200, answer


def _hits(query: str, count: int) -> list[tuple[str, str, str]]:
    """Deterministic hits for ``query``: numbered, so a test can count what arrived."""
    if query == NOTHING:
        return []
    slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-") or "q"
    return [
        (
            f"{query} - result {i}",
            f"https://{DOMAINS[(i - 1) % len(DOMAINS)]}/{slug}/{i}",
            f"Result {i} explains {query} in detail.",
        )
        for i in range(1, count + 1)
    ]


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _handler_for(api: FakeSearchAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            rec = Recorded(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            api.requests.append(rec)
            api.sleep()
            if api.canned is not None:
                self._send(api.canned.status, api.canned.body, api.canned.headers)
                return
            status, payload = api.answer(rec)
            data = json.dumps(payload).encode()
            self._send(status, data, {"Content-Type": "application/json"})

        def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not api.trickle_s:
                    self.wfile.write(data)
                    return
                for index in range(len(data)):
                    if api._stop.is_set():
                        return
                    self.wfile.write(data[index : index + 1])
                    self.wfile.flush()
                    time.sleep(api.trickle_s)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout tests)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def make_key(provider: str) -> str:
    """A fresh, recognisable key: a test can then search every output for it."""
    return KEY_PREFIXES[provider] + uuid.uuid4().hex
