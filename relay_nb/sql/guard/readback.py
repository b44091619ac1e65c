"""The guard's last check, made cheap: the text that will run must read back as the tree that
was checked.

The generator can write text the database reads differently from the tree it came from:
MySQL reads ``#`` as a comment, so ``a #- b LIMIT 201`` loses its LIMIT; a missing pair of
parentheses regroups an expression; a dialect transform rewrites a node into others that were
never walked. The guard used to prove the opposite by guarding its own output a second time —
tokens, parse, walk, value sizes, tables, LIMIT, generation — and requiring the same text
back. That second pass was half of every query's guard time.

This module checks the same thing by construction. Before the tree is written out, its
:func:`shape` is recorded: every node's class and every argument, in order, exactly (strings
case and all).
Then the written text goes through the same text front end as the model's (NUL and length,
tokens, executable comments, one statement, leading keyword, nesting, subscripts), is parsed
in the same dialect, has the same as-written spellings kept, and its shape must be the
recorded one. If it is:

- the database reads (as far as sqlglot models it, the assumption the whole guard rests on)
  exactly the tree that was checked: every node of it was walked by the rules, or is one the
  guard itself wrote after the walk (the LIMIT, the ``LIMIT … BY`` wrapper, a bounded count
  from the value-size rule) — guard-written shapes the rules accept;
- generating that tree again gives the same text (generation is a function of the tree), so
  the text is the guard's fixed point, which is what the second pass required.

If it is not (the generator added parentheses, spelled a function out, or wrote something
else), the guard runs the full second pass as before: nothing the second pass accepted is
refused, and nothing it refused is accepted. ``tests/connectors/test_guard_readback.py``
checks both directions on every corpus and on the fuzzers' queries.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from relay_nb.errors import UnsafeQueryError
from relay_nb.sql.guard import rules
from relay_nb.sql.guard import text as guard_text
from relay_nb.sql.guard.policies import GuardPolicy
from relay_nb.sql.guard.policies.as_written import keep_as_written

__all__ = ["MAX_OUTPUT_TOKENS", "reads_back", "shape"]

MAX_OUTPUT_TOKENS = 2 * rules.MAX_TOKENS
"""The generated text may hold more tokens than the model's (quotes, a LIMIT, a wrapper)."""

_END = object()
"""Closes a node's arguments in a shape, so two nodes' arguments can never run together."""
_CHILD = object()
"""Stands in a shape for a node or list whose record comes later."""


def shape(tree: exp.Expr) -> list[object] | None:
    """The tree as a flat list of records, a node's or a list's each: a node's class, then
    for each of its present arguments in their order the key and the value, then an end
    mark; a list's length, then its items. A value that is a string, a number, a flag or an
    enum member is written in place as its type and value; a node or a list is written as a
    child mark, its own record following later, after every record already due (first in,
    first out).

    The encoding reads back unambiguously, so two trees have equal shapes exactly when they
    have the same classes and arguments in the same order (an argument set to ``None`` is an
    absent one: ``args.get`` reads them alike). Strings compare exactly, case and all, unlike
    sqlglot's own ``==``, which folds them. Comments and sqlglot's private metadata are no part
    of what runs and are left out. One plain loop, no sorting, the leaves written without a
    trip through the queue: this runs twice per query.

    ``None`` when a node lies as deep as the walk's ``MAX_TREE_DEPTH``, counted as the walk
    counts (a link of a chain of one kind, :data:`~.rules.ITERATED_CHAINS`, adds no
    level; an item of a list one): nodes the guard adds after its walk (a bounded count) may
    deepen a tree, and only the full second pass may judge that depth. A long ``WHERE a AND
    b AND …`` reads back in one pass.
    """
    flat: list[object] = []
    append = flat.append
    due: list[tuple[exp.Expr | list[object], int]] = [(tree, 0)]
    later = due.append
    expression, child, end, limit = exp.Expr, _CHILD, _END, rules.MAX_TREE_DEPTH
    chain_class = rules.chain_class
    for item, depth in due:  # grows as it goes: the records still to write
        if isinstance(item, list):  # queued only as exact lists (below), so type(…) is list
            append(len(item))
            for value in item:
                if isinstance(value, expression) or type(value) is list:
                    append(child)
                    later((value, depth))
                else:
                    append((type(value), value))
            continue
        if depth >= limit:
            return None
        kind = type(item)
        append(kind)
        chain = chain_class(kind)
        for key, value in item.args.items():
            if value is None:
                continue
            append(key)
            if isinstance(value, expression) or type(value) is list:
                append(child)
                later((value, depth if type(value) is chain else depth + 1))
            else:
                append((type(value), value))
        append(end)
    return flat


def reads_back(
    sql: str, expected: list[object] | None, engine: Dialect, policy: type[GuardPolicy]
) -> bool:
    """Whether ``sql``, read as the database would, is exactly the tree whose :func:`shape` is
    ``expected``; ``False`` if not or if the text front end refuses it."""
    try:
        tree, statement = guard_text.read_statement(
            sql, engine, policy.leading_keywords, (rules.MAX_OUTPUT_CHARS, MAX_OUTPUT_TOKENS)
        )
        keep_as_written(tree, statement, policy.as_written)
    except UnsafeQueryError:
        return False
    return expected is not None and shape(tree) == expected
