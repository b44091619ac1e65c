"""Where a column's size comes from, in the size analysis: relations and scopes.

A column of a base table is a stored value (its size is ``|c|``, keyed by its name). A column
of a CTE, a subquery or ``VALUES`` is whatever that query built, so ``WITH t AS (SELECT
repeat('x', 60000) AS s) SELECT s || s FROM t`` is 120 000 bytes, not two stored values.
Names resolve the way DuckDB can resolve them, and when more than one reading is possible
the bound covers all of them: a name may be a table's column, an earlier ``SELECT``-list
alias (``SELECT a || a AS b, b || b AS c``) or a column of the enclosing query (correlated).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from relay_nb.sql.guard.sizes.model import ANY, Size, Val
from relay_nb.sql.guard.text import fold

__all__ = ["Rel", "Scope"]


def _join(a: Val | None, b: Val) -> Val:
    if a is None:
        return b
    return Val(a.size.join(b.size), a.kind if a.kind == b.kind else ANY)


@dataclass
class Rel:
    """The columns a relation produces, with a bound on each."""

    names: dict[str, Val] = field(default_factory=dict)
    ordered: list[tuple[str, Val]] = field(default_factory=list)
    rest: Val | None = None
    """A bound on any column this relation has but does not name (``*`` over a derived one,
    a table function's columns)."""
    stored: bool = False
    """A base table: a name it does not list is one of its stored columns."""

    @property
    def order(self) -> list[Val]:
        return [val for _, val in self.ordered]

    def add(self, name: str, val: Val) -> None:
        self.ordered.append((name, val))
        if name:
            self.names[name] = _join(self.names.get(name), val)

    def column(self, name: str) -> Val | None:
        if name in self.names:
            return self.names[name]
        if self.stored:
            return Val(Size.stored(name))
        return self.rest

    def all(self) -> Val:
        """Any one column (a scalar subquery's value, ``COLUMNS(*)``, ``#1``)."""
        result = self.rest
        for val in self.order:
            result = _join(result, val)
        if self.stored:
            result = _join(result, Val(Size.stored("*")))
        return result if result is not None else Val(Size())

    def row(self) -> Size:
        """The whole row as one value: DuckDB reads a relation's bare name in an expression
        as a struct of all its columns (``SELECT t FROM t``, ``SELECT cte FROM cte``)."""
        total = Size()
        for val in self.order:
            total = total + val.size
        if self.rest is not None:
            total = total + self.rest.size
        if self.stored:
            total = total + Size.stored("*")
        return total

    def absorb(self, other: Rel) -> None:
        """``SELECT *``: another relation's columns become ours."""
        for name, val in other.ordered:
            self.add(name, val)
        if other.rest is not None:
            self.rest = _join(self.rest, other.rest)
        self.stored = self.stored or other.stored

    def renamed(self, columns: list[str]) -> Rel:
        """``AS t(a, b)`` / ``cte(a, b)``: the columns by position get these names."""
        if not columns:
            return self
        out = Rel(rest=self.rest, stored=self.stored)
        for index, name in enumerate(columns):
            if index < len(self.ordered):
                out.add(name, self.ordered[index][1])
            else:
                val = self.column(name) if self.stored else self.rest
                out.add(name, val if val is not None else Val(Size.stored(name)))
        for name, val in self.ordered[len(columns) :]:
            out.add(name, val)
        return out

    def union(self, other: Rel) -> Rel:
        """``UNION``: columns by position, named as the left side names them."""
        out = Rel(rest=self.rest, stored=self.stored or other.stored)
        if other.rest is not None:
            out.rest = _join(out.rest, other.rest)
        right = other.order
        for index, (name, val) in enumerate(self.ordered):
            out.add(name, _join(val, right[index]) if index < len(right) else val)
        for val in right[len(self.ordered) :]:
            out.add("", val)
        return out

    def symbolic(self, keys: list[str], kinds: list[str] | None = None) -> Rel:
        """A recursive CTE's columns (by position) as symbols: what its step sees, of the
        kinds its step produces, and its result — values the engine collected step by step
        in working tables that count against its memory limit, counted as stored values."""
        out = Rel(rest=self.rest, stored=self.stored)
        for index, (name, val) in enumerate(self.ordered):
            kind = val.kind
            if kind == ANY and kinds is not None and index < len(kinds):
                kind = kinds[index]
            out.add(name, Val(Size.stored(keys[index]), kind) if index < len(keys) else val)
        return out


@dataclass
class Scope:
    """The names an expression can see."""

    sources: dict[str, Rel] = field(default_factory=dict)
    aliases: dict[str, Val] = field(default_factory=dict)
    ctes: dict[str, Rel] = field(default_factory=dict)
    outer: Scope | None = None

    def child(self) -> Scope:
        return Scope(ctes=dict(self.ctes), outer=self)

    def table(self, node: exp.Table) -> Rel:
        name = fold(node.name)
        if not node.args.get("db") and name in self.ctes:
            return self.ctes[name]
        return Rel(stored=True)

    def star(self, projection: exp.Expr) -> Rel:
        out = Rel()
        if isinstance(projection, exp.Column) and projection.table:
            source = self.find(fold(projection.table))
            if source is not None:
                out.absorb(source)
            return out
        for rel in self.sources.values():
            out.absorb(rel)
        if not self.sources:
            out.stored = True
        replaced = projection.args.get("replace") or []
        for alias in replaced:
            if isinstance(alias, exp.Alias):
                out.names.pop(fold(alias.alias), None)
        return out

    def find(self, name: str) -> Rel | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.sources:
                return scope.sources[name]
            scope = scope.outer
        return None

    def everything(self) -> Val:
        """Any column of any source (``COLUMNS(*)``, ``#1``)."""
        result: Val | None = None
        for rel in self.sources.values():
            result = _join(result, rel.all())
        return result if result is not None else Val(Size.stored("*"))

    def column(self, parts: list[str]) -> Val:
        """``a``, ``t.a``, ``s.t.a``, ``struct_col.field``: the bound of the value read."""
        for index, part in enumerate(parts[:-1]):
            source = self.find(part)
            if source is not None:
                found = source.column(parts[index + 1])
                return found if found is not None else Val(Size.stored(parts[index + 1]))
        name = parts[0]
        scope: Scope | None = self
        while scope is not None:
            result: Val | None = None
            for rel in scope.sources.values():
                found = rel.column(name)
                if found is not None:
                    result = _join(result, found)
            if name in scope.aliases:
                result = _join(result, scope.aliases[name])
            whole = scope.sources.get(name)
            if whole is not None:  # or the relation's whole row (a base table's columns are
                result = _join(result, Val(whole.row()))  # not known: both readings)
            if result is not None:
                return result
            scope = scope.outer
        return Val(Size.stored(name))
