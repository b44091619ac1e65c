"""Serialising the checked tree, within a budget: the last step of the SQL guard.

Why a budget: sqlglot's generator rewrites some nodes into forms that repeat their
arguments, and repeats compound when such nodes nest. SQLite has no ``GREATEST``, so
``GREATEST(GREATEST(a, 1), 2)`` becomes ``MAX(COALESCE(…a…), COALESCE(…a…))``; 18 levels
(259 characters of input) took 6.6 s and every level tripled it. The same holds for
``BETWEEN SYMMETRIC`` outside PostgreSQL, DuckDB's ``MONTHS_BETWEEN`` and ``x LIKE ANY (…)``,
MySQL's ``DATE_TRUNC`` — and for whatever a later rewrite adds, so the bound is not a list
of functions but a count: every node the generator dispatches is counted, and every piece of
text it returns is measured. Past a budget linear in the tree's size, or text longer than
:data:`~.rules.MAX_OUTPUT_CHARS`, generation stops and the
query is refused; what a normal query costs is one dispatch per node.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect, NormalizationStrategy
from sqlglot.errors import ErrorLevel

from relay_nb.sql.guard import rules
from relay_nb.sql.guard import text as guard_text

__all__ = ["DISPATCHES_PER_NODE", "generate", "quote_names"]

DISPATCHES_PER_NODE = 4
"""Generator dispatches allowed per node of the checked tree (plus a constant): rewrites that
repeat an argument once or twice, and nodes the rewrites add, fit; compounding does not."""

_SLACK = 1_000

Handler = Callable[..., str]

_budget = threading.local()
"""Dispatches left to the generation running on this thread (the guard runs in worker
threads, several at once under ``ask_many``)."""
_tables: dict[type, dict[type, Handler]] = {}
_tables_lock = threading.Lock()


def _counting_table(dialect: type, table: dict[type, Handler]) -> dict[type, Handler]:
    """``table`` with every handler counted and measured, built once per dialect (wrapping
    its ~600 handlers on every query cost more than the rest of the guard)."""
    counted = _tables.get(dialect)
    if counted is None:
        with _tables_lock:
            counted = _tables.setdefault(
                dialect, {cls: _counted(handler) for cls, handler in table.items()}
            )
    return counted


def _counted(handler: Handler) -> Handler:
    def dispatch(self: object, expression: exp.Expr) -> str:
        _budget.remaining -= 1
        if _budget.remaining < 0:
            raise _OverBudget
        text = handler(self, expression)
        if len(text) > rules.MAX_OUTPUT_CHARS:
            raise _OverBudget
        return text

    return dispatch


class _OverBudget(Exception):
    """Generation went past its budget of dispatches or characters."""


def generate(tree: exp.Expr, engine: Dialect, *, nodes: int) -> str:
    """Serialise in the same dialect; comments dropped, function names left as written.

    ``nodes`` is the size of the checked tree. ``unsupported_level=RAISE``: if the generator
    cannot express a node faithfully in this dialect, refusing beats running something else.
    """
    generator = engine.generator(
        comments=False, normalize_functions=False, unsupported_level=ErrorLevel.RAISE
    )
    # Athena's generator hands a query to a Trino generator it holds (DDL to a Hive one)
    generator = getattr(generator, "_trino_generator", generator)
    # the generator looks every node's handler up in this per-instance table; the counting
    # table is built once per dialect (MariaDB's generator is MySQL's with a table of its
    # own), the budget is this thread's
    generator._dispatch = _counting_table(type(engine), generator._dispatch)
    _budget.remaining = DISPATCHES_PER_NODE * nodes + _SLACK
    try:
        text = generator.generate(tree, copy=False)
    except _OverBudget:
        guard_text.refuse(
            "parse_error",
            f"the query grows past {rules.MAX_OUTPUT_CHARS} characters when written out in "
            "this dialect (functions it has to spell out, nested in each other, or sheer "
            "size); shorten it or simplify the nesting",
        )
    except Exception as error:  # UnsupportedError, or a generator bug: never run a guess
        guard_text.refuse(
            "parse_error",
            f"the query uses syntax that cannot be reproduced safely ({type(error).__name__})",
        )
    if len(text) > rules.MAX_OUTPUT_CHARS:
        guard_text.refuse(
            "parse_error", f"the query is longer than {rules.MAX_OUTPUT_CHARS} characters"
        )
    return text


def quote_names(tree: exp.Expr, engine: Dialect) -> None:
    """Quote every unquoted name in ``tree``, spelled as the engine folds it (``orders`` is
    ``"ORDERS"`` on Snowflake, ``"orders"`` on PostgreSQL), so it means the same name and
    can never be read as a keyword. The guard's fallback when the plain text does not read
    back; the name compares against the allowlist as before (``identifier_key``)."""
    strategy = engine.normalization_strategy
    for identifier in tree.find_all(exp.Identifier):
        if identifier.args.get("quoted") or not isinstance(identifier.this, str):
            continue
        if not isinstance(identifier.parent, _NAMING):  # a unit, a keyword argument: as written
            continue
        name = identifier.this
        if strategy is NormalizationStrategy.UPPERCASE:
            name = guard_text.upper(name)
        elif strategy is NormalizationStrategy.LOWERCASE:
            name = guard_text.fold(name)
        identifier.set("this", name)
        identifier.set("quoted", True)


_NAMING = (exp.Column, exp.Table, exp.TableAlias, exp.Alias)
"""The nodes whose identifiers are names of columns, tables and aliases."""
