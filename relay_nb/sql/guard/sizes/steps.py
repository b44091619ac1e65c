"""Recursive CTEs that add to a value at every step, where no memory limit holds their rows.

DuckDB keeps a recursive CTE's rows in working tables that count against its memory limit, so
a column may grow by a piece per step (``path || '/' || name``) and the analysis counts the
result as a stored value. SQLite has no such limit, and a step that adds even a few bytes
builds rows that grow with the step count: ``s || 'xxxxxxxxxxxxxxxx'`` over 20 000 steps makes
rows of up to 320 KB, and a sorter over them peaked at +381 MB (``8000`` bytes per step over
300 steps: +332 MB). So for a family whose :class:`SizeLimits` say ``bounded_recursion``, a
column that grows needs a bound on the steps, read from the tree:

- a counter that starts at a literal, adds a positive literal per step, and is compared with a
  literal in the step's ``WHERE`` (``SELECT n + 1 … FROM r WHERE n < 100``), or
- a literal ``LIMIT`` on the CTE (it stops the recursion after that many rows),

and the value after the last step must stay within the value limits. Hierarchies walked by a
join (``JOIN t ON c.parent = t.id``) carry a depth counter for this (``depth + 1 … WHERE
depth < 20``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from sqlglot import exp

from relay_nb.sql.guard.sizes import counts
from relay_nb.sql.guard.sizes.model import Size, SizeLimits, TooLarge, human
from relay_nb.sql.guard.sizes.scope import Rel
from relay_nb.sql.guard.text import fold

__all__ = ["check_growth", "step_bound"]


def check_growth(
    name: str,
    body: exp.SetOperation,
    columns: Sequence[str],
    anchor: Rel,
    step: Rel,
    keys: Sequence[str],
    limits: SizeLimits,
) -> None:
    """Refuse a recursive CTE (``anchor`` and ``step`` sized, ``keys`` its columns' symbols)
    whose columns grow per step without a bound on the steps, or past the value limits."""
    growing: list[tuple[int, Size]] = []
    for index, val in enumerate(step.order):
        added = val.size.without(*keys)
        if any(val.size.coefficient(key) for key in keys) and (added.const or added.grows):
            growing.append((index, added))
    if not growing:
        return
    steps = step_bound(body, columns, name)
    if steps is None:
        raise TooLarge(
            f"the recursive CTE {name} adds to a value at every step and nothing bounds its "
            "steps; count them (n + 1 … WHERE n < 100) or give it a LIMIT"
        )
    for index, added in growing:
        start = anchor.order[index].size if index < len(anchor.order) else Size()
        final = start + added.scale(steps)
        if final.exceeds(limits.value_bytes, limits.value_multiple):
            limit = (
                f"{limits.value_multiple}x a stored value"
                if final.multiple > limits.value_multiple
                else human(limits.value_bytes)
            )
            raise TooLarge(
                f"the recursive CTE {name} would build a value of up to {final.describe()} in "
                f"{steps} steps (the limit is {limit}); take fewer steps or add less per step"
            )


def step_bound(body: exp.SetOperation, columns: Sequence[str], name: str) -> int | None:
    """The most times the recursive step of the CTE ``name`` can run, when the query says so
    (module docstring); ``columns`` are its column names (empty: the anchor's). The counter
    must be the CTE's own column: unqualified, or qualified by the CTE's name or alias."""
    bounds: list[int] = []
    limit = body.args.get("limit")
    if isinstance(limit, exp.Limit):
        rows = counts.literal_int(limit.expression)
        if rows is not None:
            bounds.append(max(rows, 0))
    first, step = body.this, body.expression
    if isinstance(first, exp.Select) and isinstance(step, exp.Select):
        names = list(columns) or [fold(p.alias_or_name) for p in first.expressions]
        own = {""} | {
            fold(table.alias_or_name)
            for table in step.find_all(exp.Table)
            if fold(table.name) == name
        }
        where = step.args.get("where")
        conditions = list(_conjuncts(where.this)) if isinstance(where, exp.Where) else []
        for index, column in enumerate(names[: len(first.expressions)]):
            if index >= len(step.expressions):
                break
            start = counts.literal_int(_unalias(first.expressions[index]))
            increment = _increment(step.expressions[index], column, own)
            if start is None or increment is None:
                continue
            for condition in conditions:
                ceiling = _ceiling(condition, column, own)
                if ceiling is not None:
                    bounds.append(max(math.ceil((ceiling - start) / increment) + 1, 0))
    return min(bounds) if bounds else None


def _unalias(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Alias) else node


def _conjuncts(node: exp.Expr) -> Iterator[exp.Expr]:
    node = counts.unwrap(node)
    if isinstance(node, exp.And):
        yield from _conjuncts(node.this)
        yield from _conjuncts(node.expression)
    else:
        yield node


def _is_column(node: exp.Expr, column: str, own: set[str]) -> bool:
    node = counts.unwrap(node)
    return (
        isinstance(node, exp.Column)
        and fold(node.name) == column
        and fold(node.table) in own
        and not node.args.get("db")
    )


def _increment(node: exp.Expr, column: str, own: set[str]) -> int | None:
    """``n + 2`` (or ``2 + n``) for the counter ``n``: 2; anything else: ``None``."""
    node = counts.unwrap(_unalias(node))
    if not isinstance(node, exp.Add):
        return None
    for counter, amount in ((node.this, node.expression), (node.expression, node.this)):
        number = counts.literal_int(amount)
        if _is_column(counter, column, own) and number is not None and number > 0:
            return number
    return None


def _ceiling(condition: exp.Expr, column: str, own: set[str]) -> int | None:
    """K in ``n < K``, ``n <= K``, ``K > n`` or ``K >= n`` (the step runs only below it)."""
    if isinstance(condition, exp.LT | exp.LTE) and _is_column(condition.this, column, own):
        return counts.literal_int(condition.expression)
    if isinstance(condition, exp.GT | exp.GTE) and _is_column(condition.expression, column, own):
        return counts.literal_int(condition.this)
    return None
