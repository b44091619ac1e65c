"""The SQL guard vs the keyword scanner peers ship, on the test corpora.

For each dialect: the median time to validate one benign query (each query timed several
times, its median taken; then the median over the corpus), side by side with a naive scanner
of the usual kind (strip comments, refuse DML keywords and ``;``, check FROM/JOIN names,
append LIMIT), and how many adversarial payloads each lets through and how many benign
queries each wrongly refuses. Target: guard median < 1 ms per query.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard.query import guard_query

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "connectors" / "corpus"
DIALECTS = ("sqlite", "duckdb", "postgres", "mysql")
ROW_LIMIT = 200
TABLES = ("customers", "products", "orders", "order_items", "events", "customer_revenue")
SCHEMAS: dict[str, str | None] = {
    "sqlite": None,
    "duckdb": "main",
    "postgres": "public",
    "mysql": "shop",
}

# --------------------------------------------------------------------------------------------
# The naive scanner: a faithful rendering of the "SQL safety layer" peers document.

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"--[^\n]*")
_FORBIDDEN = re.compile(
    r"\b(INSERT|UPDATE|DELETE|DROP|ALTER|TRUNCATE|GRANT|CREATE|MERGE|REPLACE|COPY|CALL|"
    r"EXECUTE|VACUUM)\b",
    re.I,
)
_LEADING = re.compile(r"^\s*(SELECT|WITH)\b", re.I)
_TABLE_REF = re.compile(r"\b(?:FROM|JOIN)\s+([A-Za-z_][\w.]*)", re.I)
_HAS_LIMIT = re.compile(r"\bLIMIT\s+\d+", re.I)


class NaiveRefusal(Exception):
    pass


def naive_scan(sql: str, allowed: frozenset[str]) -> str:
    """Strip comments, refuse DML keywords and stacked statements, allowlist FROM/JOIN names,
    append a LIMIT: what a keyword scanner does, and all it does."""
    text = _LINE_COMMENT.sub(" ", _BLOCK_COMMENT.sub(" ", sql)).strip().rstrip(";").strip()
    if ";" in text:
        raise NaiveRefusal("multiple statements")
    if not _LEADING.match(text):
        raise NaiveRefusal("only SELECT/WITH")
    if _FORBIDDEN.search(text):
        raise NaiveRefusal("forbidden keyword")
    for name in _TABLE_REF.findall(text):
        if name.lower().split(".")[-1] not in allowed and not name.startswith("("):
            raise NaiveRefusal(f"table {name}")
    return text if _HAS_LIMIT.search(text) else f"{text} LIMIT {ROW_LIMIT}"


# --------------------------------------------------------------------------------------------


def _load(name: str) -> list[dict[str, Any]]:
    return yaml.safe_load((CORPUS / name).read_text(encoding="utf-8"))


def _for(entries: list[dict[str, Any]], dialect: str) -> list[str]:
    return [e["sql"] for e in entries if e["dialects"] == "all" or dialect in e["dialects"]]


def _validators(dialect: str) -> dict[str, Callable[[str], object]]:
    schema = SCHEMAS[dialect]
    allowed_pairs = frozenset((schema, t) for t in TABLES)
    allowed_names = frozenset(TABLES)

    def guard(sql: str) -> object:
        return guard_query(
            sql,
            dialect=dialect,
            allowed_tables=allowed_pairs,
            default_schema=schema,
            row_limit=ROW_LIMIT,
        )

    return {"guard": guard, "naive": lambda sql: naive_scan(sql, allowed_names)}


def _passes(validate: Callable[[str], object], sql: str) -> bool:
    try:
        validate(sql)
    except (UnsafeQueryError, NaiveRefusal):
        return False
    return True


def _median_us(validate: Callable[[str], object], queries: list[str], repeat: int) -> float:
    per_query = []
    for sql in queries:
        _passes(validate, sql)  # warm caches (dialect objects, regexes)
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            _passes(validate, sql)
            samples.append(time.perf_counter() - start)
        per_query.append(statistics.median(samples))
    return statistics.median(per_query) * 1e6


def run(repeat: int = 15) -> dict[str, dict[str, float | int]]:
    benign, adversarial = _load("benign.yaml"), _load("adversarial.yaml")
    results: dict[str, dict[str, float | int]] = {}
    for dialect in DIALECTS:
        validators = _validators(dialect)
        good, bad = _for(benign, dialect), _for(adversarial, dialect)
        row: dict[str, float | int] = {"benign": len(good), "adversarial": len(bad)}
        for name, validate in validators.items():
            row[f"{name}_median_us"] = round(_median_us(validate, good, repeat), 1)
            row[f"{name}_let_through"] = sum(_passes(validate, sql) for sql in bad)
            row[f"{name}_benign_refused"] = sum(not _passes(validate, sql) for sql in good)
        row["ratio_guard_to_naive"] = round(row["guard_median_us"] / row["naive_median_us"], 1)
        results[dialect] = row
    _print(results)
    return results


def _print(results: dict[str, dict[str, float | int]]) -> None:
    print(
        f"{'dialect':<9}{'benign':>7}{'advers.':>8}{'guard µs':>10}{'naive µs':>10}{'ratio':>7}"
        f"{'let through g/n':>17}{'benign refused g/n':>20}"
    )
    for dialect, r in results.items():
        through = f"{r['guard_let_through']}/{r['naive_let_through']}"
        refused = f"{r['guard_benign_refused']}/{r['naive_benign_refused']}"
        print(
            f"{dialect:<9}{r['benign']:>7}{r['adversarial']:>8}{r['guard_median_us']:>10.1f}"
            f"{r['naive_median_us']:>10.1f}{r['ratio_guard_to_naive']:>7.1f}"
            f"{through:>17}{refused:>20}"
        )
    worst = max(r["guard_median_us"] for r in results.values())
    print(f"target: guard median < 1000 µs per query -> {'met' if worst < 1000 else 'MISSED'}")


if __name__ == "__main__":
    run()
