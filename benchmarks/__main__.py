"""``python -m benchmarks [name...]``: run benchmarks (default: all), merge their results into
``benchmarks/results/latest.json`` and regenerate the table of docs/performance.md from it.

``python -m benchmarks --report`` only regenerates the table. Each benchmark prints its own
table of medians and ratios; the wall time of each is recorded too (``meta.seconds``), and
``meta.suite_seconds`` when the whole suite ran in one command.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import report

BENCHMARKS = (
    "import_time",
    "introspection",
    "guard",
    "guard_scale",
    "small_query",
    "prompt_scale",
    "catalog_scale",
    "fetch",
    "context",
    "agent_loop",
    "facade",
    "tokens",
    "notebook",
    "dataframe_connector",
    "concurrency",
    "schema_linking",
    "eval_throughput",
    "spark",
    "big_tables",
    "many_connectors",
    "fresh_kernel",
)


def _cpu() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or None


def _cores() -> int:
    """The cores this process may run on (``taskset -c 0,1`` makes it 2)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _load() -> float | None:
    """The 1-minute load average (None where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def main(argv: list[str]) -> int:
    if argv == ["--report"]:
        return report.main()
    names = argv or list(BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}", file=sys.stderr)
        print(
            "or --report to regenerate docs/performance.md's table from the last results",
            file=sys.stderr,
        )
        return 2
    out = report.LATEST
    previous = json.loads(out.read_text()) if out.exists() else {}
    results: dict[str, object] = {}
    seconds: dict[str, float] = {}
    load_start = _load()
    suite_started = time.perf_counter()
    for name in names:
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        results[name] = importlib.import_module(f"benchmarks.{name}").run()
        seconds[name] = round(time.perf_counter() - started, 1)
        print(f"   ({seconds[name]:.1f} s)", flush=True)
    suite_s = round(time.perf_counter() - suite_started, 1)
    # running a subset updates those entries and keeps the others' last results; the header
    # (date, load) stays the last full run's, and each later partial run is listed beside it
    old_meta = previous.get("meta", {})
    now = datetime.now(UTC).isoformat(timespec="seconds")
    load = [load_start, _load()]  # other processes' load skews every figure: say how busy
    full = set(names) == set(BENCHMARKS)
    meta = {
        "when": now if full else old_meta.get("when", now),
        "python": platform.python_version(),
        "cores": _cores(),
        "cpu": _cpu(),
        "seconds": {**old_meta.get("seconds", {}), **seconds},
        "suite_seconds": suite_s if full else old_meta.get("suite_seconds"),
        "load_average": load if full else old_meta.get("load_average", load),
        "partial_runs": []
        if full
        else [
            *old_meta.get("partial_runs", []),
            {"when": now, "benchmarks": names, "load_average": load},
        ],
    }
    data = {"meta": meta, "results": {**previous.get("results", {}), **results}}
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"== all done in {suite_s:.1f} s; results in {out}")
    return report.main()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
