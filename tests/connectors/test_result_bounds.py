"""Results are bounded in bytes, per value and per result, while they are fetched.

Unit cases pin the budget's arithmetic (what is clipped, where reading stops, what the notes
say). The live cases run on the four real databases as the data's owner (a role that may
write, so only relay_nb's own bounds stand in the way): a result of long values keeps what
fits, clipped and noted, and the connector answers the next query; a handful of rows of huge
values is first shown to cost the raw driver hundreds of MB of kernel memory, then costs the
connector a bounded amount, measured as peak RSS in a fresh process.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from pathlib import Path

import pytest
from size_support import run_probe

from relay_nb.connectors.bounds import (
    CLIP_MARK,
    ResultBudget,
    check_byte_limits,
    clip_value,
    describe_bytes,
    value_size,
)
from relay_nb.connectors.results import QueryResult, frame_from_records, preview_for_model
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import ConfigurationError, QueryExecutionError
from relay_nb.testing.fingerprint import fingerprint
from relay_nb.testing.seed import ALLOWED_TABLES

PROBE = Path(__file__).with_name("rss_probe.py")

# -- the budget's arithmetic ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ("abc", 3),
        ("é" * 10, 20),  # UTF-8 bytes, not characters
        (b"\x00" * 7, 7),
        (None, 8),
        (3.5, 8),
        (2**200, 26),
        (dt.date(2025, 1, 1), 16),
        (decimal.Decimal("123.45"), 13),
        ({"a": "xyz"}, 8),
        (["ab", "cd"], 8),
    ],
)
def test_value_sizes_are_what_the_decoded_value_costs(value, size) -> None:
    assert value_size(value) == size


def test_a_nested_value_is_walked_only_until_it_is_over_the_limit() -> None:
    huge = [["x" * 100] * 1000] * 1000  # 100 MB if walked whole
    assert 1000 < value_size(huge, limit=1000) < 10_000


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a" * 50, "a" * (20 - len(CLIP_MARK.encode())) + CLIP_MARK),
        (bytes(range(50)), bytes(range(20))),  # no registered secret is made of these
        ({"k": "v" * 50}, '{"k":"' + "v" * (20 - len(CLIP_MARK.encode()) - 6) + CLIP_MARK),
    ],
)
def test_clipping_keeps_the_head_and_says_so(value, expected) -> None:
    assert clip_value(value, 20) == expected


def test_clipping_never_splits_a_character() -> None:
    clipped = clip_value("€" * 100, 20)  # 3 bytes each
    assert clipped.endswith(CLIP_MARK)
    assert len(clipped.encode()) <= 20


def test_the_budget_clips_values_and_stops_at_the_result_limit() -> None:
    budget = ResultBudget(max_value_bytes=100, max_result_bytes=1000)
    rows = [(i, "x" * 300) for i in range(10)]
    kept = budget.admit_all(rows)
    assert len(kept) == 2  # each row costs 300 + 8 + 2 * 16 bytes as read
    assert all(row[1] == "x" * (100 - len(CLIP_MARK.encode())) + CLIP_MARK for row in kept)
    assert budget.full and budget.clipped == 2
    stop, clip = budget.notes()
    assert "stopped reading after 2 rows" in stop and "1,000 bytes result limit" in stop
    assert "max_result_bytes" in stop
    assert clip.startswith("2 values longer than 100 bytes (max_value_bytes) cut")
    assert budget.admit((1, "y")) is None  # full stays full


def test_a_budget_with_room_changes_nothing() -> None:
    budget = ResultBudget(max_value_bytes=100, max_result_bytes=10_000)
    row = (1, "short", None)
    assert budget.admit(row) is row or budget.admit(row) == row
    assert budget.notes() == ()


@pytest.mark.parametrize(
    ("value", "result", "message"),
    [
        (0, 10, "max_value_bytes must be a positive whole number"),
        (10, "16MB", "max_result_bytes must be a positive whole number"),
        (True, 10, "max_value_bytes must be"),
        (20, 10, "cannot exceed max_result_bytes"),
    ],
)
def test_byte_limits_are_checked_with_one_line(value, result, message) -> None:
    with pytest.raises(ConfigurationError, match=message):
        check_byte_limits(value, result)


def test_sizes_read_as_people_read_them() -> None:
    sizes = (5, 1024, 1536, 16 << 20, 1610612736)
    assert [describe_bytes(s) for s in sizes] == [
        "5 bytes",
        "1 KiB",
        "1.5 KiB",
        "16 MiB",
        "1.5 GiB",
    ]


def test_wide_records_become_at_most_max_columns_columns_with_a_note() -> None:
    record = {f"k{i}": i for i in range(50_000)}
    budget = ResultBudget(1 << 20, 16 << 20, unit="records")
    frame = frame_from_records([record, {"k1": 2, "late": 3}], max_columns=100, budget=budget)
    assert list(frame.columns) == [f"k{i}" for i in range(100)]
    assert frame.shape == (2, 100)
    (note,) = budget.notes()
    assert "50,001 fields" in note and "first 100 became columns" in note
    assert "49,901 were left out" in note


def test_the_model_reads_the_notes_and_why_the_result_stopped() -> None:
    budget = ResultBudget(max_value_bytes=10, max_result_bytes=100, unit="records")
    frame = frame_from_records([{"v": "x" * 30}] * 5, budget=budget)
    result = QueryResult(
        df=frame,
        executed_sql="SELECT v FROM t",
        row_count=len(frame),
        truncated=True,
        elapsed_ms=1.0,
        limit="bytes",
        notes=budget.notes(),
    )
    preview = preview_for_model(result).splitlines()
    assert preview[0] == "2 rows (stopped at the result's byte limit; more rows may exist)"
    assert preview[1].startswith("note: stopped reading after 2 records")
    assert preview[2].startswith("note: 2 values longer than 10 bytes")


# -- live: four real databases, as the owner --------------------------------------------------

LONG_TEXT = {  # 5,000 characters from one row, in each dialect's words
    "postgres": "repeat('x', 5000)",
    "mysql": "repeat('x', 5000)",
    "sqlite": "printf('%.*c', 5000, 'x')",
    "duckdb": "repeat('x', 5000)",
}


@pytest.fixture
def bounded_shop(shop_db):
    shop = SQLConnector(
        "shop",
        shop_db.admin_url,
        tables=list(ALLOWED_TABLES),
        max_value_bytes=1000,
        max_result_bytes=20_000,
    )
    yield shop
    shop.close()


def test_long_values_are_clipped_and_reading_stops_at_the_limit(shop_db, bounded_shop) -> None:
    before = fingerprint(shop_db.admin_url, paths=shop_db.paths)
    sql = f"SELECT id, {LONG_TEXT[shop_db.dialect]} AS body FROM orders ORDER BY id"
    result = bounded_shop.query(sql)
    assert result.truncated and result.limit == "bytes"
    assert 1 <= result.row_count <= 4  # 20,000 bytes of 5,000-byte rows, as read
    assert list(result.df["id"]) == list(range(1, result.row_count + 1))
    assert all(body.endswith(CLIP_MARK) and len(body) <= 1000 for body in result.df["body"])
    assert any("stopped reading after" in note for note in result.notes)
    assert any("max_value_bytes" in note for note in result.notes)
    # the connection was given back (or replaced) in working order
    again = bounded_shop.query("SELECT COUNT(*) AS n FROM orders")
    assert int(again.df.iloc[0, 0]) == 300
    bounded_shop.engine.dispose()  # DuckDB: the fingerprint opens the file its own way
    assert fingerprint(shop_db.admin_url, paths=shop_db.paths) == before


def test_a_first_row_over_the_limit_is_an_error_that_says_the_fix(shop_db, bounded_shop) -> None:
    # five 5,000-byte columns: a 25 KB row, over the 20,000-byte result limit
    columns = ", ".join(f"{LONG_TEXT[shop_db.dialect]} AS c{i}" for i in range(5))
    sql = f"SELECT {columns} FROM orders"
    with pytest.raises(QueryExecutionError, match=r"larger than 19\.5 KiB") as caught:
        bounded_shop.query(sql)
    assert "max_result_bytes" in str(caught.value) and "substr" in str(caught.value)
    assert int(bounded_shop.query("SELECT COUNT(*) FROM orders").df.iloc[0, 0]) == 300


def test_values_under_the_limits_are_untouched(shop_db, bounded_shop) -> None:
    result = bounded_shop.query("SELECT id, status FROM orders ORDER BY id LIMIT 5")
    assert not result.truncated and result.notes == ()
    assert result.row_count == 5


# -- live: kernel memory, measured in a fresh process -----------------------------------------

HUGE_ROWS = {  # a handful of rows of 5 MB values: 250 MB through a raw driver
    "postgres": "SELECT id, repeat('x', 5000000) AS big FROM orders ORDER BY id LIMIT 50",
    "mysql": "SELECT id, repeat('x', 5000000) AS big FROM orders ORDER BY id LIMIT 50",
    "sqlite": "SELECT id, randomblob(5000000) AS big FROM orders ORDER BY id LIMIT 50",
    "duckdb": "SELECT id, repeat('x', 5000000) AS big FROM orders ORDER BY id LIMIT 50",
}
ONE_HUGE_ROW = {  # one 60 MB value: larger than the whole result may be
    "postgres": "SELECT repeat('x', 60000000) AS big FROM orders LIMIT 3",
    "mysql": "SELECT repeat('x', 15000000) AS a, repeat('y', 15000000) AS b FROM orders LIMIT 8",
    "sqlite": "SELECT randomblob(60000000) AS big FROM orders LIMIT 3",
    "duckdb": "SELECT repeat('x', 60000000) AS big FROM orders LIMIT 3",
}


def _probe(mode: str, url: str, sql: str) -> dict:
    return run_probe([str(PROBE), mode, url, sql], timeout=120)


@pytest.mark.slow  # a live engine pushed to its harmful size, in a child process
@pytest.mark.parametrize("payload", [HUGE_ROWS, ONE_HUGE_ROW], ids=["huge-rows", "one-huge-row"])
def test_kernel_memory_is_bounded_by_the_result_limit(shop_db, payload) -> None:
    sql = payload[shop_db.dialect]
    if shop_db.dialect not in ("duckdb", "sqlite"):  # the guard refuses to build these there
        raw = _probe("raw", shop_db.admin_url, sql)
        assert raw["growth_mb"] > 150, raw  # harmful without the bounds: the test can fail
    bounded = _probe("relay", shop_db.admin_url, sql)
    assert bounded["growth_mb"] < 128, bounded  # generous: the result itself is capped at 16 MiB
    assert bounded["canary"] == 300  # and the connector still answers
    if "error" in bounded:
        assert "max_result_bytes" in bounded["error"] or "value_too_large" in bounded["error"]
    else:
        assert bounded["truncated"] and bounded["limit"] == "bytes", bounded
        assert any("stopped reading after" in note for note in bounded["notes"])


def test_a_wide_result_previews_its_first_columns_within_the_budget() -> None:
    frame = frame_from_records([{f"field_{i}": i for i in range(500)}])
    result = QueryResult(df=frame, executed_sql="GET /wide", row_count=1, truncated=False,
                         elapsed_ms=1.0)  # fmt: skip
    preview = preview_for_model(result, max_chars=4000)
    assert len(preview) <= 4000
    columns = next(line for line in preview.splitlines() if line.startswith("columns: "))
    assert columns.endswith("more columns not shown here")
    assert "… showing 0" not in preview  # the row is shown, in the columns that fit


def test_a_secret_json_escapes_in_a_nested_cell_is_still_redacted(monkeypatch) -> None:
    secret = 'tok"en\\with-quote-and-backslash'
    monkeypatch.setenv("SHOP_API_TOKEN", secret)
    frame = frame_from_records([{"meta": {"key": secret}, "plain": secret}])
    cells = frame.to_json()
    assert "tok" not in cells and "[REDACTED]" in frame.loc[0, "meta.key"]
    assert frame.loc[0, "plain"] == "[REDACTED]"
    nested = frame_from_records([{"meta": {"deep": {"key": secret}}}], max_depth=1)
    assert nested.loc[0, "meta.deep"] == '{"key":"[REDACTED]"}'


@pytest.mark.parametrize(
    "value",
    [
        None, True, 0, -1, (1 << 63) - 1, -(1 << 63), 1 << 63, -(1 << 63) - 1, 1 << 4000,
        1.5, float("nan"), "", "ascii text", "naïve — ünïcode", "x" * 5000, b"\x00\x01",
        bytearray(b"abc"), dt.date(2024, 1, 2), dt.datetime(2024, 1, 2, 3, 4),
        dt.time(1, 2), dt.timedelta(days=3), uuid.UUID(int=7), decimal.Decimal("12.345"),
        {"a": [1, "b"]}, [1, 2, 3], ("t", 1), type("StrSub", (str,), {})("sub"),
        type("IntSub", (int,), {})(5),
    ],
)  # fmt: skip
def test_admit_prices_each_value_as_value_size_does(value):
    """``admit`` prices common types inline for speed: the same prices as ``value_size``."""
    budget = ResultBudget(max_value_bytes=1 << 30, max_result_bytes=1 << 40)
    assert budget.admit((value,)) is not None
    assert budget.used == value_size(value, 1 << 40) + 16  # one value's overhead
