"""Each warehouse family's documented built-in functions, as data.

A family that refuses functions sqlglot does not model (BigQuery, Snowflake, Trino, Spark,
ClickHouse, Redshift, T-SQL: an unknown name there may be a UDF, a remote or external
function that sends rows to a cloud function or a model, or a system procedure) still lets
the engine's own documented functions run. The list of those is one text file a family in
this package, derived from the engine's function reference by ``scripts/function_catalogs``:
a header of ``#`` lines (the source, its version or commit, the date retrieved, the licence,
how the list was derived, what was removed and why), then one lowercase name a line.

The files are read once, on first use, and kept as frozensets: a policy's membership test is
a set lookup, never a file read a query. The shared denylists of
:mod:`relay_nb.sql.guard.rules` still apply on top of a listed name.
"""

from __future__ import annotations

import difflib
from functools import cache
from importlib import resources

__all__ = ["FAMILIES", "ENGINE_NAMES", "closest", "documented_functions", "header"]

FAMILIES = (
    "bigquery",
    "clickhouse",
    "clickhouse_aggregates",
    "redshift",
    "snowflake",
    "spark",
    "trino",
    "tsql",
)
"""The data files this package holds (``<family>.txt``)."""

ENGINE_NAMES = {
    "bigquery": "BigQuery",
    "clickhouse": "ClickHouse",
    "databricks": "Databricks",
    "oracle": "Oracle",
    "redshift": "Redshift",
    "snowflake": "Snowflake",
    "spark": "Spark SQL",
    "trino": "Trino",
    "tsql": "T-SQL",
}
"""How a refusal names each family's engine."""


@cache
def _lines(family: str) -> tuple[str, ...]:
    if family not in FAMILIES:
        raise ValueError(f"no function list for {family!r}; known: {', '.join(FAMILIES)}")
    text = resources.files(__name__).joinpath(f"{family}.txt").read_text(encoding="utf-8")
    return tuple(text.splitlines())


@cache
def documented_functions(family: str) -> frozenset[str]:
    """The lowercased names of ``family``'s documented built-in functions."""
    return frozenset(
        line.strip() for line in _lines(family) if line.strip() and not line.startswith("#")
    )


def header(family: str) -> tuple[str, ...]:
    """The ``#`` lines at the top of ``family``'s file, without the ``#``; a continuation line
    (``#   …``) is joined to the line before it."""
    out: list[str] = []
    for line in _lines(family):
        if not line.startswith("#"):
            break
        if line.startswith("#   ") and out:
            out[-1] += " " + line[4:].strip()
        else:
            out.append(line[1:].strip())
    return tuple(out)


def closest(name: str, names: frozenset[str]) -> str | None:
    """A documented name close to ``name`` (a typo, another engine's spelling), if any.
    Only asked when a call is refused, so its linear scan costs nothing on the hot path."""
    matches = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
    return matches[0] if matches else None
