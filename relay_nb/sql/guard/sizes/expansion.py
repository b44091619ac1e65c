"""Functions sqlglot writes out as other SQL: size what will run, not what was parsed.

The parser knows hundreds of functions from other dialects, and the DuckDB generator emits
many of them as DuckDB SQL of another shape: space(n) becomes REPEAT(' ', n),
generate_date_array(a, b) GENERATE_SERIES(a, b, INTERVAL '1' DAY), randstr(n, s) a subquery
over generate_series(1, n). A function the family's table does not list is generated once
with its non-constant arguments replaced by placeholders; when what comes out is another
function, that SQL is sized instead (the sizer's ``expanded``), the placeholders bound to the
arguments' sizes like lambda parameters. Constant arguments stay in: transpilation may depend
on them.
"""

from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from relay_nb.sql.guard.sizes import counts

__all__ = ["PLACEHOLDER", "expansion"]

PLACEHOLDER = "__relay_arg{}"

_KEPT = (exp.Literal, exp.Null, exp.Boolean, exp.Var, exp.DataType, exp.Interval, exp.Star)


def expansion(node: exp.Func, dialect: str) -> tuple[exp.Expr, list[exp.Expr]] | None:
    """The SQL ``node`` is generated as when it is another function (placeholders for its
    non-constant arguments, which are returned in placeholder order), or ``None``."""
    stand_ins: list[exp.Expr] = []
    values: dict[str, object] = {}
    for key, value in node.args.items():
        if isinstance(value, exp.Expr):
            values[key] = _stand_in(value, stand_ins)
        elif isinstance(value, list):
            values[key] = [_stand_in(v, stand_ins) if isinstance(v, exp.Expr) else v for v in value]
        else:
            values[key] = value
    shallow = type(node)(**values)
    template = _template(shallow.sql(dialect=dialect, unsupported_level=ErrorLevel.IGNORE), dialect)
    if template is None or type(template) is type(node):
        return None
    return template.copy(), stand_ins


def _stand_in(value: exp.Expr, stand_ins: list[exp.Expr]) -> exp.Expr:
    if isinstance(value, _KEPT) or counts.constant(value):
        return value.copy()
    stand_ins.append(value)
    return exp.column(PLACEHOLDER.format(len(stand_ins) - 1))


@lru_cache(maxsize=512)
def _template(sql: str, dialect: str) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except Exception:  # the guard refuses what cannot be generated and parsed again
        return None
