"""The table of docs/performance.md is what ``benchmarks/report.py`` makes of the committed
``benchmarks/results/latest.json`` — so the two cannot drift — and every target row says
whether it is met, with a reason when it is not. No benchmark runs here: only the renderer.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
LATEST = ROOT / "benchmarks" / "results" / "latest.json"


@pytest.fixture(scope="module")
def report() -> ModuleType:
    """``benchmarks.report`` loaded by path (the repository root is not on sys.path): the
    package, then the module, which imports its siblings and the standard library only."""
    for name, path in (
        ("benchmarks", ROOT / "benchmarks" / "__init__.py"),
        ("benchmarks.report", ROOT / "benchmarks" / "report.py"),
    ):
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(
            name, path, submodule_search_locations=[str(path.parent)] if "." not in name else None
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while decorating
        spec.loader.exec_module(module)
    return sys.modules["benchmarks.report"]


@pytest.fixture(scope="module")
def latest() -> dict:
    return json.loads(LATEST.read_text(encoding="utf-8"))


def test_readme_table_is_generated_from_the_committed_results(report, latest):
    readme = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert report.section(readme) == report.render(latest), (
        "docs/performance.md's table differs from benchmarks/results/latest.json; "
        "regenerate it with `python -m benchmarks --report`"
    )


def test_every_target_of_the_committed_run_is_measured_and_judged(report, latest):
    for row in report.rows(latest):
        assert row.measured != "not measured", f"{row.metric}: {row.reason}"
        verdict = row.cells()[3]
        if row.met is False:
            assert verdict.startswith("✗ ") and len(row.reason) > 10, row
        elif row.met is True:
            assert verdict == "✓"
        else:  # reported without a target, or the suite timed on other than 2 cores
            assert verdict.startswith("— ") and row.reason, row


def test_a_missed_target_is_marked_with_its_reason(report, latest):
    data = copy.deepcopy(latest)
    wide = data["results"]["tokens"]["wide"]
    wide["ratio_median"] = 0.5
    fetch = data["results"]["fetch"]["duckdb"]
    fetch.update(ratio=1.25, relay_nb_s=5.0, read_sql_s=4.0)
    rows = {row.metric: row for row in report.rows(data)}
    tokens = rows["tokens per turn vs a LangChain-style prompt (100-table warehouse)"]
    assert tokens.met is False and tokens.measured.startswith("0.50 (")
    assert tokens.cells()[3].startswith("✗ relay_nb's")
    fetched = next(row for metric, row in rows.items() if metric.startswith("fetch 100,000"))
    assert fetched.met is False and "DuckDB 1.25" in fetched.measured
    assert "DuckDB 5000 vs 4000 ms" in fetched.reason
    assert "| ✗ " in report.render(data)


def test_a_missing_result_says_how_to_measure_it(report, latest):
    data = copy.deepcopy(latest)
    del data["results"]["concurrency"]
    data["results"]["introspection"]["postgres"] = None  # PostgreSQL was not running
    rows = {row.metric: row for row in report.rows(data)}
    (concurrency,) = [row for metric, row in rows.items() if "ask_many" in metric]
    assert concurrency.measured == "not measured" and concurrency.met is None
    assert "python -m benchmarks concurrency" in concurrency.cells()[3]
    (postgres,) = [
        row
        for metric, row in rows.items()
        if "introspection" in metric and "(PostgreSQL)" in metric
    ]
    assert postgres.measured == "not measured"


def test_update_rewrites_only_between_the_markers(report, latest, tmp_path):
    readme = tmp_path / "README.md"
    before, after = "# Title\n\nintro\n", "\n## Next\n\ntext\n"
    readme.write_text(f"{before}{report.START}\nstale\n{report.END}{after}", encoding="utf-8")
    assert report.update_page(latest, readme) is True
    text = readme.read_text(encoding="utf-8")
    assert text.startswith(before + report.START) and text.endswith(report.END + after)
    assert report.section(text) == report.render(latest)
    assert report.update_page(latest, readme) is False  # idempotent
    readme.write_text("# no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="performance:start"):
        report.update_page(latest, readme)


def test_rows_measured_after_the_full_run_say_when(report, latest):
    data = copy.deepcopy(latest)
    data["meta"]["partial_runs"] = []
    assert "Re-measured alone since" not in report.render(data)
    data["meta"]["partial_runs"] = [
        {"when": "2026-12-01T10:00:00+00:00", "benchmarks": ["fetch"], "load_average": [1, 1]}
    ]
    assert "Re-measured alone since: fetch on 2026-12-01." in report.render(data)
