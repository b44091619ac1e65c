"""Prompts at scale (issue 22, goals 3 and 4): a question on a 10,000-table catalog costs
about what it costs on six tables, and its schema section is what the question needs.

A SQLite catalog of 10,000 tables x 20 columns (a primary key, a parent key, 18 typed
columns) and the seeded 6-relation shop, each behind a ``SQLConnector`` in a ``Session`` with
a ``ScriptedRuntime`` that answers at once (the default 200,000-token window: a 72,000-token
context budget). Measured side by side in one run:

- first render: the schema's first ``prompt_context`` for a question once the catalog is
  read (the catalog read itself is goal 5's);
- warm turn: a whole one-question turn (``ask_many`` of one) after the first, median of ten
  questions worded anew (so no render is reused), 10k vs the shop: target ≤ 5x;
- the schema section (``# Connectors``) of each turn's system prompt: median tokens (target
  ≤ 4,000 on the 10k catalog) and whether the table the question names is in it;
- two 10,000-table connectors in one session: both schemas in the prompt, each naming its
  table.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.agent.session import Session
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import InvocationRequest, estimate_tokens
from relay_nb.testing.seed import seed_database

TABLES = 10_000
_TYPES = ("INTEGER", "VARCHAR(80)", "NUMERIC(12,2)", "TIMESTAMP", "TEXT", "DATE", "BOOLEAN")
_SHOP_QUESTIONS = (
    "How many orders were paid last month?",
    "Top 5 customers by revenue",
    "Average order value by country",
    "Which products never sold?",
    "Revenue by product category",
    "How many customers signed up in 2025?",
    "Orders per status",
    "Most common event types",
    "Largest single order",
    "Refund rate by month",
)


def _wide(path: Path) -> str:
    url = f"sqlite:///{path}"
    engine = sa.create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        for i in range(TABLES):
            columns = ["id INTEGER PRIMARY KEY", "parent_id INTEGER"]
            columns += [f"c{j:02d} {_TYPES[j % len(_TYPES)]}" for j in range(18)]
            conn.exec_driver_sql(f"CREATE TABLE t{i:05d} ({', '.join(columns)})")
    engine.dispose()
    return url


def _wide_questions(seed: int) -> list[tuple[str, str]]:
    picks = random.Random(seed).sample(range(TABLES), 10)
    return [(f"total c03 of t{n:05d} by c07 for last month", f"t{n:05d}") for n in picks]


def _schema_section(request: InvocationRequest) -> str:
    system = "\n".join(
        part.text
        for message in request.messages
        if message.role == "system"
        for part in message.parts()
        if hasattr(part, "text")
    )
    start = system.find("# Connectors")
    if start < 0:
        return ""
    end = system.find("\n# Context", start)
    return system[start : end if end >= 0 else len(system)]


def _session(connectors: list[SQLConnector], answers: int) -> tuple[Session, ScriptedRuntime]:
    runtime = ScriptedRuntime()
    for _ in range(answers):
        runtime.add({"text": "ok"})
    return Session(runtime, connectors=connectors), runtime


async def _turns(connector: SQLConnector, questions: list[str]) -> dict[str, Any]:
    """One turn per question, each timed; the first is the cold one."""
    session, runtime = _session([connector], len(questions))
    ms: list[float] = []
    try:
        for question in questions:
            started = time.perf_counter()
            (turn,) = await session.ask_many([question], concurrency=1)
            ms.append((time.perf_counter() - started) * 1000)
            if turn.finish_reason != "stop":
                raise RuntimeError(f"a scripted turn did not finish: {turn.finish_reason}")
    finally:
        await session.aclose()
    sections = [_schema_section(request) for request in runtime.requests]
    return {"ms": ms, "sections": sections}


def _measure(url: str, questions: list[tuple[str, str]]) -> dict[str, Any]:
    connector = SQLConnector("db", url)
    started = time.perf_counter()
    connector.catalog  # noqa: B018 — the catalog read, outside what is measured below
    catalog_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    connector.prompt_context(max_tokens=4_000, question=questions[0][0])
    first_render_ms = (time.perf_counter() - started) * 1000
    try:
        # the second round reworded: the connector keeps the render of a question asked
        # again, and a warm turn here means a warm catalog, not a repeated question
        asked = [q for q, _ in questions] + [f"{q} (again)" for q, _ in questions]
        run = asyncio.run(_turns(connector, asked))
    finally:
        connector.close()
    warm = run["ms"][len(questions) :]  # the second round: every question warm
    sections = run["sections"][len(questions) :]
    kept = [gold in section for (_, gold), section in zip(questions, sections, strict=True)]
    return {
        "catalog_ms": catalog_ms,
        "first_render_ms": first_render_ms,
        "first_turn_ms": run["ms"][0],
        "warm_turn_ms": statistics.median(warm),
        "schema_tokens_median": statistics.median(estimate_tokens(s) for s in sections),
        "schema_tokens_max": max(estimate_tokens(s) for s in sections),
        "gold_kept": sum(kept) / len(kept),
    }


def _two_connectors(url: str) -> dict[str, Any]:
    lake, mart = SQLConnector("lake", url), SQLConnector("mart", url)
    session, runtime = _session([lake, mart], 1)
    question = "compare c03 of t00042 in lake with c03 of t09876 in mart"
    try:
        asyncio.run(session.ask_many([question], concurrency=1))
    finally:
        asyncio.run(session.aclose())
        lake.close()
        mart.close()
    section = _schema_section(runtime.requests[0])
    both = "SQL connector: lake" in section and "SQL connector: mart" in section
    return {
        "both_present": both,
        "tables_named": "t00042(" in section and "t09876(" in section,
        "schema_tokens": estimate_tokens(section),
    }


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="relay_prompt_scale_") as scratch:
        shop_url = f"sqlite:///{Path(scratch) / 'shop.db'}"
        seed_database(shop_url)
        wide_url = _wide(Path(scratch) / "wide.db")
        shop_questions = [(q, "") for q in _SHOP_QUESTIONS]
        shop = _measure(shop_url, shop_questions)
        wide = _measure(wide_url, _wide_questions(22))
        two = _two_connectors(wide_url)
    ratio = wide["warm_turn_ms"] / shop["warm_turn_ms"]
    print(
        f"warm turn: 10k tables {wide['warm_turn_ms']:.1f} ms vs shop {shop['warm_turn_ms']:.1f}"
        f" ms → {ratio:.1f}x (first turn {wide['first_turn_ms']:.0f} ms)"
    )
    print(
        f"first render of the 10k catalog: {wide['first_render_ms']:.0f} ms "
        f"(catalog read {wide['catalog_ms']:.0f} ms)"
    )
    print(
        f"schema section: 10k median {wide['schema_tokens_median']:.0f} tokens (max "
        f"{wide['schema_tokens_max']}), the named table kept in {wide['gold_kept']:.0%}; "
        f"shop {shop['schema_tokens_median']:.0f}"
    )
    print(
        f"two 10k connectors: both present {two['both_present']}, both tables named "
        f"{two['tables_named']}, {two['schema_tokens']} tokens"
    )
    return {"shop": shop, "wide": wide, "two_connectors": two, "warm_ratio": ratio}


if __name__ == "__main__":
    run()
