"""The bounded body decoder on its own: one zlib call never yields more than a step, the total
never passes the cap, and what gzip allows (several members, trailing NULs) still decodes."""

from __future__ import annotations

import gzip
import zlib

import httpx
import pytest
from http_live_server import bomb_body

from relay_nb.connectors.http import HTTPConnector
from relay_nb.connectors.http.inflate import STEP, BodyDecoder, decoder_for
from relay_nb.errors import QueryExecutionError


class _TooLarge(Exception):
    pass


def _decoder(encoding: str, max_bytes: int, **options: bool) -> BodyDecoder:
    return decoder_for(encoding, max_bytes, _TooLarge, what="the test API", **options)


def test_a_bomb_fed_at_once_stops_at_the_cap_one_step_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sizes: list[int] = []
    decoder = _decoder("gzip", 1 << 20)
    keep = decoder._keep

    def spy(data: bytes) -> None:
        sizes.append(len(data))
        keep(data)

    monkeypatch.setattr(decoder, "_keep", spy)
    with pytest.raises(_TooLarge):
        decoder.feed(bomb_body("gzip"))  # 128 MiB of zeros in one chunk of ~130 kB
    assert max(sizes) <= STEP and sum(sizes) <= (1 << 20) + STEP
    assert decoder.size <= 1 << 20


def test_gzip_members_and_trailing_nuls_decode_like_gzip_does() -> None:
    body = gzip.compress(b"first ") + gzip.compress(b"second") + b"\0\0"
    decoder = _decoder("x-gzip", 1000)
    for piece in (body[:7], body[7:30], body[30:]):
        decoder.feed(piece)
    assert decoder.content() == gzip.decompress(body) == b"first second"


@pytest.mark.parametrize("wbits", [15, -15])  # zlib-wrapped, and the raw deflate some send
def test_deflate_with_or_without_its_header(wbits: int) -> None:
    compressor = zlib.compressobj(6, zlib.DEFLATED, wbits)
    body = compressor.compress(b"x" * 300_000) + compressor.flush()
    decoder = _decoder("deflate", 300_000)
    decoder.feed(body)
    assert decoder.content() == b"x" * 300_000


def test_an_error_body_keeps_its_start_instead_of_failing() -> None:
    decoder = _decoder("gzip", 4096, truncate=True)
    decoder.feed(bomb_body("gzip"))
    assert decoder.full and decoder.content() == bytes(4096)


def test_corrupt_data_and_unknown_encodings_are_one_line_errors() -> None:
    with pytest.raises(QueryExecutionError, match="not valid gzip data"):
        _decoder("gzip", 1000).feed(b"this is not gzip at all")
    for encoding in ("br", "zstd", "compress", "gzip, gzip", "gzip,deflate"):
        with pytest.raises(QueryExecutionError, match="does not decode") as info:
            _decoder(encoding, 1000)
        assert "\n" not in str(info.value)
    assert _decoder(" identity , ", 10).encoding == "identity"
    assert _decoder("GZIP, identity", 10).encoding == "gzip"


async def test_an_in_memory_response_is_capped_too() -> None:
    """A transport that builds its response in memory hands over a body httpx decoded; the
    cap still holds on it."""
    body = gzip.compress(b"[" + b'{"n": 1},' * 50_000 + b'{"n": 1}]')

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-encoding": "gzip"})

    routed = HTTPConnector(
        "routed", "https://api.example.com", transport=httpx.MockTransport(handler)
    )
    small = HTTPConnector(
        "small",
        "https://api.example.com",
        transport=httpx.MockTransport(handler),
        max_response_bytes=10_000,
    )
    assert (await routed.acall("GET", "/n")).row_count == 200
    with pytest.raises(QueryExecutionError, match="larger than 10,000 bytes"):
        await small.acall("GET", "/n")
