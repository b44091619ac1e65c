"""Run benchmarks by name (default: all) and write benchmarks/results/latest.json."""

from __future__ import annotations

import importlib
import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

BENCHMARKS = (
    "import_time",
    "introspection",
    "guard",
    "fetch",
    "context",
    "agent_loop",
    "notebook",
    "dataframe_connector",
)


def main(argv: list[str]) -> int:
    names = argv or list(BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}", file=sys.stderr)
        return 2
    results: dict[str, object] = {}
    for name in names:
        print(f"== {name}")
        results[name] = importlib.import_module(f"benchmarks.{name}").run()
    out = Path(__file__).with_name("results") / "latest.json"
    out.parent.mkdir(exist_ok=True)
    # running a subset updates those entries and keeps the others' last results
    previous = json.loads(out.read_text()).get("results", {}) if out.exists() else {}
    results = {**previous, **results}
    meta = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
    }
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
