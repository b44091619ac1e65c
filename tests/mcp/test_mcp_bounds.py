"""MCP tool results bounded in bytes (issue 17, class 3), against the real test server.

What is *kept* is bounded on every transport: records go through a result budget (values
cut at ``max_value_bytes``, records past ``max_result_bytes`` left out, the result says so)
and only as much text is taken from a reply as the model is shown. What is *read* is bounded
on streamable HTTP, where the SDK allows it (``relay_nb.connectors.mcp.transport``): a reply
over twice ``max_result_bytes`` plus 1 MiB is refused with an error naming the fix, as SSE
and as a plain JSON body, and the session goes on. Stdio has no bound the SDK allows; its
replies are bounded once they arrive (the first tests run over stdio).
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator

import httpx2
import pytest
from mcp_support import start_http_server, stdio_connector, stop

from relay_nb.connectors.bounds import CLIP_MARK
from relay_nb.connectors.mcp import MCP
from relay_nb.connectors.mcp.connector import MCPConnector
from relay_nb.connectors.mcp.results import content_text
from relay_nb.connectors.mcp.transport import cap_response, message_limit
from relay_nb.errors import ConnectorError

MIB = 1 << 20
ROW = 100_000
"""Characters of text per record: about 100 KB a record."""


def _clipped(text: str, limit: int) -> bool:
    """Cut to the value limit (counted in UTF-8 bytes, the mark included), mark at the end."""
    return text.endswith(CLIP_MARK) and limit - 16 < len(text.encode()) <= limit


@pytest.fixture(scope="module")
def small_stdio() -> Iterator[MCPConnector]:
    connector = stdio_connector(max_value_bytes=64 << 10, max_result_bytes=MIB, timeout_s=60)
    yield connector
    connector.close()


@pytest.fixture(scope="module", params=["sse", "json"])
def small_http(request: pytest.FixtureRequest) -> Iterator[tuple[MCPConnector, str]]:
    """A connector with a 2 MiB result limit (so a 5 MiB reply limit) to a server of its
    own answering with SSE, or with plain JSON bodies."""
    extra = ("--json-response",) if request.param == "json" else ()
    process: subprocess.Popen[bytes]
    process, url = start_http_server(*extra)
    connector = MCP(url=url, timeout_s=60, max_result_bytes=2 * MIB).build_connector("docs")
    try:
        yield connector, request.param
    finally:
        connector.close()
        stop(process)


# -- what is kept ---------------------------------------------------------------------------------


def test_records_past_the_byte_limit_are_left_out_and_values_cut(
    small_stdio: MCPConnector,
) -> None:
    result = small_stdio.call_tool("big_records", {"count": 30, "size": ROW})
    query = result.artifact
    # about 100 KB a record: the eleventh would pass 1 MiB
    assert (query.row_count, query.truncated, query.limit) == (10, True, "bytes")
    assert list(query.df["i"]) == list(range(10))
    texts = list(query.df["text"])
    assert all(_clipped(t, 64 << 10) for t in texts)
    stopped, clipped = query.notes
    assert stopped.startswith("stopped reading after 10 records: the next one would pass the 1 MiB")
    assert clipped.startswith("10 values longer than 64 KiB (max_value_bytes) cut")
    lines = result.content.splitlines()
    assert lines[0] == "10 rows (stopped at the result's byte limit; more rows may exist)"
    assert lines[1:3] == [f"note: {stopped}", f"note: {clipped}"]
    assert len(result.content) <= small_stdio.spec.max_result_chars


def test_within_the_limit_nothing_is_cut(small_stdio: MCPConnector) -> None:
    query = small_stdio.call_tool("big_records", {"count": 3, "size": 1000}).artifact
    assert (query.row_count, query.truncated, query.limit, query.notes) == (3, False, "rows", ())
    assert [len(t) for t in query.df["text"]] == [1000] * 3


def test_a_long_text_is_taken_only_as_far_as_it_is_shown(small_stdio: MCPConnector) -> None:
    result = small_stdio.call_tool("big_text", {"size": 3 * MIB})
    assert result.artifact is None and not result.is_error
    assert len(result.content) == small_stdio.spec.max_result_chars
    assert result.content == "t" * (small_stdio.spec.max_result_chars - 1) + "…"


def test_content_text_stops_at_its_limit() -> None:
    class Text:
        type = "text"

        def __init__(self, text: str) -> None:
            self.text = text

    blocks = [Text("a" * 50), Text("b" * 10_000_000), Text("c" * 10)]
    assert content_text(blocks, limit=80) == "a" * 50 + "\n" + "b" * 29
    assert len(content_text(blocks)) == 50 + 10_000_000 + 10 + 2  # no limit: all of it


# -- what is read, over streamable HTTP -----------------------------------------------------------


def test_a_reply_over_the_limit_is_refused_and_the_session_goes_on(
    small_http: tuple[MCPConnector, str],
) -> None:
    connector, _ = small_http
    limit = message_limit(2 * MIB)
    assert limit == 5 * MIB
    for tool, arguments in (
        ("big_text", {"size": 6 * MIB}),  # one text over the limit
        ("big_records", {"count": 30, "size": ROW}),  # 3 MB of records, twice in the reply
    ):
        with pytest.raises(ConnectorError) as refused:
            connector.call_tool(tool, arguments)
        message = str(refused.value)
        assert message.startswith("MCP server 'docs' sent a reply larger than 5 MiB"), message
        assert "raise max_result_bytes" in message and f"'{tool}'" in message
        assert connector.call_tool("list_files").content.startswith("notes/q3.txt")


def test_a_reply_within_the_limit_is_kept_within_the_budget(
    small_http: tuple[MCPConnector, str],
) -> None:
    connector, _ = small_http
    # 2.2 MB of records: the reply (about 4.4 MB) is read, the budget keeps 2 MiB of it
    query = connector.call_tool("big_records", {"count": 22, "size": ROW}).artifact
    assert (query.row_count, query.truncated, query.limit) == (20, True, "bytes")
    assert query.notes[0].startswith("stopped reading after 20 records")
    # a text comes twice too (as content and as structured {"result": …}): about 4 MB read
    text = connector.call_tool("big_text", {"size": 2 * MIB}).content
    assert len(text) == connector.spec.max_result_chars and text.endswith("…")


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.read = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.read += 1
            yield chunk


@pytest.mark.parametrize(
    ("headers", "chunks", "refused", "read"),
    [
        ({"content-type": "application/json"}, [b"x" * 60] * 3, "larger than 100 bytes", 2),
        ({"content-type": "application/json", "content-length": "180"}, [b"x" * 60] * 3,
         "larger than 100 bytes", 0),
        ({"content-type": "application/json", "content-encoding": "gzip"}, [b"x"], "compressed", 0),
        ({"content-type": "text/event-stream"}, [b"x" * 60] * 3, None, 3),
        ({"content-type": "application/json"}, [b"x" * 50] * 2, None, 2),
    ],
)  # fmt: skip
async def test_the_response_hook_caps_plain_bodies_only(
    headers: dict[str, str], chunks: list[bytes], refused: str | None, read: int
) -> None:
    stream = _Chunks(chunks)
    response = httpx2.Response(200, headers=headers, stream=stream)
    await cap_response(100)(response)
    if refused is None:
        assert await response.aread() == b"".join(chunks)
    else:
        with pytest.raises(httpx2.StreamError, match=refused):
            await response.aread()
    assert stream.read == read  # a declared or compressed body is refused before reading


def test_byte_options_are_checked() -> None:
    with pytest.raises(ValueError, match=r"max_value_bytes .* cannot exceed max_result_bytes"):
        MCP(command=["x"], max_value_bytes=2 * MIB, max_result_bytes=MIB)
    with pytest.raises(ValueError, match="max_result_bytes must be a positive whole number"):
        MCP(url="http://127.0.0.1:1/mcp", maxResultBytes=0)
    spec = MCP(command=["x"], maxValueBytes=1000, maxResultBytes=5000)
    assert (spec.max_value_bytes, spec.max_result_bytes) == (1000, 5000)


def test_content_text_counts_an_image_by_its_placeholder() -> None:
    # the running count is of characters shown; an image's decoded size must not replace
    # it (a big image used to hide its own placeholder and everything after it, and one
    # without base64 data failed the limit arithmetic)
    class Text:
        type = "text"

        def __init__(self, text: str) -> None:
            self.text = text

    class Image:
        type, mime_type = "image", "image/png"

        def __init__(self, data: object) -> None:
            self.data = data

    placeholder = "[image (image/png, 29 KB) returned; not shown to the model]"
    blocks = [Text("a" * 10), Image("A" * 40_000), Text("b" * 10)]
    assert content_text(blocks, limit=200) == "\n".join(["a" * 10, placeholder, "b" * 10])
    unknown = "[image (image/png, size unknown) returned; not shown to the model]"
    assert content_text([Image(None), Text("b" * 10)], limit=200) == unknown + "\n" + "b" * 10
