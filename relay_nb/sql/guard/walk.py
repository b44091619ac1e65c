"""The guard's walk: every node of the parsed tree once, with the CTE names in scope.

Each node goes to its dialect family's rules for its kind (``policy.check``); a table
reference that no WITH in scope defines is noted as a base table, for :mod:`.tables` to
resolve against the allowlist. Time and memory are linear in the tree (a :class:`_Scope` is
shared by every node under one WITH position, never copied per node).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect, NormalizationStrategy

from relay_nb.sql.guard import rules
from relay_nb.sql.guard import text as guard_text
from relay_nb.sql.guard.policies import Findings, GuardPolicy

__all__ = ["ALWAYS_FOLDED", "STATEMENT_CLASSES", "identifier_key", "walk"]

STATEMENT_CLASSES = (*rules.STATEMENT_NODES, *rules.denied_statement_classes())


def walk(tree: exp.Expr, engine: Dialect, policy: type[GuardPolicy]) -> Findings:
    """Visit every node once, tracking which CTE names each node can see.

    A table reference is a CTE only when a WITH around it (not a sibling subquery's) defines
    that name *before* it — or the CTE itself, under RECURSIVE — compared by the dialect's
    identifier rules. Anything else is checked as a base table, so a CTE can shadow an allowed
    table but can never smuggle a non-allowed one through. Every node goes to the family's
    rules for its kind (``policy.check``).

    What a node sees is a :class:`_Scope` position, shared by every node under it: memory and
    time stay linear in the query however many CTEs it has (a set of visible names per CTE was
    quadratic: 4,000 CTEs in 100 KB cost 390 MB).
    """
    found = Findings()
    strategy = engine.normalization_strategy
    recursive_terms: dict[int, _Scope] = {}
    stack: list[tuple[exp.Expr, _Scope | None, int]] = [(tree, None, 0)]
    pop, push, extend = stack.pop, stack.append, stack.extend
    check, expression, deepest = policy.check, exp.Expr, rules.MAX_TREE_DEPTH
    nodes = 0
    while stack:
        node, scope, depth = pop()
        nodes += 1
        if recursive_terms:
            scope = recursive_terms.get(id(node), scope)
        kind, chain = _CLASS_FACTS.get(type(node)) or _class_facts(type(node))
        if kind:
            check(node, kind, found)
            if kind == "table":
                _note_table(node, scope, strategy, policy, found)  # type: ignore[arg-type]
        if depth >= deepest:
            found.add(0, "parse_error", _TOO_DEEP)
            continue  # nothing below is generated: the query is refused
        args = node.args
        with_ = args.get("with_")
        if isinstance(with_, exp.With):
            recursive = bool(with_.args.get("recursive")) or policy.implicit_recursion
            scope = _push_ctes(with_, recursive, scope, depth, strategy, stack, recursive_terms)
        for value in args.values():
            if type(value) is list:
                extend((v, scope, depth + 1) for v in value if isinstance(v, expression))
            elif isinstance(value, expression) and value is not with_:
                push((value, scope, depth if type(value) is chain else depth + 1))
    found.nodes = nodes
    return found


_TOO_DEEP = (
    f"the query nests more than {rules.MAX_TREE_DEPTH} levels deep (subqueries, chained "
    "casts or field accesses); flatten it, e.g. with CTEs"
)


class _Scope:
    """A position in the chain of WITH clauses: the CTEs of one WITH before ``limit``, then
    whatever the position around that WITH sees (``outer``).

    One ``names`` dict per WITH, one small object per CTE: a lookup walks the enclosing WITHs,
    as the database does, instead of every node carrying a copy of every visible name.
    """

    __slots__ = ("limit", "names", "outer")

    def __init__(self, names: dict[str, int], limit: int, outer: _Scope | None) -> None:
        self.names = names
        """Each CTE name of the WITH, by its first index."""
        self.limit = limit
        """CTEs at an index below this are visible."""
        self.outer = outer

    def sees(self, key: str) -> bool:
        scope: _Scope | None = self
        while scope is not None:
            index = scope.names.get(key)
            if index is not None and index < scope.limit:
                return True
            scope = scope.outer
        return False


def _push_ctes(
    with_: exp.With,
    recursive: bool,
    outer: _Scope | None,
    depth: int,
    strategy: NormalizationStrategy,
    stack: list[tuple[exp.Expr, _Scope | None, int]],
    recursive_terms: dict[int, _Scope],
) -> _Scope:
    """Queue each CTE with the names it can see; return the names the main query sees.

    CTE *i* sees the CTEs before it. Under RECURSIVE only the recursive term (the last branch
    of a UNION body) also sees CTE *i* itself: DuckDB resolves ``WITH RECURSIVE s AS (SELECT *
    FROM s)`` and the anchor branch to the *base table* ``s``. Forward references (SQLite
    resolves them to the later CTE) are checked as base tables: refusing is the safe error.
    ``recursive``: the WITH says RECURSIVE, or the family reads a CTE that names itself as
    recursive without it (Snowflake, SQLite: ``policy.implicit_recursion``).
    """
    names: dict[str, int] = {}
    for index, cte in enumerate(with_.expressions):
        if cte.args.get("scalar"):  # ClickHouse's WITH 100 AS n: a value, never a table
            continue
        names.setdefault(identifier_key(cte.args["alias"].this, strategy), index)
    for i, cte in enumerate(with_.expressions):
        body = cte.this
        if recursive and isinstance(body, exp.SetOperation) and body.expression is not None:
            recursive_terms[id(body.expression)] = _Scope(names, i + 1, outer)
        stack.append((cte, _Scope(names, i, outer), depth + 2))
    return _Scope(names, len(with_.expressions), outer)


def _note_table(
    table: exp.Table,
    scope: _Scope | None,
    strategy: NormalizationStrategy,
    policy: type[GuardPolicy],
    found: Findings,
) -> None:
    this = table.this
    if this is None or isinstance(this, exp.Func):
        if isinstance(this, exp.Func) and (table.args.get("db") or table.args.get("catalog")):
            found.add(4, "forbidden_function", "call table functions without a schema prefix")
        return  # ROWS FROM (…) or a table function: checked as functions
    bare = isinstance(this, exp.Identifier) and not table.args.get("db")
    if bare and not table.args.get("catalog"):
        if scope is not None and scope.sees(identifier_key(this, strategy)):
            return  # a CTE in scope
        if not this.quoted and guard_text.fold(this.name) in policy.pseudo_tables:
            # MySQL's DUAL is no table; sqlglot would quote it as `dual`, which is one
            table.set("this", exp.Var(this=this.name))
            return
    found.tables.append(table)


def _class_facts(cls: type[exp.Expr]) -> tuple[str, type[exp.Expr] | None]:
    """Which rule family a node class belongs to, and the class itself when it chains with
    its own kind (:data:`~.rules.ITERATED_CHAINS`): kept per class, so the walk does one
    dict lookup per node instead of ~150 ``isinstance`` checks."""
    kinds = (("command", rules.COMMAND_NODES), ("statement", STATEMENT_CLASSES), *_KINDS)
    kind = next((kind for kind, classes in kinds if issubclass(cls, classes)), "")
    facts = _CLASS_FACTS[cls] = (kind, rules.chain_class(cls))
    return facts


_CLASS_FACTS: dict[type, tuple[str, type[exp.Expr] | None]] = {}


_KINDS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("body", (exp.CTE, exp.Subquery)),
    ("select", exp.Select),
    ("into", exp.Into),
    ("lock", exp.Lock),
    ("hint", exp.Hint),
    ("variable", (exp.SessionParameter, exp.Parameter)),
    ("identifier", exp.Identifier),
    ("datatype", exp.DataType),
    ("assignment", exp.PropertyEQ),
    ("function", exp.Func),
    ("table", exp.Table),
    ("literal", exp.Literal),
    ("transform", exp.QueryTransform),
    ("rows_table", exp.TableFromRows),
    ("membership", exp.In),
)


ALWAYS_FOLDED = (
    NormalizationStrategy.CASE_INSENSITIVE,
    NormalizationStrategy.CASE_INSENSITIVE_UPPERCASE,
)


def identifier_key(identifier: exp.Expr, strategy: NormalizationStrategy) -> str:
    """How the database resolves a name, without mutating the tree (cf. sqlglot's own)."""
    name = identifier.name
    quoted = bool(identifier.args.get("quoted"))
    if strategy is NormalizationStrategy.CASE_SENSITIVE:
        return name
    if strategy in ALWAYS_FOLDED:
        return guard_text.fold(name)
    if quoted:
        return name
    if strategy is NormalizationStrategy.UPPERCASE:
        return guard_text.upper(name)
    return guard_text.fold(name)
