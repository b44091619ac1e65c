"""200 concurrent questions through ``Session.ask_many`` (scripted model, PostgreSQL pool).

Each question is a real two-step turn: the scripted model calls ``query_pg`` with its own SQL
(a join and an aggregate on the seeded ``shop``, a different customer slice per question),
reads the result, and answers. ``ask_many`` runs ``concurrency`` turns at a time. Everything
else is relay_nb's defaults, as in a notebook: the ``SQLConnector``'s engine has SQLAlchemy's
``QueuePool`` (pool_size 5, max_overflow 10), queries run on asyncio's default executor
(``min(32, cores + 4)`` threads: 6 on 2 cores), and a usage ledger (a temporary file) records
every model call. The scripted model reports usage, so no prompt is serialised to estimate it
(a cost of the test double, not of a turn).

Side by side in the same run, at the same concurrency: the same session without a ledger
(``ledger=False``: what the ledger's durable append costs under concurrency), and the raw
work, i.e. the same 200 SQL strings through ``pandas.read_sql`` on a plain SQLAlchemy engine
(same pool defaults), on the same executor, bounded by a semaphore of the same size.

Reported per concurrency (4, 16, 50): wall time, throughput (questions/s), the process's CPU
time per question (all threads: relay_nb and the raw work each hold one GIL), p50/p95 latency
(relay_nb: from the turn's start, after ``ask_many``'s semaphore, to its result; raw: from
the semaphore to the DataFrame), errors, and the connector's pool afterwards: connections
checked out (must be 0), pool size, overflow, idle connections. Ratios: relay_nb / raw for
throughput and p50. Needs ``RELAY_TEST_PG_URL`` (``scripts/services start``); skipped
without it.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.ledger import UsageLedger
from relay_nb.agent.loop import TurnResult
from relay_nb.agent.session import Session
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import InvocationRequest, ToolResultPart
from relay_nb.testing.seed import ALLOWED_TABLES

QUESTIONS = 200
LEVELS = (4, 16, 50)
SLICES = 50
_USAGE = {"input_tokens": 1200, "output_tokens": 40}
_SQL = (
    "SELECT c.country, count(*) AS orders, sum(o.total) AS revenue "
    "FROM orders o JOIN customers c ON c.id = o.customer_id "
    "WHERE o.customer_id % {slices} = {slice} GROUP BY c.country ORDER BY revenue DESC"
)


def _questions() -> dict[str, str]:
    """Question text -> the SQL the scripted model writes for it."""
    return {
        f"q{i:03d}: revenue by country, customer slice {i % SLICES}": _SQL.format(
            slices=SLICES, slice=i % SLICES
        )
        for i in range(QUESTIONS)
    }


class _TimedSession(Session):
    """Records each turn's own latency (``ask_many``'s queueing excluded)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.latencies_ms: list[float] = []

    async def _turn(self, question: str, *args: Any, **options: Any) -> TurnResult:
        started = time.perf_counter()
        try:
            return await super()._turn(question, *args, **options)
        finally:
            self.latencies_ms.append((time.perf_counter() - started) * 1000)


def _scripted(questions: dict[str, str]) -> Any:
    def respond(request: InvocationRequest) -> dict[str, Any]:
        last = request.messages[-1]
        if any(isinstance(part, ToolResultPart) for part in last.parts()):
            return {"text": "Revenue by country is in the table.", "usage": _USAGE}
        sql = questions[str(last.content)]
        return {"tool_calls": [{"name": "query_pg", "input": {"sql": sql}}], "usage": _USAGE}

    return respond


def _pool_state(engine: sa.Engine) -> dict[str, int]:
    pool = engine.pool
    return {
        "checked_out": pool.checkedout(),
        "size": pool.size(),
        "overflow": pool.overflow(),
        "idle": pool.checkedin(),
    }


def _summary(wall_s: float, latencies: list[float], errors: int, cpu_s: float) -> dict[str, float]:
    return {
        "cpu_ms_per_question": cpu_s * 1000 / len(latencies),
        "wall_s": wall_s,
        "throughput_qps": len(latencies) / wall_s,
        "p50_ms": statistics.median(latencies),
        "p95_ms": statistics.quantiles(latencies, n=20)[18],
        "errors": errors,
    }


async def _relay(session: _TimedSession, questions: dict[str, str], concurrency: int) -> dict:
    runtime = session.runtime_for(session.settings)
    respond = _scripted(questions)
    for _ in range(2 * len(questions)):  # two steps per turn, whatever order they run in
        runtime.add(respond)
    session.latencies_ms.clear()
    started, cpu = time.perf_counter(), time.process_time()
    turns = await session.ask_many(list(questions), concurrency=concurrency)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    runtime.requests.clear()
    errors = sum(
        1
        for turn in turns
        if turn.finish_reason != "stop"
        or turn.df is None
        or any(outcome.is_error for outcome in turn.tool_results)
    )
    return _summary(wall, list(session.latencies_ms), errors, cpu)


async def _raw(engine: sa.Engine, questions: dict[str, str], concurrency: int) -> dict:
    loop = asyncio.get_running_loop()
    limit = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(sql: str) -> pd.DataFrame:
        async with limit:
            started = time.perf_counter()
            frame = await loop.run_in_executor(None, pd.read_sql, sa.text(sql), engine)
            latencies.append((time.perf_counter() - started) * 1000)
            return frame

    started, cpu = time.perf_counter(), time.process_time()
    frames = await asyncio.gather(*(one(sql) for sql in questions.values()))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return _summary(wall, latencies, sum(1 for f in frames if f.empty), cpu)


async def _measure(url: str, ledger: Path) -> dict[str, Any]:
    questions = _questions()
    warm = dict(list(questions.items())[:8])
    sessions = {
        side: _TimedSession(
            ScriptedRuntime(),
            connectors=[SQLConnector("pg", url, tables=list(ALLOWED_TABLES))],
            accountant=Accountant(ledger=setting),
        )
        for side, setting in (("relay", UsageLedger(ledger)), ("relay_no_ledger", None))
    }
    engine = sa.create_engine(url)
    results: dict[str, Any] = {
        "questions": QUESTIONS,
        "executor_threads": min(32, (os.cpu_count() or 1) + 4),
    }
    try:
        # warm every side: connections, the catalog, the guard's parser
        for session in sessions.values():
            await _relay(session, warm, 4)
        await _raw(engine, warm, 4)
        for level in LEVELS:
            row: dict[str, Any] = {"concurrency": level}
            for side, session in sessions.items():
                row[side] = await _relay(session, questions, level)
                row[side]["pool_after"] = _pool_state(session.connectors["pg"].engine)
            row["raw"] = await _raw(engine, questions, level)
            row["raw"]["pool_after"] = _pool_state(engine)
            row["throughput_ratio"] = row["relay"]["throughput_qps"] / row["raw"]["throughput_qps"]
            row["p50_ratio"] = row["relay"]["p50_ms"] / row["raw"]["p50_ms"]
            results[f"c{level}"] = row
    finally:
        for session in sessions.values():
            await session.aclose()
        engine.dispose()
    return results


_SIDES = (("relay", "relay_nb"), ("relay_no_ledger", "  no ledger"), ("raw", "raw"))


def _print(results: dict[str, Any]) -> None:
    print(
        f"-- {results['questions']} questions, PostgreSQL, default QueuePool (5 + 10 overflow), "
        f"{results['executor_threads']} executor threads (medians of one run each)"
    )
    print(
        f"{'concurrency':>11} {'side':<12} {'q/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'errors':>6}  "
        f"pool after (out/size/overflow/idle)"
    )
    for level in LEVELS:
        row = results[f"c{level}"]
        for side, label in _SIDES:
            r = row[side]
            pool = r["pool_after"]
            print(
                f"{level:>11} {label:<12} {r['throughput_qps']:>7.1f} {r['p50_ms']:>8.1f} "
                f"{r['p95_ms']:>8.1f} {r['errors']:>6}  {pool['checked_out']}/{pool['size']}/"
                f"{pool['overflow']}/{pool['idle']}"
            )
        print(
            f"{'':>11} {'ratio':<12} throughput {row['throughput_ratio']:.2f}, "
            f"p50 {row['p50_ratio']:.2f} (relay_nb with its ledger / raw)"
        )


def run() -> dict[str, Any] | None:
    url = os.environ.get("RELAY_TEST_PG_URL")
    if not url:
        print("-- skipped: RELAY_TEST_PG_URL is not set (scripts/services start)")
        return None
    with tempfile.TemporaryDirectory(prefix="relay_concurrency_") as scratch:
        results = asyncio.run(_measure(url, Path(scratch) / "usage.sqlite"))
    _print(results)
    return results


if __name__ == "__main__":
    run()
