"""A real HTTP API on 127.0.0.1 for the HTTP connector tests (started by ``conftest.py``).

``ShopAPI`` serves the OpenAPI documents in ``specs/`` and a small JSON API under ``/v1``
(orders, a paginated customer list, big, slow, redirecting, echoing and failing endpoints),
plus the hostile shapes the connector's bounds are tested with: compression bombs (stacked
``gzip, gzip``, one gzip layer, deflate), an encoding nobody decodes, truthful small
compressed bodies, a record with 50,000 keys and a list of 200,000 records.
Both servers record every request that reaches them — method, raw path, headers, body — so a
test can assert that a refused call produced *no* request, that no write arrived, and that
nothing ever reached the foreign server (the stand-in for an attacker's host or a cloud
metadata endpoint).
"""

from __future__ import annotations

import functools
import gzip
import json
import threading
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

SPECS = Path(__file__).with_name("specs")

ORDERS: list[dict[str, Any]] = [
    {"id": 1, "status": "paid", "total": 120.5, "customer": {"name": "Ada", "country": "DE"}},
    {"id": 2, "status": "refunded", "total": 30.0, "customer": {"name": "Bo", "country": "FR"}},
    {"id": 3, "status": "paid", "total": 75.25, "customer": {"name": "Cy", "country": "DE"}},
    {"id": 4, "status": "pending", "total": 12.0, "customer": {"name": "Di", "country": "IT"}},
    {"id": 5, "status": "paid", "total": 9.99, "customer": {"name": "Ed", "country": "FR"}},
]
CUSTOMERS = [{"id": i, "name": f"customer {i}", "tags": ["a", "b"]} for i in range(1, 8)]
BIG = [{"id": i, "payload": "x" * 90} for i in range(600)]  # ~60 kB of JSON
BOMB_BYTES = 128 << 20
"""What every compression bomb here inflates to: 128 MiB of zeros."""
WIDE_KEYS = 50_000
LONG_RECORDS = 200_000


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class LiveServer:
    """One running server; ``requests`` is everything that reached it since ``clear()``."""

    server: ThreadingHTTPServer
    requests: list[Recorded] = field(default_factory=list)
    foreign_url: str = ""

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def hostport(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host}:{port}"

    @property
    def base(self) -> str:
        return self.url + "/v1"

    def paths(self, method: str | None = None) -> list[str]:
        return [r.path for r in self.requests if method is None or r.method == method]

    def clear(self) -> None:
        self.requests.clear()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: LiveServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (timeout, size cap) is expected here


class ShopHandler(BaseHTTPRequestHandler):
    """The routes; HTTP/1.0, so a body without Content-Length ends when the socket closes."""

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self) -> tuple[str, dict[str, list[str]]]:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.state.requests.append(Recorded(self.command, self.path, headers, body))
        parts = urlsplit(self.path)
        return parts.path, parse_qs(parts.query)

    def do_GET(self) -> None:
        path, query = self._record()
        route = GET_ROUTES.get(path)
        if route is None and path.startswith("/v1/orders/"):
            route = _one_order
        if route is None:
            self._json(404, {"error": f"no route {path}"})
            return
        route(self, query)

    def do_POST(self) -> None:
        path, _ = self._record()
        body = self.server.state.requests[-1].body
        if path.startswith("/v1/redirect-"):  # writes get redirected too
            GET_ROUTES[path](self, {})
        elif path == "/v1/orders":
            self._json(201, {"id": 100, "created": json.loads(body or b"null")})
        else:
            self._json(404, {"error": "no route"})

    do_PUT = do_PATCH = do_DELETE = do_POST

    # ---------------------------------------------------------------- helpers
    def _send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if "no_length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            if name != "no_length":
                self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: Any, **headers: str) -> None:
        self._send(status, json.dumps(data).encode(), "application/json", **headers)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()


def _spec(name: str, content_type: str):
    def route(handler: ShopHandler, query: dict[str, list[str]]) -> None:
        text = (SPECS / name).read_text(encoding="utf-8")
        text = text.replace("REMOTE_REF_URL", handler.server.state.foreign_url + "/remote.json")
        handler._send(200, text.encode(), content_type)

    return route


def _private_spec(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    if handler.headers.get("Authorization") != "Bearer spec-token-1234567":
        handler._json(401, {"error": "unauthorised"})
        return
    _spec("shop_openapi.json", "application/json")(handler, query)


def _orders(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    rows = [o for o in ORDERS if "status" not in query or o["status"] in query["status"]]
    if "limit" in query:
        rows = rows[: int(query["limit"][0])]
    handler._json(200, rows)


def _one_order(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    tail = urlsplit(handler.path).path.rsplit("/", 1)[-1]
    found = [o for o in ORDERS if str(o["id"]) == tail]
    if found:
        handler._json(200, found[0])
    else:
        handler._json(404, {"error": f"order {tail} not found; list orders to see valid ids"})


def _customers(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    start = int(query.get("cursor", ["0"])[0])
    size = int(query.get("page_size", ["3"])[0])
    page = CUSTOMERS[start : start + size]
    more = start + size < len(CUSTOMERS)
    handler._json(
        200,
        {"data": page, "has_more": more, "next_cursor": str(start + size) if more else None},
        Link=f'</v1/customers?cursor={start + size}>; rel="next"',
    )


def _big(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    body = json.dumps(BIG).encode()
    if "chunked" in query:  # no Content-Length: the cap must hold while streaming
        handler._send(200, body, "application/json", no_length="1")
    elif "gzip" in query:  # small on the wire, large once decoded
        handler._send(200, gzip.compress(body), "application/json", Content_Encoding="gzip")
    else:
        handler._send(200, body, "application/json")


def _compress(chunks: Iterable[bytes], wbits: int) -> bytes:
    """zlib at level 9, fed piece by piece so a bomb is never held decompressed here."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    parts = [compressor.compress(chunk) for chunk in chunks]
    return b"".join([*parts, compressor.flush()])


def _zeros() -> Iterable[bytes]:
    return (bytes(1 << 20) for _ in range(BOMB_BYTES >> 20))


@functools.cache
def bomb_body(encoding: str) -> bytes:
    """The body ``/v1/bomb?encoding=…`` sends: ``gzip`` (~130 kB), ``gzip, gzip`` (~300 bytes,
    the gzip inside gzip), ``deflate`` (zlib-wrapped, ~130 kB). Cached: each takes about a
    second to build, so a test module builds them once, before any call's deadline runs."""
    if encoding == "gzip":
        return _compress(_zeros(), 31)
    if encoding == "gzip, gzip":
        return _compress([bomb_body("gzip")], 31)
    if encoding == "deflate":
        return _compress(_zeros(), 15)
    raise ValueError(encoding)


def _bomb(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    encoding = query["encoding"][0]
    status = int(query.get("status", ["200"])[0])  # an error's body can be a bomb too
    handler._send(status, bomb_body(encoding), "application/json", Content_Encoding=encoding)


_ENCODERS = {
    "gzip": gzip.compress,
    "x-gzip": gzip.compress,
    "deflate": zlib.compress,
    "deflate-raw": lambda data: _compress([data], -15),  # what some servers call deflate
    "identity": lambda data: data,
    "br": lambda data: data,  # labelled brotli, which relay_nb does not ask for
    "gzip, identity": gzip.compress,
    "deflate, gzip": lambda data: gzip.compress(zlib.compress(data)),
}


def _encoded(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    """The orders, truthfully compressed as ``encoding`` says (``br`` is not: it is a label)."""
    encoding = query["encoding"][0]
    body = _ENCODERS[encoding](json.dumps(ORDERS).encode())
    label = "deflate" if encoding == "deflate-raw" else encoding
    status = int(query.get("status", ["200"])[0])
    handler._send(status, body, "application/json", Content_Encoding=label)


@functools.cache
def wide_body() -> bytes:
    """One JSON object of ~1.2 MB with 50,000 keys: a record nobody wants as 50,000 columns."""
    return json.dumps({f"k{i:05}": f"value {i:06}" for i in range(WIDE_KEYS)}).encode()


@functools.cache
def long_body(envelope: bool) -> bytes:
    """200,000 small records (~11 MB): a bare list, or the ``data`` of a paging envelope."""
    records = [{"id": i, "name": f"customer {i}", "total": i / 4} for i in range(LONG_RECORDS)]
    data: Any = (
        {"data": records, "next_cursor": "c2", "total": LONG_RECORDS} if envelope else records
    )
    return json.dumps(data).encode()


def _slow(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    time.sleep(2.0)
    handler._json(200, [{"late": True}])


def _drip(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    """Headers at once, then one byte every 50 ms: no single read ever times out."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.end_headers()
    for char in json.dumps([{"n": i} for i in range(20)]):
        handler.wfile.write(char.encode())
        handler.wfile.flush()
        time.sleep(0.05)


def _echo_headers(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    handler._json(200, {k.lower(): v for k, v in handler.headers.items()})


def _echo_headers_error(handler: ShopHandler, query: dict[str, list[str]]) -> None:
    handler._json(401, {"error": "bad token", "got": handler.headers.get("Authorization")})


def _text(body: bytes, content_type: str):
    return lambda handler, query: handler._send(200, body, content_type)


GET_ROUTES = {
    "/openapi.json": _spec("shop_openapi.json", "application/json"),
    "/openapi.yaml": _spec("shop_swagger.yaml", "application/yaml"),
    "/private/openapi.json": _private_spec,
    "/v1/orders": _orders,
    "/v1/customers": _customers,
    "/v1/stats": lambda h, q: h._json(200, {"orders": len(ORDERS), "revenue": 247.74}),
    "/v1/scalars": lambda h, q: h._json(200, [3, 1, 2]),
    "/v1/empty": lambda h, q: h._send(204, b"", "application/json"),
    "/v1/many": lambda h, q: h._json(200, [{"n": i} for i in range(500)]),
    "/v1/big": _big,
    "/v1/slow": _slow,
    "/v1/drip": _drip,
    "/v1/echo-headers": _echo_headers,
    "/v1/echo-headers-error": _echo_headers_error,
    "/v1/bad-request": lambda h, q: h._json(
        400, {"error": "unknown parameter 'colour'; did you mean 'color'?"}
    ),
    "/v1/boom": lambda h, q: h._send(500, b"Internal Server Error", "text/plain"),
    "/v1/text": _text(b"plain words from the API", "text/plain; charset=utf-8"),
    "/v1/reports/daily.csv": _text(b"day,revenue\n2026-01-01,10.5\n2026-01-02,7\n", "text/csv"),
    "/v1/image": _text(b"\x89PNG\r\n\x1a\n\0\0\0binary", "image/png"),
    "/v1/redirect-local": lambda h, q: h._redirect("/v1/orders?status=refunded"),
    "/v1/redirect-escape": lambda h, q: h._redirect("/admin"),
    "/v1/redirect-dotdot": lambda h, q: h._redirect("/v1/%2e%2e/admin"),
    "/v1/redirect-foreign": lambda h, q: h._redirect(h.server.state.foreign_url + "/steal"),
    "/v1/redirect-loop": lambda h, q: h._redirect("/v1/redirect-loop"),
    "/v1/bomb": _bomb,
    "/v1/encoded": _encoded,
    "/v1/wide": lambda h, q: h._send(200, wide_body(), "application/json"),
    "/v1/long": lambda h, q: h._send(200, long_body("envelope" in q), "application/json"),
    "/v1/long-text": lambda h, q: h._send(200, b"word " * (3 << 20), "text/plain"),
    "/v1/long-csv": lambda h, q: h._send(
        200,
        b"n,name\n" + b"".join(b"%d,row %d\n" % (i, i) for i in range(LONG_RECORDS)),
        "text/csv",
    ),
    "/v1/wide-csv": lambda h, q: h._send(
        200,
        (",".join(f"c{i}" for i in range(WIDE_KEYS)) + "\n" + ",".join("1" * WIDE_KEYS)).encode(),
        "text/csv",
    ),
    "/admin": _text(b"the admin area: must never be reached", "text/plain"),
}


def start_server() -> LiveServer:
    """Start one server on a free port in a daemon thread."""
    server = _Server(("127.0.0.1", 0), ShopHandler)
    state = LiveServer(server)
    server.state = state
    threading.Thread(
        target=server.serve_forever, args=(0.05,), name="http-test-server", daemon=True
    ).start()
    return state
