"""SQLite: a database in a file, in the kernel's own process.

Its own: ``json_each`` / ``json_tree`` in ``FROM``, ``main`` as the name of the default schema,
dates and times stored and returned as text (results parse declared date columns back), and
connection advice that names the file rather than a server.

The values a query builds are part of its policy too, as for DuckDB: SQLite computes in the
kernel. ``SQLITE_LIMIT_LENGTH`` (set per call to the result's byte limit, 16 MiB) stops any
one value at that size, but not many of them at once — in one row, in the rows read per
fetch, in a sorter — so the value-size rule (:mod:`relay_nb.sql.guard.sizes.sizer`)
bounds them with SQLite's table of functions and limits measured on SQLite (below).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from relay_nb.sql.guard import rules as shared
from relay_nb.sql.guard.policies.base import GuardPolicy
from relay_nb.sql.guard.sizes import SizeLimits, SizeRule, bound_value_sizes, size_table

__all__ = ["SQLitePolicy"]

_KIB = 1024


class SQLitePolicy(GuardPolicy):
    name = "sqlite"
    dialects = ("sqlite",)
    implicit_recursion = True
    table_functions = shared.COMMON_TABLE_FUNCTIONS | frozenset({"json_each", "json_tree"})
    default_schema_aliases = frozenset({"main"})
    embedded = True
    dates_as_text = True
    rules = (*GuardPolicy.rules, ("tree", bound_value_sizes))

    size_limits: ClassVar[SizeLimits] = SizeLimits(
        value_bytes=16 * _KIB,
        value_multiple=64,
        query_bytes=32 * _KIB,
        query_multiple=256,
        clamp_bytes=2 * _KIB,
        bounded_recursion=True,
    )
    """The bounds of the value-size rule for SQLite, from measurements (SQLite 3.40.1, peak
    RSS growth of a fresh process, the connector's per-call settings). SQLite evaluates one
    row at a time, so what costs memory is how many rows of built values are held at once:

    - the rows read per fetch: ``fetch.py`` reads SQLite rows 64 at a time before the byte
      budget sees them (``SELECT randomblob(5000000) FROM orders LIMIT 50``: +248 MB for a
      result that stops at 3 rows) — 64 rows of 32 KiB are 2 MiB;
    - a sorter (``ORDER BY`` without ``LIMIT``, ``GROUP BY`` on a built value) merges its
      runs holding about one row per run, ~N·R²/1.5 MB for N rows of R bytes; fed for the
      whole 30 s statement timeout it peaked at +83 MB for 16 KiB rows, +137 MB for 32 KiB,
      +245 MB for 64 KiB, and +318 MB in 7 s for 256 KiB. So a row may build 32 KiB from
      constants (``query_bytes``), one value 16 KiB (two of them fit a row);
    - ``ORDER BY … LIMIT`` (top-N), ``DISTINCT``, materialised CTEs, ``IN (SELECT …)`` and
      window partitions spill to temporary files: 300 values of 1-5 MB peaked at +3 to
      +26 MB, so they need no bound of their own.

    Copies of stored values: 64 per value as for DuckDB; 256 per row (DuckDB: 1024): 256
    copies of a 64-byte name are 16 KiB, half a row's budget. Counts that are not
    literals (``zeroblob(n)``, ``printf('%.*c', n, '#')``) are clamped to 2 KiB: sixteen fit
    in a row. A recursive CTE that adds to a value per step must bound its steps
    (``bounded_recursion``): 16 bytes a step over 20 000 steps, sorted, was +381 MB."""
    size_text_factor: ClassVar[int] = 1
    """SQLite prints text and blobs as their own bytes (``x'00' || 'a'`` is 2 bytes) and a
    number as at most 64 characters."""
    size_functions: ClassVar[Mapping[str, SizeRule]] = size_table(
        {
            # -- sized by a number (the count's argument) ------------------------------------
            ("bytes", 0): "zeroblob randomblob",
            ("printf", "sqlite"): "printf format",  # %1000000d, %.*c, %*d, %q
            ("per_argument", 4): "char chr",  # a code point is at most 4 bytes
            # -- sized by a pattern ---------------------------------------------------------
            ("replace",): "replace",
            ("strftime",): "strftime time_to_str",
            # FTS: markers around every match of the stored document (argument 2 on);
            # offsets prints four numbers (at most 44 bytes) per matched token
            ("markup", 2): "highlight snippet",
            ("markup", 1, 44): "offsets",
            # -- a constant factor of the argument printed as text (plus a few bytes) -------
            ("printed", 2, 0): "hex lower_hex",  # sqlglot reads lower(hex(x)) as lower_hex
            ("printed", 2, 4): "quote",  # 'it''s', X'00FF'
            ("printed", 3, 0): "upper lower",  # ASCII here; an ICU build folds ß to SS
            ("printed", 6, 2): "unistr_quote",  # 3.50: \u0001 per control character
            ("json",): (
                "json_array j_s_o_n_array json_object j_s_o_n_object json_quote json_insert "
                "json_replace json_set json_array_insert jsonb_array jsonb_object jsonb_insert "
                "jsonb_replace jsonb_set jsonb_array_insert"
            ),
            # JSON5 input (3.42+) comes out as canonical JSON: {a:1} gains the key's quotes
            ("scale", 2): "json jsonb json_remove jsonb_remove",
            ("scale", 2, 1): "json_patch jsonb_patch",
            ("paths", 0, 2): "json_extract json_extract_scalar jsonb_extract -> ->>",
            ("json_pretty",): "json_pretty",  # 3.46: indentation per nesting level
            ("scale", 8): "rtreenode",  # a node's numbers as text
            # -- bounded by their inputs ----------------------------------------------------
            ("part",): (
                "substr substring trim ltrim rtrim likely unlikely likelihood unhex unistr "
                "max min first_value last_value nth_value any_value"
            ),
            ("widest",): "lag lead",  # the value of another row, or the default
            ("concat",): "concat",  # 3.44
            ("concat_ws",): "concat_ws",  # 3.44
            # -- text of a fixed size (bytes) -----------------------------------------------
            ("text", 32): (
                "date time datetime julianday unixepoch timediff current_date current_time "
                "current_timestamp optimize"
            ),
            ("text", 128): (
                "sqlite_version current_version sqlite_source_id fts5_source_id "
                "sqlite_compileoption_get"
            ),
            # -- stored: collected per group (each at most SQLITE_LIMIT_LENGTH) --------------
            ("data",): (
                "group_concat string_agg json_group_array j_s_o_n_array_agg json_group_object "
                "j_s_o_n_object_agg jsonb_group_array jsonb_group_object matchinfo"
            ),
        }
    )
    """How each SQLite function's output size follows from its arguments (kinds in
    :mod:`relay_nb.sql.guard.sizes.kinds`). Derived from ``pragma_function_list``
    of SQLite 3.40.1 (JSON1, math functions, FTS3/4/5, R*Tree), plus the functions later
    releases add (``concat``, ``unhex``, ``string_agg``, JSONB, ``json_pretty``,
    ``unistr_quote``), under the names sqlglot parses them into. A function not listed
    returns a fixed-width value (numbers, ``typeof``, ``soundex``, ``json_type``);
    ``test_guard_sizes_sqlite.py`` checks that against every function of the installed
    engine."""
    size_prefixes: ClassVar[Mapping[str, SizeRule]] = {}
