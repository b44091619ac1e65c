"""Helpers for the value-size rule's tests: the rule alone (:func:`sized`) and the whole
guard (:func:`guarded`, where the rule runs after the walk as a ``"tree"`` rule of the
family's policy). Every helper takes the family's policy (DuckDB unless told): SQL is parsed
and written in its dialect.
"""

from __future__ import annotations

import collections
import json
import re
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from relay_nb.sql.guard.policies import Findings, GuardPolicy
from relay_nb.sql.guard.policies.duckdb import DuckDBPolicy
from relay_nb.sql.guard.policies.sqlite import SQLitePolicy
from relay_nb.sql.guard.query import guard_query
from relay_nb.sql.guard.sizes.expansion import expansion
from relay_nb.sql.guard.sizes.model import TEXT_FACTOR, SizeLimits
from relay_nb.sql.guard.sizes.nodes import handler
from relay_nb.sql.guard.sizes.sizer import RULE, _Sizer, bound_value_sizes
from relay_nb.testing.seed import ALLOWED_TABLES

__all__ = [
    "GENERATE",
    "ROW_LIMIT",
    "accepted",
    "arities",
    "guarded",
    "probe_sqlite",
    "refusal",
    "sized",
    "sqlite_functions",
    "sqlite_sizer",
    "policy_sizer",
    "generated_but_unsized",
    "run_probe",
    "unlisted",
]

ROW_LIMIT = 200
ALLOWED = frozenset(("main", table) for table in ALLOWED_TABLES)
GENERATE = {"comments": False, "normalize_functions": False}
"""How the guard serialises a tree (``guard._generate``)."""


def sized(sql: str, policy: type[GuardPolicy] = DuckDBPolicy) -> tuple[exp.Expr, Findings]:
    """Parse in the family's dialect and run the rule on the root, as ``policy.check(tree,
    "tree", found)`` will; returns the (possibly rewritten) tree and the findings."""
    tree = sqlglot.parse_one(sql, read=_dialect(policy))
    found = Findings()
    bound_value_sizes(tree, policy, found)
    return tree, found


def refusal(sql: str, policy: type[GuardPolicy] = DuckDBPolicy) -> str:
    _, found = sized(sql, policy)
    assert found.violations, f"not refused: {sql}"
    violation = min(found.violations)
    assert violation.rule == RULE
    return violation.message


def accepted(sql: str, policy: type[GuardPolicy] = DuckDBPolicy) -> str:
    """The SQL the rule lets run (rewritten or not); fails if it is refused."""
    tree, found = sized(sql, policy)
    assert not found.violations, found.violations[0].message
    return tree.sql(dialect=_dialect(policy), **GENERATE)


def guarded(sql: str, policy: type[GuardPolicy] = DuckDBPolicy) -> str:
    """The whole guard for the family (the rule runs after its walk): the SQL that would run.

    The guard's own fixed-point check guards its output again, so a rewritten count must
    read back as bounded for this to return.
    """
    result = guard_query(
        sql,
        dialect=_dialect(policy),
        allowed_tables=ALLOWED,
        default_schema="main",
        row_limit=ROW_LIMIT,
    )
    return result.sql


def _dialect(policy: type[GuardPolicy]) -> str:
    return policy.dialects[0] if policy.dialects else "duckdb"


_SQLITE_PROBE = textwrap.dedent(
    """
    import json, sqlite3, sys
    from relay_nb.connectors.sql.readonly import build_engine, run_read_only
    from relay_nb.testing.memory import PeakGrowth

    url, sql, raw = sys.argv[1], sys.argv[2], sys.argv[3] == "raw"
    if raw:
        con = sqlite3.connect(url.removeprefix("sqlite:///"))
        con.execute("SELECT count(*) FROM orders").fetchall()
        run = lambda: con.execute(sql).fetchmany(201)
    else:
        engine = build_engine(url)
        run_read_only(engine, "SELECT count(*) FROM orders", max_rows=10, timeout_s=30)
        run = lambda: run_read_only(engine, sql, max_rows=201, timeout_s=30)
    error = None
    with PeakGrowth() as growth:
        try:
            run()
        except Exception as exc:
            error = type(exc).__name__
    print(json.dumps({"growth_mb": growth.mib, "error": error}))
    """
)


def probe_sqlite(shop: Path, sql: str, *, raw: bool = False) -> dict[str, Any]:
    """Run ``sql`` on the SQLite file ``shop`` unguarded, in a fresh process: through the
    plain ``sqlite3`` driver (``raw``: the harm a query does without relay_nb), or as the
    connector runs it (``run_read_only``: read-only, ``SQLITE_LIMIT_LENGTH`` and the timeout
    per call, rows read one at a time through the byte budget). Returns the peak RSS growth in
    MiB and the error."""
    mode = "raw" if raw else "run"
    return run_probe(["-c", _SQLITE_PROBE, f"sqlite:///{shop}", sql, mode], timeout=110)


def run_probe(args: list[str], *, timeout: float) -> dict[str, Any]:
    """Run a probe script in a fresh Python process (so its peak memory is its own) and
    return what it printed last, as JSON; a probe that fails shows its stderr."""
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- SQLite's engine and table ------------------------------------------------------------------


def sqlite_functions() -> dict[str, set[int]]:
    """Every function of the installed SQLite, with its argument counts (-1: any)."""
    with sqlite3.connect(":memory:") as con:
        rows = con.execute("SELECT name, narg FROM pragma_function_list").fetchall()
    out: dict[str, set[int]] = collections.defaultdict(set)
    for name, narg in rows:
        out[name.lower()].add(narg)
    return dict(out)


def arities(nargs: set[int]) -> list[int]:
    """Argument counts to call a function with: as listed, and 1-3 for a variadic one."""
    return sorted({n for n in nargs if n >= 0} | ({1, 2, 3} if -1 in nargs else set()))


def policy_sizer(policy: type[GuardPolicy], limits: SizeLimits | None = None) -> _Sizer:
    """The analysis with a family's class data, as ``bound_value_sizes`` builds it (the
    family's limits unless told), to size one node."""
    return _Sizer(
        exp.Null(),
        policy.size_functions,
        policy.size_prefixes,
        limits or policy.size_limits,
        policy.dialects[0],
        getattr(policy, "size_text_factor", TEXT_FACTOR),
    )


def sqlite_sizer(limits: SizeLimits | None = None) -> _Sizer:
    """The analysis with SQLite's class data (its limits unless told), to size one node."""
    return policy_sizer(SQLitePolicy, limits)


def unlisted(node: exp.Expr, sizer: _Sizer, dialect: str = "sqlite") -> bool:
    """A function the analysis would take for fixed-width: not in the table, not generated as
    another function, and not a SQL construct it sizes itself (CASE, COALESCE, IIF, LIKE)."""
    if handler(type(node)).__name__ not in ("_func", "_binary") or not isinstance(node, exp.Func):
        return False
    return sizer.rule(node) is None and expansion(node, dialect) is None


def generated_but_unsized(
    dialect: str, parsed: Iterable[str], variable: set[str], sizer: _Sizer
) -> list[str]:
    """Each function name the dialect's parser knows (``parsed``), called with one to three
    arguments, whose generated SQL calls a variable-size function the analysis does not
    size: the parser knows other dialects' functions and the generator rewrites some
    (``space(n)`` → ``REPEAT(' ', n)``), and what runs must be what was sized."""
    missing = []
    for name in sorted(parsed):
        for arity in (1, 2, 3):
            call = f"SELECT {name}({', '.join(f'a{i}' for i in range(arity))})"
            try:
                node = sqlglot.parse_one(call, read=dialect).expressions[0]
                out = node.sql(dialect, unsupported_level=sqlglot.ErrorLevel.IGNORE)
            except Exception:
                continue
            head = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(", out)
            if head and head.group(1).lower() in variable and unlisted(node, sizer, dialect):
                missing.append(f"{name}/{arity} → {out[:50]}")
    return missing
