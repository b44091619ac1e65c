"""The example plugin over time: files added, removed, broken and fixed; refresh and the
schema TTL; tools handed out earlier keep working; patterns stay inside the directory."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import ModuleType

import pytest

import relay_nb
from relay_nb import ConfigurationError, Relay, ScriptedRuntime

COUNT = {
    "tool_calls": [{"name": "query_files", "input": {"sql": "SELECT COUNT(*) AS n FROM march"}}]
}


def tool_results(turn: relay_nb.Turn) -> list[str]:
    return [e.output for e in turn.events if e.type == "tool_result"]  # type: ignore[attr-defined]


def test_a_direct_refresh_keeps_the_tools_the_registry_handed_out(
    csvdir_module: ModuleType, csv_dir: Path
) -> None:
    relay_nb.register_connector_type(csvdir_module.CSVDIR)
    model = ScriptedRuntime([{"text": "one"}, COUNT, {"text": "two"}])
    relay = Relay(model, ledger=False)
    files = relay.connect("files", "csvdir", path=str(csv_dir))
    relay.ask("rows?")  # the registry caches the connector's tools
    (csv_dir / "march.csv").write_text("region,amount\nnorth,5\nsouth,6\n")
    files.refresh()  # the connector's own refresh, not relay.refresh: the registry keeps its tools
    turn = relay.ask("rows in march?")
    assert turn.df.to_dict("records") == [{"n": 2}]
    assert "march ← march.csv" in model.requests[-1].system_text()
    relay.close()


def test_the_ttl_picks_up_added_removed_and_fixed_files_in_the_next_prompt(
    csvdir_module: ModuleType, csv_dir: Path
) -> None:
    clock = [0.0]
    relay_nb.register_connector_type(csvdir_module.CSVDIR)
    model = ScriptedRuntime([{"text": "a"}, {"text": "b"}, {"text": "c"}, COUNT, {"text": "d"}])
    relay = Relay(model, ledger=False, schema_ttl_s=10)
    relay._engine.connectors._clock = lambda: clock[0]  # the TTL without waiting
    relay.connect("files", "csvdir", path=str(csv_dir))
    relay.ask("first")

    def next_turn(question: str) -> str:
        clock[0] += 11
        relay.ask(question)
        return model.requests[-1].system_text()

    (csv_dir / "march.csv").write_bytes(b'region,amount\n"unterminated\n')
    (csv_dir / "Regions 2026.csv").unlink()
    text = next_turn("second")  # a bad file: named in the prompt, the old tables still there
    assert "Not queryable now: march.csv could not be read as CSV (ParserError" in text
    assert "regions_2026 ← Regions 2026.csv" in text
    (csv_dir / "march.csv").write_text("region,amount\nnorth,5\nsouth,6\n")
    text = next_turn("third")  # fixed: read again, the removed file gone
    assert "Not queryable now" not in text
    assert "(table ← file: march ← march.csv, sales ← sales.csv)" in text
    clock[0] += 11
    assert relay.ask("march?").df.to_dict("records") == [{"n": 2}]
    relay.close()


def test_a_problem_at_ttl_expiry_never_fails_a_turn_about_another_connector(
    csvdir_module: ModuleType, csv_dir: Path
) -> None:
    import pandas as pd

    clock = [0.0]
    relay_nb.register_connector_type(csvdir_module.CSVDIR)
    relay = Relay(ScriptedRuntime([{"text": "ok"}, {"text": "still ok"}]), ledger=False)
    relay._engine.connectors.schema_ttl_s = 10
    relay._engine.connectors._clock = lambda: clock[0]
    relay.connect("files", "csvdir", path=str(csv_dir))
    relay.connect("frame", pd.DataFrame({"a": [1]}))
    assert relay.ask("rows in frame?").answer == "ok"
    (csv_dir / "SALES.csv").write_text("x\n1\n")  # two files would both be table 'sales'
    clock[0] += 11
    assert relay.ask("rows in frame?").answer == "still ok"
    with pytest.raises(ConfigurationError, match="would both be table 'sales'"):
        relay.refresh("files")
    assert sorted(relay.connectors["files"].object_names()) == ["regions_2026", "sales"]
    relay.close()


def test_concurrent_refreshes_build_one_replacement_and_old_tools_still_answer(
    csvdir_module: ModuleType, csv_dir: Path
) -> None:
    files = csvdir_module.CSVDirConnector("files", path=str(csv_dir))
    query = {t.name: t for t in files.tools()}["query_files"]  # held by a running turn
    first = files._inner
    (csv_dir / "more.csv").write_text("x\n1\n")
    threads = [threading.Thread(target=files.refresh) for _ in range(4)]
    threads += [threading.Thread(target=files.invalidate)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert files._inner is not first and first._closed and not files._inner._closed
    result = asyncio.run(query.run({"sql": "SELECT COUNT(*) AS n FROM more"}))
    assert not result.is_error and result.content.endswith("n\n1")
    files.close()


@pytest.mark.parametrize("pattern", ["../*.csv", "sub/*.csv", "/etc/*", "..\\*.csv", ""])
def test_a_pattern_outside_the_directory_is_refused(
    csvdir_module: ModuleType, csv_dir: Path, pattern: str
) -> None:
    relay_nb.register_connector_type(csvdir_module.CSVDIR)
    (csv_dir.parent / "outside.csv").write_text("secret\n42\n")
    relay = Relay(ScriptedRuntime(), ledger=False)
    with pytest.raises(ConfigurationError, match="must match file names in the directory"):
        relay.connect("files", "csvdir", path=str(csv_dir), pattern=pattern)
    with pytest.raises(ValueError, match="must match file names in the directory"):
        csvdir_module.CSVDirConnector("files", path=str(csv_dir), pattern=pattern)
    relay.close()
