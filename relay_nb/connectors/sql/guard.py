"""The SQL guard: parse, don't scan keywords.

A model-written query is tokenised and parsed with sqlglot in the connector's own dialect,
every node of the tree is checked, the LIMIT is set in the tree, and the tree is serialised
again: that re-serialised text, never the input string, is what runs. Keyword scanners (strip
comments, regex for ``DELETE``, append ``LIMIT``) are bypassed by writable CTEs,
``SELECT … INTO``, side-effect functions, comment tricks and limits hidden in strings; a tree
has none of those ambiguities, and whatever the parser did not understand is refused.

The pipeline, each step a small function::

    tokenize -> refuse executable comments -> one statement -> leading keyword
      -> nesting depth and array subscripts bounded (on tokens, before the parser recurses)
      -> parse (again with comments as spaces, if only they split ``ORDER /* … */ BY``)
      -> query root -> walk every node (statements, commands, INTO, locks, hints,
         variables, functions, table functions, tables with CTE scoping, tree depth)
      -> tables against the allowlist -> LIMIT injected/clamped -> shape recorded
      -> generate (within a budget)
    then the generated text must read back as exactly that tree (the text front end and the
    parse again, :mod:`~relay_nb.connectors.sql.guard_readback`); where it does not, the
    whole pipeline runs again over it and must reproduce it exactly

Every step costs time and memory linear in the input (DESIGN §11): the bounds in
:mod:`~relay_nb.connectors.sql.guard_rules` (``MAX_*``) cut off the shapes that would not be
(deep nesting, chained subscripts, rewrites that repeat their arguments), and
``tests/connectors/test_guard_cost.py`` measures each shape near the size limit.

Every refusal is ``UnsafeQueryError(rule, message)``; the rule names are in :data:`RULES` and
are stable, the message tells the model what to change; it may name the offending table or
function and, for a parse error, up to 30 characters around it — never the whole query. What
every dialect refuses is data, in :mod:`relay_nb.connectors.sql.guard_rules`; what one dialect
family adds (its rules, table functions, names) is its policy class in
:mod:`relay_nb.connectors.sql.policies`, which the walk hands every node to; the steps before
a tree exists (text, tokens, one statement, parsing) are in
:mod:`relay_nb.connectors.sql.guard_text`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from functools import lru_cache

from pydantic import BaseModel, ConfigDict
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect, NormalizationStrategy

from relay_nb.connectors.sql import (
    dialects,  # registers "mariadb" with sqlglot; the warehouses' guard dialects
    guard_output,
    guard_readback,
    guard_text,
)
from relay_nb.connectors.sql import guard_rules as rules
from relay_nb.connectors.sql.guard_limit import apply_limit, cap_per_group_limit
from relay_nb.connectors.sql.policies import Findings, GuardPolicy, policy_for
from relay_nb.connectors.sql.policies.as_written import keep_as_written
from relay_nb.connectors.sql.policies.base import node_word
from relay_nb.errors import ConfigurationError, UnsafeQueryError

__all__ = ["RULES", "GuardedQuery", "guard_query"]

RULES: frozenset[str] = frozenset(
    {
        "parse_error", "multiple_statements", "not_a_query", "forbidden_statement",
        "forbidden_command", "select_into", "locking_clause", "optimizer_hint", "server_variable",
        "executable_comment", "forbidden_function", "file_access", "table_function_not_allowed",
        "table_not_allowed", "unsupported_limit", "unfaithful_rewrite", "unsafe_identifier",
        "value_too_large",
    }
)  # fmt: skip
"""Every rule the guard can raise. Stable: tests, prompts and logs rely on these strings."""


class GuardedQuery(BaseModel):
    """A query the guard accepted, and what it will run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sql: str
    """The re-serialised tree, in the connector's dialect: what will run."""
    tables: tuple[str, ...]
    """Referenced base tables, qualified as the catalog names them, sorted."""
    limit: int
    """The effective LIMIT of the outermost query."""
    limit_injected: bool
    limit_clamped: bool
    unvetted_functions: tuple[str, ...] = ()
    """Functions the query calls that sqlglot does not know (lowercased, once each): the
    connector resets the session after such a query, since they may leave state behind."""


def guard_query(
    sql: str,
    *,
    dialect: str,
    allowed_tables: Collection[tuple[str | None, str]],
    default_schema: str | None,
    row_limit: int,
) -> GuardedQuery:
    """Check one model-written query and return the SQL that may run, or raise.

    ``dialect`` is a sqlglot dialect name; ``allowed_tables`` holds ``(schema, table)`` pairs
    named exactly as the catalog stores them (schema ``None`` for schema-less SQLite tables),
    as :meth:`Catalog.allowlist` returns them; names compare by the dialect's own case rules;
    unqualified names resolve to ``default_schema``.
    Raises :class:`UnsafeQueryError` with one of :data:`RULES`.
    """
    engine = _dialect(dialect)
    policy = policy_for(dialect)
    first, checked = _guard_once(
        sql,
        dialect=dialect,
        allowed_tables=allowed_tables,
        default_schema=default_schema,
        row_limit=row_limit,
        bounds=_INPUT,
    )
    if not guard_readback.reads_back(first.sql, checked, engine, policy):
        _refuse_unfaithful_output(first, allowed_tables, default_schema, row_limit, dialect)
    return first


def _guard_once(
    sql: str,
    *,
    dialect: str,
    allowed_tables: Collection[tuple[str | None, str]],
    default_schema: str | None,
    row_limit: int,
    bounds: tuple[int, int],
) -> tuple[GuardedQuery, list[object] | None]:
    """One pass of the pipeline, and the :func:`~guard_readback.shape` of the tree it wrote
    out (recorded before the generator could touch it). :func:`guard_query` runs it once, or
    twice when the text does not read back as that tree (the second time over the generated
    text, which may be longer than the input was: ``bounds`` on characters and tokens)."""
    if row_limit < 1:
        raise ConfigurationError(f"row_limit must be a positive integer, not {row_limit!r}")
    engine = _dialect(dialect)
    policy = policy_for(dialect)
    tree, statement = guard_text.read_statement(sql, engine, policy.leading_keywords, bounds)
    keep_as_written(tree, statement, policy.as_written)
    query = _query_root(tree)
    found = _walk(tree, engine, policy)
    policy.check(tree, "tree", found)  # rules over the whole query (the value-size rule)
    found.raise_first()
    strategy = _table_strategy(policy, engine.normalization_strategy)
    allowed = _allowlist(allowed_tables, strategy)
    tables = _check_tables(found.tables, allowed, default_schema, policy, strategy)
    capped = cap_per_group_limit(query)
    if capped is not None:
        if not policy.per_group_limit:
            guard_text.refuse("unsupported_limit", "LIMIT … BY is ClickHouse's; write LIMIT n")
        tree = capped if query is tree else tree
        query = capped
    limit, injected, clamped = apply_limit(query, row_limit)
    checked = guard_readback.shape(tree)
    guarded = GuardedQuery(
        sql=guard_output.generate(tree, engine, nodes=found.nodes),
        tables=tables,
        limit=limit,
        limit_injected=injected,
        limit_clamped=clamped,
        unvetted_functions=tuple(dict.fromkeys(found.unvetted)),
    )
    return guarded, checked


_INPUT = (rules.MAX_SQL_CHARS, rules.MAX_TOKENS)
_OUTPUT = (rules.MAX_OUTPUT_CHARS, guard_readback.MAX_OUTPUT_TOKENS)
"""(characters, tokens): the model's text, and the generated text the second pass reads."""


# --------------------------------------------------------------------------------------------
# Small helpers


@lru_cache(maxsize=64)
def _dialect(name: str) -> Dialect:
    if name.lower() in dialects.GUARD_DIALECTS:
        return dialects.GUARD_DIALECTS[name.lower()]()
    try:
        return Dialect.get_or_raise(name)
    except ValueError:
        raise ConfigurationError(f"the SQL guard needs a sqlglot dialect, not {name!r}") from None


def _query_root(tree: exp.Expr) -> exp.Query:
    """The node that carries the outermost LIMIT: a SELECT, a set operation or ``(…)``."""
    node = tree
    while isinstance(node, exp.Subquery) and _bare(node):
        node = node.this
    if isinstance(node, exp.Select | exp.SetOperation | exp.Subquery):
        return node
    if isinstance(node, rules.COMMAND_NODES):
        guard_text.refuse(
            "forbidden_command", f"{node_word(node)} is a command; only SELECT may run"
        )
    if isinstance(node, _STATEMENT_CLASSES):
        guard_text.refuse("forbidden_statement", f"{node_word(node)} changes data or schema")
    guard_text.refuse("not_a_query", "the statement must be a SELECT query (WITH … SELECT allowed)")


def _bare(subquery: exp.Subquery) -> bool:
    return all(v in (None, []) for k, v in subquery.args.items() if k != "this")


# --------------------------------------------------------------------------------------------
# The walk: every node, with CTE names in scope


_STATEMENT_CLASSES = (*rules.STATEMENT_NODES, *rules.denied_statement_classes())


def _walk(tree: exp.Expr, engine: Dialect, policy: type[GuardPolicy]) -> Findings:
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
            scope = _push_ctes(with_, scope, depth, strategy, stack, recursive_terms)
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
    """
    names: dict[str, int] = {}
    for index, cte in enumerate(with_.expressions):
        if cte.args.get("scalar"):  # ClickHouse's WITH 100 AS n: a value, never a table
            continue
        names.setdefault(_identifier_key(cte.args["alias"].this, strategy), index)
    recursive = bool(with_.args.get("recursive"))
    for i, cte in enumerate(with_.expressions):
        body = cte.this
        if recursive and isinstance(body, exp.SetOperation) and body.expression is not None:
            recursive_terms[id(body.expression)] = _Scope(names, i + 1, outer)
        stack.append((cte, _Scope(names, i, outer), depth + 2))
    return _Scope(names, len(with_.expressions), outer)


_ALWAYS_FOLDED = (
    NormalizationStrategy.CASE_INSENSITIVE,
    NormalizationStrategy.CASE_INSENSITIVE_UPPERCASE,
)


def _identifier_key(identifier: exp.Expr, strategy: NormalizationStrategy) -> str:
    """How the database resolves a name, without mutating the tree (cf. sqlglot's own)."""
    name = identifier.name
    quoted = bool(identifier.args.get("quoted"))
    if strategy is NormalizationStrategy.CASE_SENSITIVE:
        return name
    if strategy in _ALWAYS_FOLDED:
        return guard_text.fold(name)
    if quoted:
        return name
    if strategy is NormalizationStrategy.UPPERCASE:
        return guard_text.upper(name)
    return guard_text.fold(name)


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
        if scope is not None and scope.sees(_identifier_key(this, strategy)):
            return  # a CTE in scope
        if not this.quoted and guard_text.fold(this.name) in policy.pseudo_tables:
            # MySQL's DUAL is no table; sqlglot would quote it as `dual`, which is one
            table.set("this", exp.Var(this=this.name))
            return
    found.tables.append(table)


def _class_facts(cls: type[exp.Expr]) -> tuple[str, type[exp.Expr] | None]:
    """Which rule family a node class belongs to, and the class itself when it chains with
    its own kind (:data:`~guard_rules.ITERATED_CHAINS`): kept per class, so the walk does one
    dict lookup per node instead of ~150 ``isinstance`` checks."""
    kinds = (("command", rules.COMMAND_NODES), ("statement", _STATEMENT_CLASSES), *_KINDS)
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
    ("variable", exp.SessionParameter | exp.Parameter),
    ("identifier", exp.Identifier),
    ("datatype", exp.DataType),
    ("assignment", exp.PropertyEQ),
    ("function", exp.Func),
    ("table", exp.Table),
    ("literal", exp.Literal),
    ("transform", exp.QueryTransform),
    ("rows_table", exp.TableFromRows),
)


# --------------------------------------------------------------------------------------------
# Tables


def _catalog_key(name: str, strategy: NormalizationStrategy) -> str:
    """How a stored catalog name compares: folded only where the database ignores case.

    PostgreSQL keeps ``Customers`` and ``customers`` apart (only unquoted references fold),
    and MySQL with case-sensitive table names does too; comparing them case-insensitively
    would let a quoted ``"Customers"`` read a table the allowlist never named. Where unquoted
    names fold to upper case (Snowflake, Oracle), SQLAlchemy reports such a name in lower
    case (``ORDERS`` as ``orders``): a lowercase catalog name that needs no quotes is that name
    in upper case, as SQLAlchemy's own ``denormalize_name`` reads it.
    """
    if strategy in _ALWAYS_FOLDED:
        return guard_text.fold(name)
    if strategy is NormalizationStrategy.UPPERCASE and _PLAIN_LOWERCASE.fullmatch(name):
        return guard_text.upper(name)
    return name


_PLAIN_LOWERCASE = re.compile(r"[a-z_][a-z0-9_$]*")
"""A name SQLAlchemy would have lowered (it needs no quotes); ``"order items"`` or a name
written lowercase in quotes stays as it is."""


def _table_strategy(
    policy: type[GuardPolicy], strategy: NormalizationStrategy
) -> NormalizationStrategy:
    """How table and schema names compare: the dialect's rule, unless the family says its
    table names are case-sensitive whatever its columns do (BigQuery's datasets and tables)."""
    return NormalizationStrategy.CASE_SENSITIVE if policy.case_sensitive_tables else strategy


def _allowlist(
    pairs: Collection[tuple[str | None, str]], strategy: NormalizationStrategy
) -> frozenset[tuple[str | None, str]]:
    """The allowlist as the dialect compares names; a catalog's (a frozenset, the same object
    for every query of that catalog) is folded once and remembered."""
    if isinstance(pairs, frozenset):
        return _folded(pairs, strategy)
    return _fold_pairs(pairs, strategy)


@lru_cache(maxsize=16)
def _folded(
    pairs: frozenset[tuple[str | None, str]], strategy: NormalizationStrategy
) -> frozenset[tuple[str | None, str]]:
    return _fold_pairs(pairs, strategy)


def _fold_pairs(
    pairs: Collection[tuple[str | None, str]], strategy: NormalizationStrategy
) -> frozenset[tuple[str | None, str]]:
    return frozenset(
        (_catalog_key(s, strategy) if s else None, _catalog_key(t, strategy)) for s, t in pairs
    )


def _check_tables(
    tables: Sequence[exp.Table],
    allowed: frozenset[tuple[str | None, str]],
    default_schema: str | None,
    policy: type[GuardPolicy],
    strategy: NormalizationStrategy,
) -> tuple[str, ...]:
    """Resolve each base-table reference against the allowlist; return the qualified names."""
    default = _catalog_key(default_schema, strategy) if default_schema else None
    aliases = {default} | set(policy.default_schema_aliases)
    return tuple(sorted({_resolve_table(t, allowed, default, aliases, strategy) for t in tables}))


def _resolve_table(
    table: exp.Table,
    allowed: frozenset[tuple[str | None, str]],
    default: str | None,
    default_aliases: set[str | None],
    strategy: NormalizationStrategy,
) -> str:
    raw = table.name
    if not isinstance(table.this, exp.Identifier):
        guard_text.refuse("table_not_allowed", "name tables plainly (schema.table or table)")
    if table.args.get("catalog"):
        guard_text.refuse(
            "table_not_allowed",
            f"{guard_text.short(raw)}: use schema.table, not database.schema.table",
        )
    name = _identifier_key(table.this, strategy)
    db = table.args.get("db")
    schema = _identifier_key(db, strategy) if isinstance(db, exp.Identifier) else None
    if db is not None and schema is None:
        guard_text.refuse("table_not_allowed", "name tables plainly (schema.table or table)")
    candidates: list[tuple[str | None, str]]
    if schema is None:
        candidates = [(default, name), (None, name)]
    else:
        candidates = [(schema, name)]
        if schema in default_aliases:
            candidates.append((None, name))
    for candidate_schema, candidate_name in candidates:
        if (candidate_schema, candidate_name) in allowed:
            return f"{candidate_schema}.{candidate_name}" if candidate_schema else candidate_name
    if rules.PATH_LIKE_TABLE.search(raw):  # DuckDB would scan the file: say so
        guard_text.refuse(
            "file_access", "files and URLs cannot be read as tables; use the allowed tables"
        )
    shown = (
        f"{guard_text.short(db.name)}.{guard_text.short(raw)}"
        if db is not None
        else guard_text.short(raw)
    )
    guard_text.refuse(
        "table_not_allowed", f"{shown} is not a table you may read; use the schema's tables"
    )


# --------------------------------------------------------------------------------------------
# Generation


def _refuse_unfaithful_output(
    first: GuardedQuery,
    allowed_tables: Collection[tuple[str | None, str]],
    default_schema: str | None,
    row_limit: int,
    dialect: str,
) -> None:
    """Fail closed unless the SQL that will run is a fixed point of the guard.

    The generator can emit text the database reads differently from the tree it came from
    (MySQL reads ``#`` as a comment, so ``a #- b LIMIT 201`` loses its LIMIT). Guarding the
    output again — same tokenizer, parser, rules and LIMIT — must accept it and reproduce it
    character for character; then what runs is exactly what was checked.
    """
    try:
        second, _ = _guard_once(
            first.sql,
            dialect=dialect,
            allowed_tables=allowed_tables,
            default_schema=default_schema,
            row_limit=row_limit,
            bounds=_OUTPUT,
        )
    except UnsafeQueryError:
        second = None
    if second is None or second.sql != first.sql or second.limit != first.limit:
        guard_text.refuse(
            "unfaithful_rewrite",
            "the query could not be re-serialised so that it means the same; rewrite it "
            "with plain SQL (no unusual functions, operators or names)",
        )
