"""Many connectors (issue 35, goal 5): the first request and a warm turn with 1, 10, 300 and
1,000 SQL connectors registered in one session.

Each connector is the sample shop (six relations) under its own id, on its own engine. Side
by side in one run, per count:

- the first request's size (chars/4 of its system prompt, messages and tool declarations),
  against the window's budget (200,000 tokens: 18,000 for the system prompt and tools,
  72,000 for the context); and what the connectors' own tools would declare, ungrouped;
- a warm turn (scripted model, one answer): its median over 5 turns after a first one, and
  its ratio to the one-connector turn (target: not linear in the count).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from relay_nb.agent.session import Session
from relay_nb.agent.tool_groups import declared_tokens
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.context import allocate_budget
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import estimate_request_tokens
from relay_nb.testing.seed import seed_database

COUNTS = (1, 10, 300, 1_000)
WARM_TURNS = 5
QUESTION = "which customers ordered the most last month in db0007?"


async def _measure(url: str, count: int) -> dict[str, Any]:
    connectors = [SQLConnector(f"db{i:04d}", url) for i in range(count)]
    runtime = ScriptedRuntime()
    for _ in range(WARM_TURNS + 1):
        runtime.add({"text": "ok"})
    session = Session(runtime, connectors=connectors)
    try:
        request = await session.first_request(QUESTION)
        own = declared_tokens([t for c in connectors for t in session.connectors.tools(c.id)])
        tools = [tool.name for tool in request.tools]
        ms = []
        for n in range(WARM_TURNS + 1):
            started = time.perf_counter()
            turn = await session.ask_async(f"{QUESTION} ({n})")
            ms.append((time.perf_counter() - started) * 1000)
            if turn.finish_reason != "stop":
                raise RuntimeError(f"a scripted turn did not finish: {turn.finish_reason}")
            session.reset()
    finally:
        await session.aclose()
    return {
        "connectors": count,
        "request_tokens": estimate_request_tokens(request),
        "tool_tokens": -(-len(request.model_dump_json(include={"tools"})) // 4),
        "tools_declared": len(tools),
        "own_tool_tokens": own,
        "first_turn_ms": ms[0],
        "warm_turn_ms": statistics.median(ms[1:]),
    }


def run() -> dict[str, Any]:
    budget = allocate_budget(200_000)
    with tempfile.TemporaryDirectory(prefix="relay_many_connectors_") as scratch:
        url = f"sqlite:///{Path(scratch) / 'shop.db'}"
        seed_database(url)
        rows = [asyncio.run(_measure(url, count)) for count in COUNTS]
    base = rows[0]["warm_turn_ms"]
    print(
        f"budget of a 200k window: system+tools {budget.system}, context {budget.context}, "
        f"whole request {budget.context_window - budget.response_headroom}"
    )
    print(
        f"{'connectors':>10} {'request':>9} {'tools':>7} {'declared':>8} {'own tools':>9} "
        f"{'warm ms':>8} {'x 1':>6}"
    )
    for row in rows:
        row["warm_ratio"] = row["warm_turn_ms"] / base
        print(
            f"{row['connectors']:>10} {row['request_tokens']:>9} {row['tool_tokens']:>7} "
            f"{row['tools_declared']:>8} {row['own_tool_tokens']:>9} "
            f"{row['warm_turn_ms']:>8.1f} {row['warm_ratio']:>6.1f}"
        )
    return {"rows": rows, "system_budget": budget.system, "context_budget": budget.context}


if __name__ == "__main__":
    run()
