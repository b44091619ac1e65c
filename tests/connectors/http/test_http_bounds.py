"""What a hostile or huge answer may cost the kernel: compression bombs, stacked and unknown
encodings, a record with 50,000 keys, 200,000 records, huge text and CSV bodies.

Each bomb is first shown harmful through plain httpx (it inflates past 100 MB, decoded in
chunks far over the cap, and the process's peak memory grows by as much), so the bounded
case cannot pass vacuously; then through the connector, in a fresh process, the call is
refused with a line that says why, the peak memory grows by a bounded amount, and the same
connector answers the next call. The CPU side is asserted by counting work, never by timing:
json_normalize is never called, only the kept records reach the frame, the deadline check
stops a scan at its next checkpoint.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pandas as pd
import pytest
from http_live_server import (
    BOMB_BYTES,
    LONG_RECORDS,
    ORDERS,
    WIDE_KEYS,
    LiveServer,
    bomb_body,
    long_body,
    wide_body,
)

from relay_nb import Relay, ScriptedRuntime
from relay_nb.connectors.bounds import CLIP_MARK, DEFAULT_MAX_COLUMNS
from relay_nb.connectors.http import HTTPConnector
from relay_nb.connectors.http import decode as decode_module
from relay_nb.connectors.http.fetch import Deadline
from relay_nb.connectors.http.jsonscan import CHECK_EVERY
from relay_nb.errors import ConfigurationError, QueryExecutionError

PROBE = Path(__file__).with_name("memory_probe.py")
CAP = 16 << 20
"""The response cap the bombs meet: 16 MiB, the largest a sane configuration uses."""
GROWTH_BOUND_MIB = 64
"""Peak memory a capped call may add: the cap and its copies (decoded chunks, the joined body,
its text), with room to spare — and far below what a bomb costs unbounded."""
BOMBS = ("gzip, gzip", "gzip", "deflate")


@pytest.fixture(scope="module", autouse=True)
def _bodies_built() -> None:
    """Build the big bodies before any call's deadline runs (each takes about a second)."""
    for encoding in BOMBS:
        bomb_body(encoding)
    wide_body()
    long_body(envelope=False)
    long_body(envelope=True)


def _probe(api: LiveServer, mode: str, target: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(PROBE), api.base, mode, target, str(CAP)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _bomb(encoding: str) -> str:
    return f"/bomb?encoding={quote(encoding)}"


# ---------------------------------------------------------------- encodings (class 4)


@pytest.mark.parametrize("encoding", BOMBS)
def test_a_compression_bomb_costs_the_cap_not_what_it_inflates_to(
    encoding: str, api: LiveServer
) -> None:
    wire = len(bomb_body(encoding))
    raw = _probe(api, "httpx", _bomb(encoding))
    # harmful unbounded: a small body inflates past 100 MB, in chunks far over any cap
    assert wire < 200_000 and raw["total"] == BOMB_BYTES > 100 << 20
    assert raw["biggest_chunk"] > 2 * CAP
    assert raw["growth_mib"] > GROWTH_BOUND_MIB  # the measurement sees such a cost

    bounded = _probe(api, "connector", _bomb(encoding))
    if encoding == "gzip, gzip":
        assert "answered with Content-Encoding 'gzip, gzip'" in bounded["error"]
        assert "stacked encodings relay_nb does not decode" in bounded["error"]
    else:
        assert f"larger than {CAP:,} bytes once decompressed" in bounded["error"]
    assert bounded["growth_mib"] < GROWTH_BOUND_MIB
    assert bounded["next_rows"] == len(ORDERS)


@pytest.mark.parametrize("encoding", ["gzip", "x-gzip", "deflate", "deflate-raw", "identity"])
async def test_truthful_compressed_answers_still_decode(encoding: str, api: LiveServer) -> None:
    shop = HTTPConnector("shop", api.base, max_response_bytes=20_000)
    result = await shop.acall("GET", "/encoded", {"encoding": encoding})
    assert result.df["id"].tolist() == [o["id"] for o in ORDERS]
    assert result.df["customer.name"].tolist() == [o["customer"]["name"] for o in ORDERS]


async def test_requests_ask_only_for_what_is_decoded(api: LiveServer) -> None:
    shop = HTTPConnector("shop", api.base)
    await shop.acall("GET", "/orders")
    assert api.requests[-1].headers["accept-encoding"] == "gzip, deflate"
    with pytest.raises(ConfigurationError, match="headers sets Accept-Encoding"):
        HTTPConnector("shop", api.base, headers={"accept-encoding": "br"})


@pytest.mark.parametrize(
    ("encoding", "words"),
    [
        ("br", "Content-Encoding 'br' (an encoding relay_nb does not decode"),
        ("deflate, gzip", "Content-Encoding 'deflate, gzip' (stacked encodings"),
    ],
)
async def test_unknown_or_stacked_encodings_are_refused_with_the_reason(
    encoding: str, words: str, api: LiveServer
) -> None:
    shop = HTTPConnector("shop", api.base)
    (tool,) = shop.tools()
    result = await tool.run({"path": "/encoded", "query": {"encoding": encoding}})
    assert result.is_error and words in result.content
    assert "the body was not read" in result.content and "do not retry" in result.content
    assert (await shop.acall("GET", "/orders")).row_count == len(ORDERS)


async def test_an_error_status_reads_only_the_start_of_its_body(api: LiveServer) -> None:
    shop = HTTPConnector("shop", api.base, max_response_bytes=1_000_000)
    with pytest.raises(QueryExecutionError, match="HTTP 500") as info:
        await shop.acall("GET", "/bomb", {"encoding": "gzip", "status": 500})
    assert "larger than" not in str(info.value)  # the status is the message, not the size
    with pytest.raises(QueryExecutionError, match="HTTP 404") as info:
        await shop.acall("GET", "/encoded", {"encoding": "br", "status": 404})
    assert "Content-Encoding" not in str(info.value)


# ---------------------------------------------------------------- decoding work (class 5)


async def test_a_record_with_50000_keys_is_clipped_to_the_column_limit(
    api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("json_normalize builds one column per key")

    monkeypatch.setattr(pd, "json_normalize", never)
    shop = HTTPConnector("shop", api.base, max_response_bytes=CAP)
    (tool,) = shop.tools()
    run = await tool.run({"path": "/wide"})
    result = run.artifact
    assert result.df.shape == (1, DEFAULT_MAX_COLUMNS)
    assert result.df.columns[-1] == f"k{DEFAULT_MAX_COLUMNS - 1:05}"
    note = (
        f"the records have {WIDE_KEYS:,} fields; the first {DEFAULT_MAX_COLUMNS} became columns "
        f"and {WIDE_KEYS - DEFAULT_MAX_COLUMNS:,} were left out"
    )
    assert any(n.startswith(note) for n in result.notes)
    assert f"note: {note}" in run.content


async def test_only_the_kept_records_of_a_long_list_are_built(
    api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    real = decode_module.frame_from_records

    def counting(records: Any, **options: Any) -> pd.DataFrame:
        seen.append(len(records))
        return real(records, **options)

    monkeypatch.setattr(decode_module, "frame_from_records", counting)
    shop = HTTPConnector("shop", api.base, max_response_bytes=CAP, row_limit=100)
    (tool,) = shop.tools()
    for query in (None, {"envelope": 1}):
        run = await tool.run({"path": "/long", "query": query})
        result = run.artifact
        assert (result.row_count, result.truncated, result.limit) == (100, True, "rows")
        assert result.df["id"].tolist() == list(range(100))
        assert f"the response held {LONG_RECORDS:,} records; the first 100 were kept" in run.content
    assert seen == [100, 100]
    assert 'other fields: {"next_cursor":"c2","total":200000}' in run.content


def test_a_long_list_costs_its_body_not_its_records(api: LiveServer) -> None:
    measured = _probe(api, "connector", "/long")
    assert measured["rows"] == 200 and measured["columns"] == 3
    assert measured["growth_mib"] < GROWTH_BOUND_MIB
    assert measured["next_rows"] == len(ORDERS)


async def test_the_result_byte_limit_stops_keeping_records(api: LiveServer) -> None:
    shop = HTTPConnector(
        "shop", api.base, max_response_bytes=CAP, max_result_bytes=4000, max_value_bytes=1000
    )
    (tool,) = shop.tools()
    run = await tool.run({"path": "/long"})
    result = run.artifact
    assert result.truncated and result.limit == "bytes" and 0 < result.row_count < 200
    assert result.notes[0].startswith(f"stopped reading after {result.row_count} records")
    assert "stopped at the result's byte limit" in run.content
    assert f"(the response held {LONG_RECORDS:,} records)" in run.content


async def test_long_values_and_text_bodies_are_clipped_with_a_note(api: LiveServer) -> None:
    shop = HTTPConnector("shop", api.base, max_response_bytes=CAP, max_value_bytes=1 << 20)
    (tool,) = shop.tools()
    run = await tool.run({"path": "/long-text"})
    text = run.artifact.df.loc[0, "text"]
    # clip_value keeps len(CLIP_MARK) characters of room; the mark's "…" is 3 bytes in UTF-8
    assert len(text.encode()) <= (1 << 20) + 2 and text.endswith(CLIP_MARK)
    assert "note: the text is over 1 MiB (max_value_bytes)" in run.content
    assert len(run.content) < 5000
    narrow = HTTPConnector("narrow", api.base, max_value_bytes=5)
    result = await narrow.acall("GET", "/customers")
    assert result.df.loc[0, "name"] == CLIP_MARK and "(max_value_bytes) cut" in result.notes[0]


async def test_csv_bodies_are_bounded_in_rows_and_columns(api: LiveServer) -> None:
    shop = HTTPConnector("shop", api.base, max_response_bytes=CAP, row_limit=50)
    (tool,) = shop.tools()
    run = await tool.run({"path": "/long-csv"})
    assert run.artifact.row_count == 50 and run.artifact.truncated
    assert "the response held more than 50 records; the first 50 were kept" in run.content
    wide = await shop.acall("GET", "/wide-csv")
    assert wide.df.shape == (1, DEFAULT_MAX_COLUMNS)
    assert wide.notes == (
        f"the CSV has {WIDE_KEYS:,} columns; the first {DEFAULT_MAX_COLUMNS} were kept (a limit "
        "of columns per result); ask for fewer fields",
    )


async def test_decoding_stops_at_the_calls_deadline(
    api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline is read once as decoding starts and then every CHECK_EVERY records; here
    it passes right after the start, so the scan stops at its first checkpoint."""
    checks: list[int] = []

    def passed(self: Deadline) -> bool:
        checks.append(1)
        return len(checks) > 1

    monkeypatch.setattr(Deadline, "passed", passed)
    shop = HTTPConnector("shop", api.base, max_response_bytes=CAP, timeout_s=7)
    with pytest.raises(QueryExecutionError) as info:
        await shop.acall("GET", "/long")
    assert "GET /v1/long: the answer arrived but could not be decoded within 7 s" in str(info.value)
    assert "timeout_s covers the request and decoding" in str(info.value)
    assert len(checks) == 2 and LONG_RECORDS > 100 * CHECK_EVERY
    monkeypatch.undo()
    assert (await shop.acall("GET", "/orders")).row_count == len(ORDERS)


async def test_json_nested_too_deep_becomes_text_not_a_crash() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=deep, headers={"content-type": "application/json"})

    api = HTTPConnector("deep", "https://api.example.com", transport=httpx.MockTransport(handler))
    result = await api.acall("GET", "/deep")
    assert list(result.df.columns) == ["text"] and result.df.loc[0, "text"].startswith("[[[")


# ---------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"max_value_bytes": 0}, "max_value_bytes must be a positive whole number"),
        ({"max_result_bytes": 2.5}, "max_result_bytes must be a positive whole number"),
        ({"max_value_bytes": 2000, "max_result_bytes": 1000}, "cannot exceed max_result_bytes"),
    ],
)
def test_bad_byte_limits_say_how_to_fix_them(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigurationError, match=words):
        HTTPConnector("shop", "http://127.0.0.1:9/v1", **options)


def test_a_config_file_sets_the_byte_limits(api: LiveServer, tmp_path: Path) -> None:
    entry = {"baseUrl": api.base, "max_value_bytes": 1000, "max_result_bytes": 50_000}
    config = {"connectors": [{"type": "http", "id": "shop", "config": entry}]}
    (tmp_path / "relay.config.json").write_text(json.dumps(config))
    relay = Relay(ScriptedRuntime(), ledger=False, config=tmp_path / "relay.config.json")
    shop = relay.connectors["shop"]
    assert isinstance(shop, HTTPConnector)
    assert (shop.max_value_bytes, shop.max_result_bytes) == (1000, 50_000)
    relay.close()


async def test_a_huge_envelope_field_is_shown_clipped_and_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = 'tok"en-5ecret-0123'  # JSON text escapes its quote: the escaped form is redacted
    monkeypatch.setenv("SHOP_API_TOKEN", secret)
    body = {"data": [{"id": 1}], "debug": "see " + secret + " " + "y" * 3_000_000}

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=body)

    api = HTTPConnector("env", "https://api.example.com", transport=httpx.MockTransport(handler))
    (tool,) = api.tools()
    run = await tool.run({"path": "/x"})
    assert 'other fields: {"debug":"see [REDACTED] yyyy' in run.content
    assert "5ecret" not in run.content and len(run.content) < 2000
