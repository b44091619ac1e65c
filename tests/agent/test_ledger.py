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


def _main_file_rows(path: Path, copy: Path) -> int:
    """Rows in the database file alone, without its write-ahead log: what a sync put there."""
    copy.write_bytes(path.read_bytes())
    with sqlite3.connect(copy) as conn:
        if not conn.execute("select 1 from sqlite_master where name = 'relay_usage'").fetchall():
            return 0  # the table itself is still in the log
        return conn.execute("select count(*) from relay_usage").fetchone()[0]


def test_a_killed_process_loses_no_recorded_row(tmp_path):
    """Each append is committed before it returns: SIGKILL right after loses nothing."""
    import subprocess
    import sys

    path = tmp_path / "usage.sqlite"
    script = (
        "import os, signal\n"
        "from datetime import UTC, datetime\n"
        "from relay_nb.agent.ledger import LedgerRow, UsageLedger\n"
        f"led = UsageLedger({str(path)!r})\n"
        "for step in range(25):\n"
        "    assert led.append(LedgerRow(session_id='k', turn_id='t', step=step,"
        " model='m', provider='p'))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == -9, done.stderr.decode()
    with UsageLedger(path) as led:
        assert sorted(led.rows()["step"]) == list(range(25))


def test_appends_are_fsynced_in_groups_even_beside_a_reader(tmp_path, monkeypatch):
    """One fsync of the write-ahead log covers the rows before it; rows that come later arm
    the next one; a reader holding a snapshot (a report in another kernel) does not stop it."""
    import os
    import time

    import relay_nb.agent.ledger as ledger_module

    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    monkeypatch.setattr(ledger_module, "SYNC_DELAY_S", 0.05)
    path = tmp_path / "usage.sqlite"

    def wait_for(count: int) -> None:
        deadline = time.monotonic() + 10
        while len(synced) < count and time.monotonic() < deadline:
            time.sleep(0.01)

    with UsageLedger(path) as led:
        assert led.append(row(step=0))
        reader = sqlite3.connect(path)
        reader.execute("BEGIN")
        assert reader.execute("select count(*) from relay_usage").fetchone() == (1,)
        assert led.append(row(step=1)) and led.append(row(step=2))
        wait_for(1)
        time.sleep(0.1)
        assert synced == [f"{path}-wal"]  # one fsync for the three rows
        assert led.append(row(step=3))  # a fired timer is armed again by the next append
        wait_for(2)
        assert synced == [f"{path}-wal"] * 2
        reader.rollback()
        reader.close()


def test_a_refused_row_releases_the_write_lock(tmp_path):
    """A row the database refuses is rolled back at once: another writer is not locked out,
    and the next append does not commit it along."""
    path = tmp_path / "usage.sqlite"
    with UsageLedger(path) as led:
        assert led.append(row(turn_id="first"))
        with sqlite3.connect(path) as admin:
            admin.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON relay_usage WHEN NEW.turn_id = 'bad' "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        assert led.append(row(turn_id="bad")) is False
        other = sqlite3.connect(path, timeout=0.5)
        other.execute("BEGIN IMMEDIATE")  # would wait, then fail, on a held lock
        other.rollback()
        other.close()
        assert led.append(row(turn_id="after"))
        assert list(led.rows()["turn_id"]) == ["first", "after"]


def test_close_syncs_at_once(tmp_path, monkeypatch):
    import relay_nb.agent.ledger as ledger_module

    monkeypatch.setattr(ledger_module, "SYNC_DELAY_S", 3600.0)
    path = tmp_path / "usage.sqlite"
    led = UsageLedger(path)
    assert led.append(row())
    assert _main_file_rows(path, tmp_path / "a.sqlite") == 0
    led.close()
    assert _main_file_rows(path, tmp_path / "b.sqlite") == 1
    assert led.append(row(step=1)) and len(led.rows()) == 2  # reopens after close
    led.close()


def test_the_fast_append_stores_what_sqlalchemy_would(tmp_path):
    """Same stored text for timestamps and booleans as SQLAlchemy's own insert of the row."""
    import sqlalchemy as sa

    from relay_nb.agent.ledger import _table_for

    written = row(estimated=True, timestamp=datetime(2026, 3, 1, 23, 30, 5, 123456, tzinfo=UTC))
    with UsageLedger(tmp_path / "fast.sqlite") as fast:
        assert fast.append(written)
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'plain.sqlite'}")
    table = _table_for(sa.MetaData())
    table.metadata.create_all(engine)
    values = written.model_dump() | {"timestamp": written.timestamp.replace(tzinfo=None)}
    with engine.begin() as conn:
        conn.execute(table.insert(), values)
    engine.dispose()
    stored = []
    for name in ("fast.sqlite", "plain.sqlite"):
        with sqlite3.connect(tmp_path / name) as conn:
            stored.append(conn.execute("select * from relay_usage").fetchall())
    assert stored[0] == stored[1]
    assert stored[0][0][1] == "2026-03-01 23:30:05.123456"


def test_an_append_on_the_event_loop_never_waits_for_another_writer(tmp_path):
    """Another process holding the ledger's write lock (a second kernel mid-append, a
    script that writes) must not stop the event loop for SQLite's busy timeout: the
    accountant's append moves to a worker thread, waits its turn there, and lands."""
    import asyncio
    import time

    from relay_nb.agent.accounting import Accountant

    path = tmp_path / "usage.sqlite"
    result = InvocationResult(
        provider="anthropic", model="claude-sonnet-4-6", model_source="provider-reported",
        output_text="", usage=Usage(input_tokens=5, output_tokens=2), latency_ms=1.0,
        stop_reason="end_turn",
    )  # fmt: skip
    with UsageLedger(path) as led:
        assert led.append(row(turn_id="opened"))  # the file is open: appends go inline
        assert led.append_without_waiting(row(turn_id="inline"))
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the write lock, held
        started = time.monotonic()
        assert led.append_without_waiting(row(turn_id="refused")) is False
        assert time.monotonic() - started < 0.5

        async def main() -> int:
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0.01)

            clock = asyncio.create_task(ticker())
            accountant = Accountant(ledger=led)
            record = asyncio.create_task(
                accountant.record(result, result.usage, turn_id="waited", step=0)
            )
            await asyncio.sleep(0.6)
            waiting = not record.done()
            other.execute("COMMIT")
            await asyncio.wait_for(record, 10)
            clock.cancel()
            assert waiting
            return ticks

        assert asyncio.run(main()) >= 20  # the loop ran on while the append waited
        other.close()
        assert list(led.rows()["turn_id"]) == ["opened", "inline", "waited"]
        assert led.append_without_waiting(row(turn_id="after"))  # inline again


@pytest.mark.parametrize(
    ("code", "busy"),
    [(5, True), (6, True), (261, True), (517, True), (262, True), (1, False), (19, False)],
)
def test_a_busy_file_is_told_by_its_primary_code(code: int, busy: bool) -> None:
    """Python reports SQLite's extended codes (SQLITE_BUSY_SNAPSHOT 517, _RECOVERY 261,
    SQLITE_LOCKED_SHAREDCACHE 262): busy by their low byte, so such a row goes to the
    worker thread instead of being dropped as refused."""
    from relay_nb.agent.ledger import _busy

    error = sqlite3.OperationalError("database is busy")
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    assert _busy(error) is busy
