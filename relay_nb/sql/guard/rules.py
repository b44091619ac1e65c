"""What the SQL guard refuses and allows for every dialect, as data: node classes, keywords,
function names.

Kept apart from :mod:`relay_nb.sql.guard.query` so a reviewer can audit the policy
without reading the pipeline, and so adding a name is a one-line data change. What holds for
one dialect family only (its table functions, pseudo tables, extra names, rules of its own)
is in that family's module under :mod:`relay_nb.sql.guard.policies`.

Policy choices worth knowing (each one errs towards refusing):

* **Function denylists are unioned across dialects.** A name dangerous on one engine is refused
  on all of them: engines speak each other's wire protocol and function set (Redshift,
  CockroachDB and Materialize answer to PostgreSQL names; TiDB and SingleStore to MySQL's;
  MotherDuck to DuckDB's), so "this dialect has no such function" is not a guarantee.
* **Functions sqlglot does not know** (``exp.Anonymous``, so extension and user-defined ones)
  are also refused when any ``_``-separated word of their name is a danger word
  (``read``, ``file``, ``sleep``, ``exec``, ``http`` …): ``st_read``, ``sys_exec``,
  ``http_get`` or ``postgres_query`` are caught without being listed. Functions sqlglot
  *does* know are standard scalar/aggregate functions and are only refused by exact name.
* **Table functions are allowlisted** per family: only set-returning functions that compute
  rows from their arguments (``generate_series``, ``unnest``, ``json_each`` …) may appear in
  ``FROM``.
  Everything else there (``read_csv``, ``dblink``, ``pragma_table_info``, ``duckdb_secrets``,
  ``openrowset``, ClickHouse's ``url``/``file``/``s3``) is refused.
* **current_setting is refused.** Server settings are not analytics, and custom settings do
  hold secrets in practice (PostgREST keeps its JWT secret in ``app.settings.jwt_secret``).
  ``version()``, ``current_user`` and ``current_database()`` stay allowed: harmless and
  sometimes asked for.
* **All ``pg_*`` functions are refused** except a few pure formatting helpers: they are
  administration, introspection and file access, never needed for analytics.
* **Catalog lookups are refused** (:mod:`relay_nb.sql.guard.lookups`): casts to
  ``regclass`` and its kin, and functions that resolve an OID or a name in the catalog
  (``obj_description``, ``format_type``, ``has_type_privilege`` …), derived from a real
  PostgreSQL server. They reach tables the allowlist does not name without a ``FROM``.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.expressions.dml import DML

from relay_nb.sql.guard import lookups as guard_catalog

__all__ = [
    "ALLOWED_LEADING_KEYWORDS",
    "CATALOG_FUNCTIONS",
    "CATALOG_TYPES",
    "COMMAND_KEYWORDS",
    "COMMON_TABLE_FUNCTIONS",
    "COMMAND_NODES",
    "DANGER_WORDS",
    "DENIED_FUNCTIONS",
    "DENIED_FUNCTION_CLASSES",
    "DENIED_PREFIXES",
    "EXECUTABLE_COMMENT",
    "FILE_FUNCTIONS",
    "FILE_PREFIXES",
    "FILE_WORDS",
    "ITERATED_CHAINS",
    "PATH_LIKE_TABLE",
    "MAX_NESTING",
    "MAX_OUTPUT_CHARS",
    "MAX_SQL_CHARS",
    "MAX_SUBSCRIPT_TOKENS",
    "MAX_TOKENS",
    "MAX_TREE_DEPTH",
    "chain_class",
    "SELECT_CLAUSE_REFUSALS",
    "SAFE_FUNCTIONS",
    "STATEMENT_KEYWORDS",
    "STATEMENT_NODES",
    "STRUCTURAL_REFUSALS",
    "MAX_GENERATED_ROWS",
    "TABLE_FUNCTION_CLASSES",
    "denied_statement_classes",
    "small_count",
]

# --------------------------------------------------------------------------------------------
# Statements and commands, by sqlglot node class. The guard refuses these anywhere in the tree.

STATEMENT_NODES: tuple[type[exp.Expr], ...] = (
    DML,  # INSERT, UPDATE, DELETE, MERGE (writable CTEs included)
    exp.DDL,  # CREATE, and INSERT again
    exp.Drop,
    exp.Alter,
    exp.TruncateTable,
    exp.Undrop,
    exp.SwapTable,
    exp.Comment,  # COMMENT ON
    exp.ConditionalInsert,
    exp.MultitableInserts,
)
"""DML and DDL: rule ``forbidden_statement``."""

COMMAND_NODES: tuple[type[exp.Expr], ...] = (
    exp.Command,  # sqlglot's fallback for anything it does not model: EXPLAIN, CALL, DO, VACUUM…
    exp.Copy,
    exp.LoadData,
    exp.Export,
    exp.Set,
    exp.Pragma,
    exp.Attach,
    exp.Detach,
    exp.Install,
    exp.Kill,
    exp.Use,
    exp.Execute,
    exp.Declare,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.AlterSession,
    exp.ConnectTo,
    exp.Disconnect,
    exp.Describe,
    exp.Show,
    exp.Summarize,
    exp.Grant,
    exp.Revoke,
    exp.Analyze,
    exp.Cache,
    exp.Uncache,
    exp.Refresh,
    exp.Put,
    exp.Get,
    exp.ListStage,
    exp.LockingStatement,
)
"""Everything else that is not a query: rule ``forbidden_command``."""

STRUCTURAL_REFUSALS: dict[str, tuple[int, str, str]] = {
    "into": (1, "select_into", "SELECT … INTO (tables, files, variables) is not allowed"),
    "lock": (2, "locking_clause", "remove FOR UPDATE / FOR SHARE: the query must not lock rows"),
    "hint": (
        3,
        "optimizer_hint",
        "remove the /*+ … */ optimizer hint: hints can override the statement timeout",
    ),
    "variable": (
        3,
        "server_variable",
        "variables and parameters (@@x, @x, $1) are not allowed; write literal values",
    ),
    "settings": (
        3,
        "server_variable",
        "remove the SETTINGS clause: per-query settings can override the statement timeout",
    ),
    "format": (
        3,
        "server_variable",
        "remove the FORMAT clause: relay_nb reads results in the driver's own format",
    ),
}
"""Clauses refused wherever they appear: (priority, rule, message). Lower priority wins when
a query breaks several rules, so the model hears about the most fundamental problem first."""

SELECT_CLAUSE_REFUSALS: dict[str, str] = {
    "settings": "settings",
    "format": "format",
    "options": "hint",
}
"""SELECT arguments refused when present: ClickHouse ``SETTINGS …`` and ``FORMAT …`` (the
client parses the server's answer in the format it asked for), T-SQL ``OPTION (…)``."""

MAX_SQL_CHARS = 100_000
"""Longer input is refused before tokenising: no analytic query needs it, and it bounds the
work a hostile input can make the guard do."""

MAX_TOKENS = 50_000
"""More tokens are refused before parsing: the tree (~500 bytes a node, about one and a half
nodes a token) is what the guard's memory grows with, and the densest 100,000 characters
(``a+a+…``) would be 100,000 tokens. Typical SQL has four or five characters a token."""

MAX_NESTING = 64
"""Brackets, ``CASE … END`` and pending prefix operators (``NOT``, ``-``) open at once, counted
on tokens before parsing: sqlglot's parser and generator recurse once per level, and past
Python's recursion limit (or, with a raised limit, the C stack) a deep input would crash the
kernel instead of being refused. Analytic queries stay far below it."""

MAX_TREE_DEPTH = 256
"""Levels of the parsed tree, not counting the chains sqlglot generates iteratively (``a AND b
AND c``, ``UNION`` branches): postfix chains (``x::int::int``, ``a.b.c``) nest without brackets."""

ITERATED_CHAINS: tuple[type[exp.Expr], ...] = (
    exp.And, exp.Or, exp.Add, exp.Sub, exp.Mul, exp.DPipe, exp.EQ, exp.NEQ, exp.GT, exp.GTE,
    exp.LT, exp.LTE, exp.Is, exp.Like, exp.SetOperation,
)  # fmt: skip
"""Nodes sqlglot's generator writes in a loop when they chain with their own kind (``a AND b
AND …``, ``… UNION ALL …``): a link between two of the same kind adds no level of recursion,
so thousands of conditions or branches stay allowed (test_guard_cost.py checks the loop).
The walk and the read-back count :data:`MAX_TREE_DEPTH` the same way with them."""

_CHAIN_CLASSES: dict[type, type[exp.Expr] | None] = {}


def chain_class(cls: type[exp.Expr]) -> type[exp.Expr] | None:
    """``cls`` when its nodes chain with their own kind (:data:`ITERATED_CHAINS`), else
    None: what the walk and the read-back ask of every node, kept per class."""
    try:
        return _CHAIN_CLASSES[cls]
    except KeyError:
        chain = _CHAIN_CLASSES[cls] = cls if issubclass(cls, ITERATED_CHAINS) else None
        return chain


MAX_SUBSCRIPT_TOKENS = 4_000
"""Tokens under array subscripts, summed over the subscripts: in dialects whose arrays start
at 1 sqlglot's parser infers the type of every subscripted operand (``x[1]``) while parsing,
~20 µs a node, so nested or chained subscripts (``a[1][1][1]``) cost quadratic time."""

MAX_OUTPUT_CHARS = 4 * MAX_SQL_CHARS
"""The re-serialised query may be longer than the input (``CAST(x AS INT)`` for ``x::int``, an
explicit ``AS``, SQLite's ``CROSS JOIN`` for a comma, the LIMIT: up to three times), but not
beyond this: generation that grows past it is stopped. The second pass reads it with twice
the input's token bound."""

# Helper nodes defined next to the statements in sqlglot's ddl/dml modules that also appear
# inside ordinary queries and are harmless there.
_QUERY_SAFE_DDL_NODES = frozenset({"Comprehension", "CharacterSet", "NextValueFor"})


def denied_statement_classes() -> tuple[type[exp.Expr], ...]:
    """Every class sqlglot defines in its DDL/DML modules, minus a few query helpers.

    Why by module: a sqlglot upgrade that models a new statement (``exp.Vacuum`` one day)
    puts it in those modules, and the guard then refuses it without a code change. It is the
    fail-closed half of the explicit lists above.
    """
    out = []
    for name in dir(exp):
        cls = getattr(exp, name)
        if (
            isinstance(cls, type)
            and issubclass(cls, exp.Expr)
            and cls.__module__.rsplit(".", 1)[-1] in ("ddl", "dml")
            and name not in _QUERY_SAFE_DDL_NODES
        ):
            out.append(cls)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Leading keywords: a fast, friendly first verdict before parsing. The parsed tree is still
# what decides; this only names the rule and avoids sqlglot's "falling back to Command" path.

ALLOWED_LEADING_KEYWORDS = frozenset({"SELECT", "WITH", "(", "FROM", "TABLE"})

STATEMENT_KEYWORDS = frozenset(
    {
        "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "REPLACE", "CREATE", "DROP", "ALTER",
        "TRUNCATE", "RENAME", "COMMENT", "REINDEX", "CLUSTER", "REFRESH", "IMPORT", "SECURITY",
        "UNDROP",
    }
)  # fmt: skip

COMMAND_KEYWORDS = frozenset(
    {
        "PRAGMA", "ATTACH", "DETACH", "COPY", "SET", "RESET", "BEGIN", "START", "COMMIT",
        "ROLLBACK", "SAVEPOINT", "RELEASE", "END", "ABORT", "EXPLAIN", "ANALYZE", "ANALYSE",
        "CALL", "DO", "EXEC", "EXECUTE", "PREPARE", "DEALLOCATE", "VACUUM", "GRANT", "REVOKE",
        "LOAD", "INSTALL", "UNINSTALL", "FORCE", "USE", "KILL", "HANDLER", "LOCK", "UNLOCK",
        "LISTEN", "NOTIFY", "UNLISTEN", "CHECKPOINT", "DISCARD", "FLUSH", "OPTIMIZE", "REPAIR",
        "CHECK", "CHECKSUM", "PURGE", "SHUTDOWN", "DECLARE", "FETCH", "MOVE", "CLOSE", "OPEN",
        "EXPORT", "WAITFOR", "BACKUP", "RESTORE", "DBCC", "BULK", "CACHE", "UNCACHE", "MSCK",
        "PUT", "GET", "LIST", "REMOVE", "SOURCE", "XA", "BINLOG", "CHANGE", "SIGNAL",
        "RESIGNAL", "GO", "DELIMITER", "SYSTEM",
    }
)  # fmt: skip

# --------------------------------------------------------------------------------------------
# Functions. Names are compared lowercased; a name is checked with and without its qualifier.

FILE_FUNCTIONS = frozenset(
    {
        # PostgreSQL
        "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "lo_import",
        "lo_export", "pg_file_write", "pg_file_read",
        # MySQL / MariaDB
        "load_file",
        # SQLite (CLI and fileio extension)
        "readfile", "writefile", "edit", "fsdir", "lsdir", "zipfile", "load_extension",
        # DuckDB
        "glob", "sniff_csv", "parquet_metadata", "parquet_schema", "parquet_file_metadata",
        "parquet_kv_metadata", "parquet_bloom_probe", "iceberg_scan", "iceberg_metadata",
        "iceberg_snapshots", "delta_scan", "st_read", "st_read_meta", "st_readosm",
        "read_text", "read_blob", "getenv",
        # Snowflake, SQL Server, ClickHouse
        "to_file", "openrowset", "opendatasource", "openquery", "openxml", "bulk", "url",
        "file", "s3", "hdfs", "remote", "remotesecure",
    }
)  # fmt: skip
"""Functions that read or write files, the environment or the network: rule ``file_access``."""

FILE_PREFIXES: tuple[str, ...] = ("read_", "lo_", "copy_", "pg_read_", "pg_ls_", "http_")

DENIED_FUNCTIONS = frozenset(
    {
        # PostgreSQL: index maintenance that writes even in a read-only transaction, and the
        # server's addresses (catalog lookups are CATALOG_FUNCTIONS, below)
        "brin_summarize_new_values", "brin_summarize_range", "brin_desummarize_range",
        "gin_clean_pending_list", "inet_server_addr", "inet_server_port", "inet_client_addr",
        "inet_client_port",
        # PostgreSQL: sleeps, sequences, settings, backends, SQL-from-text, remote databases
        "pg_sleep", "pg_sleep_for", "pg_sleep_until", "set_config", "current_setting",
        "nextval", "setval", "currval", "lastval", "pg_terminate_backend",
        "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile", "pg_notify",
        "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "table_to_xml",
        "table_to_xmlschema", "table_to_xml_and_xmlschema", "cursor_to_xml",
        "cursor_to_xmlschema", "schema_to_xml", "schema_to_xmlschema",
        "schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema",
        "database_to_xml_and_xmlschema", "ts_stat", "ts_rewrite", "crosstab", "crosstab2",
        "crosstab3", "crosstab4", "connectby", "txid_current", "pg_current_xact_id",
        "dblink", "dblink_exec", "dblink_connect", "dblink_send_query", "dblink_open",
        "dblink_fetch", "dblink_get_result",
        # MySQL / MariaDB: sleeps, locks, replication waits, session state, UDF shells
        "sleep", "benchmark", "get_lock", "release_lock", "release_all_locks",
        "is_free_lock", "is_used_lock", "master_pos_wait", "source_pos_wait",
        "master_gtid_wait", "wait_for_executed_gtid_set", "wait_until_sql_thread_after_gtids",
        "last_insert_id", "sys_exec", "sys_eval", "sys_get", "sys_set",
        # SQLite; rtreecheck('t') reads the table named in its string (and so tells one
        # that exists from one that does not)
        "fts3_tokenizer", "fts5", "eval", "sqlite_dbpage", "sqlite_dbdata", "rtreecheck",
        # DuckDB
        "query", "query_table", "json_execute_serialized_sql", "which_secret",
        "duckdb_secrets", "duckdb_settings", "load_aws_credentials", "checkpoint",
        "force_checkpoint", "install", "load", "postgres_query", "mysql_query", "sqlite_query",
        # SQL Server, Snowflake, Oracle, ClickHouse
        "xp_cmdshell", "sleepeachrow", "executable", "external_query", "system",
    }
)  # fmt: skip
"""Side effects, waits, locks, settings, SQL smuggled in strings: rule ``forbidden_function``."""

CATALOG_FUNCTIONS: frozenset[str] = (
    guard_catalog.CATALOG_FUNCTIONS | guard_catalog.EXTENSION_CATALOG_FUNCTIONS
)
"""Functions that look an OID or a name up in the catalog: rule ``forbidden_function``."""

CATALOG_TYPES: frozenset[str] = guard_catalog.CATALOG_TYPES
"""OID alias types whose casts look names up in the catalog: rule ``table_not_allowed``."""

DENIED_PREFIXES: tuple[str, ...] = (
    "pg_", "dblink", "pg_advisory", "sleep", "benchmark", "xp_", "sp_", "dbms_", "utl_",
    "system$", "duckdb_", "pragma_", "sqlite_", "query_to_", "table_to_", "cursor_to_",
    "schema_to_", "database_to_",
    # AI functions (Databricks ai_query/ai_classify, Trino's ai_*, Snowflake's AI_*): they
    # send the rows they are given to a model service, and bill it
    "ai_",
)  # fmt: skip

SAFE_FUNCTIONS = frozenset(
    {"pg_typeof", "pg_size_pretty", "sqlite_version", "sqlite_source_id", "pg_column_size"}
)
"""Exceptions to the prefix rules: pure functions of their arguments."""

DANGER_WORDS = frozenset(
    {
        "sleep", "benchmark", "exec", "execute", "shell", "cmd", "cmdshell", "system", "sys",
        "http", "https", "ftp", "socket", "lock", "locks", "unlock", "advisory", "terminate",
        "cancel", "reload", "kill", "eval", "pragma", "checkpoint", "secret", "secrets",
        "setting", "settings", "config", "getenv", "env", "environ", "install", "extension",
        "attach", "detach", "sql", "setval", "nextval", "notify", "wait", "dblink", "load",
        "import", "export", "copy", "write", "read", "file", "files", "glob", "scan", "dir",
        "s3", "gcs", "azure",
    }
)  # fmt: skip
"""A function sqlglot does not know is refused when its name contains one of these words."""

FILE_WORDS = frozenset(
    {
        "read", "write", "file", "files", "glob", "scan", "dir", "load", "import", "export",
        "copy", "http", "https", "ftp", "s3", "gcs", "azure", "getenv", "env", "environ",
    }
)  # fmt: skip
"""Danger words that mean the file system, the environment or the network: ``file_access``."""

DENIED_FUNCTION_CLASSES: dict[type[exp.Expr], str] = {
    exp.ReadCSV: "file_access",
    exp.ReadParquet: "file_access",
    exp.ToFile: "file_access",
    exp.NextValueFor: "forbidden_function",
    # Databricks' secret('scope', 'key') returns the secret in clear (any dialect that
    # parses it means the same)
    exp.Secret: "forbidden_function",
    # AI functions sqlglot models: rows sent to a model service (Trino's configured LLM,
    # Databricks model serving, Snowflake Cortex), billed per call
    **{
        getattr(exp, name): "forbidden_function"
        for name in dir(exp)
        if name.startswith("AI") and isinstance(getattr(exp, name), type)
    },
}
"""Typed sqlglot functions with side effects (the parser maps several spellings onto each)."""

# --------------------------------------------------------------------------------------------
# Table functions: the allowlist for function calls in FROM / JOIN / LATERAL.

TABLE_FUNCTION_CLASSES: tuple[type[exp.Expr], ...] = (
    exp.Unnest,
    exp.Explode,
    exp.ExplodeOuter,
    exp.Posexplode,
    exp.PosexplodeOuter,
    exp.GenerateSeries,
    exp.ExplodingGenerateSeries,
    exp.GenerateDateArray,
    exp.JSONTable,
)

COMMON_TABLE_FUNCTIONS = frozenset({"generate_series", "unnest", "range"})
"""Table functions every family allows in ``FROM``; a family adds its own."""

MAX_GENERATED_ROWS = 10_000_000
"""The most rows a row-making table function (Snowflake's ``GENERATOR``, ClickHouse's
``numbers``) may make: a calendar or a series of ids is far below it; a trillion rows is
warehouse time spent on nothing."""

# --------------------------------------------------------------------------------------------
# Text patterns, applied to comment text and to table names only (never to query text).

EXECUTABLE_COMMENT = re.compile(r"/\*[mM]?!")
"""MySQL ``/*! … */`` and MariaDB ``/*M! … */``: comments to sqlglot, code to the server."""

PATH_LIKE_TABLE = re.compile(r"[/\\:*?~]|\.[A-Za-z0-9]{1,8}$")
"""A "table" named like a file or URL: DuckDB scans ``FROM 'x.csv'`` and ``FROM "s3://…"``."""


def small_count(node: object) -> bool:
    """Whether ``node`` is an integer literal up to :data:`MAX_GENERATED_ROWS`."""
    return (
        isinstance(node, exp.Literal)
        and not node.is_string
        and node.name.isdigit()
        and int(node.name) <= MAX_GENERATED_ROWS
    )
