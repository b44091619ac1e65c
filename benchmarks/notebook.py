"""The notebook layer (issue 6): `%load_ext relay_nb` and rendering a whole turn.

(a) ``%load_ext relay_nb`` in a fresh interpreter with IPython's shell already built (the
    kernel has it before any cell runs), median of N processes; target < 500 ms. Side by
    side: building the shell itself, which the user pays with or without relay_nb.
(c) ``%relay --connect shop sqlite:///…`` right after ``%load_ext relay_nb``, in the same
    fresh interpreters as (a); target <= 200 ms. Side by side, interleaved process by
    process: the raw work of connecting (``import sqlalchemy``, ``create_engine``, one
    connection opened and closed). Both run with compiled bytecode, as an installed package
    has (a warm-up process writes it when the environment says not to).
(b) Rendering a finished turn whose result has 1e6 rows vs one with 1e3 rows. The turns are
    real: a ``Session`` with a scripted model runs ``SELECT * FROM big`` through the
    ``SQLConnector`` (row_limit raised to 1e6) on a SQLite table, so the ``TurnResult`` holds
    its real events, the ``tool_result`` one carrying the 1e6-row ``QueryResult``. Timed, with
    the query already done (it is the fetch benchmark's subject, not rendering):

    - cell display: what a ``%relay`` cell shows, in a real IPython shell (``TestingShell``,
      outputs captured): ``LiveTurnView`` built and displayed, every event of the turn fed
      to it (the tool call's panel, the result's ``TablePager`` over the 1e6-row frame, the
      answer, usage, done), then ``finish``: the live widgets blanked, the static trace
      (text + HTML bundle) displayed, the widgets closed. Target < 50 ms, and independent
      of the row count (ratio ~1).
    - static trace alone: ``turn_bundle`` (what a saved notebook keeps, and what
      ``display(turn)`` renders in a later cell).

    Medians of N renders each, after one warm-up render (Markdown parser, Pygments lexer).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

_PROBE = """
import sys, time
t0 = time.perf_counter()
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
t1 = time.perf_counter()
shell.run_line_magic("load_ext", "relay_nb")
t2 = time.perf_counter()
shell.run_line_magic("relay", "--connect shop " + sys.argv[1])
t3 = time.perf_counter()
print(f"TIMES {(t1 - t0) * 1000:.3f} {(t2 - t1) * 1000:.3f} {(t3 - t2) * 1000:.3f}")
"""
_RAW_CONNECT = """
import sys, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
t0 = time.perf_counter()
import sqlalchemy
sqlalchemy.create_engine(sys.argv[1]).connect().close()
print(f"TIMES {(time.perf_counter() - t0) * 1000:.3f}")
"""
_QUESTION = "list the orders with their amounts"
_SQL = "SELECT id, amount, label, created FROM big"


def _probe(script: str, url: str) -> list[float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-c", script, url], capture_output=True, text=True, check=True, env=env
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith("TIMES "))
    return [float(part) for part in line.split()[1:]]


def _table(url: str, rows: int) -> None:
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "CREATE TABLE big AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
                f"FROM n WHERE i < {rows}) SELECT i AS id, i * 0.5 AS amount, 'label ' || "
                "(i % 97) AS label, datetime('2025-01-01', '+' || (i % 1000) || ' minutes') "
                "AS created FROM n"
            )
    finally:
        engine.dispose()


def _real_turn(url: str, rows: int) -> tuple[Any, Any]:
    """``(turn, session)`` of a real scripted turn whose result has ``rows`` rows."""
    from relay_nb.agent.session import Session
    from relay_nb.connectors.sql.connector import SQLConnector
    from relay_nb.runtime.scripted import ScriptedRuntime

    runtime = ScriptedRuntime(model="claude-haiku-4-5")
    runtime.add(
        {"tool_calls": [{"name": "query_shop", "input": {"sql": _SQL}}]},
        {"text": f"**Done.** The {rows:,} orders are listed; amounts run from 0.5 upwards."},
    )
    connector = SQLConnector(  # the byte limit raised too: 1e6 rows are ~60 MB of values
        "shop", url, row_limit=rows, statement_timeout_s=600, max_result_bytes=1 << 30
    )
    session = Session(runtime, connectors=[connector])
    turn = asyncio.run(session.ask_async(_QUESTION))
    if turn.df is None or len(turn.df) != rows or turn.finish_reason != "stop":
        raise RuntimeError(f"the benchmark turn did not return {rows} rows")
    return turn, session


def _cell_display(turn: Any, session: Any, max_rows: int) -> None:
    """What the ``%relay`` magic does around a turn, minus running it."""
    from relay_nb.notebook.live import LiveTurnView

    view = LiveTurnView(turn.question, max_rows=max_rows, session_usage=session.usage)
    view.show()
    for event in turn.events:
        view.on_event(event)
    view.finish(turn)


def _sample_ms(work: Any, *args: Any, **kwargs: Any) -> float:
    started = time.perf_counter()
    work(*args, **kwargs)
    return (time.perf_counter() - started) * 1000


def _renders(urls: dict[int, str], repeat: int) -> dict[int, dict[str, float]]:
    """Median ms per row count, samples interleaved (1e3, 1e6, 1e3 …) so drift hits both."""
    from IPython.utils.capture import capture_output

    from relay_nb.notebook.view import turn_bundle
    from relay_nb.testing.shell import TestingShell
    from relay_nb.views import HTML_PREVIEW_ROWS

    TestingShell()  # the process's IPython shell, relay_nb loaded: display() publishes there
    turns = {rows: _real_turn(url, rows) for rows, url in urls.items()}
    samples: dict[int, dict[str, list[float]]] = {r: {"cell": [], "static": []} for r in urls}
    try:
        with capture_output():
            for index in range(repeat + 1):  # round 0 warms up (parser, lexer, widget classes)
                for rows, (turn, session) in turns.items():
                    cell = _sample_ms(_cell_display, turn, session, HTML_PREVIEW_ROWS)
                    static = _sample_ms(turn_bundle, turn, max_rows=HTML_PREVIEW_ROWS)
                    if index:
                        samples[rows]["cell"].append(cell)
                        samples[rows]["static"].append(static)
    finally:
        for _, session in turns.values():
            session.connectors.close()
    return {
        rows: {f"{key}_ms": statistics.median(values) for key, values in kinds.items()}
        for rows, kinds in samples.items()
    }


def _connects(processes: int, scratch: Path) -> tuple[list[list[float]], list[float]]:
    """``(shell, load_ext, connect)`` per relay_nb process and the raw connects, interleaved."""
    from relay_nb.testing.seed import seed_database

    url = f"sqlite:///{scratch / 'shop.db'}"
    seed_database(url)
    _probe(_PROBE, url)  # warm-up: compiles the bytecode an installed package has
    _probe(_RAW_CONNECT, url)
    relay: list[list[float]] = []
    raw: list[float] = []
    for _ in range(processes):
        relay.append(_probe(_PROBE, url))
        raw.append(_probe(_RAW_CONNECT, url)[0])
    return relay, raw


def run(processes: int = 7, renders: int = 15) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="relay_connect_") as scratch:
        loads, raw_connects = _connects(processes, Path(scratch))
    shell_ms = statistics.median(a for a, _, _ in loads)
    load_ms = statistics.median(b for _, b, _ in loads)
    connect_ms = statistics.median(c for _, _, c in loads)
    raw_connect_ms = statistics.median(raw_connects)
    with tempfile.TemporaryDirectory(prefix="relay_render_") as scratch:
        small_url = f"sqlite:///{Path(scratch) / 'small.db'}"
        large_url = f"sqlite:///{Path(scratch) / 'large.db'}"
        _table(small_url, 1_000)
        _table(large_url, 1_000_000)
        measured = _renders({1_000: small_url, 1_000_000: large_url}, renders)
        small, large = measured[1_000], measured[1_000_000]
    print(f"%load_ext relay_nb                 median {load_ms:8.1f} ms   target < 500 ms")
    print(f"  (building IPython's shell median {shell_ms:8.1f} ms, paid with or without it)")
    print(f"%relay --connect (SQLite)          median {connect_ms:8.1f} ms   target <= 200 ms")
    print(f"  (raw: import sqlalchemy, create_engine, connect: {raw_connect_ms:8.1f} ms)")
    print(
        f"{'render a finished turn (median ms)':<34} {'1e3 rows':>9} {'1e6 rows':>9} {'ratio':>6}"
    )
    for key, label in (
        ("cell_ms", "cell display (widgets + trace)"),
        ("static_ms", "static trace"),
    ):
        ratio = large[key] / small[key]
        print(f"{label:<34} {small[key]:>9.2f} {large[key]:>9.2f} {ratio:>6.2f}")
    print("  target: cell display of the 1e6-row turn < 50 ms, ratio ~1 (independent of rows)")
    return {
        "load_ext_ms": round(load_ms, 1),
        "ipython_shell_ms": round(shell_ms, 1),
        "connect_ms": round(connect_ms, 1),
        "raw_connect_ms": round(raw_connect_ms, 1),
        "render_1e3_rows_ms": round(small["cell_ms"], 2),
        "render_1e6_rows_ms": round(large["cell_ms"], 2),
        "render_ratio_1e6_over_1e3": round(large["cell_ms"] / small["cell_ms"], 2),
        "static_1e3_rows_ms": round(small["static_ms"], 2),
        "static_1e6_rows_ms": round(large["static_ms"], 2),
        "static_ratio_1e6_over_1e3": round(large["static_ms"] / small["static_ms"], 2),
    }


if __name__ == "__main__":
    run()
