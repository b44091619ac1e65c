"""A query as the analyst reads it: as written, over lines.

The model's SQL is shown as the model wrote it (:func:`layout_written`): every word, name and
function as written, a long single line broken before its top-level clauses. The guard's
re-serialisation is not shown: it is what ran, but it rewrites functions (``substr`` →
``SUBSTRING``) and fetches one row past the row limit (``LIMIT 201`` for 200 rows), neither
of which the analyst or the model wrote. A copy into ``%%relay_sql`` is guarded again and so
runs what the turn ran.

A statement known only as it ran (no written SQL kept: a query replayed from its result)
is laid out by sqlglot's pretty printer in the connector's dialect, with the row limit the
analyst set in place of the fetch size (:func:`readable_sql`). Re-reading a statement the
guard itself wrote cannot fail in its dialect; if it does anyway (a connector that set no
dialect, a future sqlglot), the text is shown as it ran.
"""

from __future__ import annotations

from typing import Any

__all__ = ["layout_written", "readable_sql"]

_WRITTEN_WIDTH = 80
"""A written query on one line longer than this is broken before its clauses."""
_CLAUSES = frozenset(
    {"FROM", "WHERE", "GROUP_BY", "HAVING", "ORDER_BY", "LIMIT", "QUALIFY", "WINDOW"}
    | {"UNION", "INTERSECT", "EXCEPT", "JOIN", "SELECT", "FETCH"}
)
"""Token types that start a line when they stand at the query's top level."""
_JOIN_WORDS = frozenset(
    {"LEFT", "RIGHT", "INNER", "OUTER", "FULL", "CROSS", "NATURAL", "SEMI", "ANTI", "ASOF"}
    | {"GLOBAL", "ANY", "POSITIONAL", "STRAIGHT_JOIN"}
)
"""Words that come before ``JOIN`` on its line (``LEFT OUTER JOIN``)."""


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


def layout_written(sql: str, dialect: str = "") -> str:
    """A query as the model wrote it — every word, name and function as written — with a
    line break before each top-level clause when it came on one long line (``FROM``,
    ``JOIN``, ``WHERE``, ``GROUP BY``…). Text written over lines, short text, and text the
    dialect's tokenizer cannot read are returned as they are."""
    text = sql.strip()
    if "\n" in text or len(text) <= _WRITTEN_WIDTH or not dialect:
        return text
    try:
        from sqlglot.dialects.dialect import Dialect

        tokens = Dialect.get_or_raise(dialect).tokenize(text)
    except Exception:  # display only: anything unreadable is shown as written
        return text
    breaks: list[int] = []
    depth = 0
    for index, token in enumerate(tokens):
        kind = token.token_type.name
        if kind == "L_PAREN":
            depth += 1
        elif kind == "R_PAREN":
            depth = max(depth - 1, 0)
        elif depth == 0 and index and kind in _CLAUSES:
            before = tokens[index - 1].token_type.name
            if kind == "FROM" and before == "DISTINCT":  # IS DISTINCT FROM
                continue
            if kind == "SELECT" and before in ("UNION", "INTERSECT", "EXCEPT", "ALL", "DISTINCT"):
                continue  # on the set operator's line
            first = index
            while kind == "JOIN" and first and tokens[first - 1].token_type.name in _JOIN_WORDS:
                first -= 1
            breaks.append(tokens[first].start)
    if not breaks:
        return text
    lines, start = [], 0
    for at in breaks:
        lines.append(text[start:at].rstrip())
        start = at
    lines.append(text[start:])
    return "\n".join(line for line in lines if line)
