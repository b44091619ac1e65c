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
    parse again, :mod:`~relay_nb.sql.guard.readback`); where it does not, the
    whole pipeline runs again over it and must reproduce it exactly

Every step costs time and memory linear in the input (DESIGN §11): the bounds in
:mod:`~relay_nb.sql.guard.rules` (``MAX_*``) cut off the shapes that would not be
(deep nesting, chained subscripts, rewrites that repeat their arguments), and
``tests/connectors/test_guard_cost.py`` measures each shape near the size limit.

Every refusal is ``UnsafeQueryError(rule, message)``; the rule names are in :data:`RULES` and
are stable, the message tells the model what to change; it may name the offending table or
function and, for a parse error, up to 30 characters around it — never the whole query. What
every dialect refuses is data, in :mod:`relay_nb.sql.guard.rules`; what one dialect
family adds (its rules, table functions, names) is its policy class in
:mod:`relay_nb.sql.guard.policies`, which the walk hands every node to; the steps before
a tree exists (text, tokens, one statement, parsing) are in
:mod:`relay_nb.sql.guard.text`; the walk over the tree, with CTE names in scope, is
:mod:`relay_nb.sql.guard.walk`; table references are resolved against the allowlist here.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Sequence
from functools import lru_cache
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect, NormalizationStrategy

from relay_nb.errors import ConfigurationError, UnsafeQueryError
from relay_nb.sql import dialects  # registers "mariadb"; the warehouses' guard dialects
from relay_nb.sql.guard import output as guard_output
from relay_nb.sql.guard import readback as guard_readback
from relay_nb.sql.guard import rules
from relay_nb.sql.guard import text as guard_text
from relay_nb.sql.guard.limit import apply_limit, uncounted_limit, wrap_uncounted_limit
from relay_nb.sql.guard.policies import GuardPolicy, policy_for
from relay_nb.sql.guard.policies.as_written import keep_as_written
from relay_nb.sql.guard.policies.base import node_word
from relay_nb.sql.guard.walk import ALWAYS_FOLDED, STATEMENT_CLASSES, identifier_key, walk

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
    catalog: str | None = None,
    complete_schemas: Collection[str] = (),
) -> GuardedQuery:
    """Check one model-written query and return the SQL that may run, or raise.

    ``dialect`` is a sqlglot dialect name; ``allowed_tables`` holds ``(schema, table)`` pairs
    named exactly as the catalog stores them (schema ``None`` for schema-less SQLite tables),
    as :meth:`Catalog.allowlist` returns them; names compare by the dialect's own case rules;
    unqualified names resolve to ``default_schema``. ``catalog`` is the connection's own
    database (BigQuery's project, Snowflake's database, Trino's catalog): a three-part name
    in it reads as ``schema.table``; a schema written ``other.schema`` in the allowlist is
    one of another catalog. ``complete_schemas`` are the schemas whose every table the
    allowlist holds: only there may a wildcard table (BigQuery's ``events_*``) read.
    Raises :class:`UnsafeQueryError` with one of :data:`RULES`.
    """
    engine = _dialect(dialect)
    policy = policy_for(dialect)
    names = _Names(allowed_tables, default_schema, catalog, complete_schemas)
    first, checked = _guard_once(
        sql, dialect=dialect, names=names, row_limit=row_limit, bounds=_INPUT
    )
    if guard_readback.reads_back(first.sql, checked, engine, policy):
        return first
    if _fixed_point(first, names, row_limit, dialect):
        return first
    # a name the engine reads as a keyword (Databricks' `stream`, Redshift's alias `exclude`)
    # can make the text read back differently: once more with every name quoted
    quoted, checked = _guard_once(
        sql, dialect=dialect, names=names, row_limit=row_limit, bounds=_INPUT, quote_names=True
    )
    if quoted.sql != first.sql and (
        guard_readback.reads_back(quoted.sql, checked, engine, policy)
        or _fixed_point(quoted, names, row_limit, dialect)
    ):
        return quoted
    guard_text.refuse("unfaithful_rewrite", _UNFAITHFUL)


_UNFAITHFUL = (
    "the query could not be re-serialised so that it means the same; rewrite it with plain "
    "SQL (no unusual functions, operators or names)"
)


class _Names(NamedTuple):
    """What table references resolve against (the arguments of :func:`guard_query`)."""

    allowed: Collection[tuple[str | None, str]]
    default_schema: str | None
    catalog: str | None = None
    complete_schemas: Collection[str] = ()


def _guard_once(
    sql: str,
    *,
    dialect: str,
    names: _Names,
    row_limit: int,
    bounds: tuple[int, int],
    quote_names: bool = False,
) -> tuple[GuardedQuery, list[object] | None]:
    """One pass of the pipeline, and the :func:`~.readback.shape` of the tree it wrote
    out (recorded before the generator could touch it). :func:`guard_query` runs it once, or
    twice when the text does not read back as that tree (the second time over the generated
    text, which may be longer than the input was: ``bounds`` on characters and tokens)."""
    if row_limit < 1:
        raise ConfigurationError(f"row_limit must be a positive integer, not {row_limit!r}")
    engine = _dialect(dialect)
    policy = policy_for(dialect)
    tree, statement = guard_text.read_statement(sql, engine, policy.leading_keywords, bounds)
    keep_as_written(tree, statement, policy.as_written)
    if isinstance(tree, exp.Pivot):  # DuckDB's PIVOT statement: a relation the cap wraps
        tree = wrap_uncounted_limit(tree)
    query = _query_root(tree)
    found = walk(tree, engine, policy)
    policy.check(tree, "tree", found)  # rules over the whole query (the value-size rule)
    found.raise_first()
    strategy = _table_strategy(policy, engine.normalization_strategy)
    tables = _check_tables(found.tables, _Resolver.build(names, policy, strategy))
    uncounted = uncounted_limit(query)
    if uncounted == "per_group" and not policy.per_group_limit:
        guard_text.refuse("unsupported_limit", "LIMIT … BY is ClickHouse's; write LIMIT n")
    if uncounted:
        capped = wrap_uncounted_limit(query)
        tree = capped if query is tree else tree
        query = capped
    limit, injected, clamped = apply_limit(query, row_limit)
    if quote_names:
        guard_output.quote_names(tree, engine)
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
    if isinstance(node, STATEMENT_CLASSES):
        guard_text.refuse("forbidden_statement", f"{node_word(node)} changes data or schema")
    guard_text.refuse("not_a_query", "the statement must be a SELECT query (WITH … SELECT allowed)")


def _bare(subquery: exp.Subquery) -> bool:
    return all(v in (None, []) for k, v in subquery.args.items() if k != "this")


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
    if strategy in ALWAYS_FOLDED:
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
    if pairs is None or not isinstance(pairs, Collection):
        raise ConfigurationError("allowed_tables takes (schema, table) pairs, not None")
    return _fold_pairs(pairs, strategy)


@lru_cache(maxsize=16)
def _folded(
    pairs: frozenset[tuple[str | None, str]], strategy: NormalizationStrategy
) -> frozenset[tuple[str | None, str]]:
    return _fold_pairs(pairs, strategy)


def _fold_pairs(
    pairs: Collection[tuple[str | None, str]], strategy: NormalizationStrategy
) -> frozenset[tuple[str | None, str]]:
    if isinstance(pairs, str | bytes) or not all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[1], str) for p in pairs
    ):
        raise ConfigurationError(
            "allowed_tables takes (schema, table) pairs, e.g. {('public', 'orders')}; "
            "schema None where the database has none"
        )
    return frozenset(
        (_schema_key(s, strategy) if s else None, _catalog_key(t, strategy)) for s, t in pairs
    )


def _schema_key(schema: str, strategy: NormalizationStrategy) -> str:
    """A stored schema name as it compares; ``other.schema`` (a schema of another catalog,
    as BigQuery's and Snowflake's SQLAlchemy dialects name one) part by part."""
    if "." not in schema:
        return _catalog_key(schema, strategy)
    return ".".join(_catalog_key(part, strategy) for part in schema.split("."))


class _Resolver(NamedTuple):
    """The allowlist and the names a reference resolves against, as the dialect compares
    them (built once per query; the folded allowlist once per catalog)."""

    allowed: frozenset[tuple[str | None, str]]
    default: str | None
    default_aliases: frozenset[str | None]
    catalog: str | None
    complete: frozenset[str]
    policy: type[GuardPolicy]
    strategy: NormalizationStrategy

    @classmethod
    def build(
        cls, names: _Names, policy: type[GuardPolicy], strategy: NormalizationStrategy
    ) -> _Resolver:
        default = _catalog_key(names.default_schema, strategy) if names.default_schema else None
        return cls(
            allowed=_allowlist(names.allowed, strategy),
            default=default,
            default_aliases=frozenset({default, *policy.default_schema_aliases}),
            catalog=_catalog_key(names.catalog, strategy) if names.catalog else None,
            complete=frozenset(_schema_key(s, strategy) for s in names.complete_schemas),
            policy=policy,
            strategy=strategy,
        )


def _check_tables(tables: Sequence[exp.Table], resolver: _Resolver) -> tuple[str, ...]:
    """Resolve each base-table reference against the allowlist; return the qualified names."""
    return tuple(sorted({_resolve_table(t, resolver) for t in tables}))


def _resolve_table(table: exp.Table, resolver: _Resolver) -> str:
    raw = table.name
    strategy = resolver.strategy
    if not isinstance(table.this, exp.Identifier):
        guard_text.refuse("table_not_allowed", "name tables plainly (schema.table or table)")
    name = identifier_key(table.this, strategy)
    db = table.args.get("db")
    schema = identifier_key(db, strategy) if isinstance(db, exp.Identifier) and db.name else None
    if db is not None and schema is None and not _empty_schema(db, table):
        guard_text.refuse("table_not_allowed", "name tables plainly (schema.table or table)")
    if schema is not None and "." in schema:  # would pass for another catalog's schema
        guard_text.refuse("table_not_allowed", "a schema's name has no dot in it; name it plainly")
    catalog = _catalog_part(table, resolver)
    if catalog is not None:  # a schema of another catalog: named "catalog.schema" when allowed
        schema = f"{catalog}.{schema if schema is not None else ''}"
    if resolver.policy.wildcard_tables and "*" in name:
        return _resolve_wildcard(name, schema, resolver)
    candidates: list[tuple[str | None, str]]
    if schema is None:
        candidates = [(resolver.default, name), (None, name)]
    else:
        candidates = [(schema, name)]
        if schema in resolver.default_aliases:
            candidates.append((None, name))
    for candidate_schema, candidate_name in candidates:
        if (candidate_schema, candidate_name) in resolver.allowed:
            return f"{candidate_schema}.{candidate_name}" if candidate_schema else candidate_name
    if rules.PATH_LIKE_TABLE.search(raw):  # DuckDB would scan the file: say so
        guard_text.refuse(
            "file_access", "files and URLs cannot be read as tables; use the allowed tables"
        )
    shown = ".".join(guard_text.short(part.name) for part in table.parts)
    guard_text.refuse(
        "table_not_allowed",
        f"{shown} is not a table you may read; " + _closest_tables(name, schema, resolver),
    )


def _closest_tables(name: str, schema: str | None, resolver: _Resolver) -> str:
    """ "did you mean customers?" for a misspelt or misnumbered name (``customer``,
    ``order_item``), among the tables the query may read only; else the general advice. A
    table outside the default schema is named with its schema (``big`` → ``lead.big``)."""
    shown: dict[str, str] = {}
    # sorted: the allowlist is a set, and ties must answer alike each run
    for where, table in sorted(resolver.allowed, key=lambda pair: (pair[0] or "", pair[1])):
        if schema is not None and where not in (schema, None):
            continue
        if schema is None and where is not None and where != resolver.default:
            shown.setdefault(table, f"{guard_text.short(where)}.{guard_text.short(table)}")
        else:  # a table in the default schema is named plainly
            shown[table] = guard_text.short(table)
    near = difflib.get_close_matches(name, sorted(shown), n=3, cutoff=0.75)
    if not near:
        return "use the schema's tables"
    return "did you mean " + " or ".join(shown[n] for n in near) + "?"


def _empty_schema(db: object, table: exp.Table) -> bool:
    """T-SQL's ``database..table``: the schema left out, the default one meant."""
    return db == "" and bool(table.args.get("catalog"))


def _catalog_part(table: exp.Table, resolver: _Resolver) -> str | None:
    """The catalog a three-part name names, as it compares; None for the connection's own
    (its schema and table are then checked as any two-part name) or for no catalog."""
    part = table.args.get("catalog")
    if part is None or part == "":
        return None
    if not isinstance(part, exp.Identifier) or not part.name:
        guard_text.refuse("table_not_allowed", "name tables plainly (schema.table or table)")
    key = identifier_key(part, resolver.strategy)
    if key == resolver.catalog:  # BigQuery's domain-scoped projects: `example.com:project`
        return None
    if "." in key:
        guard_text.refuse("table_not_allowed", "a catalog's name has no dot in it; name it plainly")
    return key


def _resolve_wildcard(name: str, schema: str | None, resolver: _Resolver) -> str:
    """BigQuery's wildcard table (``events_*``): it reads every table of the dataset whose
    name starts with the prefix, tables created after the catalog was read among them. It
    may read only a dataset the allowlist holds whole, and must match a table there."""
    prefix = name[:-1]
    shown = guard_text.short(name)
    if not name.endswith("*") or "*" in prefix:
        guard_text.refuse(
            "table_not_allowed", f"{shown}: a wildcard ends a table's name (events_*)"
        )
    dataset = schema if schema is not None else resolver.default
    if dataset not in resolver.complete:
        guard_text.refuse(
            "table_not_allowed",
            f"{shown} would read tables of {guard_text.short(dataset or '')} that you may not "
            "read (only some of its tables are allowed); name the tables",
        )
    if not any(s == dataset and t.startswith(prefix) for s, t in resolver.allowed):
        guard_text.refuse("table_not_allowed", f"{shown} matches no table you may read")
    return f"{dataset}.{name}"


# --------------------------------------------------------------------------------------------
# Generation


def _fixed_point(first: GuardedQuery, names: _Names, row_limit: int, dialect: str) -> bool:
    """Whether the SQL that would run is a fixed point of the guard.

    The generator can emit text the database reads differently from the tree it came from
    (MySQL reads ``#`` as a comment, so ``a #- b LIMIT 201`` loses its LIMIT). Guarding the
    output again — same tokenizer, parser, rules and LIMIT — must accept it and reproduce it
    character for character; then what runs is exactly what was checked.
    """
    try:
        second, _ = _guard_once(
            first.sql, dialect=dialect, names=names, row_limit=row_limit, bounds=_OUTPUT
        )
    except UnsafeQueryError:
        return False
    return second.sql == first.sql and second.limit == first.limit
