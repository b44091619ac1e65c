"""The value-size rule against the real engine: the size table covers every function of
DuckDB whose result is not fixed-width (and every function sqlglot generates as one), and each
payload class is harmful live at a reduced scale before the rule refuses it.

The live measurements run in a fresh process each (a peak is only clean there), on a sealed
in-memory DuckDB configured as ``readonly.py`` configures it plus ``memory_limit = 64MB`` and
one thread: the memory limit bounds operators, not the scalar values these queries build.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import pytest
import sqlglot
from size_support import (
    accepted,
    generated_but_unsized,
    guarded,
    policy_sizer,
    refusal,
    run_probe,
    unlisted,
)

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard.policies.duckdb import DuckDBPolicy
from relay_nb.sql.guard.sizes.sizer import RULE


def _variable_size_functions() -> dict[str, set[int]]:
    """DuckDB's scalar, macro and aggregate functions whose result is not fixed-width, with
    their argument counts (from the engine this suite runs)."""
    import duckdb

    fixed = re.compile(
        r"^(BOOLEAN|TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|"
        r"UHUGEINT|FLOAT|DOUBLE|DECIMAL|DATE|TIME.*|TIMESTAMP.*|INTERVAL|UUID|\"NULL\"|TYPE|"
        r"INVALID)$"
    )
    constant_macro = re.compile(r"(true|false|NULL|'duckdb'|\d+|current_timestamp|current_user)")
    rows = (
        duckdb.connect()
        .execute(
            "SELECT function_name, any_value(function_type), list_distinct(list(len(parameters))), "
            "list_distinct(list(return_type)), any_value(macro_definition) FROM duckdb_functions() "
            "WHERE function_type IN ('scalar', 'macro', 'aggregate') GROUP BY ALL"
        )
        .fetchall()
    )
    out: dict[str, set[int]] = {}
    for name, kind, arities, returns, macro in rows:
        if kind != "macro" and all(fixed.match(r) for r in returns):
            continue
        if kind == "macro" and macro and constant_macro.fullmatch(macro.strip()):
            continue
        if name.startswith("__internal"):
            continue
        out[name.lower()] = set(arities)
    return out


def test_every_variable_size_function_of_the_engine_has_a_size_rule():
    functions = _variable_size_functions()
    assert len(functions) > 300  # the engine reports them: the test cannot pass empty
    sizer, missing = policy_sizer(DuckDBPolicy), []
    for name, arities in sorted(functions.items()):
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):  # operators: listed by symbol
            if name not in DuckDBPolicy.size_functions:
                missing.append(name)
            continue
        for arity in sorted(arities):
            call = f"SELECT {name}({', '.join(f'a{i}' for i in range(arity))})"
            try:
                node = sqlglot.parse_one(call, read="duckdb").expressions[0]
            except sqlglot.errors.ParseError:
                continue  # the guard refuses what sqlglot cannot parse
            if unlisted(node, sizer, "duckdb"):
                missing.append(f"{name}/{arity} ({type(node).__name__})")
    assert not missing, missing


def test_every_function_sqlglot_writes_as_a_variable_size_one_is_sized():
    """The parser knows other dialects' functions and the DuckDB generator rewrites many of
    them (``space(n)`` → ``REPEAT(' ', n)``): what runs must be what was sized."""
    from sqlglot.dialects.duckdb import DuckDB

    variable, sizer = set(_variable_size_functions()), policy_sizer(DuckDBPolicy)
    missing = generated_but_unsized("duckdb", DuckDB.Parser.FUNCTIONS, variable, sizer)
    assert not missing, missing


# --------------------------------------------------------------------------------------------
# Live: harmful at a reduced scale in a fresh process, then refused

_PROBE = textwrap.dedent(
    """
    import json, resource, sys, time
    import duckdb

    def status(field):
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    config = {"enable_external_access": False, "lock_configuration": True,
              "temp_directory": "", "memory_limit": "64MB", "threads": 1}
    con = duckdb.connect(":memory:", config=config)
    con.execute("SELECT 1").fetchall()
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass
    before = status("VmRSS")
    started = time.perf_counter()
    error = None
    try:
        con.execute(sys.argv[1]).fetchall()
    except Exception as exc:
        error = type(exc).__name__
    print(json.dumps({"growth_mb": status("VmHWM") - before, "error": error,
                      "seconds": time.perf_counter() - started}))
    """
)

HARM = {
    # class: (reduced payload measured live, the full-size payload the guard refuses)
    "repeat": ("SELECT length(repeat('x', 300000000))", "SELECT repeat('x', 2000000000)"),
    "range-value": ("SELECT len(range(0, 5000000))", "SELECT range(0, 500000000)"),
    "series-of-timestamps": (
        "SELECT len(generate_series(TIMESTAMP '2000-01-01', TIMESTAMP '2000-03-01', "
        "INTERVAL 1 SECOND))",
        "SELECT generate_series(TIMESTAMP '2000-01-01', TIMESTAMP '2100-01-01', INTERVAL 1 SECOND)",
    ),
    "lpad": ("SELECT length(lpad('x', 200000000, 'y'))", "SELECT lpad('x', 1500000000, 'y')"),
    "replace-chain": (
        "SELECT length(replace(replace(replace(repeat('x', 600), 'x', repeat('y', 600)), 'y', "
        "repeat('z', 600)), 'z', 'w'))",
        "SELECT replace(replace(replace(repeat('x',1000),'x',repeat('y',1000)),'y',"
        "repeat('z',1000)),'z','ww')",
    ),
    "printf-width": ("SELECT length(printf('%300000000d', 1))", "SELECT printf('%1000000000d', 1)"),
    "format-width": (
        "SELECT length(format('{:>300000000}', 1))",
        "SELECT format('{:>1000000000}', 'x')",
    ),
    "list-resize": ("SELECT len(list_resize([1], 5000000))", "SELECT list_resize([1], 1000000000)"),
    "bitstring": (
        "SELECT octet_length(bitstring('1', 1600000000))",
        "SELECT bitstring('1', 2000000000)",
    ),
    "hex-of-hex": (
        "SELECT length(hex(hex(hex(hex(hex(repeat('x', 4000000)))))))",
        "SELECT hex(hex(hex(hex(hex(hex(hex(hex(repeat('x', 1000)))))))))",
    ),
    "lambda-per-element": (
        "SELECT len(list_transform(range(5000), lambda x: repeat('x', 60000)))",
        "SELECT len(list_transform(range(100000), lambda x: repeat('x', 60000)))",
    ),
    "list-reduce-doubling": (
        "SELECT length(list_reduce(range(28), lambda a, x: a || a, 'x'))",
        "SELECT length(list_reduce(range(40), lambda a, x: a || a, 'x'))",
    ),
}


def _probe(sql: str) -> dict[str, Any]:
    return run_probe(["-c", _PROBE, sql], timeout=110)


@pytest.mark.slow  # a live engine pushed to its harmful size, in a child process
@pytest.mark.parametrize(("reduced", "full"), HARM.values(), ids=HARM.keys())
def test_payload_class_is_harmful_live_then_refused(reduced: str, full: str):
    measured = _probe(reduced)
    # even under a 64 MB memory_limit the value is built: more than 250 MB at 1/5 scale or less
    assert measured["error"] is None and measured["growth_mb"] > 250, measured
    refusal(reduced)  # the reduced payload is already over the bound
    with pytest.raises(UnsafeQueryError) as info:
        guarded(full)
    assert info.value.rule == RULE


@pytest.mark.slow  # a live engine pushed to its harmful size, in a child process
def test_the_bound_itself_is_harmless_live():
    """The largest value the rule lets a row build, for every row of a large scan: the
    analysis's own worst case, three 2048-row chunks on one thread, peaks near 130 MB."""
    sql = "SELECT max(length(repeat('x', 65536 + (i % 2)::INT - 1))) FROM range(6144) AS t(i)"
    assert accepted(sql)
    assert _probe(sql)["growth_mb"] < 250
