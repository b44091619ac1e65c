"""Send one request under the connector's limits: guarded URL, deadline, size cap, redirects.

* Every URL that will be requested — the first one and any redirect target — passes the
  caller's ``guard`` first; a redirect is followed only for GET and only when its target
  passes, so a server cannot bounce the connector to another host or out of the base path.
* One deadline covers the whole exchange (connect, redirects, reading): a server that drips
  one byte a second would slip past a per-read timeout.
* The body is read raw, as a stream, and decoded here (:mod:`.inflate`): one layer of gzip
  or deflate, at most 64 KiB of output per ``zlib`` call, so reading stops as soon as the
  *decoded* total passes ``max_bytes`` — a gzip bomb, or gzip inside gzip, costs the cap and
  one step, not what it inflates to. ``Accept-Encoding`` names only what is decoded; stacked
  or unknown encodings are refused unread. A ``Content-Length`` above the cap is refused
  before reading anything. An error status's body is read only up to its first
  :data:`ERROR_BODY_BYTES` (all that an error message shows), and so is a redirect's that is
  not followed; a followed redirect's body is never read.

httpx is imported here, inside the function, because only an HTTP connector needs it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay_nb.connectors.http.inflate import ACCEPT_ENCODING, decoder_for
from relay_nb.errors import QueryExecutionError, UnsafeQueryError
from relay_nb.redaction import redact

if TYPE_CHECKING:
    import httpx

__all__ = ["ERROR_BODY_BYTES", "MAX_REDIRECTS", "Deadline", "Fetched", "fetch"]

MAX_REDIRECTS = 5
ERROR_BODY_BYTES = 4096
_MAX_MESSAGE = 300


@dataclass(frozen=True)
class Deadline:
    """The end of one call's ``timeout_s``, shared by the request and the decoding after it:
    an answer that arrives in time must not keep the kernel busy long after the time is up."""

    seconds: float
    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(seconds, time.monotonic() + seconds)

    def passed(self) -> bool:
        return time.monotonic() >= self.at


@dataclass(frozen=True)
class Fetched:
    """A complete response: status, lowercase headers, the (decoded) body, the final URL.

    For a status of 300 or more ``content`` is only the body's first ``ERROR_BODY_BYTES``.
    """

    status: int
    reason: str
    headers: dict[str, str]
    content: bytes
    url: str
    elapsed_ms: float


async def fetch(
    method: str,
    url: str,
    *,
    what: str,
    params: Mapping[str, Any] | None = None,
    json_body: Any = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float,
    max_bytes: int,
    transport: httpx.AsyncBaseTransport | None = None,
    guard: Callable[[str], None] | None = None,
) -> Fetched:
    """Send ``method url`` and read the whole response; ``what`` names the target in errors.

    Without ``guard`` no redirect is followed. Raises ``QueryExecutionError`` for timeouts,
    oversized bodies and network failures, ``UnsafeQueryError`` for refused redirects.
    """
    import httpx

    client = httpx.AsyncClient(
        transport=_borrowed(transport) if transport is not None else None,
        timeout=httpx.Timeout(timeout_s),
        follow_redirects=False,
        headers=_with_accept_encoding(headers),
    )
    started = time.perf_counter()
    try:
        async with client, asyncio.timeout(timeout_s):
            # params=None would still replace the URL's own query (an OpenAPI URL's ?api_key=)
            current = httpx.URL(url, params=params) if params else httpx.URL(url)
            if guard is not None:
                guard(str(current))
            for hop in range(MAX_REDIRECTS + 1):
                body = json_body if hop == 0 else None
                request = client.build_request(method, current, json=body)
                response = await client.send(request, stream=True)
                try:
                    follow = method == "GET" and hop < MAX_REDIRECTS
                    if guard is not None and follow and response.is_redirect:
                        current = response.url.join(response.headers["location"])
                        _check_redirect(guard, str(current), what)
                        continue
                    content = await _read_body(response, max_bytes, what)
                finally:
                    await response.aclose()
                return Fetched(
                    status=response.status_code,
                    reason=response.reason_phrase,
                    headers={k.lower(): v for k, v in response.headers.items()},
                    content=content,
                    url=str(response.url),
                    elapsed_ms=(time.perf_counter() - started) * 1000,
                )
    except (TimeoutError, httpx.TimeoutException):
        raise QueryExecutionError(
            f"{what} did not answer within {timeout_s:g} s; ask for less (a filter or a smaller "
            "page in query) or try again later"
        ) from None
    except httpx.InvalidURL as exc:  # the guard should make this unreachable
        raise QueryExecutionError(
            f"the URL for {what} could not be built: {_message(exc)}"
        ) from None
    except httpx.HTTPError as exc:
        raise QueryExecutionError(
            f"the request to {what} failed ({type(exc).__name__}: {_message(exc)}); check that "
            "the API is reachable"
        ) from None
    raise AssertionError("unreachable: the last hop always returns")  # pragma: no cover


def _with_accept_encoding(headers: Mapping[str, str] | None) -> dict[str, str]:
    """The caller's headers with ``Accept-Encoding`` set to what ``_read_body`` decodes under
    the cap (httpx would otherwise offer br and zstd whenever their packages are installed)."""
    kept = {k: v for k, v in (headers or {}).items() if k.lower() != "accept-encoding"}
    return {**kept, "Accept-Encoding": ACCEPT_ENCODING}


def _check_redirect(guard: Callable[[str], None], target: str, what: str) -> None:
    try:
        guard(target)
    except UnsafeQueryError:
        raise UnsafeQueryError(
            "redirect_outside_base",
            f"{what} answered with a redirect that leaves the base URL (another host or path); "
            "it was not followed. Call a path under the base URL instead",
        ) from None


async def _read_body(response: httpx.Response, max_bytes: int, what: str) -> bytes:
    """The decoded body, refused past ``max_bytes``; for an error or a redirect that was not
    followed, only the first bytes (an error message shows no more, a redirect's body nothing)."""
    error = response.status_code >= 300
    if not error:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise _too_large(max_bytes, encoded=False)
    encoding = response.headers.get("content-encoding", "")
    if response.is_stream_consumed:  # built in memory (a mock transport), httpx decoded it
        encoding = "identity"
    encoded = encoding.strip().lower() not in ("", "identity")
    try:
        decoder = decoder_for(
            encoding,
            min(max_bytes, ERROR_BODY_BYTES) if error else max_bytes,
            lambda: _too_large(max_bytes, encoded=encoded),
            what=what,
            truncate=error,
        )
    except QueryExecutionError:
        if error:
            return b""  # the status says what went wrong; an undecodable body adds nothing
        raise
    if response.is_stream_consumed:
        decoder.feed(response.content)
        return decoder.content()
    async for chunk in response.aiter_raw():
        decoder.feed(chunk)
        if decoder.full:
            break
    return decoder.content()


def _too_large(max_bytes: int, *, encoded: bool) -> QueryExecutionError:
    decoded = " once decompressed" if encoded else ""
    return QueryExecutionError(
        f"the response is larger than {max_bytes:,} bytes{decoded} (the connector's "
        "max_response_bytes) and was not read to the end; ask for less: a filter, a limit or "
        "a smaller page size in query"
    )


def _borrowed(transport: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
    """The caller's transport, shielded from the per-request client closing it."""
    import httpx

    class _Borrowed(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            return await transport.handle_async_request(request)

        async def aclose(self) -> None:
            return None

    return _Borrowed()


def _message(exc: BaseException) -> str:
    text = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else "no details")
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"
