"""Decode a response's ``Content-Encoding`` ourselves, never producing more than the cap.

httpx decodes each network chunk in one unbounded ``zlib`` call, so a few hundred bytes of
``gzip, gzip`` (gzip inside gzip) become a single 128 MiB chunk before any size check can
look at it. The connector therefore reads the raw body and inflates it here, at most
:data:`STEP` bytes per ``zlib`` call (the rest of the input waits in ``unconsumed_tail``),
and stops the moment the decoded total passes ``max_bytes``: what a response can cost is the
cap plus one step, however it was compressed.

Exactly one layer of ``gzip`` (also ``x-gzip``, and several gzip members one after another)
or ``deflate`` (zlib-wrapped, or raw as some servers send it) is decoded, and
:data:`ACCEPT_ENCODING` asks for exactly those. Brotli and zstd are not: their decoders are
optional packages that are not installed here, and a decoder that cannot bound its output
per call would reopen the hole. Stacked or unknown encodings are refused before any of the
body is read.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from relay_nb.errors import QueryExecutionError

__all__ = ["ACCEPT_ENCODING", "STEP", "BodyDecoder", "decoder_for"]

ACCEPT_ENCODING = "gzip, deflate"
"""What every request asks for: the encodings :class:`BodyDecoder` decodes under the cap."""
STEP = 64 * 1024
"""Decoded bytes one ``zlib`` call may produce."""

_GZIP, _ZLIB, _RAW_DEFLATE = 31, 15, -15  # zlib's wbits for each container
_NAMES = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}


class BodyDecoder:
    """Raw body chunks in, decoded chunks out, the decoded total held to ``max_bytes``.

    ``feed`` raises through ``too_large`` (the caller's error) as soon as the total passes
    the cap; with ``truncate`` it keeps the first ``max_bytes`` bytes instead and reports
    :attr:`full` (an error body: its start is all that is shown).
    """

    def __init__(
        self,
        encoding: str,
        max_bytes: int,
        too_large: Callable[[], Exception],
        *,
        what: str,
        truncate: bool = False,
    ) -> None:
        self.encoding = encoding
        self.max_bytes = max_bytes
        self.truncate = truncate
        self.full = False
        self.size = 0
        self._chunks: list[bytes] = []
        self._too_large = too_large
        self._what = what
        self._zlib: zlib._Decompress | None = None
        self._first = True
        if encoding != "identity":
            self._zlib = zlib.decompressobj(_GZIP if encoding == "gzip" else _ZLIB)

    def feed(self, data: bytes) -> None:
        """Decode one raw chunk; stops (or raises) once the decoded total passes the cap."""
        if self.full or not data:
            return
        if self._zlib is None:
            self._keep(data)
            return
        try:
            self._inflate(data)
        except zlib.error as exc:
            raise QueryExecutionError(
                f"{self._what} sent a body that is not valid {self.encoding} data ({exc}); "
                "try again, and if it persists the API is at fault"
            ) from None

    def content(self) -> bytes:
        """Everything decoded so far (a stream cut short gives what arrived, as httpx does)."""
        return b"".join(self._chunks)

    def _inflate(self, data: bytes) -> None:
        while not self.full:
            assert self._zlib is not None
            try:
                out = self._zlib.decompress(data, STEP)
            except zlib.error:
                if not (self._first and self.encoding == "deflate"):
                    raise
                self._zlib = zlib.decompressobj(_RAW_DEFLATE)  # "deflate" without its header
                self._first = False
                continue
            self._first = False
            self._keep(out)
            data = self._zlib.unconsumed_tail
            if self._zlib.eof:
                data = self._zlib.unused_data
                if self.encoding != "gzip" or not data.strip(b"\0"):
                    return  # trailing bytes after the stream end are ignored, as zlib does
                self._zlib = zlib.decompressobj(_GZIP)  # the next member of a gzip file
                continue
            if not data and len(out) < STEP:
                return  # input used up and no output pending

    def _keep(self, data: bytes) -> None:
        room = self.max_bytes - self.size
        if len(data) > room:
            if not self.truncate:
                raise self._too_large()
            data, self.full = data[:room], True
        self.size += len(data)
        if data:
            self._chunks.append(data)


def decoder_for(
    content_encoding: str,
    max_bytes: int,
    too_large: Callable[[], Exception],
    *,
    what: str,
    truncate: bool = False,
) -> BodyDecoder:
    """The decoder for a response's ``Content-Encoding`` header value.

    Raises ``QueryExecutionError`` for stacked (``gzip, gzip``) or unknown (``br``, ``zstd``)
    encodings, which were not asked for and are not decoded.
    """
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        encoding = "identity"
    elif len(codings) == 1 and codings[0] in _NAMES:
        encoding = _NAMES[codings[0]]
    else:
        shown = content_encoding.strip()[:80]
        kind = "stacked encodings" if len(codings) > 1 else "an encoding"
        raise QueryExecutionError(
            f"{what} answered with Content-Encoding {shown!r} ({kind} relay_nb does not "
            f"decode: it asks for {ACCEPT_ENCODING} and decodes one layer under the size cap); "
            "the body was not read. The API is at fault: do not retry this call; the analyst "
            "can ask its owner to serve gzip, deflate or uncompressed responses"
        )
    return BodyDecoder(encoding, max_bytes, too_large, what=what, truncate=truncate)
