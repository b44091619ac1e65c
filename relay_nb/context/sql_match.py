"""How a turn's SQL relates to what the team verified: the same query, the same query with
other values, a metric computed as defined.

The trace marks an answer that came from the team's knowledge, so an analyst knows which
answers rest on checked SQL. All three comparisons parse both sides with sqlglot in the
connector's dialect and compare what they *mean* as written, never the text:

- :func:`same_query`: equal once written alike (case, spacing, quoting, comments), the
  model's own SQL compared (the guard's LIMIT is added later, to what runs);
- :func:`same_shape`: equal once every literal is a placeholder and the outermost LIMIT is
  set aside — the verified query for 2025 asked for 2024, or for another country, or
  the top 5 instead of the top 10;
- :func:`metric_used`: the metric's expression appears (table qualifiers set aside) in a
  SELECT whose own WHERE includes every one of the metric's filters.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["metric_used", "same_query", "same_shape"]


def same_query(first: str, second: str, dialect: str) -> bool:
    """Whether two queries are the same once both are written out alike in ``dialect``
    (a LIMIT of their own included: "top 5" is not "top 10")."""
    one = _written(first, dialect, False)
    return one is not None and one == _written(second, dialect, False)


def same_shape(first: str, second: str, dialect: str) -> bool:
    """Whether two queries differ at most in their literal values (``year = 2024`` for
    ``year = 2025``, ``'DE'`` for ``'NL'``)."""
    one = _written(first, dialect, True)
    return one is not None and one == _written(second, dialect, True)


def metric_used(sql: str, expression: str, filters: tuple[str, ...], dialect: str) -> bool:
    """Whether ``sql`` computes the metric ``expression`` under all of its ``filters``."""
    tree = _tree(sql, dialect)
    wanted = _bare(f"SELECT {expression}", dialect)
    if tree is None or wanted is None:
        return False
    from sqlglot import exp

    target = wanted.expressions[0] if isinstance(wanted, exp.Select) else None
    if target is None:
        return False
    shape = _key(target, dialect)
    wanted_conditions = []
    for condition in filters:
        parsed = _bare(f"SELECT 1 WHERE {condition}", dialect)
        where = parsed.args.get("where") if parsed is not None else None
        if where is None:
            return False
        wanted_conditions.append(_key(where.this, dialect))
    for node in tree.find_all(type(target)):
        if _key(node, dialect) != shape:
            continue
        scope = node.find_ancestor(exp.Select)  # the filters must hold where it aggregates
        where = scope.args.get("where") if scope is not None else None
        conditions: set[str] = set()
        if where is not None:
            conditions.add(_key(where.this, dialect))
            if isinstance(where.this, exp.And):
                conditions |= {_key(part, dialect) for part in where.this.flatten()}
        if all(condition in conditions for condition in wanted_conditions):
            return True
    return False


def _written(sql: str, dialect: str, literals: bool) -> str | None:
    tree = _tree(sql, dialect)
    if tree is None:
        return None
    tree = tree.copy()
    if literals:
        tree.set("limit", None)
        from sqlglot import exp

        tree = tree.transform(
            lambda node: exp.Placeholder() if isinstance(node, exp.Literal) else node
        )
    return tree.sql(dialect=dialect, normalize=True, comments=False)


@lru_cache(maxsize=256)
def _tree(sql: str, dialect: str) -> Any:
    import sqlglot

    try:
        return sqlglot.parse_one(sql, read=dialect)
    except Exception:
        return None


@lru_cache(maxsize=256)
def _bare(sql: str, dialect: str) -> Any:
    """``sql`` parsed with every column's table qualifier removed."""
    tree = _tree(sql, dialect)
    return None if tree is None else _unqualified(tree)


def _key(node: Any, dialect: str) -> str:
    """A node written without table qualifiers, normalized: what two spellings share."""
    return _unqualified(node).sql(dialect=dialect, normalize=True, comments=False)


def _unqualified(node: Any) -> Any:
    """A copy of ``node`` whose columns (itself included) name no table."""
    from sqlglot import exp

    copy = node.copy()
    for column in copy.find_all(exp.Column):  # walks ``copy`` itself too
        column.set("table", None)
    return copy
