"""A query as the analyst reads it: laid out over lines, with their limit, not the fetch size.

What ran is the guard's one-line re-serialisation, and a SQL connector fetches one row past
its row limit (``LIMIT 201`` for 200 rows: the extra row is how a result knows more rows
exist). Neither is how a person reads or would write the query. The views show it laid out
by sqlglot's pretty printer in the connector's dialect, with the row limit the analyst set in
place of the fetch size — the same statement otherwise, so a copy into ``%%relay_sql`` runs
what the turn ran (the guard adds its fetch row again there).

Re-reading a statement the guard itself wrote cannot fail in its dialect; if it does anyway
(a connector that set no dialect, a future sqlglot), the text is shown as it ran.
"""

from __future__ import annotations

from typing import Any

__all__ = ["readable_sql"]


def readable_sql(
    sql: str, *, dialect: str = "", row_limit: int | None = None, pretty: bool = True
) -> str:
    """``sql`` laid out (``pretty``) with ``LIMIT row_limit + 1`` shown as ``row_limit``.

    Without a ``dialect`` the text is returned as it is: it may not be SQL at all (a Mongo
    query, an HTTP request line).
    """
    if not dialect or not sql.strip():
        return sql
    import sqlglot

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:  # display only: anything unreadable is shown as it ran
        return sql
    limited = row_limit is not None and _show_row_limit(tree, row_limit)
    if not pretty and not limited:
        return sql  # nothing to change: keep the exact text that ran
    try:
        # as the guard writes it (function names as written), only laid out
        return tree.sql(dialect=dialect, pretty=pretty, normalize_functions=False)
    except Exception:
        return sql


def _show_row_limit(tree: Any, row_limit: int) -> bool:
    """Set the outermost ``LIMIT``/``FETCH`` from the fetch size back to ``row_limit``."""
    from sqlglot import exp

    while isinstance(tree, exp.Subquery) and not tree.alias:  # `(SELECT … LIMIT 201)`
        tree = tree.this
    limit = tree.args.get("limit")
    if isinstance(limit, exp.Limit):
        key, value = "expression", limit.expression
    elif isinstance(limit, exp.Fetch):
        key, value = "count", limit.args.get("count")
    else:
        return False
    if not (isinstance(value, exp.Literal) and value.this == str(row_limit + 1)):
        return False
    limit.set(key, exp.Literal.number(row_limit))
    return True
