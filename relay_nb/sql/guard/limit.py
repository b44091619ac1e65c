"""LIMIT, set in the parsed tree: injected when absent, clamped when too large.

Never by string concatenation: a LIMIT appended to text can land inside a comment or a
string, or bound only the last branch of a UNION. A cap is a constant the guard evaluated;
a LIMIT whose row count is not one (``LIMIT 10 PERCENT``, ``TOP 5 WITH TIES``,
``LIMIT (SELECT …)``, ClickHouse's ``LIMIT n BY``) stays as written, inside a query the cap
bounds (:func:`wrap_uncounted_limit`): never dropped, never a reason to refuse.
"""

from __future__ import annotations

import operator
from typing import NoReturn

from sqlglot import exp

from relay_nb.errors import UnsafeQueryError

__all__ = ["apply_limit", "uncounted_limit", "wrap_uncounted_limit"]


def _refuse(rule: str, message: str) -> NoReturn:
    raise UnsafeQueryError(rule, message)


class _NotConstant(Exception):
    pass


def apply_limit(query: exp.Query, row_limit: int) -> tuple[int, bool, bool]:
    """Inject or clamp the outermost LIMIT/FETCH; returns (limit, injected, clamped).

    On a set operation the limit is set on the UNION node itself, so it bounds the whole
    result rather than its last branch. ``LIMIT ALL``/``NULL``/negative (SQLite: no limit)
    are clamped; constant arithmetic is folded. A query whose LIMIT counts no rows the
    guard can know (:func:`uncounted_limit`) must have been wrapped first.
    """
    existing = query.args.get("limit")
    if existing is None:
        query.set("limit", exp.Limit(expression=exp.Literal.number(row_limit)))
        return row_limit, True, False
    if isinstance(existing, exp.Fetch):
        key, value = "count", existing.args.get("count")
        current = 1 if value is None else _limit_value(value)
    elif isinstance(existing, exp.Limit):
        key, value = "expression", existing.expression
        current = _limit_value(value)
    else:
        _refuse("unsupported_limit", "use LIMIT n with a plain integer")
    if current is None or current < 0 or current > row_limit:
        existing.set(key, exp.Literal.number(row_limit))
        return row_limit, False, True
    return current, False, False


def _limit_value(node: exp.Expr | None) -> int | None:
    try:
        return _constant_int(node)
    except (_NotConstant, ValueError, OverflowError, RecursionError):
        _refuse("unsupported_limit", "LIMIT must be a plain integer (no parameters or subqueries)")


def _constant_int(node: exp.Expr | None) -> int | None:
    """Fold an integer constant; ``None`` means "no limit" (ALL, NULL)."""
    if node is None or isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Var) and node.name.upper() == "ALL":
        return None
    if isinstance(node, exp.Literal) and not node.is_string:
        number = float(node.this)
        if not number.is_integer():
            raise _NotConstant
        return int(number)
    if isinstance(node, exp.Paren):
        return _constant_int(node.this)
    if isinstance(node, exp.Neg):
        inner = _constant_int(node.this)
        return None if inner is None else -inner  # SQLite: negative means no limit
    if isinstance(node, exp.Add | exp.Sub | exp.Mul):
        left, right = _constant_int(node.this), _constant_int(node.expression)
        if left is None or right is None:
            return None
        return _ARITHMETIC[type(node)](left, right)
    raise _NotConstant


_ARITHMETIC = {exp.Add: operator.add, exp.Sub: operator.sub, exp.Mul: operator.mul}


def uncounted_limit(query: exp.Query) -> str | None:
    """Why the query's own LIMIT is no row count the guard can clamp, or None when it is one
    (or there is none): ``"per_group"`` for ClickHouse's ``LIMIT n BY cols`` (n rows *per
    group*; also ``LIMIT n OFFSET m BY``, ``LIMIT m, n BY``), ``"share"`` for ``PERCENT`` and
    ``WITH TIES`` (``TOP``, ``FETCH FIRST``, DuckDB's ``LIMIT 10%``), ``"computed"`` for a
    count that is not a constant (``LIMIT (SELECT …)``, ``LIMIT '10'``). A parameter
    (``LIMIT ?``, ``LIMIT $1``) has no value to run with: refused."""
    limit, offset = query.args.get("limit"), query.args.get("offset")
    # LIMIT n OFFSET m BY cols and LIMIT m, n BY cols: sqlglot keeps BY on the OFFSET
    if (isinstance(limit, exp.Limit) and limit.expressions) or (
        isinstance(offset, exp.Offset) and offset.expressions
    ):
        return "per_group"
    if limit is None:
        return None
    options = limit.args.get("limit_options")
    if options is not None and (options.args.get("percent") or options.args.get("with_ties")):
        return "share"
    value = limit.args.get("count") if isinstance(limit, exp.Fetch) else limit.expression
    if isinstance(limit, exp.Fetch) and value is None:
        return None
    if isinstance(value, exp.Expr) and value.find(exp.Placeholder, exp.Parameter):
        _refuse("unsupported_limit", "LIMIT takes a number here, not a parameter")
    try:
        _constant_int(value)
    except (_NotConstant, ValueError, OverflowError, RecursionError):
        return "computed"
    return None


def wrap_uncounted_limit(query: exp.Query | exp.Pivot) -> exp.Query:
    """``SELECT * FROM (query) AS capped``: the query, its own LIMIT as written, becomes the
    subquery of one that the outermost LIMIT bounds. Its ORDER BY stays inside, where its
    LIMIT needs it; the engines here return a subquery's rows in that order. DuckDB's
    ``PIVOT`` statement, a relation without a LIMIT of its own, is wrapped the same way."""
    placeholder = exp.Null()
    query.replace(placeholder)
    subquery = exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier("capped")))
    capped = exp.select("*").from_(subquery)
    placeholder.replace(capped)
    return capped
