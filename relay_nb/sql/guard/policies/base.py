"""The guard's policy for a dialect family: rules as small named functions, policy as data.

:class:`GuardPolicy` is the common base every family inherits (sqlglot-style: a dialect is a
class, and what differs is a class attribute). Its parts:

- **data**: the leading keywords a statement may start with, the table functions allowed in
  ``FROM``, names that are no table at all (``dual``), schema names that mean the default
  one (SQLite's ``main``), extra denied functions and prefixes on top of the shared
  denylists of :mod:`relay_nb.sql.guard.rules` (which every family keeps: engines
  speak each other's function sets), and whether a function sqlglot does not know may run;
- **rules**: ``(kind, function)`` pairs. The guard's walk gives every node a *kind*
  (``command``, ``statement``, ``select``, ``function``, ``table`` …, see
  :func:`relay_nb.sql.guard.walk._class_facts`) and calls each rule registered for it
  with the node, the policy and the :class:`Findings` it adds violations to. A family adds
  a rule by listing it after the base's: ``rules = (*GuardPolicy.rules, ("table", mine))``;
- **connector facts**: whether the database is an embedded file (error advice), whether it
  returns dates as text (SQLite), whether queries pin the search path (PostgreSQL).

Families with no corpus of their own yet (the warehouses) derive from :class:`PlainReadPolicy`:
plain reads only — ``SELECT``/``WITH``, the standard table functions, and only functions
sqlglot knows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import ClassVar

from sqlglot import exp

from relay_nb.sql.guard import functions as guard_functions
from relay_nb.sql.guard import rules as shared
from relay_nb.sql.guard import text as guard_text
from relay_nb.sql.guard.policies.as_written import AsWritten

__all__ = [
    "GuardPolicy",
    "PlainReadPolicy",
    "Rule",
    "Findings",
    "function_names",
]


@dataclass(order=True)
class _Violation:
    priority: int
    order: int
    rule: str = field(compare=False)
    message: str = field(compare=False)


@dataclass
class Findings:
    """What the walk found: violations (the most fundamental is raised), base tables, and the
    number of nodes it visited (the generator's budget is linear in it)."""

    violations: list[_Violation] = field(default_factory=list)
    tables: list[exp.Table] = field(default_factory=list)
    nodes: int = 0
    unvetted: list[str] = field(default_factory=list)
    """Functions called that sqlglot does not know (an extension's, a user's): nothing says
    they leave no state on the session, so the session is reset after the query."""

    def add(self, priority: int, rule: str, message: str) -> None:
        self.violations.append(_Violation(priority, len(self.violations), rule, message))

    def raise_first(self) -> None:
        if self.violations:
            worst = min(self.violations)
            guard_text.refuse(worst.rule, worst.message)


RuleFunction = Callable[[exp.Expr, "type[GuardPolicy]", Findings], None]
Rule = tuple[str, RuleFunction]
"""``(node kind, function)``: the function checks nodes of that kind."""

_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_TABLE_POSITION_PARENTS = (exp.Table, exp.Lateral, exp.TableFromRows, exp.From, exp.Join)
_STATEMENT_CLASSES = (*shared.STATEMENT_NODES, *shared.denied_statement_classes())
_BODY_CLASSES = (exp.Query, exp.Values, *_STATEMENT_CLASSES, *shared.COMMAND_NODES)


def node_word(node: exp.Expr) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return node.key.upper()


# -- the shared rules ----------------------------------------------------------------------------


def refuse_commands(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    found.add(0, "forbidden_command", f"{node_word(node)} is a command; only SELECT may run")


def refuse_statements(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    found.add(
        0, "forbidden_statement", f"{node_word(node)} changes data or schema (also inside WITH)"
    )


def bodies_are_queries(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """A CTE or subquery holds a query, never a statement or a command (DuckDB's
    ``PIVOT t ON k USING sum(v)`` is a query there).

    A parenthesised join, ``FROM (a JOIN b ON …)`` or ``LEFT JOIN (b JOIN c ON …) ON …``,
    parses as a subquery around a table that carries the joins: it is a table reference, not
    a body, and every table in it is walked and checked against the allowlist as any other.
    """
    if isinstance(node.this, _BODY_CLASSES) or _parenthesised_join(node):
        return
    if isinstance(node.this, exp.Pivot) and isinstance(node.this.this, exp.Table | exp.Subquery):
        return  # DuckDB's PIVOT / UNPIVOT statement as a relation: its table is walked
    if node.args.get("scalar") and not isinstance(node.this, _STATEMENT_CLASSES):
        return  # ClickHouse's WITH <expression> AS name: a value, walked like any other
    found.add(0, "forbidden_statement", "every CTE and subquery must be a SELECT")


def _parenthesised_join(node: exp.Expr) -> bool:
    return (
        isinstance(node, exp.Subquery)
        and isinstance(node.this, exp.Table)
        and isinstance(node.parent, exp.From | exp.Join | exp.Subquery)
    )


def refuse_select_clauses(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """ClickHouse ``SETTINGS …``, T-SQL ``OPTION (…)``: per-query overrides of the limits."""
    for clause, refusal in shared.SELECT_CLAUSE_REFUSALS.items():
        if node.args.get(clause):
            found.add(*shared.STRUCTURAL_REFUSALS[refusal])


def refuse_variable_assignment(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    if isinstance(node.this, exp.Parameter | exp.SessionParameter):
        found.add(*shared.STRUCTURAL_REFUSALS["variable"])


_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")


def refuse_control_characters(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    if _CONTROL_CHARACTER.search(node.name):  # one C scan, not a generator step a character
        found.add(1, "unsafe_identifier", "names may not contain control characters")


def refuse_custom_types(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    if node.this == exp.DataType.Type.USERDEFINED:
        found.add(3, "table_not_allowed", "casts to table types or custom types are not allowed")


def refuse_catalog_types(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``'secrets'::regclass``, ``CAST(x AS regtype)``, ``regclass 'secrets'``: a cast to an
    OID alias type looks the name (or number) up in the catalog, so it confirms a table the
    allowlist hides and prints any table's name; whatever the operand, it is refused."""
    if isinstance(node, exp.ObjectIdentifier) and guard_text.fold(node.name) in (
        shared.CATALOG_TYPES
    ):
        found.add(
            3,
            "table_not_allowed",
            f"casts to {guard_text.fold(node.name)} look objects up in the database catalog; "
            "use the tables of the schema and compare plain values",
        )


def refuse_tables_named_by_value(
    node: exp.Expr, policy: type[GuardPolicy], found: Findings
) -> None:
    """``TABLE('schema.secrets')`` (Snowflake, like ``IDENTIFIER()``), ``TABLE($1)``: a table
    named by a value the allowlist never sees. ``TABLE(<table function>(…))`` stays."""
    if not isinstance(node.this, exp.Func):
        found.add(
            3,
            "table_not_allowed",
            "TABLE(…) may only wrap a table function; name tables plainly (schema.table)",
        )


def _structural(kind: str) -> RuleFunction:
    def refuse(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
        found.add(*shared.STRUCTURAL_REFUSALS[kind])

    refuse.__name__ = f"refuse_{kind}"
    return refuse


def check_function(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """A call is refused by name, class or danger word; in ``FROM`` it must be an allowed
    table function; behind a schema or object prefix it is refused."""
    assert isinstance(node, exp.Func)
    names = function_names(node)
    shown = names[0]
    verdict = _function_verdict(node, names, policy)
    if verdict:
        rule, why = verdict
        found.add(4, rule, f"{shown}() is not allowed: {why}")
        return
    parent = node.parent
    if isinstance(parent, exp.Dot) and node.arg_key == "expression":
        if not policy.knows(_dotted_name(parent, shown)):  # BigQuery's HLL_COUNT.MERGE(…)
            found.add(4, "forbidden_function", f"call {shown}() without a schema or object prefix")
        return
    if isinstance(parent, _TABLE_POSITION_PARENTS) and node.arg_key == "this":
        allowed = policy.table_functions
        if not isinstance(node, shared.TABLE_FUNCTION_CLASSES) and not allowed.intersection(names):
            examples = ", ".join(sorted(allowed, key=len)[:5])
            found.add(
                4,
                "table_function_not_allowed",
                f"{shown}() cannot be used as a table; select from the allowed tables "
                f"(table functions allowed include {examples})",
            )
        return  # an allowed table function, known or not
    unknown = isinstance(node, exp.Anonymous | exp.AnonymousAggFunc)
    if unknown:
        found.unvetted.append(names[0])
    if unknown and not policy.unknown_functions and not policy.knows(names[0]):
        found.add(4, "forbidden_function", _undocumented(shown, policy))


def _dotted_name(dot: exp.Dot, name: str) -> str:
    """``hll_count.merge`` for ``HLL_COUNT.MERGE(…)``: the name a documented dotted function
    is listed by; ``""`` when the prefix is not one plain word (``a.b.f()``, ``f().g()``)."""
    prefix = dot.this
    if (
        isinstance(prefix, exp.Column)
        and not prefix.table
        and isinstance(prefix.this, exp.Identifier)
    ):
        return f"{guard_text.fold(prefix.name)}.{name}"
    if isinstance(prefix, exp.Var | exp.Identifier):
        return f"{guard_text.fold(prefix.name)}.{name}"
    return ""


def _undocumented(shown: str, policy: type[GuardPolicy]) -> str:
    """Which function, and why an unknown one is refused; a documented name close to it."""
    engine = guard_functions.ENGINE_NAMES.get(policy.name, policy.name)
    if not policy.known_functions:
        return (
            f"{shown}() is not allowed: relay_nb has no list of {engine}'s documented "
            "functions, so only functions sqlglot knows may run; use standard SQL functions"
        )
    match = guard_functions.closest(shown, policy.known_functions)
    return (
        f"{shown}() is not a documented {engine} function (a UDF or remote function may send "
        "rows elsewhere); use a built-in function"
        + (f" — did you mean {match}()?" if match else "")
    )


def function_names(node: exp.Func) -> tuple[str, ...]:
    """Lowercased names a call is known by: as written for unknown functions, else sqlglot's."""
    if isinstance(node, exp.Anonymous | exp.AnonymousAggFunc):
        return (guard_text.fold(node.name),)
    cls = type(node)
    return (*(guard_text.fold(n) for n in cls.sql_names()), cls.key)


def _function_verdict(
    node: exp.Func, names: tuple[str, ...], policy: type[GuardPolicy]
) -> tuple[str, str] | None:
    """(rule, reason) when the call is refused by name, class or danger word."""
    for cls, rule in shared.DENIED_FUNCTION_CLASSES.items():
        if isinstance(node, cls):
            if cls.__name__.startswith("AI"):
                return rule, "it sends rows to a model service (a remote call)"
            return rule, "it touches files or has side effects"
    if not all(name.isascii() for name in names):
        return "forbidden_function", "function names must be plain ASCII"
    checked = [name for name in names if name not in shared.SAFE_FUNCTIONS]
    unknown = isinstance(node, exp.Anonymous | exp.AnonymousAggFunc)
    words = set(_WORD_SPLIT.split(names[0])) if unknown else set()
    if any(n in shared.FILE_FUNCTIONS or n.startswith(shared.FILE_PREFIXES) for n in checked) or (
        checked and words & shared.FILE_WORDS
    ):
        return "file_access", "it reads or writes files, the environment or the network"
    denied = shared.DENIED_FUNCTIONS | policy.denied_functions
    prefixes = (*shared.DENIED_PREFIXES, *policy.denied_prefixes)
    if any(n.startswith("ai_") or n == "external_query" for n in checked):
        return "forbidden_function", "it sends rows to a model or a remote service (a remote call)"
    if any(n in denied or n.startswith(prefixes) for n in checked) or (
        checked and words & shared.DANGER_WORDS
    ):
        return "forbidden_function", "it has side effects, waits, or reads server state"
    if any(n in shared.CATALOG_FUNCTIONS for n in checked):
        return "forbidden_function", (
            "it looks tables, types or roles up in the database catalog; use the schema's "
            "tables and columns instead"
        )
    return None


# -- the base policy ----------------------------------------------------------------------------


class GuardPolicy:
    """The common base: what every family refuses and allows (see the module docstring)."""

    name: ClassVar[str] = "generic"
    dialects: ClassVar[tuple[str, ...]] = ()
    """The sqlglot dialect names this family covers."""
    leading_keywords: ClassVar[frozenset[str]] = shared.ALLOWED_LEADING_KEYWORDS
    table_functions: ClassVar[frozenset[str]] = shared.COMMON_TABLE_FUNCTIONS
    pseudo_tables: ClassVar[frozenset[str]] = frozenset()
    default_schema_aliases: ClassVar[frozenset[str]] = frozenset()
    """Schema names that mean the default one (SQLite's ``main``)."""
    denied_functions: ClassVar[frozenset[str]] = frozenset()
    """Refused on top of :data:`rules.DENIED_FUNCTIONS`, which every family keeps."""
    denied_prefixes: ClassVar[tuple[str, ...]] = ()
    unknown_functions: ClassVar[bool] = True
    """Whether a function sqlglot does not know may run (its name still has to pass the
    danger words)."""
    known_functions: ClassVar[frozenset[str]] = frozenset()
    """Lowercased names of plain functions of this dialect that sqlglot does not model: they
    may run where unknown functions may not (they still pass the denylists)."""
    as_written: ClassVar[tuple[AsWritten, ...]] = ()
    """Calls written back as the model wrote them where sqlglot's reading would change their
    meaning (:mod:`.as_written`)."""
    per_group_limit: ClassVar[bool] = False
    """``LIMIT n BY cols`` is this dialect's (ClickHouse): capped by an outer LIMIT."""
    implicit_recursion: ClassVar[bool] = False
    """A CTE's recursive term (the last branch of its UNION) may name the CTE itself without
    ``WITH RECURSIVE`` (Snowflake and SQLite read it as recursive)."""
    wildcard_tables: ClassVar[bool] = False
    """``FROM dataset.events_*`` reads every table named so (BigQuery): allowed over a
    dataset the allowlist holds whole (:func:`~relay_nb.sql.guard.query.guard_query`)."""
    case_sensitive_tables: ClassVar[bool] = False
    """Table and schema names compare exactly, whatever the dialect's rule for other names
    (BigQuery: datasets and tables are case-sensitive, columns are not)."""
    embedded: ClassVar[bool] = False
    """An in-process database in a file (SQLite, DuckDB): connection advice names the file."""
    dates_as_text: ClassVar[bool] = False
    """The driver returns dates and times as text (SQLite): results parse them back."""
    pins_search_path: ClassVar[bool] = False
    """Each query pins the schema search path to the one the guard resolved names against."""

    rules: ClassVar[tuple[Rule, ...]] = (
        ("command", refuse_commands),
        ("statement", refuse_statements),
        ("body", bodies_are_queries),
        ("select", refuse_select_clauses),
        ("into", _structural("into")),
        ("lock", _structural("lock")),
        ("hint", _structural("hint")),
        ("variable", _structural("variable")),
        ("assignment", refuse_variable_assignment),
        ("identifier", refuse_control_characters),
        ("datatype", refuse_custom_types),
        ("datatype", refuse_catalog_types),
        ("function", check_function),
        ("rows_table", refuse_tables_named_by_value),
    )

    @classmethod
    def knows(cls, name: str) -> bool:
        """Whether ``name`` (lowercased) is a plain function here though sqlglot does not
        model it: a shared safe one, or one of the family's own."""
        return name in shared.SAFE_FUNCTIONS or name in cls.known_functions

    @classmethod
    def check(cls, node: exp.Expr, kind: str, found: Findings) -> None:
        """Run this family's rules for a node of ``kind``."""
        for rule in _rules_by_kind(cls).get(kind, ()):
            rule(node, cls, found)


class PlainReadPolicy(GuardPolicy):
    """A family without a corpus of its own yet: plain reads only — ``SELECT``, ``WITH`` and
    parenthesised queries, the standard table functions, and only functions sqlglot knows
    (an unknown one may be a procedure, a system function or a reader of files or URLs)."""

    leading_keywords = frozenset({"SELECT", "WITH", "("})
    unknown_functions = False


@cache
def _rules_by_kind(policy: type[GuardPolicy]) -> dict[str, tuple[RuleFunction, ...]]:
    by_kind: dict[str, list[RuleFunction]] = {}
    for kind, function in policy.rules:
        by_kind.setdefault(kind, []).append(function)
    return {kind: tuple(functions) for kind, functions in by_kind.items()}
