"""Redshift: PostgreSQL's rules, with Redshift's own surface.

- **Functions**: only ones sqlglot knows or Redshift documents as plain (:data:`_KNOWN`). An
  unknown name may be a Lambda UDF or a Redshift ML function, which send the rows they are
  given out of the database (to AWS Lambda, to SageMaker), so it is refused, not trusted.
- **``ADD_MONTHS``** is written back as written (:mod:`.as_written`): sqlglot reads it as
  ``DATEADD(MONTH, …)``, which differs at month ends.
- **SUPER navigation in ``FROM``** (``FROM events e, e.tags AS t``) is refused: sqlglot reads
  a path whose first part is an earlier alias as navigating that alias, where Redshift may
  read the same text as the table ``schema.table`` (``FROM orders AS finance,
  finance.salaries``) — and no list of the server's schemas is at hand to tell them apart.
  Navigate SUPER values in the select list (``e.tags[0]``) or with JSON functions.
- ``UNLOAD``, ``COPY``, ``CANCEL``, ``SHOW`` are commands or no query; system tables (``stl_``,
  ``svv_``, ``pg_catalog``) are outside any allowlist.
"""

from __future__ import annotations

from sqlglot import exp

from relay_nb.sql.guard.policies.as_written import AsWritten, plain_call
from relay_nb.sql.guard.policies.base import Findings, GuardPolicy
from relay_nb.sql.guard.policies.postgres import PostgresPolicy

__all__ = ["RedshiftPolicy"]

_KNOWN = frozenset(
    {
        "add_months", "getdate", "sysdate", "nvl", "nvl2", "decode", "listagg", "median",
        "json_extract_path_text", "json_extract_array_element_text", "json_array_length",
        "json_parse", "json_serialize", "is_valid_json", "is_valid_json_array", "convert_timezone",
        "date_cmp", "date_cmp_timestamp", "datediff", "dateadd", "date_part", "datepart",
        "date_trunc", "months_between", "next_day", "last_day", "trunc", "charindex", "len",
        "textlen", "strpos", "btrim", "ltrim", "rtrim", "lpad", "rpad", "initcap", "replicate",
        "translate", "regexp_count", "regexp_instr", "regexp_substr", "regexp_replace",
        "split_part", "to_char", "to_date", "to_number", "to_timestamp", "timezone",
        "approximate", "percentile_cont", "percentile_disc", "ratio_to_report", "cume_dist",
        "nth_value", "bit_and", "bit_or", "bool_and", "bool_or", "cbrt", "dexp", "dlog1",
        "dlog10", "log", "ln", "sign", "pi", "sqrt", "exp", "random", "checksum", "crc32",
        "func_sha1", "fnv_hash", "md5", "sha1", "sha2", "is_array", "is_object", "is_scalar",
        "json_typeof", "array", "get_array_length", "subarray", "array_concat", "array_flatten",
        "split_to_array", "object", "object_transform", "timestamp_cmp", "interval_cmp",
        "extract", "current_date", "current_time", "current_timestamp", "localtimestamp",
        "timeofday", "round", "ceiling", "floor", "abs", "mod", "power", "greatest",
        "least", "nullif", "coalesce", "quote_ident", "quote_literal", "octet_length",
        "char_length", "character_length", "position", "left", "right", "reverse", "repeat",
        "lower", "upper", "substring", "substr", "concat", "strtol", "to_hex", "can_json_parse",
        "st_astext", "st_geomfromtext", "st_distance", "st_x", "st_y", "h3_fromlonglat",
    }
)  # fmt: skip

_ADD_MONTHS = AsWritten(
    node=exp.TsOrDsAdd,
    spellings=frozenset({"ADD_MONTHS", "DATEADD", "DATE_ADD"}),
    kept=lambda name, arity: name == "ADD_MONTHS",
    write=plain_call("ADD_MONTHS", "this", "expression"),
    mixed=(
        "ADD_MONTHS and DATEADD read alike to the guard, so it cannot keep both in one query; "
        "write the month arithmetic with one of them"
    ),
)


def refuse_from_paths(node: exp.Expr, policy: type[GuardPolicy], found: Findings) -> None:
    """``FROM t AS a, a.items``: a SUPER path in ``FROM``, which Redshift may read as a table."""
    if isinstance(node, exp.Unnest):
        found.add(
            3,
            "table_not_allowed",
            "a path in FROM (alias.column) may be read as a schema's table on Redshift; "
            "navigate SUPER values in the select list (e.tags[0]) or with JSON functions",
        )


class RedshiftPolicy(PostgresPolicy):
    name = "redshift"
    dialects = ("redshift",)
    unknown_functions = False
    known_functions = _KNOWN
    as_written = (_ADD_MONTHS,)
    pins_search_path = True
    rules = (*PostgresPolicy.rules, ("function", refuse_from_paths))
