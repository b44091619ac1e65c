"""How much one MCP message may bring into the kernel, per transport.

A tool result is one JSON-RPC message: the SDK reads it whole and parses it before the
connector sees any of it, so the result's byte budget (what is *kept*,
:mod:`~relay_nb.connectors.mcp.results`) cannot bound what is *read*. The transport has to,
and what the MCP SDK (2.3) allows differs by transport:

* **streamable HTTP, SSE responses** — the SDK bounds each server-sent event
  (``max_sse_event_size``, 1 MiB by default: a larger result failed as "the server went
  away"). The connector sets it to :func:`message_limit`, and the SDK then answers an
  oversized event with a JSON-RPC error for that request, which :func:`refusal` recognises.
* **streamable HTTP, JSON responses** — the SDK reads the body whole with no limit. The
  ``httpx`` client is the connector's to give (``http_client=``), so a response hook caps
  every non-SSE body at the same limit (:func:`cap_response`): the read stops at the limit
  with a stream error the SDK turns into a parse error for the request, again recognised
  by :func:`refusal`. The cap counts bytes on the wire and decompression happens above it,
  so the client asks for ``identity`` encoding and refuses a compressed body.
* **stdio** — the SDK reads the server's stdout line by line with no length limit (a line is
  accumulated by string concatenation), and ``StdioServerParameters`` has no option for one.
  Bounding it would mean patching the SDK or replacing its transport, which the connector
  does not do: a stdio server is a program the analyst chose to run on this machine, and its
  results are bounded once they arrive (frame budget, clipped text).

A structured tool result comes twice in one message (``structuredContent`` and the same data
as text), hence twice ``max_result_bytes``, plus room for the envelope.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from relay_nb.connectors.bounds import describe_bytes

__all__ = ["IDENTITY", "cap_response", "message_limit", "refusal"]

ENVELOPE_BYTES = 1 << 20
"""Room for the JSON-RPC envelope, content blocks and escaping around a result's data."""
IDENTITY = {"Accept-Encoding": "identity"}
"""The request header that keeps bodies as counted: uncompressed."""
_TOO_LARGE = "relay_nb: the MCP message is larger than"
_COMPRESSED = "relay_nb: the MCP server compressed its response"
_SSE_TOO_LARGE = "Server-sent event exceeded the"
_SDK_LOGGER = "mcp.client.streamable_http"


def message_limit(max_result_bytes: int) -> int:
    """The largest message accepted for a result of at most ``max_result_bytes``."""
    return 2 * max_result_bytes + ENVELOPE_BYTES


def refusal(message: str, limit: int) -> str | None:
    """What to tell the caller when an error the SDK reported for a request is one of these
    bounds (``None`` when it is not): a sentence that names the limit and the fix."""
    if _TOO_LARGE in message or _SSE_TOO_LARGE in message:
        return (
            f"sent a reply larger than {describe_bytes(limit)} (twice the connector's "
            "max_result_bytes, plus 1 MiB), which was not read; ask the tool for less "
            "(a filter, fewer fields, a page) or raise max_result_bytes"
        )
    if _COMPRESSED in message:
        return (
            "sent a compressed reply although an uncompressed one was asked for, which was "
            "not read (its size cannot be bounded before it is inflated)"
        )
    return None


class _Expected(logging.Filter):
    """Drops the SDK's traceback for a body this module refused: the caller gets a clear
    error for it, a traceback on the notebook's stderr would only alarm."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (error is not None and str(error).startswith((_TOO_LARGE, _COMPRESSED)))


_QUIET = _Expected()


def cap_response(limit: int) -> Any:
    """An ``httpx`` response hook capping every non-SSE body at ``limit`` bytes (SSE bodies
    are long-lived streams whose events the SDK bounds one by one)."""
    import httpx2

    sdk_log = logging.getLogger(_SDK_LOGGER)
    if _QUIET not in sdk_log.filters:
        sdk_log.addFilter(_QUIET)

    class _Capped(httpx2.AsyncByteStream):
        def __init__(self, stream: Any, refused: str | None) -> None:
            self._stream = stream
            self._refused = refused

        async def __aiter__(self) -> AsyncIterator[bytes]:
            if self._refused:
                raise httpx2.StreamError(self._refused)
            taken = 0
            async for chunk in self._stream:
                taken += len(chunk)
                if taken > limit:
                    raise httpx2.StreamError(f"{_TOO_LARGE} {describe_bytes(limit)}")
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    async def hook(response: Any) -> None:
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        refused: str | None = None
        if encoding not in ("", "identity"):
            refused = f"{_COMPRESSED} ({encoding})"
        elif kind == "text/event-stream":
            return
        else:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:  # refused before a byte is read
                refused = f"{_TOO_LARGE} {describe_bytes(limit)}"
        response.stream = _Capped(response.stream, refused)

    return hook
