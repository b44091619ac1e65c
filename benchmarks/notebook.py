"""The notebook layer (issue 6): `%load_ext relay_nb` and rendering a turn's saved trace.

(a) ``%load_ext relay_nb`` in a fresh interpreter with IPython's shell already built (the
    kernel has it before any cell runs), median of N processes; target < 500 ms. Side by
    side: building the shell itself, which the user pays with or without relay_nb.
(b) Rendering a finished turn (text + HTML bundle) whose result has 1e3 vs 1e6 rows, median
    of N renders each; target < 50 ms and independent of the row count (ratio ~1).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

_PROBE = """
import time
t0 = time.perf_counter()
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
t1 = time.perf_counter()
shell.run_line_magic("load_ext", "relay_nb")
t2 = time.perf_counter()
print(f"{(t1 - t0) * 1000:.3f} {(t2 - t1) * 1000:.3f}")
"""


def _load_ext_once() -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), float(out[1])


def _turn(rows: int):
    import pandas as pd

    from relay_nb.agent.loop import TurnResult
    from relay_nb.agent.tool_calls import ToolOutcome
    from relay_nb.connectors.results import QueryResult
    from relay_nb.runtime.types import Usage

    frame = pd.DataFrame({"id": range(rows), "amount": [i * 0.5 for i in range(rows)]})
    result = QueryResult(
        df=frame,
        executed_sql="SELECT id, amount FROM orders LIMIT 1000001",
        row_count=rows,
        truncated=False,
        elapsed_ms=12.0,
        connector_id="shop",
    )
    outcome = ToolOutcome(
        tool_call_id="c1", name="query_shop", input={}, content="…", artifact=result
    )
    return TurnResult(
        answer="**Done.** The orders are listed.",
        finish_reason="stop",
        question="list the orders",
        tool_results=[outcome],
        usage=Usage(input_tokens=1000, output_tokens=50, cost_usd=0.001),
        model="claude-haiku-4-5",
    )


def _render_ms(rows: int, repeat: int) -> float:
    from relay_nb.notebook.view import turn_bundle

    turn = _turn(rows)
    turn_bundle(turn)  # warm: Markdown parser, Pygments lexer
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        turn_bundle(turn)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def run(processes: int = 7, renders: int = 25) -> dict[str, float]:
    loads = [_load_ext_once() for _ in range(processes)]
    shell_ms = statistics.median(a for a, _ in loads)
    load_ms = statistics.median(b for _, b in loads)
    small, large = _render_ms(1_000, renders), _render_ms(1_000_000, renders)
    print(f"%load_ext relay_nb        median {load_ms:8.1f} ms   target < 500 ms")
    print(f"  (building IPython's shell median {shell_ms:8.1f} ms, paid with or without it)")
    print(f"render turn, 1e3 rows     median {small:8.2f} ms")
    print(f"render turn, 1e6 rows     median {large:8.2f} ms   target < 50 ms")
    print(f"  1e6 / 1e3 ratio                {large / small:8.2f}    target ~1 (independent)")
    return {
        "load_ext_ms": round(load_ms, 1),
        "ipython_shell_ms": round(shell_ms, 1),
        "render_1e3_rows_ms": round(small, 2),
        "render_1e6_rows_ms": round(large, 2),
        "render_ratio_1e6_over_1e3": round(large / small, 2),
    }


if __name__ == "__main__":
    run()
