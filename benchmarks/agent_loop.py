"""Agent loop (issue 5): framework overhead per model step, and memory over 1,000 turns.

(1) Overhead. ``run_turn`` with a ``ScriptedRuntime`` that alternates a tool call
    (``SELECT 1 AS one FROM products LIMIT 1`` on a seeded SQLite file through
    ``SQLConnector``) and a text answer: 2 model steps per turn. Per turn, wall time minus
    the tool's own time (``sum(o.elapsed_ms for o in result.tool_results)``: validation, the
    query, its preview) minus the scripted runtime's playback (time inside
    ``ScriptedRuntime._invoke``: popping the step, building the result, estimating its
    tokens — what a real runtime replaces with the network call), divided by the steps.
    ``BaseRuntime.invoke``'s wrapper (task, timeout/abort guard, latency stamp) is shared by
    every runtime, so it counts as overhead. Target: median <= 2 ms per step. Side by side,
    interleaved turn by turn in the same run: the same with a ``UsageLedger`` (one SQLite
    commit per step, reported separately), ``connector.aquery(sql)`` alone, and the raw work
    (the same query and its DataFrame through ``pandas.read_sql`` on a plain engine). Against
    the raw work: per turn, wall minus scripted playback minus the raw work, over the two
    steps; it counts everything relay_nb adds (guard, read-only execution, preview, events,
    the loop) and is the figure docs/performance.md compares with the 2 ms target.
(2) Memory. 1,000 sequential ``Session.ask_async`` turns (the same script, history kept,
    compaction through the same scripted model): growth from turn 100 to turn 1,000 after
    ``gc.collect()``, target < 20 MB. Each variant runs in a fresh process (clean RSS; two
    at a time): the default 200,000-token window and an 8,000-token one (compaction every
    ~15 turns), both with VmRSS and the bytes retained by ``session.history`` and by
    ``session.turns`` alone (a walk of ``gc.get_referents``). Also reported: ms per turn
    (median per hundred turns) and the slowest turn, as a turn's own work grows with the
    history. ``RELAY_BENCH_AGENT_TRACE=1`` adds the small window under ``tracemalloc``
    (exact traced bytes; ``session.turns.clear()`` at the end shows how much of the growth
    the kept ``TurnResult``s are): it takes ~20 s more, and the two figures above already
    bound the growth, so the suite leaves it out. ``RELAY_BENCH_AGENT_TRACE_ALL=1`` traces
    both windows (~4 min: tracemalloc slows the default window's growing turns ~4x).
    ``ScriptedRuntime`` keeps every request it saw (a test double's feature); that list is
    cleared each turn.
"""

from __future__ import annotations

import asyncio
import gc
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
import types
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.ledger import UsageLedger
from relay_nb.agent.loop import run_turn
from relay_nb.agent.pricing import PriceTable
from relay_nb.agent.services import TurnServices
from relay_nb.agent.session import Session
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import InvocationRequest, ToolResultPart
from relay_nb.testing.seed import seed_database

SQL = "SELECT 1 AS one FROM products LIMIT 1"
QUERY_STEP = {"tool_calls": [{"name": "query_shop", "input": {"sql": SQL}}]}
ANSWER_STEP = {"text": "ok"}
WARMUP_TURNS = 30
TURNS = 300
MEMORY_TURNS = 1_000
BASELINE_TURN = 100
WINDOWS = (200_000, 8_000)
SMALL_WINDOW = 8_000
MB = 1024 * 1024


# --------------------------------------------------------------------------------------------
# (1) overhead per step


class _TimedScripted(ScriptedRuntime):
    """Adds up the time spent inside the scripted playback, the part a real model replaces."""

    playback_s = 0.0

    async def _invoke(self, request: InvocationRequest, *, on_text: Any) -> Any:
        started = time.perf_counter()
        try:
            return await super()._invoke(request, on_text=on_text)
        finally:
            self.playback_s += time.perf_counter() - started


def _scripted(turns: int) -> _TimedScripted:
    runtime = _TimedScripted()
    for _ in range(turns):
        runtime.add(QUERY_STEP, ANSWER_STEP)
    return runtime


async def _timed_turn(
    runtime: _TimedScripted, tools: list, prices: PriceTable, ledger: UsageLedger | None
) -> tuple[float, float, float, float]:
    """``(overhead ms per step, wall ms, tool ms, playback ms)`` of one turn."""
    runtime.playback_s = 0.0
    runtime.requests.clear()
    started = time.perf_counter()
    result = await run_turn(
        "how many?",
        TurnServices(
            runtime=runtime, tools=tools, accountant=Accountant(prices=prices, ledger=ledger)
        ),
    )
    wall_ms = (time.perf_counter() - started) * 1000
    if result.finish_reason != "stop" or result.steps != 2:
        raise RuntimeError(f"unexpected turn: {result.finish_reason} after {result.steps} steps")
    tool_ms = sum(o.elapsed_ms for o in result.tool_results)
    playback_ms = runtime.playback_s * 1000
    return (wall_ms - tool_ms - playback_ms) / result.steps, wall_ms, tool_ms, playback_ms


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18]


def _raw_ms(engine: sa.Engine) -> float:
    """The raw work of a step with a query: the query and its DataFrame, nothing else."""
    started = time.perf_counter()
    frame = pd.read_sql(sa.text(SQL), engine)
    elapsed = (time.perf_counter() - started) * 1000
    if len(frame) != 1:
        raise RuntimeError("the raw query returned no row")
    return elapsed


async def _overhead(url: str, scratch: Path) -> dict[str, Any]:
    connector = SQLConnector("shop", url)
    tools = connector.tools()
    prices = PriceTable.load()
    ledger = UsageLedger(scratch / "usage.sqlite")
    engine = sa.create_engine(url)
    plain, ledgered = _scripted(WARMUP_TURNS + TURNS), _scripted(WARMUP_TURNS + TURNS)
    rows: dict[str, list[tuple[float, ...]]] = {"plain": [], "ledger": []}
    query_ms: list[float] = []
    raw_ms: list[float] = []
    try:
        for turn in range(WARMUP_TURNS + TURNS):
            # interleaved, so drift (CPU frequency, caches) hits all four alike
            first = await _timed_turn(plain, tools, prices, None)
            second = await _timed_turn(ledgered, tools, prices, ledger)
            started = time.perf_counter()
            await connector.aquery(SQL)
            elapsed = (time.perf_counter() - started) * 1000
            raw = _raw_ms(engine)
            if turn >= WARMUP_TURNS:
                rows["plain"].append(first)
                rows["ledger"].append(second)
                query_ms.append(elapsed)
                raw_ms.append(raw)
    finally:
        ledger.close()
        connector.close()
        engine.dispose()
    results: dict[str, Any] = {"turns": TURNS, "steps_per_turn": 2}
    for name, measured in rows.items():
        overhead = [row[0] for row in measured]
        results[name] = {
            "overhead_per_step_median_ms": statistics.median(overhead),
            "overhead_per_step_p95_ms": _p95(overhead),
            "turn_wall_median_ms": statistics.median(row[1] for row in measured),
            "tool_elapsed_median_ms": statistics.median(row[2] for row in measured),
            "scripted_playback_per_step_median_ms": statistics.median(
                row[3] / 2 for row in measured
            ),
        }
    results["ledger_cost_per_step_ms"] = (
        results["ledger"]["overhead_per_step_median_ms"]
        - results["plain"]["overhead_per_step_median_ms"]
    )
    results["aquery_alone_median_ms"] = statistics.median(query_ms)
    # relay_nb vs the raw work, turn by turn: what the turn costs beyond the scripted
    # playback (which a real model's network call replaces) minus the same query + DataFrame
    # through pandas.read_sql, spread over the turn's two steps
    beyond = [(row[1] - row[3] - raw) / 2 for row, raw in zip(rows["plain"], raw_ms, strict=True)]
    results["raw_read_sql_median_ms"] = statistics.median(raw_ms)
    results["turn_minus_playback_median_ms"] = statistics.median(
        row[1] - row[3] for row in rows["plain"]
    )
    results["vs_raw_per_step_median_ms"] = statistics.median(beyond)
    results["vs_raw_per_step_p95_ms"] = _p95(beyond)
    results["turn_to_raw_ratio"] = (
        results["turn_minus_playback_median_ms"] / results["raw_read_sql_median_ms"]
    )
    return results


# --------------------------------------------------------------------------------------------
# (2) memory over 1,000 turns


def _respond(request: InvocationRequest) -> dict[str, Any]:
    """Tool call, then answer; a request without tools is a compaction: return notes.

    Usage is given, so the scripted runtime does not serialise the whole prompt to estimate
    it (a cost of the test double, growing with the history, that no real model has).
    """
    usage = {"input_tokens": 1000, "output_tokens": 10}
    if not request.tools:
        return {"text": "- notes on the earlier questions", "usage": usage}
    if any(isinstance(part, ToolResultPart) for part in request.messages[-1].parts()):
        return {"text": "ok", "usage": usage}
    return {**QUERY_STEP, "usage": usage}


_SKIP = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def _retained(root: object, seen: set[int]) -> int:
    """Bytes reachable from ``root`` and not already in ``seen`` (which it extends)."""
    total, stack = 0, [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SKIP):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(gc.get_referents(obj))
    return total


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _checkpoint(session: Session, trace: bool) -> dict[str, float]:
    """Memory now; readings first, then the referent walk (which allocates its own set)."""
    gc.collect()
    point = {"rss_mb": _rss_mb()}
    if trace:
        point["traced_mb"] = tracemalloc.get_traced_memory()[0] / MB
    seen: set[int] = set()
    point["history_mb"] = _retained(session.history, seen) / MB
    point["turns_only_mb"] = _retained(session.turns, seen) / MB
    return point


def _per_turn_kb(session: Session) -> dict[str, float]:
    """What one kept TurnResult retains beyond the history, by field (mean over turns)."""
    seen: set[int] = set()
    _retained(session.history, seen)
    parts = {"events": 0, "tool_results": 0, "messages_list": 0, "rest": 0}
    for turn in session.turns:
        parts["events"] += _retained(turn.events, seen)
        parts["tool_results"] += _retained(turn.tool_results, seen)
        parts["messages_list"] += _retained(turn.messages, seen)
        parts["rest"] += _retained(turn, seen)
    count = max(1, len(session.turns))
    return {name: size / count / 1024 for name, size in parts.items()}


async def _session_turns(window: int, trace: bool, url: str) -> dict[str, Any]:
    connector = SQLConnector("shop", url)
    runtime = ScriptedRuntime()
    session = Session(
        runtime,
        connectors=[connector],
        settings={"context_window": window},
        accountant=Accountant(prices=PriceTable.load()),
    )
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    baseline: dict[str, float] = {}
    turn_ms: list[float] = []
    for turn in range(1, MEMORY_TURNS + 1):
        while runtime.remaining < 4:
            runtime.add(_respond)
        began = time.perf_counter()
        await session.ask_async(f"question {turn}: how many products?")
        turn_ms.append((time.perf_counter() - began) * 1000)
        runtime.requests.clear()
        if turn == BASELINE_TURN:
            baseline = _checkpoint(session, trace)
    seconds = time.perf_counter() - started
    end = _checkpoint(session, trace)
    slowest = max(range(len(turn_ms)), key=turn_ms.__getitem__)
    result: dict[str, Any] = {
        "context_window": window,
        "traced": trace,
        "seconds": seconds,
        "turn_ms_median_by_hundred": [
            statistics.median(turn_ms[i : i + 100]) for i in range(0, len(turn_ms), 100)
        ],
        "slowest_turn_ms": turn_ms[slowest],
        "slowest_turn": slowest + 1,
        "compactions": session.history.compactions,
        "history_messages": len(session.history.messages),
        "turns_kept": len(session.turns),
        "baseline": baseline,
        "end": end,
        "growth": {key: end[key] - baseline[key] for key in end},
        "per_turn_retained_kb": _per_turn_kb(session),
    }
    if trace:
        # exact under tracemalloc (RSS would not shrink back, and the walks above grew it)
        session.turns.clear()
        gc.collect()
        result["traced_growth_after_turns_clear_mb"] = (
            tracemalloc.get_traced_memory()[0] / MB - baseline["traced_mb"]
        )
        tracemalloc.stop()
    await session.aclose()
    return result


def _memory_variant(window: int, trace: bool) -> dict[str, Any]:
    """One variant in this (fresh) process; returns plain JSON data."""
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{Path(scratch) / 'shop.sqlite'}"
        seed_database(url)
        return json.loads(json.dumps(asyncio.run(_session_turns(window, trace, url))))


def _memory() -> dict[str, Any]:
    trace_all = os.environ.get("RELAY_BENCH_AGENT_TRACE_ALL", "") not in ("", "0")
    trace_small = os.environ.get("RELAY_BENCH_AGENT_TRACE", "") not in ("", "0")
    # the slowest first, so the two workers finish close together
    variants = [(window, False) for window in WINDOWS]
    if trace_small:
        variants.insert(0, (SMALL_WINDOW, True))
    if trace_all:
        variants = [(window, True) for window in WINDOWS]
    spawn = multiprocessing.get_context("spawn")
    workers = min(2, os.cpu_count() or 1)
    with ProcessPoolExecutor(workers, mp_context=spawn, max_tasks_per_child=1) as pool:
        futures = [pool.submit(_memory_variant, window, trace) for window, trace in variants]
        done = [future.result() for future in futures]
    return {f"window_{r['context_window']}_{'traced' if r['traced'] else 'rss'}": r for r in done}


# --------------------------------------------------------------------------------------------


def _print_overhead(results: dict[str, Any]) -> None:
    for name in ("plain", "ledger"):
        row = results[name]
        label = "overhead/step, no ledger" if name == "plain" else "overhead/step, with ledger"
        print(
            f"{label:<34} median {row['overhead_per_step_median_ms']:>7.3f} ms   "
            f"p95 {row['overhead_per_step_p95_ms']:>7.3f} ms   target <= 2 ms (median)"
        )
        print(
            f"{'':<34} turn wall {row['turn_wall_median_ms']:.3f} ms, tool "
            f"{row['tool_elapsed_median_ms']:.3f} ms, scripted playback/step "
            f"{row['scripted_playback_per_step_median_ms']:.3f} ms (medians)"
        )
    print(f"{'ledger append cost/step':<34} {results['ledger_cost_per_step_ms']:>14.3f} ms")
    print(f"{'connector.aquery alone':<34} median {results['aquery_alone_median_ms']:>7.3f} ms")
    print(
        f"{'vs raw work, per step':<34} median {results['vs_raw_per_step_median_ms']:>7.3f} ms   "
        f"p95 {results['vs_raw_per_step_p95_ms']:>7.3f} ms   target <= 2 ms (median)"
    )
    print(
        f"{'':<34} turn minus playback {results['turn_minus_playback_median_ms']:.3f} ms vs "
        f"pandas.read_sql of the same query {results['raw_read_sql_median_ms']:.3f} ms: "
        f"ratio {results['turn_to_raw_ratio']:.2f} (2 steps, 1 query)"
    )


def _print_memory(results: dict[str, Any]) -> None:
    for name, row in results.items():
        growth, per_turn = row["growth"], row["per_turn_retained_kb"]
        traced = (
            f"traced {growth['traced_mb']:+.1f} MB, RSS (incl. tracemalloc's own) "
            if "traced_mb" in growth
            else "RSS "
        )
        print(
            f"{name:<20} turns 100->1000: {traced}{growth['rss_mb']:+.1f} MB; retained by "
            f"history {growth['history_mb']:+.1f} MB, by turns alone "
            f"{growth['turns_only_mb']:+.1f} MB   target < 20 MB"
        )
        if "traced_growth_after_turns_clear_mb" in row:
            print(
                f"{'':<20} traced growth once session.turns is cleared: "
                f"{row['traced_growth_after_turns_clear_mb']:+.1f} MB"
            )
        print(
            f"{'':<20} compactions {row['compactions']}, history messages "
            f"{row['history_messages']}, turns kept {row['turns_kept']}; one kept turn "
            f"retains {sum(per_turn.values()):.1f} KB ("
            + ", ".join(f"{k} {v:.1f}" for k, v in per_turn.items())
            + ")"
        )
        print(
            f"{'':<20} ms/turn, median per hundred: "
            + " ".join(f"{v:.0f}" for v in row["turn_ms_median_by_hundred"])
            + f"; slowest turn {row['slowest_turn_ms']:.0f} ms (turn {row['slowest_turn']}); "
            f"{row['seconds']:.1f} s in all"
        )


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{Path(scratch) / 'shop.sqlite'}"
        seed_database(url)
        overhead = asyncio.run(_overhead(url, Path(scratch)))
    _print_overhead(overhead)
    memory = _memory()
    _print_memory(memory)
    return {"overhead": overhead, "memory": memory}


if __name__ == "__main__":
    run()
