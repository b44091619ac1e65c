"""Which of a plan's conditions the planner can back with statistics, and which it guesses.

A planner estimates how many rows a condition keeps from the column's statistics when the
condition compares a plain column with constants (``status = 'paid'``, ``grp IN (1, 2)``,
``at > '2024-01-01'``, ``name LIKE 'a%'``). For anything else — a function or arithmetic on
a column (``lower(name) = 'x'``, ``id + 0 < 10``, ``(id)::numeric = 5``), a subquery's or a
parameter's value — PostgreSQL uses a fixed default selectivity (0.5 % for an equality,
a third for a range), and DuckDB a fixed share: a guess, often off by orders of magnitude.

The estimators use this where a figure rests on the selectivity: a LIMIT stops a scan early
only after it has found enough matches, so a guessed filter under it may read the whole
table (:mod:`.postgres`, :mod:`.duckdb`).

The text read here is the engine's own rendering of a condition (``EXPLAIN``'s ``Filter``),
which carries the model's constants: every pattern below is linear in its input.
"""

from __future__ import annotations

import re

__all__ = ["MAX_CONDITION", "guessed", "guessed_keep", "qualifiers"]

MAX_CONDITION = 20_000
"""Characters of a condition read at most; a longer one counts as guessed."""

_STRING = re.compile(r"'(?:[^']|'')*'")
_QUOTED = re.compile(r'"(?:[^"]|"")*"')
_CAST = re.compile(
    r"::(?:\"[^\"]*\"|[a-z_][a-z_0-9]*(?: varying| precision| with(?:out)? time zone)?)"
    r"(?:\[\])*",
    re.IGNORECASE,
)
_CALL = re.compile(r"(?<![\w$])([a-z_][a-z_0-9$]*)\s*\(", re.IGNORECASE)
_OPERATORS = re.compile(r"[+*/%^&|#?]|@[>@]|<@|\bcase\b|(?<=[\w)\]]) ?-", re.IGNORECASE)
"""Arithmetic on a column, and the operators whose selectivity PostgreSQL fixes (containment,
JSON, text search, overlap: ``@>``, ``->``, ``?``, ``@@``, ``&&``), and CASE."""
_COLUMN_CAST = re.compile(r"\)::(?!(?:text|character varying|varchar|bpchar|name)\b)")
_QUALIFIER = re.compile(r"(?<![\w.$])(\"(?:[^\"]|\"\")*\"|[a-z_][a-z_0-9$]*)\.", re.IGNORECASE)

_NOT_FUNCTIONS = frozenset({"any", "all", "and", "or", "not", "in", "is", "array", "row"})
"""Words a condition's text puts before a parenthesis that are not a function of a column:
``= ANY ('{1,2}'::integer[])`` is an IN list, which the statistics do estimate."""

_UNKNOWN_VALUES = ("subplan", "initplan", "$")
"""A value the planner does not know when it plans: a subquery's or a parameter's."""


def guessed(condition: str | None) -> bool:
    """Whether the planner had to guess how many rows ``condition`` keeps: it applies a
    function, a cast (other than to text, which leaves a text column's statistics usable)
    or arithmetic to a column, or compares with a subquery's or a parameter's value."""
    if not condition:
        return False
    if len(condition) > MAX_CONDITION:
        return True  # not read: a condition this long is no plain comparison
    text = _STRING.sub("''", condition)
    lowered = text.lower()
    if any(marker in lowered for marker in _UNKNOWN_VALUES):
        return True
    text = _QUOTED.sub("x", text)
    if _COLUMN_CAST.search(text):  # ``(t.id)::numeric``: a cast of a column's value
        return True
    text = _CAST.sub("", text)
    if any(name.lower() not in _NOT_FUNCTIONS for name in _CALL.findall(text)):
        return True
    return _OPERATORS.search(text) is not None


_EQUALITY = re.compile(r"(?<![<>!])=|~~")
_AND = re.compile(r"\bAND\b")


def guessed_keep(condition: str | None) -> float:
    """The smallest share of rows PostgreSQL's default selectivities can have kept for
    ``condition``'s guessed clauses (ANDed): 0.5 % per guessed equality or pattern
    (``DEFAULT_EQ_SEL``, ``DEFAULT_MATCH_SEL``), a third per other guessed clause
    (``DEFAULT_INEQ_SEL``); 1 when nothing in it is guessed."""
    if not condition or not guessed(condition):
        return 1.0
    keep = 1.0
    for clause in _AND.split(_STRING.sub("''", condition)):
        if guessed(clause):
            keep *= 0.005 if _EQUALITY.search(clause) else 1 / 3
    return max(keep, 1e-9)


def qualifiers(condition: str) -> set[str]:
    """The table aliases ``condition`` names columns of (``"(t.grp = u.grp)"`` -> ``{"t",
    "u"}``), unquoted; string constants are not read."""
    text = _STRING.sub("''", condition)
    return {
        name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()
        for name in _QUALIFIER.findall(text)
    }
