"""Helpers for the value-size rule's tests: the rule alone, and the guard as it will be wired.

Until ``bound_value_sizes`` is wired into ``guard.py`` (``policy.check(tree, "tree", found)``
after the walk) and a family's ``rules``, :func:`guarded` runs ``guard_query`` for the other
rules and then the rule on the parsed output, twice, as the wired guard's fixed-point check
will (once it is wired, the second run finds the output already bounded). Every helper takes
the family's policy (DuckDB unless told): SQL is parsed and written in its dialect.
"""

from __future__ import annotations

import collections
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from relay_nb.connectors.sql.guard import guard_query
from relay_nb.connectors.sql.guard_size_model import SizeLimits
from relay_nb.connectors.sql.guard_size_nodes import handler
from relay_nb.connectors.sql.guard_sizes import RULE, _expansion, _Sizer, bound_value_sizes
from relay_nb.connectors.sql.policies import Findings, GuardPolicy
from relay_nb.connectors.sql.policies.duckdb import DuckDBPolicy
from relay_nb.connectors.sql.policies.sqlite import SQLitePolicy
from relay_nb.errors import UnsafeQueryError
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
    """The whole guard for the family with the rule after the walk: the SQL that would run.

    Guarding the output again must change nothing (the guard's own fixed-point check), so
    the rewritten counts must read back as bounded.
    """
    first = _guard_then_size(sql, policy)
    assert _guard_then_size(first, policy) == first, f"not a fixed point:\n{first}"
    return first


def _dialect(policy: type[GuardPolicy]) -> str:
    return policy.dialects[0] if policy.dialects else "duckdb"


def _guard_then_size(sql: str, policy: type[GuardPolicy]) -> str:
    dialect = _dialect(policy)
    result = guard_query(
        sql, dialect=dialect, allowed_tables=ALLOWED, default_schema="main", row_limit=ROW_LIMIT
    )
    tree, found = sized(result.sql, policy)
    if found.violations:
        raise UnsafeQueryError(RULE, min(found.violations).message)
    return tree.sql(dialect=dialect, **GENERATE)


_SQLITE_PROBE = textwrap.dedent(
    """
    import json, sys
    from relay_nb.connectors.sql.readonly import build_engine, run_read_only
    from relay_nb.testing.memory import PeakGrowth

    engine = build_engine(sys.argv[1])
    run_read_only(engine, "SELECT count(*) FROM orders", max_rows=10, timeout_s=30)
    error = None
    with PeakGrowth() as growth:
        try:
            run_read_only(engine, sys.argv[2], max_rows=201, timeout_s=30)
        except Exception as exc:
            error = type(exc).__name__
    print(json.dumps({"growth_mb": growth.mib, "error": error}))
    """
)


def probe_sqlite(shop: Path, sql: str) -> dict[str, Any]:
    """Run ``sql`` on the SQLite file ``shop`` as the connector runs it, unguarded, in a fresh
    process: ``run_read_only`` (read-only, ``SQLITE_LIMIT_LENGTH`` and the timeout per call,
    rows read through the byte budget). Returns the peak RSS growth in MiB and the error."""
    done = subprocess.run(
        [sys.executable, "-c", _SQLITE_PROBE, f"sqlite:///{shop}", sql],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
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


def sqlite_sizer(limits: SizeLimits | None = None) -> _Sizer:
    """The analysis with SQLite's class data (its limits unless told), to size one node."""
    policy = SQLitePolicy
    return _Sizer(
        exp.Null(),
        policy.size_functions,
        policy.size_prefixes,
        limits or policy.size_limits,
        "sqlite",
        policy.size_text_factor,
    )


def unlisted(node: exp.Expr, sizer: _Sizer, dialect: str = "sqlite") -> bool:
    """A function the analysis would take for fixed-width: not in the table, not generated as
    another function, and not a SQL construct it sizes itself (CASE, COALESCE, IIF, LIKE)."""
    if handler(type(node)).__name__ not in ("_func", "_binary") or not isinstance(node, exp.Func):
        return False
    return sizer.rule(node) is None and _expansion(node, dialect) is None
