"""Schema linking: do a question's tables reach the prompt? And what does profiling cost?

Model-free. On the many-domain warehouse of :mod:`benchmarks.warehouse` (110 tables; and the
same plus 790 generated tables, 900 in all), each question's prompt schema is rendered the
way a turn renders it (``SQLConnector.prompt_context(max_tokens=B, question=Q)``) at budgets
of 1,000 and 4,000 tokens and the default (72,000: a 200k window's context share), and we
count the gold tables (from the gold SQL) that are in it:

- **before**: the catalog without value profiles, ranked lexically by names and comments
  (``LexicalRanker`` with values, synonyms, typos and rarity off: relay_nb's ranking before
  this change);
- **now**: the profiled catalog and the default ranker.

Recall is reported overall and per kind of question (name, value, synonym, typo, region),
with how many questions lose a gold table (the model would have to call ``describe`` for it).

Profiling cost: a cold catalog pass (a new connector, its first ``catalog``) of a
1,000-table warehouse with 30 rows per table, with profiling and without, on SQLite and on
PostgreSQL (``RELAY_TEST_PG_ADMIN_URL``, a throwaway database), medians of interleaved runs.
Goal: at most 2x.
"""

from __future__ import annotations

import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks import warehouse
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.sql.prompt.ranking import LexicalRanker

BUDGETS = (1000, 4000, 72000)
BEFORE = LexicalRanker(values=False, synonyms=False, typos=False, rarity=False)
KINDS = ("name", "value", "synonym", "typo", "region")
_REPEAT = 5


def _recall(url: str, variant: str) -> dict:
    connector = SQLConnector(
        "wh", url, profile=variant == "now", ranker=BEFORE if variant == "before" else None
    )
    try:
        _ = connector.catalog
        result: dict[str, dict] = {}
        for budget in BUDGETS:
            found = total = missed = 0
            columns_found = columns_total = 0
            per_kind: dict[str, list[int]] = {k: [0, 0] for k in KINDS}
            for kind, question, sql in warehouse.QUESTIONS:
                text = connector.prompt_context(max_tokens=budget, question=question)
                shown = {t for t in warehouse.gold_tables(sql) if _shown(text, t)}
                gold = warehouse.gold_tables(sql)
                found += len(shown)
                total += len(gold)
                missed += len(shown) < len(gold)
                per_kind[kind][0] += len(shown)
                per_kind[kind][1] += len(gold)
                columns = warehouse.gold_columns(sql)
                catalog = connector.catalog
                have = {
                    c.name for t in shown if (info := catalog.find(t)) for c in info.columns
                } | ({"id"} if shown else set())
                columns_found += len(columns & have)
                columns_total += len(columns)
            result[str(budget)] = {
                "table_recall": round(found / total, 4),
                "column_recall": round(columns_found / columns_total, 4),
                "questions_missing_a_table": missed,
                "per_kind": {k: round(f / t, 4) for k, (f, t) in per_kind.items() if t},
            }
        return result
    finally:
        connector.close()


def _shown(text: str, table: str) -> bool:
    """Whether ``table`` has its own line in the rendered schema (not only a name listed)."""
    return any(line.startswith((f"{table}(", f"view {table}(")) for line in text.splitlines())


def _linking(decoys: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="relay_link_") as tmp:
        path = Path(tmp) / "wh.db"
        schema = warehouse.build(path, decoys=decoys)
        url = f"sqlite:///{path}"
        out = {"tables": len(schema), "questions": len(warehouse.QUESTIONS)}
        for variant in ("before", "now"):
            out[variant] = _recall(url, variant)
        _print_linking(out)
        return out


def _print_linking(r: dict) -> None:
    print(f"-- {r['tables']} tables, {r['questions']} questions: gold-table recall in the prompt")
    print(
        f"{'budget':>7} {'before':>8} {'now':>8}  {'missing before':>14} {'now':>4}  per kind (now)"
    )
    for budget in BUDGETS:
        b, n = r["before"][str(budget)], r["now"][str(budget)]
        kinds = " ".join(f"{k} {v:.2f}" for k, v in n["per_kind"].items())
        print(
            f"{budget:>7} {b['table_recall']:>8.3f} {n['table_recall']:>8.3f}  "
            f"{b['questions_missing_a_table']:>14} {n['questions_missing_a_table']:>4}  {kinds}"
        )


def _cold(url: str, *, profile: bool, schema: str | None = None) -> float:
    started = time.perf_counter()
    connector = SQLConnector(
        "wh", url, profile=profile, profile_time_s=60, schemas=[schema] if schema else None
    )
    try:
        tables = len(connector.catalog.tables)
    finally:
        connector.close()
    if tables < 1000:
        raise RuntimeError(f"the warehouse has {tables} tables, not 1,000")
    return (time.perf_counter() - started) * 1000


def _cost(url: str, label: str, schema: str | None = None) -> dict:
    _cold(url, profile=True, schema=schema)  # the file cache and imports are warm for both
    samples: dict[str, list[float]] = {"plain_ms": [], "profiled_ms": []}
    for _ in range(_REPEAT):
        samples["plain_ms"].append(_cold(url, profile=False, schema=schema))
        samples["profiled_ms"].append(_cold(url, profile=True, schema=schema))
    result = {key: round(statistics.median(values), 1) for key, values in samples.items()}
    result["ratio"] = round(result["profiled_ms"] / result["plain_ms"], 2)
    print(
        f"-- cold catalog pass, 1,000 tables x 30 rows ({label}): {result['plain_ms']:.0f} ms "
        f"plain, {result['profiled_ms']:.0f} ms with profiling = {result['ratio']:.2f}x "
        "(goal <= 2x)"
    )
    return result


def _postgres_cost(admin_url: str) -> dict:
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    from benchmarks.introspection import _pg_target

    schema = warehouse.tables(decoys=890)
    rng = random.Random(7)
    with _pg_target(admin_url) as (url, name):
        engine = sa.create_engine(url, poolclass=NullPool)
        try:
            with engine.begin() as conn:
                conn.exec_driver_sql(f"SET search_path TO {name}")
                statements = list(warehouse.ddl(schema, "postgres"))
                for statement in statements:  # tables, then rows, then keys and comments
                    if statement.startswith("CREATE"):
                        conn.exec_driver_sql(statement)
                raw = conn.connection.driver_connection
                with raw.cursor() as cursor:
                    for table, columns in schema.items():
                        rows = list(warehouse.data(columns, 30, rng))
                        cursor.executemany(warehouse.insert(table, columns, "%s"), rows)
                for statement in statements:
                    if not statement.startswith("CREATE"):
                        conn.exec_driver_sql(statement)
        finally:
            engine.dispose()
        return _cost(url.render_as_string(hide_password=False), "PostgreSQL", name)


def run() -> dict:
    results: dict[str, object] = {
        "warehouse_110": _linking(0),
        "warehouse_900": _linking(790),
    }
    with tempfile.TemporaryDirectory(prefix="relay_link_") as tmp:
        path = Path(tmp) / "wh1000.db"
        warehouse.build(path, decoys=890)
        results["cost_sqlite"] = _cost(f"sqlite:///{path}", "SQLite")
    admin = os.environ.get("RELAY_TEST_PG_ADMIN_URL")
    results["cost_postgres"] = _postgres_cost(admin) if admin else None
    if not admin:
        print("-- PostgreSQL: RELAY_TEST_PG_ADMIN_URL not set (scripts/services start)")
    return results


if __name__ == "__main__":
    run()
