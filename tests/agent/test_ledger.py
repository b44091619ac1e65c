"""The usage ledger on real SQLite files: append, read, report, concurrency, failure."""

from __future__ import annotations

import logging
import math
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from relay_nb.agent.ledger import LedgerRow, UsageLedger, default_ledger_path
from relay_nb.runtime.types import InvocationResult, Usage

DAY1 = datetime(2026, 3, 1, 23, 30, tzinfo=UTC)
DAY2 = datetime(2026, 3, 2, 0, 15, tzinfo=UTC)


def row(**kw) -> LedgerRow:
    fields = {
        "session_id": "s1",
        "turn_id": "t1",
        "step": 0,
        "model": "claude-sonnet-4-6",
        "provider": "anthropic",
        "input_tokens": 100,
        "output_tokens": 10,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "cost_usd": 0.5,
        "latency_ms": 12.5,
        "finish_reason": "end_turn",
        "timestamp": DAY1,
    }
    fields.update(kw)
    return LedgerRow(**fields)


@pytest.fixture
def ledger(tmp_path: Path):
    with UsageLedger(tmp_path / "nested" / "usage.sqlite") as led:
        yield led


def test_append_is_durable_in_a_real_sqlite_file(ledger, tmp_path):
    assert ledger.append(row(notebook="sales.ipynb")) is True
    ledger.close()
    with sqlite3.connect(tmp_path / "nested" / "usage.sqlite") as conn:
        stored = conn.execute(
            "select session_id, model, input_tokens, cost_usd, notebook from relay_usage"
        ).fetchall()
    assert stored == [("s1", "claude-sonnet-4-6", 100, 0.5, "sales.ipynb")]


def test_no_prompt_text_column():
    assert not {"prompt", "messages", "text", "answer"} & set(LedgerRow.model_fields)


def test_rows_round_trip_and_filter_by_session(ledger):
    paris = timezone(timedelta(hours=1))
    ledger.append(row(timestamp=datetime(2026, 3, 2, 1, 15, tzinfo=paris), step=1))
    ledger.append(row(session_id="s2", cost_usd=None, input_tokens=None, estimated=True))
    frame = ledger.rows()
    assert len(frame) == 2
    assert list(frame["session_id"]) == ["s2", "s1"]  # oldest first
    assert frame["timestamp"].iloc[1] == DAY2  # stored and returned as UTC
    assert str(frame["timestamp"].dt.tz) == "UTC"
    assert math.isnan(frame["cost_usd"].iloc[0]) and frame["input_tokens"].isna().iloc[0]
    assert list(frame["estimated"]) == [True, False]
    only = ledger.rows(session_id="s1")
    assert list(only["step"]) == [1]


def test_report_groups_by_day_model_notebook(ledger):
    ledger.append(row(notebook="a", cost_usd=0.25))
    ledger.append(row(notebook="a", cost_usd=0.5, input_tokens=1, output_tokens=2))
    ledger.append(row(notebook="a", timestamp=DAY2))
    ledger.append(row(notebook="b", model="claude-haiku-4-5", cache_read_tokens=7))
    report = ledger.report()
    assert list(report.columns[:3]) == ["day", "model", "notebook"]
    got = {
        (str(r.day), r.model, r.notebook): (r.calls, r.input_tokens, r.output_tokens, r.cost_usd)
        for r in report.itertuples()
    }
    assert got == {
        ("2026-03-01", "claude-sonnet-4-6", "a"): (2, 101, 12, 0.75),
        ("2026-03-01", "claude-haiku-4-5", "b"): (1, 100, 10, 0.5),
        ("2026-03-02", "claude-sonnet-4-6", "a"): (1, 100, 10, 0.5),
    }
    by_model = ledger.report(by="model").set_index("model")
    assert by_model.loc["claude-sonnet-4-6", "calls"] == 3
    assert by_model.loc["claude-haiku-4-5", "cache_read_tokens"] == 7


def test_report_is_honest_about_unknown_costs(ledger):
    ledger.append(row(model="known", cost_usd=0.1))
    ledger.append(row(model="mixed", cost_usd=0.2))
    ledger.append(row(model="mixed", cost_usd=None))
    ledger.append(row(model="unknown", cost_usd=None, estimated=True))
    report = ledger.report(by=["model"]).set_index("model")
    assert report.loc["known", "cost_usd"] == 0.1
    assert report.loc["known", "unknown_cost_calls"] == 0
    assert report.loc["mixed", "cost_usd"] == 0.2
    assert report.loc["mixed", "unknown_cost_calls"] == 1
    assert math.isnan(report.loc["unknown", "cost_usd"])  # not $0: nothing is known
    assert report.loc["unknown", "unknown_cost_calls"] == 1
    assert report.loc["unknown", "estimated_calls"] == 1


def test_report_rejects_unknown_keys_and_handles_empty(ledger):
    with pytest.raises(ValueError, match="report"):
        ledger.report(by=("day", "prompt"))
    empty = ledger.report()
    assert empty.empty and "unknown_cost_calls" in empty.columns


def test_concurrent_appends_all_land(ledger):
    def work(thread: int) -> list[bool]:
        return [ledger.append(row(session_id=f"t{thread}", step=i)) for i in range(50)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = [ok for batch in pool.map(work, range(8)) for ok in batch]
    assert results == [True] * 400
    frame = ledger.rows()
    assert len(frame) == 400
    assert set(frame.groupby("session_id").size()) == {50}
    assert frame.groupby("session_id")["step"].nunique().eq(50).all()


def test_default_path_honours_relay_data_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("RELAY_DATA_DIR", str(tmp_path / "relay"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_ledger_path() == tmp_path / "relay" / "usage.sqlite"
    led = UsageLedger()
    assert led.append(row()) is True
    led.close()
    assert (tmp_path / "relay" / "usage.sqlite").is_file()


def test_default_path_falls_back_to_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("RELAY_DATA_DIR", "")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_ledger_path() == tmp_path / "xdg" / "relay_nb" / "usage.sqlite"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_ledger_path() == tmp_path / "home" / ".local/share/relay_nb/usage.sqlite"


def test_sqlalchemy_url_target(tmp_path):
    url = f"sqlite:///{tmp_path / 'by_url.sqlite'}"
    with UsageLedger(url) as led:
        assert led.url == url
        assert led.append(row()) is True
        assert len(led.rows()) == 1


def test_failing_storage_returns_false_and_logs(tmp_path, caplog):
    blocker = tmp_path / "usage.sqlite"
    blocker.mkdir()  # a directory where the database file should be
    led = UsageLedger(blocker)
    with caplog.at_level(logging.WARNING, logger="relay_nb.agent.ledger"):
        assert led.append(row(turn_id="turn-42")) is False
        assert led.append(row(turn_id="turn-43")) is False
    messages = [r.getMessage() for r in caplog.records if r.name == "relay_nb.agent.ledger"]
    assert len(messages) == 2 and "turn-42" in messages[0]


def test_unreachable_database_url_returns_false(caplog):
    led = UsageLedger("postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=1")
    with caplog.at_level(logging.WARNING, logger="relay_nb.agent.ledger"):
        assert led.append(row()) is False
    assert any("could not record" in r.getMessage() for r in caplog.records)


def test_timestamps_must_be_timezone_aware():
    with pytest.raises(ValueError, match="timezone-aware"):
        row(timestamp=datetime(2026, 1, 1))
    assert row(timestamp=DAY1).timestamp.tzinfo is UTC
    assert (
        LedgerRow(session_id="s", turn_id="t", step=0, model="m", provider="p").timestamp.tzinfo
        is UTC
    )


def test_row_from_invocation_result_prefers_the_priced_usage():
    result = InvocationResult(
        provider="anthropic",
        model="claude-sonnet-4-6",
        model_source="provider-reported",
        output_text="secret answer text",
        usage=Usage(input_tokens=5, output_tokens=2),
        latency_ms=42.0,
        stop_reason="tool_use",
    )
    priced = Usage(input_tokens=5, output_tokens=2, cost_usd=0.000045)
    made = LedgerRow.from_result(result, session_id="s", turn_id="t", step=3, usage=priced)
    assert (made.cost_usd, made.latency_ms, made.finish_reason) == (0.000045, 42.0, "tool_use")
    assert "secret answer text" not in made.model_dump_json()
