"""Bound how large a value a query can *build*, before it runs in the analyst's kernel
(DuckDB's and SQLite's: each family brings its own table and limits, ``SQLitePolicy``).

DuckDB runs inside the notebook's process. Its ``memory_limit`` bounds operators (a
``string_agg`` over millions of rows fails cleanly) but not scalar values, and an interrupt
only lands after a scalar function returns: ``SELECT repeat('x', 2000000000)`` allocates
4 GB, ``SELECT range(0, 500000000)`` 17 GB, in one call each. Refusing those spellings one
by one misses the next (``lpad``, ``printf('%1000000000d', 1)``, nested ``replace``,
``list_reduce(l, lambda a, x: a || a)``, a recursive CTE that doubles a string), so the rule
bounds the *size* of every value instead, from the parsed tree:

- every expression gets an upper bound ``A + Σ m_c·|c|`` (see :mod:`model`):
  concatenation adds, ``CASE``/``COALESCE`` take the larger branch, predicates and arithmetic
  are fixed-width, functions follow their kind in the family's table (``repeat`` multiplies,
  ``lpad`` sets an absolute width, ``hex`` doubles …; :mod:`kinds`);
- columns resolve through CTEs, subqueries, ``SELECT``-list aliases (DuckDB lets a
  projection reuse an earlier one: ``a || a AS b, b || b AS c`` doubles per step) and lambda
  parameters; aggregates and recursive CTEs count as stored values — their size is what the
  engine collected under its memory limit;
- a value may hold at most ``value_bytes`` built from constants and ``value_multiple`` copies
  of any stored value, and the values one row builds together at most ``query_bytes`` and
  ``query_multiple``. Why per row: DuckDB evaluates 2048-row vectors and keeps every
  intermediate vector of an expression alive while a chunk is processed — measured with
  DuckDB 2.0.1, one 64 KiB value per row peaks at 130 MB per thread, four at 533 MB (one
  thread) and 1076 MB (two); constant expressions are folded once (+2 MB for the same value
  repeated over a million rows), so the bound is conservative for them;
- a count that is not a literal (``repeat('█', cnt / 10)``) is rewritten in the tree to a
  bounded form that keeps every result under the bound (:mod:`counts`); what
  cannot be bounded is refused with ``value_too_large`` and a message saying what to write.

The rule runs once on the whole tree (policy rule kind ``"tree"``) and may rewrite counts in
place; the guard then serialises the tree, and guarding that text again reproduces it (the
rewritten counts read back as bounded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, TypeVar

from sqlglot import exp

from relay_nb.sql.guard.sizes.call import Call
from relay_nb.sql.guard.sizes.expansion import PLACEHOLDER, expansion
from relay_nb.sql.guard.sizes.kinds import KINDS
from relay_nb.sql.guard.sizes.model import (
    FIXED,
    FIXED_BYTES,
    LIST,
    TEXT_FACTOR,
    Lambda,
    Quadratic,
    Size,
    SizeLimits,
    SizeRule,
    TooLarge,
    Val,
    human,
    over_runs,
    per_run,
)
from relay_nb.sql.guard.sizes.nodes import handler as _handler
from relay_nb.sql.guard.sizes.plain import builds_no_value
from relay_nb.sql.guard.sizes.scope import Rel, Scope
from relay_nb.sql.guard.sizes.steps import check_growth
from relay_nb.sql.guard.text import fold

if TYPE_CHECKING:
    from relay_nb.sql.guard.policies.base import Findings, GuardPolicy

__all__ = ["PRIORITY", "RULE", "bound_value_sizes"]

_T = TypeVar("_T")

RULE = "value_too_large"
_WORK_PER_NODE = 16
_WORK_BASE = 10_000
"""Sizing is linear in the tree, except that a reducer's body and a recursive CTE's step are
sized twice (a probe, then the check): nesting them doubles the work per level, so the work is
capped and a query past the cap is refused (the guard stays bounded by its input's size)."""
PRIORITY = 5
"""After every other refusal: a forbidden function is the more fundamental problem."""

_FIXED = Val(Size(FIXED_BYTES), FIXED)


def bound_value_sizes(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """Policy rule for the kind ``"tree"``: size every value the query builds (the whole
    tree, given its root); rewrite counts that are not literals; report what cannot be
    bounded as ``value_too_large``. Families without a ``size_functions`` table get the
    generic SQL constructs only (concatenation, casts, lists, CTEs)."""
    table: Mapping[str, SizeRule] = getattr(policy, "size_functions", None) or {}
    prefixes: Mapping[str, SizeRule] = getattr(policy, "size_prefixes", None) or {}
    limits: SizeLimits = getattr(policy, "size_limits", None) or SizeLimits()
    text_factor: int = getattr(policy, "size_text_factor", None) or TEXT_FACTOR
    dialect = policy.dialects[0] if policy.dialects else ""
    if builds_no_value(node, limits):
        return  # nothing to bound: the analysis below could only agree (sizes/plain.py)
    try:
        sizer = _Sizer(node, table, prefixes, limits, dialect, text_factor)
        sizer.implicit_recursion = bool(getattr(policy, "implicit_recursion", False))
        sizer.run()
    except TooLarge as refusal:
        found.add(PRIORITY, RULE, refusal.message)
    except RecursionError:
        found.add(PRIORITY, RULE, "the query nests too deeply to bound its values; simplify it")


class _Sizer:
    """One analysis of one tree (the ``Context`` the kind handlers see)."""

    def __init__(
        self,
        root: exp.Expr,
        table: Mapping[str, SizeRule],
        prefixes: Mapping[str, SizeRule],
        limits: SizeLimits,
        dialect: str = "",
        text_factor: int = TEXT_FACTOR,
    ) -> None:
        self.root, self.table, self.prefixes, self.limits = root, table, prefixes, limits
        self.dialect, self.text_factor = dialect, text_factor
        self.cache: dict[tuple[int, int], Val] = {}
        self.seen: set[int] = set()
        self.scopes: dict[int, Scope] = {}
        self.frames: list[dict[str, Lambda]] = []
        self.names: list[dict[str, str]] = []
        self.context = 0
        self.contexts = 0
        self.probing = 0
        self.totals = Size()
        self._sql_length: int | None = None
        self.implicit_recursion = False
        """The family reads a self-naming CTE as recursive without ``RECURSIVE`` (SQLite)."""
        self.budget = _WORK_PER_NODE * sum(1 for _ in root.walk()) + _WORK_BASE

    # -- the Context protocol -----------------------------------------------------------

    @property
    def sql_length(self) -> int:
        if self._sql_length is None:
            self._sql_length = len(self.root.sql())
        return self._sql_length

    def fits(self, size: Size) -> bool:
        one = size
        for frame in reversed(self.frames):
            one = per_run(one, frame)
        return not one.exceeds(self.limits.value_bytes, self.limits.value_multiple)

    def key(self, node: exp.Expr) -> str:
        return "agg:" + node.sql()

    def apply(
        self,
        body: exp.Expr,
        params: Sequence[Lambda],
        *,
        probe: bool = False,
        extra: Iterable[exp.Expr] = (),
        scope: Scope | None = None,
    ) -> tuple[Val, dict[str, Lambda]]:
        if isinstance(body, exp.Lambda):
            self.mark(body)
            body = body.this
        self.contexts += 1
        frame = {f"\0{self.contexts}:{fold(p.name)}": p for p in params}
        outer_context, self.context = self.context, self.contexts
        self.frames.append(frame)
        self.names.append({fold(p.name): key for key, p in frame.items()})
        self.probing += probe
        try:
            scope = scope or self.scope_of(body)
            result = self.value(body, scope)
            for node in extra:
                self.value(node, scope)
        finally:
            self.probing -= probe
            self.names.pop()
            self.frames.pop()
            self.context = outer_context
        return result, frame

    # -- driving ------------------------------------------------------------------------

    def run(self) -> None:
        if isinstance(self.root, exp.Query | exp.Subquery):
            self.query(self.root, Scope())
        for node in self.root.walk():  # anything the scoped pass did not reach
            if id(node) in self.seen:
                continue
            if isinstance(node, exp.Query):
                self.query(node, Scope())
            elif isinstance(node, _VALUE_NODES):
                self.value(node, Scope())
        self.scopes.clear()

    def scope_of(self, node: exp.Expr) -> Scope:
        """The scope a lambda body was found in (recorded when its call was reached)."""
        parent = node
        while parent is not None:
            scope = self.scopes.get(id(parent))
            if scope is not None:
                return scope
            parent = parent.parent
        return Scope()

    def note(self, node: exp.Expr, val: Val) -> None:
        """Check one value against the per-value limits and add it to the row's total."""
        if self.probing:
            return
        if not self.fits(val.size):
            one = val.size
            for frame in reversed(self.frames):
                one = per_run(one, frame)
            limit = (
                f"{self.limits.value_multiple}x a stored value"
                if one.multiple > self.limits.value_multiple
                else human(self.limits.value_bytes)
            )
            raise TooLarge(
                f"{_label(node)} would build a value of up to {one.describe()} (the limit is "
                f"{limit}); use smaller counts or widths, or generate rows in FROM"
            )
        if isinstance(node, _PASS_THROUGH) or (isinstance(node, _ARITHMETIC) and val.kind != LIST):
            return
        total = val.size
        try:
            for frame in reversed(self.frames):
                total = over_runs(total, frame)
        except Quadratic:
            raise TooLarge(
                f"{_label(node)} adds a value from the data to every element of a list from "
                "the data, which has no size bound; unnest the list and join instead"
            ) from None
        self.totals = self.totals + total
        if self.totals.exceeds(self.limits.query_bytes, self.limits.query_multiple):
            raise TooLarge(
                f"the query builds up to {self.totals.describe()} per row in its expressions "
                f"(the limit is {human(self.limits.query_bytes)} and "
                f"{self.limits.query_multiple}x a stored value); build fewer or smaller values"
            )

    # -- queries ------------------------------------------------------------------------

    def query(self, node: exp.Expr, scope: Scope) -> Rel:
        self.mark(node)
        if isinstance(node, exp.Subquery | exp.Paren):
            rel = self.query(node.this, scope)
            self.rest(node, scope, skip={"this"})
            return rel
        inner = scope.child()
        with_ = node.args.get("with_")
        if isinstance(with_, exp.With):
            self.ctes(with_, inner)
        if isinstance(node, exp.SetOperation):
            return self.set_operation(node, inner)
        if isinstance(node, exp.Select):
            return self.select(node, inner)
        if isinstance(node, exp.Values):
            return self.values(node, inner)
        return Rel(rest=self.value(node, inner))

    def set_operation(self, node: exp.SetOperation, scope: Scope) -> Rel:
        """``a UNION ALL b UNION ALL …`` nests as deep as it is long: sized in a loop down its
        left side (each branch in a scope of its own, as recursion gave it), so a long chain
        is decided the same at any depth of the caller's stack."""
        chain = [(node, scope)]
        while isinstance(left := chain[-1][0].this, exp.SetOperation) and not isinstance(
            left.args.get("with_"), exp.With
        ):
            self.mark(left)
            chain.append((left, chain[-1][1].child()))
        bottom, inner = chain[-1]
        rel = self.query(bottom.this, inner)
        for link, inner in reversed(chain):
            rel = rel.union(self.query(link.expression, inner))
            self.rest(link, inner, skip={"this", "expression", "with_"})
        return rel

    def ctes(self, with_: exp.With, scope: Scope) -> None:
        self.mark(with_)
        # SQLite reads a CTE that names itself as recursive without the keyword
        recursive = bool(with_.args.get("recursive")) or self.implicit_recursion
        for cte in with_.expressions:
            self.mark(cte)
            name, body = fold(cte.alias_or_name), cte.this
            columns = [fold(c.name) for c in cte.args["alias"].columns]
            if recursive and isinstance(body, exp.SetOperation):
                rel = self.recursive(name, body, columns, scope)
            else:
                rel = self.query(body, scope).renamed(columns)
            scope.ctes[name] = rel

    def recursive(self, name: str, body: exp.SetOperation, columns: list[str], scope: Scope) -> Rel:
        """A recursive CTE may add to a value per step (a path ``p || '/' || name``: bounded
        steps for SQLite, :mod:`steps`), never combine two recursive values
        (``s || s`` doubles per step: 2^40 bytes in 40 steps).

        The step is sized twice: a probe learns what kind of value each column becomes (a
        stored column of any type turns into text after ``|| '/'``), then the step is sized
        with the columns as symbols of that kind, and no column may hold more than one copy
        of them (text conversion included: quoting a list of text doubles its quotes).
        """
        self.mark(body)
        anchor = self.query(body.this, scope).renamed(columns)
        keys = [f"rec:{name}.{index}" for index in range(len(anchor.order))]
        scope.ctes[name] = anchor.symbolic(keys)
        probe = self.in_context(lambda: self.query(body.expression, scope), probe=True)
        scope.ctes[name] = anchor.symbolic(keys, [val.kind for val in probe.order])
        step = self.in_context(lambda: self.query(body.expression, scope)).renamed(columns)
        self.rest(body, scope, skip={"this", "expression", "with_"})
        for val in step.order:
            if sum(val.size.coefficient(key) for key in keys) > 1:
                raise TooLarge(
                    f"the recursive CTE {name} multiplies a value at every step (col || col), so "
                    "it grows exponentially; only add to it per step (col || 'x')"
                )
        if self.limits.bounded_recursion and not self.probing:
            check_growth(name, body, columns, anchor, step, keys, self.limits)
        return anchor.symbolic(keys)

    def in_context(self, run: Callable[[], _T], *, probe: bool = False) -> _T:
        """Run a sizing pass with a fresh cache context (a second look at the same nodes)."""
        self.contexts += 1
        outer, self.context = self.context, self.contexts
        self.probing += probe
        try:
            return run()
        finally:
            self.probing -= probe
            self.context = outer

    def select(self, node: exp.Select, scope: Scope) -> Rel:
        skip = {"expressions", "from_", "joins", "with_"}
        sources = [node.args["from_"].this] if node.args.get("from_") else []
        sources += [join.this for join in node.args.get("joins") or []]
        for index, source in enumerate(sources):
            name, rel = self.source(source, scope)
            scope.sources[name or f"\0{index}"] = rel  # unaliased subqueries: all of them
        for join in node.args.get("joins") or []:
            self.mark(join)
            self.rest(join, scope, skip={"this"})
        if node.args.get("from_"):
            self.mark(node.args["from_"])
        rel = Rel()
        for projection in node.expressions:
            if isinstance(projection, exp.Star) or _is_qualified_star(projection):
                rel.absorb(scope.star(projection))
                for replaced in projection.args.get("replace") or []:
                    rel.add(fold(replaced.alias_or_name), self.value(replaced, scope))
                self.rest(projection, scope, skip={"replace"})
                continue
            val = self.value(projection, scope)
            name = fold(projection.alias_or_name)
            rel.add(name, val)
            if name:
                scope.aliases[name] = val
        self.rest(node, scope, skip=skip)
        return rel

    def source(self, node: exp.Expr, scope: Scope) -> tuple[str, Rel]:
        alias = node.args.get("alias")
        columns = [fold(c.name) for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
        name = fold(node.alias_or_name)
        self.mark(node)
        target = node.this if isinstance(node, exp.Lateral | exp.Table) else node
        if isinstance(node, exp.Table) and isinstance(target, exp.Identifier):
            rel = scope.table(node)
        elif isinstance(target, exp.Query | exp.Subquery):
            rel = self.query(target, scope)
        elif isinstance(target, exp.Values):
            rel = self.values(target, scope)
        elif isinstance(target, exp.Unnest | exp.Explode):
            rel = Rel(rest=self.elements(target, scope))
        elif isinstance(target, exp.Func):  # a table function streams rows: size its arguments
            self.mark(target)
            size = Size(FIXED_BYTES)
            for arg in _arguments(target):
                size = size + self.value(arg, scope).size
            rel = Rel(rest=Val(size.scale(4)))
        else:
            rel = Rel(rest=self.value(target, scope))
        self.rest(node, scope, skip={"this", "alias", "expressions"})
        return name, rel.renamed(columns)

    def values(self, node: exp.Values, scope: Scope) -> Rel:
        rel: Rel | None = None
        for row in node.expressions:
            cells = row.expressions if isinstance(row, exp.Tuple) else [row]
            self.mark(row)
            this = Rel()
            for cell in cells:
                this.add("", self.value(cell, scope))
            rel = this if rel is None else rel.union(this)
        return rel or Rel()

    def elements(self, node: exp.Expr, scope: Scope) -> Val:
        """``unnest(l)`` / ``FROM unnest(l)``: one element at a time."""
        self.mark(node)
        result = Size()
        for arg in _arguments(node):
            result = result.join(self.value(arg, scope).element().size)
        return Val(result)

    def rest(self, node: exp.Expr, scope: Scope, skip: set[str]) -> None:
        """Size the arguments no handler looked at (WHERE, ORDER BY, window frames …)."""
        for key, value in node.args.items():
            if key in skip:
                continue
            for child in value if isinstance(value, list) else [value]:
                if not isinstance(child, exp.Expr) or (id(child), self.context) in self.cache:
                    continue
                if isinstance(child, exp.Query):
                    self.query(child, scope)
                else:
                    self.value(child, scope)

    # -- values ---------------------------------------------------------------------------

    def value(self, node: exp.Expr, scope: Scope | None = None) -> Val:
        key = (id(node), self.context)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        self.budget -= 1
        if self.budget < 0:
            raise TooLarge(
                "the query nests reducers or recursive CTEs too deeply to bound its values in "
                "reasonable time; simplify it"
            )
        scope = scope if scope is not None else self.scope_of(node)
        self.mark(node)  # a cycle (never expected) reads as a fixed value
        val = _handler(type(node))(self, node, scope)
        self.record(node, val)
        return val

    def record(self, node: exp.Expr, val: Val) -> None:
        """A node's bound is known: keep it, check it, add it to the row's total."""
        self.cache[(id(node), self.context)] = val
        self.seen.add(id(node))
        self.note(node, val)

    def mark(self, node: exp.Expr) -> None:
        """Record a node as handled (not a value of its own: a clause, a CTE, a join)."""
        self.cache[(id(node), self.context)] = _FIXED
        self.seen.add(id(node))

    def call(self, node: exp.Func, scope: Scope, receiver: exp.Expr | None = None) -> Val:
        self.scopes.setdefault(id(node), scope)
        args = ([receiver] if receiver is not None else []) + _arguments(node)
        name = _name(node)
        rule = self.rule(node)
        if rule is None and receiver is None and self.dialect and not _is_anonymous(node):
            expanded = expansion(node, self.dialect)
            if expanded is not None:
                return self.expanded(node, *expanded, scope)
        vals = [Val(Size()) if isinstance(a, exp.Lambda) else self.value(a, scope) for a in args]
        if rule is None:  # not in the table: its result is fixed-width (the tests check the
            return _FIXED  # table against every function of the engine and of sqlglot)
        return KINDS[str(rule[0])](Call(self, node, name, args, rule, vals))

    def expanded(
        self, node: exp.Func, tree: exp.Expr, stand_ins: list[exp.Expr], scope: Scope
    ) -> Val:
        """Size the SQL a function is generated as (:mod:`.expansion`)."""
        for arg in node.iter_expressions():
            if not any(arg is stand_in for stand_in in stand_ins):
                self.mark(arg)  # constants copied into the template
        vals = [self.value(arg, scope) for arg in stand_ins]
        params = [
            Lambda(PLACEHOLDER.format(index), val, Size(1), val.size)
            for index, val in enumerate(vals)
        ]
        before = tree.sql(dialect=self.dialect)
        one, keys = self.apply(tree, params, scope=scope)
        if tree.sql(dialect=self.dialect) != before:
            runs_as = tree.sql(dialect=self.dialect).split("(", 1)[0].lower()
            raise TooLarge(
                f"{_name(node)}() runs as {runs_as}(…), whose size depends on the data; "
                f"write {runs_as}(…) yourself"
            )
        return Val(per_run(one.size, keys), one.kind, one.items, one.elem, top=one.top)

    def rule(self, node: exp.Func) -> SizeRule | None:
        for name in _names(type(node)) if not _is_anonymous(node) else (fold(node.name),):
            rule = self.table.get(name)
            if rule is not None:
                return rule
            for prefix, prefixed in self.prefixes.items():
                if name.startswith(prefix):
                    return prefixed
        return None


def _label(node: exp.Expr) -> str:
    if isinstance(node, exp.Func):
        return f"{_name(node)}()"
    if isinstance(node, exp.DPipe):
        return "a || concatenation"
    if isinstance(node, exp.Add | exp.Sub):
        return "a sum (numbers, or lists added with +)"
    return f"a {node.key} expression"


def _name(node: exp.Func) -> str:
    """The name to show the model: as written for unknown functions, DuckDB's otherwise."""
    if _is_anonymous(node):
        return fold(node.name)
    if isinstance(node, exp.GenerateSeries):
        return "range" if node.args.get("is_end_exclusive") else "generate_series"
    if isinstance(node, exp.Pad):
        return "lpad" if node.args.get("is_left") else "rpad"
    return _SHOWN.get(type(node)) or _names(type(node))[0]


_SHOWN: dict[type[exp.Expr], str] = {
    exp.TimeToStr: "strftime",
    exp.Split: "string_split",
    exp.RegexpSplit: "string_split_regex",
    exp.Transform: "list_transform",
    exp.ArrayFilter: "list_filter",
}


def _is_anonymous(node: exp.Expr) -> bool:
    return isinstance(node, exp.Anonymous | exp.AnonymousAggFunc)


@cache
def _names(cls: type[exp.Func]) -> tuple[str, ...]:
    return (*(fold(name) for name in cls.sql_names()), cls.key)


def _arguments(node: exp.Expr) -> list[exp.Expr]:
    """A call's arguments in order: sqlglot's named arguments as DuckDB's positions."""
    if _is_anonymous(node):
        return [arg for arg in node.expressions if isinstance(arg, exp.Expr)]
    out: list[exp.Expr] = []
    for key in type(node).arg_types:
        value = node.args.get(key)
        if isinstance(value, exp.Expr):
            out.append(value)
        elif isinstance(value, list):
            out.extend(item for item in value if isinstance(item, exp.Expr))
    return out


def _is_qualified_star(node: exp.Expr) -> bool:
    return isinstance(node, exp.Column) and isinstance(node.this, exp.Star)


_VALUE_NODES = (
    exp.Func,
    exp.Binary,
    exp.Unary,
    exp.Case,
    exp.Array,
    exp.Struct,
    exp.Bracket,
    exp.Dot,
)
_PASS_THROUGH = (
    exp.Column, exp.Identifier, exp.Literal, exp.Null, exp.Boolean, exp.Paren, exp.Alias,
    exp.Star, exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least,
    exp.Subquery, exp.Ordered, exp.PropertyEQ, exp.Window, exp.Lambda, exp.Columns,
)  # fmt: skip
"""Nodes that pass a value through (or pick one) rather than build one: not summed."""
_ARITHMETIC = (exp.Add, exp.Sub)
"""Sums of numbers build nothing; sized like list additions (they may be), summed only for
lists: otherwise ``a + b + … + z`` would count every partial sum."""
