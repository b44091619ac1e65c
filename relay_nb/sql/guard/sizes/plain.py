"""Trees that build no value: the value-size rule's fast path.

Most analysts' queries read stored values and compare, join, group, count and order them:
``SELECT region, SUM(amount) FROM orders WHERE status = 'paid' GROUP BY 1``. No node of such
a tree can make a value larger than one stored value (a column, one branch of a ``CASE``, a
``MIN``) or a number, so the whole analysis of :mod:`.sizer` could only agree
that it fits. :func:`builds_no_value` says so from one walk over the node types, checked
exactly (a subclass of a listed type is not trusted), within the rule's own limits: fewer
nodes than copies of a stored value a query may hold (``query_multiple``), and no more
constant text than one value may (``value_bytes``). Anything else — a function outside the
list, a cast, a concatenation, a recursive CTE, a table function — takes the full analysis.
``tests/connectors/test_guard_sizes_plain.py`` checks, over public and adversarial corpora,
that the full analysis finds nothing in every tree this passes.
"""

from __future__ import annotations

from sqlglot import exp

from relay_nb.sql.guard.sizes.model import SizeLimits
from relay_nb.sql.guard.text import fold

__all__ = ["builds_no_value"]

_PLAIN: frozenset[type[exp.Expr]] = frozenset(
    {
        # the statement's structure and names
        exp.Select, exp.From, exp.Join, exp.Where, exp.Group, exp.Having, exp.Order,
        exp.Ordered, exp.Limit, exp.Offset, exp.Distinct, exp.Subquery, exp.Union,
        exp.Intersect, exp.Except, exp.With, exp.CTE, exp.Table, exp.TableAlias, exp.Alias,
        exp.Column, exp.Identifier, exp.Star, exp.Paren,
        # constants (their text is bounded below)
        exp.Literal, exp.Null, exp.Boolean,
        # conditions: a boolean
        exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is,
        exp.In, exp.Between, exp.Like, exp.ILike, exp.Exists,
        # one of their arguments' values
        exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Min, exp.Max, exp.Lag, exp.Lead,
        exp.FirstValue, exp.LastValue,
        # aggregates and ranks: a number
        exp.Count, exp.Sum, exp.Avg, exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile,
        exp.Window, exp.WindowSpec,
    }
)  # fmt: skip
"""Not here, though they look harmless: arithmetic (DuckDB's ``+`` concatenates lists, so
``l + l`` doubles a value, and a chain of CTEs doubles it again at each step), a row value
``(a, b, …)`` (DuckDB builds a struct of its copies), and anything the dialect writes as a
function sqlglot does not know."""


_ONE_OF = frozenset({exp.Min, exp.Max})
"""One stored value only with one argument (``max(x)``)."""


def builds_no_value(root: exp.Expr, limits: SizeLimits) -> bool:
    """Whether no value the tree computes can be larger than one stored value or a number,
    within ``limits`` (module docstring); False sends the tree to the full analysis."""
    constants = 0
    stars = 0
    bare: set[str] = set()
    relations: set[str] = set()
    for nodes, node in enumerate(root.walk(), 1):
        kind = type(node)
        if nodes >= limits.query_multiple or kind not in _PLAIN:
            return False
        if kind is exp.With and (
            node.args.get("recursive")
            or any(isinstance(c.this, exp.SetOperation) for c in node.expressions)
        ):
            return False  # a step may add to a value (SQLite recurses without RECURSIVE)
        if kind in _ONE_OF and (node.args.get("count") is not None or node.expressions):
            return False  # DuckDB's max(x, n): a list of n values; greatest(a, b, …)
        if kind is exp.Star:
            stars += 1
            if stars > 1:
                return False  # ``SELECT *, *`` over ``SELECT *, *``…: copies per row double
        if isinstance(node, exp.Column) and not node.table:
            bare.add(fold(node.name))
        elif kind is exp.Table or kind is exp.TableAlias:
            relations.add(fold(node.name))
        if kind is exp.Literal:
            text = str(node.this)
            if text.lstrip()[:1] in ("[", "{"):
                return False  # DuckDB may read it as a list: 16 bytes an element
            constants += len(text)
            if constants > limits.value_bytes:
                return False
    # DuckDB reads a relation's bare name as its whole row (a struct of its columns)
    return not (bare & relations)
