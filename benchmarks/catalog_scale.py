"""Catalogs at scale (issue 22, goal 5): reading, holding and renewing a 10,000-table schema.

The SQLite catalog of ``prompt_scale`` (10,000 tables x 20 columns: 200,000 columns), plus a
2,000 x 20 schema on the PostgreSQL server when ``RELAY_TEST_PG_ADMIN_URL`` is set. Side by
side in one run:

- cold read: a fresh ``SQLConnector``'s ``catalog`` with value profiling off (``profile``
  has its own time budget, reported apart) vs the raw catalog statements (the two SQLite
  reads introspection issues, ``fetchall`` on the driver's cursor, nothing built); medians
  of interleaved samples; target ≤ 1.5x;
- peak memory: in a fresh process each, the growth of the resident set's high-water mark
  (``VmHWM``) while the raw statements' rows are fetched and kept, vs while the connector
  reads and keeps its catalog; target ≤ 1.5x. The retained size (``tracemalloc``) is reported
  too;
- ``refresh()`` of the unchanged catalog vs the cold read: target ≥ 10x faster;
- a turn at TTL expiry: a one-question turn right after the schema outlived ``schema_ttl_s``
  vs a warm turn, on the 10k catalog (before this change the expired schema was dropped and
  the turn's prompt read and rendered it again).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from benchmarks.prompt_scale import _wide
from relay_nb.agent.session import Session
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.runtime.scripted import ScriptedRuntime

SAMPLES = 5
PG_TABLES = 2_000
_RAW_SQL = (
    'SELECT m.type, m.name, p.cid, p.name, p.type, p."notnull", p.pk '
    "FROM main.sqlite_master m JOIN pragma_table_info(m.name, 'main') p "
    "WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
    "SELECT m.name, f.* FROM main.sqlite_master m "
    "JOIN pragma_foreign_key_list(m.name, 'main') f WHERE m.type = 'table'",
)
_MEMORY_PROBE = """
import gc, json, sqlite3, sys, tracemalloc
mode, path, statements = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
import sqlalchemy, pandas  # what a kernel has loaded anyway
from relay_nb.connectors.sql.connector import SQLConnector
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
gc.collect()
before = status("VmRSS")
trace = len(sys.argv) > 4
if trace:
    tracemalloc.start()
if mode == "raw":
    conn = sqlite3.connect(path)
    kept = [conn.execute(sql).fetchall() for sql in statements]
else:
    kept = SQLConnector("wide", f"sqlite:///{path}", profile=False).catalog
gc.collect()
held = tracemalloc.get_traced_memory()[0] if trace else 0
print(json.dumps({"peak": status("VmHWM") - before, "held": held}))
"""


def _raw_ms(path: Path) -> float:
    import sqlite3

    started = time.perf_counter()
    conn = sqlite3.connect(path)
    try:
        for sql in _RAW_SQL:
            conn.execute(sql).fetchall()
    finally:
        conn.close()
    return (time.perf_counter() - started) * 1000


def _cold_ms(url: str) -> tuple[float, SQLConnector]:
    connector = SQLConnector("wide", url, profile=False)
    started = time.perf_counter()
    connector.catalog  # noqa: B018 - the read measured
    return (time.perf_counter() - started) * 1000, connector


def _refresh_ms(connector: SQLConnector) -> float:
    started = time.perf_counter()
    connector.refresh()
    return (time.perf_counter() - started) * 1000


def _memory(path: Path, mode: str, trace: bool) -> dict[str, int]:
    args = [sys.executable, "-c", _MEMORY_PROBE, mode, str(path), json.dumps(_RAW_SQL)]
    done = subprocess.run([*args, *(["trace"] if trace else [])], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def _sqlite(path: Path) -> dict[str, Any]:
    url = f"sqlite:///{path}"
    raw, cold, refresh = [], [], []
    for _ in range(SAMPLES):  # interleaved, so drift hits all alike
        raw.append(_raw_ms(path))
        ms, connector = _cold_ms(url)
        cold.append(ms)
        refresh.append(statistics.median(_refresh_ms(connector) for _ in range(20)))
        connector.close()
    profiled = SQLConnector("wide", url)
    started = time.perf_counter()
    profiled.catalog  # noqa: B018 - with value profiling, within its own time budget
    profiled_ms = (time.perf_counter() - started) * 1000
    profiled.close()
    peaks = {
        mode: [_memory(path, mode, trace=False)["peak"] for _ in range(3)]
        for mode in ("raw", "catalog")
    }
    held = {mode: _memory(path, mode, trace=True)["held"] for mode in ("raw", "catalog")}
    return {
        "raw_ms": statistics.median(raw),
        "cold_ms": statistics.median(cold),
        "cold_over_raw": statistics.median(cold) / statistics.median(raw),
        "profiled_cold_ms": profiled_ms,
        "refresh_unchanged_ms": statistics.median(refresh),
        "cold_over_refresh": statistics.median(cold) / statistics.median(refresh),
        "raw_peak_mb": statistics.median(peaks["raw"]) / 2**20,
        "catalog_peak_mb": statistics.median(peaks["catalog"]) / 2**20,
        "peak_ratio": statistics.median(peaks["catalog"]) / statistics.median(peaks["raw"]),
        "raw_held_mb": held["raw"] / 2**20,
        "catalog_held_mb": held["catalog"] / 2**20,
    }


async def _expiry_turns(url: str) -> dict[str, float]:
    """A warm turn, then a turn right after the schema's TTL ran out, each timed."""
    runtime = ScriptedRuntime()
    for _ in range(8):
        runtime.add({"text": "ok"})
    connector = SQLConnector("db", url)
    session = Session(runtime, connectors=[connector], schema_ttl_s=3600)
    questions = iter(f"total c03 of t0{n} by c07 for last month" for n in range(4242, 4300))
    warm, expired = [], []
    try:
        await session.ask_many([next(questions)], concurrency=1)  # cold: read, render once
        for _ in range(3):  # a new question each turn: no render is reused
            started = time.perf_counter()
            await session.ask_many([next(questions)], concurrency=1)
            warm.append((time.perf_counter() - started) * 1000)
            session.connectors._loaded_at["db"] -= 3601  # the TTL runs out
            started = time.perf_counter()
            await session.ask_many([next(questions)], concurrency=1)
            expired.append((time.perf_counter() - started) * 1000)
    finally:
        await session.aclose()
    return {"warm_turn_ms": statistics.median(warm), "expired_turn_ms": statistics.median(expired)}


def _postgres() -> dict[str, Any] | None:
    admin_url = os.environ.get("RELAY_TEST_PG_ADMIN_URL")
    if not admin_url:
        return None
    admin = sa.create_engine(admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    name = f"relay_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = sa.make_url(admin_url).set(database=name).render_as_string(False)
    try:
        engine = sa.create_engine(url, poolclass=NullPool)
        columns = ["id INTEGER PRIMARY KEY", "parent_id INTEGER"]
        columns += [f"c{j:02d} VARCHAR(80)" for j in range(18)]
        for batch in range(0, PG_TABLES, 200):  # a lock per table: commit in batches
            with engine.begin() as conn:
                for i in range(batch, min(batch + 200, PG_TABLES)):
                    conn.exec_driver_sql(f"CREATE TABLE t{i:05d} ({', '.join(columns)})")
        engine.dispose()
        cold, refresh = [], []
        for _ in range(SAMPLES):
            ms, connector = _cold_ms(url)
            cold.append(ms)
            refresh.append(statistics.median(_refresh_ms(connector) for _ in range(10)))
            connector.close()
        return {
            "tables": PG_TABLES,
            "cold_ms": statistics.median(cold),
            "refresh_unchanged_ms": statistics.median(refresh),
            "cold_over_refresh": statistics.median(cold) / statistics.median(refresh),
        }
    finally:
        from relay_nb.testing.seed import drop_scratch_database

        with admin.connect() as conn:
            drop_scratch_database(conn, name)
        admin.dispose()


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="relay_catalog_scale_") as scratch:
        path = Path(scratch) / "wide.sqlite"
        _wide(path)
        sqlite = _sqlite(path)
        sqlite |= asyncio.run(_expiry_turns(f"sqlite:///{path}"))
    postgres = _postgres()
    s = sqlite
    lines = (
        ("raw catalog statements (fetchall)", f"{s['raw_ms']:.0f} ms"),
        ("cold read, profiling off", f"{s['cold_ms']:.0f} ms: {s['cold_over_raw']:.2f}x raw"),
        ("  target", "<= 1.5x"),
        ("cold read, profiling on (own 5 s budget)", f"{s['profiled_cold_ms']:.0f} ms"),
        ("refresh() of the unchanged catalog", f"{s['refresh_unchanged_ms']:.2f} ms"),
        ("  cold read / refresh", f"{s['cold_over_refresh']:,.0f}x (target >= 10x)"),
        (
            "peak RSS growth: raw rows / catalog",
            f"{s['raw_peak_mb']:.0f} / {s['catalog_peak_mb']:.0f} MB",
        ),
        ("  ratio", f"{s['peak_ratio']:.2f}x (target <= 1.5x)"),
        (
            "held (tracemalloc): raw rows / catalog",
            f"{s['raw_held_mb']:.0f} / {s['catalog_held_mb']:.0f} MB",
        ),
        (
            "turn: warm / right after the TTL",
            f"{s['warm_turn_ms']:.1f} / {s['expired_turn_ms']:.1f} ms",
        ),
    )
    print("10,000 x 20 SQLite catalog")
    for label, value in lines:
        print(f"  {label:<42} {value}")
    if postgres:
        print(
            f"PostgreSQL {PG_TABLES:,} x 20: cold {postgres['cold_ms']:.0f} ms, refresh unchanged "
            f"{postgres['refresh_unchanged_ms']:.2f} ms ({postgres['cold_over_refresh']:,.0f}x)"
        )
    return {"sqlite": sqlite, "postgres": postgres}


if __name__ == "__main__":
    run()
