"""The example plugin's lifecycle under concurrency: a closed connector stays closed (nothing
rebuilds it), reading a big file never stalls queries on the tables already read, and a
refresh never closes the tables under a call still running on them. Pauses are events."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pytest

import relay_nb
from relay_nb import ConnectorError, DataFrameConnector
from relay_nb.connectors.sql.connector import SQLConnector

CLOSED = "the csvdir connector 'files' is closed; connect the directory again"
WAIT_S = 20  # an upper bound for a stuck thread, never a measured duration


def count(tool: Any, table: str) -> Any:
    return asyncio.run(tool.run({"sql": f"SELECT COUNT(*) AS n FROM {table}"}))


@pytest.mark.parametrize("file_changed", [False, True])
def test_a_closed_connector_is_not_rebuilt_by_a_later_prompt(
    csvdir_module: ModuleType, csv_dir: Path, file_changed: bool
) -> None:
    files = csvdir_module.CSVDirConnector("files", path=str(csv_dir))
    query = {t.name: t for t in files.tools()}["query_files"]
    files.invalidate()  # the TTL ran out; a prompt is about to be built...
    if file_changed:
        (csv_dir / "more.csv").write_text("x\n1\n")
    files.close()  # ...and the analyst disconnects first
    for use in (files.prompt_context, files.object_names, lambda: files.query("SELECT 1")):
        with pytest.raises(ConnectorError, match=CLOSED):
            use()
    assert files._inner is None and files.tools() == []
    result = count(query, "sales")  # a tool handed out before
    assert result.is_error and CLOSED in result.content


def test_a_closed_connector_is_not_rebuilt_by_a_refresh(
    csvdir_module: ModuleType, csv_dir: Path
) -> None:
    files = csvdir_module.CSVDirConnector("files", path=str(csv_dir))
    first = files._inner
    files.close()
    (csv_dir / "more.csv").write_text("x\n1\n")
    with pytest.raises(ConnectorError, match=CLOSED):
        files.refresh()
    assert files._inner is None and first._closed
    with pytest.raises(ConnectorError, match=CLOSED):
        files.prompt_context()


class SlowRead:
    """``pandas.read_csv`` that stops at one file until released."""

    def __init__(self, name: str) -> None:
        self.name, self.reading, self.release = name, threading.Event(), threading.Event()
        self.real = pd.read_csv

    def __call__(self, path: Any, *args: Any, **kwargs: Any) -> pd.DataFrame:
        if Path(path).name == self.name:
            self.reading.set()
            self.release.wait(WAIT_S)
        return self.real(path, *args, **kwargs)


@pytest.mark.parametrize("how", ["refresh", "prompt after the ttl"])
def test_reading_a_new_file_does_not_stall_queries_on_the_tables_read_before(
    csvdir_module: ModuleType, csv_dir: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    files = csvdir_module.CSVDirConnector("files", path=str(csv_dir))
    query = {t.name: t for t in files.tools()}["query_files"]
    slow = SlowRead("big.csv")
    monkeypatch.setattr(pd, "read_csv", slow)
    (csv_dir / "big.csv").write_text("x\n1\n")
    if how == "refresh":
        rebuild = threading.Thread(target=files.refresh)
    else:
        files.invalidate()
        rebuild = threading.Thread(target=files.prompt_context)
    rebuild.start()
    try:
        assert slow.reading.wait(WAIT_S)
        # the rebuild is still reading big.csv: a query on sales, the tools, names and a
        # prompt (the directory already being looked at) answer from the tables read before
        result = count(query, "sales")
        assert not result.is_error and result.content.endswith("n\n3")
        assert [t.name for t in files.tools()] == ["query_files", "describe_files"]
        assert sorted(files.object_names()) == ["regions_2026", "sales"]
        assert "sales ← sales.csv" in files.prompt_context()
        assert rebuild.is_alive() and not slow.release.is_set()
    finally:
        slow.release.set()
        rebuild.join(WAIT_S)
    assert sorted(files.object_names()) == ["big", "regions_2026", "sales"]
    files.close()


def test_a_refresh_closes_the_replaced_tables_only_after_the_calls_running_on_them(
    csvdir_module: ModuleType, csv_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = csvdir_module.CSVDirConnector("files", path=str(csv_dir))
    query = {t.name: t for t in files.tools()}["query_files"]
    first = files._inner
    running, proceed = threading.Event(), threading.Event()
    original = SQLConnector.aquery

    async def paused(self: DataFrameConnector, sql: str) -> Any:
        if self is first:
            running.set()
            await asyncio.to_thread(proceed.wait, WAIT_S)
        return await original(self, sql)

    monkeypatch.setattr(DataFrameConnector, "aquery", paused)
    results: list[Any] = []
    call = threading.Thread(target=lambda: results.append(count(query, "sales")))
    call.start()
    try:
        assert running.wait(WAIT_S)  # the call picked the first tables and is running
        (csv_dir / "more.csv").write_text("x\n1\n")
        files.refresh()
        assert files._inner is not first and not first._closed  # kept for the running call
        assert count(query, "more").content.endswith("n\n1")  # new calls use the new tables
    finally:
        proceed.set()
        call.join(WAIT_S)
    assert not results[0].is_error and results[0].content.endswith("n\n3")
    assert first._closed  # closed when its last call returned
    files.close()
    assert files._retired == {} and files._calls == {}


def test_closing_during_a_rebuild_throws_the_replacement_away(
    csvdir_module: ModuleType, csv_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[DataFrameConnector] = []

    class Recorded(DataFrameConnector):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setattr(relay_nb, "DataFrameConnector", Recorded)
    files = csvdir_module.CSVDirConnector("files", path=str(csv_dir))
    slow = SlowRead("big.csv")
    monkeypatch.setattr(pd, "read_csv", slow)
    (csv_dir / "big.csv").write_text("x\n1\n")
    errors: list[BaseException] = []

    def refresh() -> None:
        try:
            files.refresh()
        except BaseException as exc:
            errors.append(exc)

    rebuild = threading.Thread(target=refresh)
    rebuild.start()
    assert slow.reading.wait(WAIT_S)
    files.close()
    slow.release.set()
    rebuild.join(WAIT_S)
    assert len(built) == 2 and all(inner._closed for inner in built)
    assert files._inner is None
    assert len(errors) == 1 and CLOSED in str(errors[0])
