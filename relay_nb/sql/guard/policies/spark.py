"""Spark SQL, Databricks and Hive: plain reads, their functions, and Spark's own side doors
shut. Functions: those sqlglot knows and the ones Spark documents (:data:`_KNOWN`).

Their own data: ``reflect`` and ``java_method`` call Java methods by name, ``try_secret``
returns a Databricks secret in clear (``secret`` too: sqlglot models it, and the shared
denylist refuses it in every family), so they are refused whatever the strictness.
``CACHE``, ``ADD JAR``, ``SET``, ``INSERT OVERWRITE`` and path tables (``parquet.`/data/x```)
are refused by the shared command, statement and file rules.

Their own rules:

- ``SELECT TRANSFORM(…) USING 'script'`` runs a program through ``/bin/bash`` on the
  executors (Spark 4 runs it without Hive): refused as a statement, whatever the script.
- ``${…}`` anywhere in the text: ``spark.sql`` substitutes variables *before* parsing
  (``${env:AWS_SECRET_ACCESS_KEY}``, ``${spark.hadoop.fs.s3a.secret.key}``) — in a string,
  in a name, even escaped — so what would run is not what the guard checked, and could
  carry the driver's environment or settings to the model. Refused in every literal and name.
- ``_metadata`` (the hidden column of a file-based table: its files' paths and sizes) is file
  metadata, refused like ``input_file_name()``.
- XML that fetches: ``from_xml``/``schema_of_xml``'s ``rowValidationXSDPath`` option makes
  Spark read a schema from any path or URL (and an external DTD inside it sends a local
  file's contents out with the next request: out-of-band XXE), and a ``<!DOCTYPE …>`` in an
  XML literal makes ``xpath*`` fetch its DTD. Refused: that option (in any case, or any key
  not written as a literal), and a document type or entity declaration in a string given to
  an XML function.
"""

from __future__ import annotations

from sqlglot import exp

from relay_nb.sql.guard import rules as shared
from relay_nb.sql.guard.functions import documented_functions
from relay_nb.sql.guard.policies.as_written import AsWritten, plain_call
from relay_nb.sql.guard.policies.base import (
    Findings,
    GuardPolicy,
    PlainReadPolicy,
    function_names,
)

__all__ = ["DatabricksPolicy", "SparkPolicy"]

_KNOWN = documented_functions("spark") | {"h3_longlatash3", "h3_polyfillash3"}
"""Spark's documented functions (:mod:`relay_nb.sql.guard.functions`, ``spark.txt``), and two
H3 functions Databricks documents beyond them (no whole list of Databricks' own could be had)."""

_TWO_ARGUMENT_DATEDIFF = AsWritten(
    node=exp.DateDiff,
    spellings=frozenset({"DATEDIFF", "DATE_DIFF", "TIMESTAMPDIFF"}),
    kept=lambda name, arity: name in ("DATEDIFF", "DATE_DIFF") and arity == 2,
    write=plain_call("DATEDIFF", "this", "expression"),
    mixed=(
        "datediff(end, start) and DATEDIFF(unit, start, end) read alike to the guard, so it "
        "cannot keep both in one query; write every difference in one form"
    ),
)

_SUBSTITUTED = "${"


def refuse_transform(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``TRANSFORM … USING``: a program on the cluster, not a query."""
    found.add(
        1,
        "forbidden_statement",
        "TRANSFORM … USING runs a program on the cluster; use SQL functions instead",
    )


def refuse_substitution(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``${…}`` in a string or a name: Spark would replace it before running the query."""
    text = node.this if isinstance(node.this, str) else ""
    if _SUBSTITUTED in text:
        found.add(
            2,
            "server_variable",
            "${…} is replaced by Spark before the query runs (variables, the environment, "
            "settings); write the value itself",
        )


def refuse_file_metadata(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``_metadata``: the hidden column of file-based tables (paths, sizes)."""
    refuse_substitution(node, policy, found)
    if isinstance(node.this, str) and node.this.lower() == "_metadata":
        found.add(2, "file_access", "_metadata describes the table's files; query its columns")


_XML_OPTIONS = {"from_xml": 2, "schema_of_xml": 1}
"""The XML parsers that take an options map, and its position."""
_XML_FUNCTIONS = frozenset(
    {
        *_XML_OPTIONS,
        "xpath", "xpath_boolean", "xpath_double", "xpath_float", "xpath_int", "xpath_long",
        "xpath_number", "xpath_short", "xpath_string",
    }
)  # fmt: skip
_FETCHING_OPTION = "rowvalidationxsdpath"
_DECLARATIONS = ("<!doctype", "<!entity")
_LITERAL_OPTIONS = (exp.Literal, exp.VarMap, exp.Map, exp.Array, exp.Boolean, exp.Paren)


def refuse_xml_fetches(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """An XML function told to fetch a schema or a DTD from a path or URL."""
    if not isinstance(node, exp.Func):
        return
    name = function_names(node)[0].lower()
    if name not in _XML_FUNCTIONS:
        return
    arguments = list(node.expressions) if isinstance(node, exp.Anonymous) else []
    index = _XML_OPTIONS.get(name)
    if index is not None and len(arguments) > index:
        options = arguments[index]
        parts = list(options.walk())
        if not all(isinstance(part, _LITERAL_OPTIONS) for part in parts) or any(
            isinstance(part, exp.Literal) and part.name.lower() == _FETCHING_OPTION
            for part in parts
        ):
            found.add(
                4,
                "file_access",
                f"{name}()'s rowValidationXSDPath option reads a schema from a path or URL "
                "(and options must be written as literal strings); leave it out",
            )
    for literal in node.find_all(exp.Literal):
        if literal.is_string and any(d in literal.name.lower() for d in _DECLARATIONS):
            found.add(
                4,
                "file_access",
                f"a <!DOCTYPE> or <!ENTITY> declaration makes {name}() fetch it from a path "
                "or URL; give the XML without it",
            )
            return


class SparkPolicy(PlainReadPolicy):
    name = "spark"
    dialects = ("spark", "spark2", "hive")
    known_functions = _KNOWN
    table_functions = shared.COMMON_TABLE_FUNCTIONS | frozenset(
        {"inline", "inline_outer", "stack", "json_tuple", "parse_url_tuple"}
    )
    denied_functions = frozenset(
        {"reflect", "java_method", "assert_true", "raise_error", "try_secret"}
    )
    rules = (
        *PlainReadPolicy.rules,
        ("transform", refuse_transform),
        ("literal", refuse_substitution),
        ("identifier", refuse_file_metadata),
        ("function", refuse_xml_fetches),
    )


class DatabricksPolicy(SparkPolicy):
    """Spark's rules; and Databricks' two-argument ``datediff(end, start)`` (days between the
    two *dates*) kept as written: sqlglot's Databricks reads it as ``DATEDIFF(DAY, start,
    end)``, whole days between *timestamps* (:mod:`.as_written`)."""

    name = "databricks"
    dialects = ("databricks",)
    as_written = (_TWO_ARGUMENT_DATEDIFF,)
