"""Fresh kernel to first answer, relay_nb vs JupySQL (issue 35 item 6): time and peak memory.

Each sample is a new process that does the whole path an analyst's first cells do, on the
same SQLite file (``relay_nb.testing.seed``'s ``shop``), and stops the clock when the first
answer is there:

- ``relay_nb``: ``%load_ext relay_nb``, ``%relay --connect shop sqlite:///…``, ``%relay how
  many orders are there?``, answered by a scripted model (``RELAY_MODEL=scripted:FILE``, no
  network) whose one tool call runs ``SELECT count(*) AS n FROM orders``: the turn's SQL is
  guarded and run, its result is a pandas DataFrame, the answer and cost are shown.
- ``jupysql``: ``%load_ext sql``, ``%sql sqlite:///…``, ``%sql SELECT count(*) AS n FROM
  orders``, its result a ``ResultSet`` shown as JupySQL shows it by default (a text table).
- ``jupysql_pandas``: the same with ``%config SqlMagic.autopandas = True`` first, so its
  result is a DataFrame as relay_nb's is.

Two harnesses, both run by one interpreter so both sides share one environment: the peer
environment's python, ``$RELAY_BENCH_PEERS_PYTHON`` (default ``/tmp/bench-peers/bin/python``;
``benchmarks/peers-requirements.txt`` says how to create it). Without it, only relay_nb's
side runs, in this interpreter.

- ``shell``: IPython's ``InteractiveShell`` built in a fresh ``python``; the clock runs from
  just before the process is spawned (the parent's ``time.monotonic()``, the same
  system-wide clock the child reads) to the end of the question's cell, and the peak RSS is
  the child's ``ru_maxrss`` at that moment.
- ``kernel``: a real Jupyter kernel (``ipykernel``, started and driven by ``jupyter_client``
  from a small client process), the clock from just before the kernel is started to the
  question cell's ``execute_reply``; the peak RSS is the kernel's ``ru_maxrss``, read by one
  more cell after the answer. Skipped when the peer environment has no ipykernel.

Samples are interleaved (relay_nb, jupysql, jupysql_pandas, then the reverse order next
round) so load drift hits every side alike; the figures are medians of ``repeat`` processes
after one warm-up process per side (which writes the bytecode an installed package has).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PEERS_ENV = "RELAY_BENCH_PEERS_PYTHON"
DEFAULT_PEERS_PYTHON = "/tmp/bench-peers/bin/python"
_QUESTION = "how many orders are there?"
_SQL = "SELECT count(*) AS n FROM orders"
_ORDERS = 300  # the seeded shop's orders: every side's answer must say so

# each side: its cells (``{url}`` filled in) and an expression over ``_`` (the last cell's
# value) that must equal _ORDERS, checked after the clock stopped
SIDES: dict[str, dict[str, Any]] = {
    "relay_nb": {
        "cells": [
            "%load_ext relay_nb",
            "%relay --connect shop {url}",
            f"%relay {_QUESTION}",
        ],
        "check": "int(_.df.iloc[0, 0])",
    },
    "jupysql": {
        "cells": ["%load_ext sql", "%sql {url}", f"%sql {_SQL}"],
        "check": "int(list(_)[0][0])",
    },
    "jupysql_pandas": {
        "cells": [
            "%load_ext sql",
            "%config SqlMagic.autopandas = True",
            "%sql {url}",
            f"%sql {_SQL}",
        ],
        "check": "int(_.iloc[0, 0])",
    },
}
_PEERS = ("jupysql", "jupysql_pandas")

# the child of the shell harness: argv[1] is a JSON list of cells, argv[2] the check
_SHELL_CHILD = """
import json, resource, sys, time
t_top = time.monotonic()
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
marks = [time.monotonic()]
for cell in json.loads(sys.argv[1]):
    outcome = shell.run_cell(cell, store_history=True)
    outcome.raise_error()
    marks.append(time.monotonic())
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
answer = eval(sys.argv[2], shell.user_ns)
print("\\nFRESH_KERNEL " + json.dumps(
    {"top": t_top, "marks": marks, "peak_kb": peak_kb, "answer": answer}
), flush=True)
"""

# the client of the kernel harness: starts a kernel of this same interpreter, runs the cells
_KERNEL_CLIENT = """
import json, sys, time
from jupyter_client.manager import KernelManager
cells, check = json.loads(sys.argv[1]), sys.argv[2]
t_spawn = time.monotonic()
km = KernelManager(kernel_name="relay-fresh-bench")
km.start_kernel()
kc = km.client()
try:
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    marks = [time.monotonic()]
    for cell in cells:
        reply = kc.execute_interactive(cell, timeout=120, output_hook=lambda msg: None)
        if reply["content"]["status"] != "ok":
            raise SystemExit(f"cell {cell!r} failed: {reply['content']}")
        marks.append(time.monotonic())
    probe = kc.execute_interactive(
        "", timeout=60, output_hook=lambda msg: None, user_expressions={
            "peak_kb": "__import__('resource').getrusage(__import__('resource').RUSAGE_SELF)"
            ".ru_maxrss",
            "answer": check,
        })
    values = probe["content"]["user_expressions"]
    got = {k: v.get("data", {}).get("text/plain", v) for k, v in values.items()}
    print("\\nFRESH_KERNEL " + json.dumps({
        "spawn": t_spawn, "marks": marks, "peak_kb": int(got["peak_kb"]),
        "answer": int(got["answer"]),
    }), flush=True)
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
"""

_HOW_TO_CREATE = (
    "the peer environment is missing: create it from the repository root with\n"
    "    python3 -m venv /tmp/bench-peers\n"
    "    .venv/bin/pip freeze --exclude-editable > /tmp/relay-freeze.txt\n"
    "    /tmp/bench-peers/bin/pip install -c /tmp/relay-freeze.txt -e . "
    "-r benchmarks/peers-requirements.txt\n"
    f"(or point {PEERS_ENV} at another such python); JupySQL's side is skipped"
)


def peers_python() -> str | None:
    """The peer environment's python if it exists and has JupySQL, else None."""
    python = os.environ.get(PEERS_ENV, DEFAULT_PEERS_PYTHON)
    if not Path(python).exists():
        return None
    has_sql = subprocess.run(
        [python, "-c", "import sql.magic, relay_nb"], capture_output=True, check=False
    )
    return python if has_sql.returncode == 0 else None


def _has_kernel(python: str) -> bool:
    probe = [python, "-c", "import ipykernel, jupyter_client"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def _child_env(scratch: Path) -> dict[str, str]:
    """The environment every sample runs in: bytecode written and read, no telemetry."""
    drop = {"PYTHONDONTWRITEBYTECODE", "RELAY_CONFIG", "JUPYTER_PATH", "PYTHONSTARTUP"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        RELAY_MODEL=f"scripted:{scratch / 'script.json'}",
        RELAY_DATA_DIR=str(scratch / "relay-data"),  # the usage ledger, out of $HOME
        # JupySQL (ploomber-core) would post usage telemetry and check PyPI for a newer
        # version; off, as there is no network here to wait on
        PLOOMBER_STATS_ENABLED="false",
        PLOOMBER_VERSION_CHECK_DISABLED="true",
        JUPYTER_PATH=str(scratch / "jupyter"),
        IPYTHONDIR=str(scratch / "ipython"),  # no profile startup files of the user's
        MPLBACKEND="agg",
    )
    return env


def _sample(python: str, harness: str, side: str, url: str, scratch: Path) -> dict[str, float]:
    """One fresh process: ms to the first answer (and per stage), peak RSS in MB."""
    spec = SIDES[side]
    cells = [cell.format(url=url) for cell in spec["cells"]]
    script = _SHELL_CHILD if harness == "shell" else _KERNEL_CLIENT
    started = time.monotonic()
    done = subprocess.run(
        [python, "-c", script, json.dumps(cells), spec["check"]],
        capture_output=True,
        text=True,
        check=False,
        cwd=scratch,  # no relay.config.json of the repository's
        env=_child_env(scratch),
        timeout=300,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("FRESH_KERNEL ")), None)
    if done.returncode or line is None:
        raise RuntimeError(f"{harness}/{side} sample failed:\n{done.stdout}\n{done.stderr}")
    got = json.loads(line.split(" ", 1)[1])
    if got["answer"] != _ORDERS:
        raise RuntimeError(f"{harness}/{side} answered {got['answer']!r}, not {_ORDERS}")
    marks = got["marks"]
    origin = started if harness == "shell" else got["spawn"]
    stages = {"startup_ms": (marks[0] - origin) * 1000}  # interpreter (or kernel) + shell
    for index in range(1, len(marks)):
        stages[f"cell{index}_ms"] = (marks[index] - marks[index - 1]) * 1000
    return {"ms": (marks[-1] - origin) * 1000, "peak_mb": got["peak_kb"] / 1024, **stages}


def _seed(scratch: Path) -> str:
    from relay_nb.testing.seed import seed_database

    url = f"sqlite:///{scratch / 'shop.db'}"
    seed_database(url)
    script = {
        "model": "claude-haiku-4-5",
        "steps": [
            {"tool_calls": [{"name": "query_shop", "input": {"sql": _SQL}}]},
            {"text": f"There are {_ORDERS} orders."},
        ],
    }
    (scratch / "script.json").write_text(json.dumps(script))
    spec = {
        "argv": ["PYTHON", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "relay fresh-kernel benchmark",
        "language": "python",
    }
    kernel_dir = scratch / "jupyter" / "kernels" / "relay-fresh-bench"
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "kernel.json").write_text(json.dumps(spec))
    return url


def _measure(
    python: str, harness: str, sides: list[str], url: str, scratch: Path, repeat: int
) -> dict[str, dict[str, float]]:
    # the kernel's argv names the same interpreter as the shell harness's
    spec_path = scratch / "jupyter" / "kernels" / "relay-fresh-bench" / "kernel.json"
    spec = json.loads(spec_path.read_text())
    spec["argv"][0] = python
    spec_path.write_text(json.dumps(spec))
    for side in sides:  # warm-up: bytecode, the usage ledger's file, the OS page cache
        _sample(python, harness, side, url, scratch)
    samples: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for index in range(repeat):
        for side in sides if index % 2 == 0 else sides[::-1]:
            samples[side].append(_sample(python, harness, side, url, scratch))
    medians = {
        side: {key: statistics.median(s[key] for s in runs) for key in runs[0]}
        for side, runs in samples.items()
    }
    for side, runs in samples.items():  # the spread, to judge a ratio near 1 by
        medians[side]["min_ms"] = min(s["ms"] for s in runs)
        medians[side]["max_ms"] = max(s["ms"] for s in runs)
    return medians


def _print(harness: str, medians: dict[str, dict[str, float]]) -> None:
    base = medians["relay_nb"]
    print(
        f"[{harness}] fresh process to first answer (median) {'ms':>7} {'min-max ms':>11} "
        f"{'peak MB':>8} {'relay/peer ms':>13} {'relay/peer MB':>13}"
    )
    for side, m in medians.items():
        ratio_ms = f"{base['ms'] / m['ms']:.2f}" if side != "relay_nb" else ""
        ratio_mb = f"{base['peak_mb'] / m['peak_mb']:.2f}" if side != "relay_nb" else ""
        spread = f"{m['min_ms']:.0f}-{m['max_ms']:.0f}"
        print(
            f"  {side:<42} {m['ms']:>7.0f} {spread:>11} {m['peak_mb']:>8.1f} {ratio_ms:>13} "
            f"{ratio_mb:>13}"
        )
        stages = "  ".join(f"{k.removesuffix('_ms')} {v:.0f}" for k, v in _stages(m).items())
        print(f"      stages ms: {stages}")


def _stages(m: dict[str, float]) -> dict[str, float]:
    """``startup`` (interpreter or kernel, and IPython's shell), then each cell's ms."""
    return {k: v for k, v in m.items() if k.startswith(("startup", "cell"))}


def run(repeat: int = 9, kernel_repeat: int = 5) -> dict[str, Any]:
    python = peers_python()
    if python is None:
        print(_HOW_TO_CREATE)
        sides, python = ["relay_nb"], sys.executable
    else:
        sides = ["relay_nb", *_PEERS]
    results: dict[str, Any] = {"python": python}
    with tempfile.TemporaryDirectory(prefix="relay_fresh_") as tmp:
        scratch = Path(tmp)
        url = _seed(scratch)
        harnesses = {"shell": repeat}
        if kernel_repeat and _has_kernel(python):
            harnesses["kernel"] = kernel_repeat
        else:
            print("no ipykernel/jupyter_client in that environment: the kernel harness is skipped")
        for harness, n in harnesses.items():
            medians = _measure(python, harness, sides, url, scratch, n)
            _print(harness, medians)
            entry: dict[str, Any] = {}
            for side, m in medians.items():
                entry[f"{side}_ms"] = round(m["ms"], 1)
                entry[f"{side}_peak_mb"] = round(m["peak_mb"], 1)
                entry[f"{side}_range_ms"] = [round(m["min_ms"], 1), round(m["max_ms"], 1)]
                entry[f"{side}_stages_ms"] = {
                    k.removesuffix("_ms"): round(v, 1) for k, v in _stages(m).items()
                }
            for peer in (s for s in sides if s != "relay_nb"):
                entry[f"ratio_ms_vs_{peer}"] = round(
                    medians["relay_nb"]["ms"] / medians[peer]["ms"], 2
                )
                entry[f"ratio_mb_vs_{peer}"] = round(
                    medians["relay_nb"]["peak_mb"] / medians[peer]["peak_mb"], 2
                )
            results[harness] = entry
    print("  target (issue 35): relay_nb's ms and MB <= JupySQL's, i.e. both ratios <= 1")
    return results


if __name__ == "__main__":
    run()
