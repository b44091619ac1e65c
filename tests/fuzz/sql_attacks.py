"""Hypothesis strategies: statements that mix writes, commands or side effects into SQL.

Two classes, because they promise different things:

* :func:`writes` — statements that *do* write, run a command or call a side-effecting
  function in the dialect they are drawn for: a write alone, stacked after or before a
  SELECT (``SELECT …; DELETE …``), a writable CTE, ``WITH … DELETE``, ``SELECT … INTO``,
  ``EXPLAIN ANALYZE DELETE``, a locking clause, a side-effect or file function anywhere in a
  query (select list, WHERE, ORDER BY, HAVING, CASE, a CTE nobody reads, FROM), spelled in
  random case, quoted, schema-qualified, with comments and odd whitespace between tokens.
  The guard must refuse every one with a typed ``UnsafeQueryError``.
* :func:`disguised` — writes wrapped in things that *look* like code but may be data or a
  comment, depending on the dialect: ``'a\\'; DELETE …; --'`` (one string in MySQL, two
  statements elsewhere), ``$$ …; DELETE … $$``, ``E'\\'; …'``, nested ``/* /* */ … */``,
  ``--;`` without a space, ``#``, quoted identifiers, look-alike semicolons. The guard may
  accept these only if what it accepted is harmless: the caller runs the guarded SQL on a
  writable database and checks nothing changed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

__all__ = ["Attack", "disguised", "writes"]


@dataclass(frozen=True)
class Attack:
    sql: str
    family: str
    """What kind of attack (stacked, cte, function, …): for statistics and messages."""

    def __repr__(self) -> str:
        return f"Attack({self.family}: {self.sql!r})"


Draw = Callable[[st.SearchStrategy[Any]], Any]

# --------------------------------------------------------------------------------------------
# The writes, per dialect ("all" is every dialect). {T} is an allowed table.

_ALL = (
    "INSERT INTO {T} SELECT * FROM {T}",
    "INSERT INTO orders (id, customer_id, ordered_at, status) VALUES (9999, 1, '2025-01-01', 'x')",
    "UPDATE {T} SET id = id + 0",
    "UPDATE orders SET status = 'pwned' WHERE id = 1",
    "DELETE FROM {T}",
    "DELETE FROM orders WHERE id > 0",
    "DROP TABLE {T}",
    "DROP VIEW customer_revenue",
    "DROP TABLE IF EXISTS secrets",
    "CREATE TABLE pwned AS SELECT * FROM secrets",
    "CREATE TABLE pwned (a INTEGER)",
    "CREATE VIEW pwned AS SELECT 1 AS x",
    "CREATE INDEX pwned ON orders (status)",
    "ALTER TABLE {T} ADD COLUMN pwned INTEGER",
    "ALTER TABLE orders RENAME TO pwned",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT s1",
    "ANALYZE",
    "EXPLAIN SELECT 1",
    "WITH x AS (SELECT 1 AS a) DELETE FROM {T}",
    "WITH x AS (SELECT 1 AS a) UPDATE orders SET status = 'x'",
    "WITH x AS (SELECT 1 AS a) INSERT INTO orders SELECT * FROM orders",
    # statements of other engines: refused everywhere by their leading keyword or tree
    "MERGE INTO orders USING customers ON orders.customer_id = customers.id "
    "WHEN MATCHED THEN UPDATE SET status = 'x'",
    "REPLACE INTO orders SELECT * FROM orders",
    "TRUNCATE TABLE {T}",
    "GRANT ALL ON orders TO PUBLIC",
    "COPY {T} TO 'relay_fuzz.csv'",
    "ATTACH 'relay_fuzz.db' AS x",
    "PRAGMA user_version = 7",
    "SET x = 1",
    "CALL p()",
    "EXECUTE p",
    "DO 1",
    "SELECT * INTO pwned FROM orders",
)
_BY_DIALECT: dict[str, tuple[str, ...]] = {
    "postgres": (
        "TRUNCATE {T}",
        "TRUNCATE TABLE {T} CASCADE",
        "MERGE INTO orders o USING customers c ON o.customer_id = c.id WHEN MATCHED THEN DELETE",
        "COPY orders TO '/tmp/relay_fuzz.csv'",
        "COPY (SELECT * FROM secrets) TO PROGRAM 'id'",
        "COPY orders FROM '/etc/passwd'",
        "GRANT SELECT ON secrets TO PUBLIC",
        "REVOKE SELECT ON orders FROM PUBLIC",
        "COMMENT ON TABLE orders IS 'pwned'",
        "SET ROLE relay_admin",
        "SET statement_timeout = 0",
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        "RESET ALL",
        "DO $$ BEGIN DELETE FROM orders; END $$",
        "DO LANGUAGE plpgsql $x$ BEGIN PERFORM pg_sleep(1); END $x$",
        "CALL p()",
        "PREPARE p AS DELETE FROM orders",
        "EXECUTE p",
        "LOCK TABLE orders",
        "LISTEN c",
        "NOTIFY c, 'x'",
        "DISCARD ALL",
        "VACUUM orders",
        "CLUSTER orders",
        "REINDEX TABLE orders",
        "REFRESH MATERIALIZED VIEW v",
        "CHECKPOINT",
        "LOAD 'plpgsql'",
        "CREATE EXTENSION IF NOT EXISTS dblink",
        "ALTER SYSTEM SET work_mem = '1GB'",
        "SECURITY LABEL ON TABLE orders IS 'x'",
        "START TRANSACTION READ WRITE",
        "EXPLAIN ANALYZE DELETE FROM orders",
        "EXPLAIN (ANALYZE, FORMAT JSON) UPDATE orders SET status = 'x'",
        "SELECT * INTO pwned FROM orders",
        "SELECT id INTO TEMP pwned FROM orders",
        "SELECT id INTO UNLOGGED pwned FROM orders UNION SELECT 1",
        "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d",
        "WITH u AS (UPDATE orders SET status = 'x' RETURNING id) SELECT count(*) FROM u",
        "WITH i AS (INSERT INTO orders SELECT * FROM orders RETURNING 1) SELECT 1",
        "WITH d AS (DELETE FROM orders RETURNING 1) SELECT 1",
        "WITH a AS (SELECT 1), d AS (DELETE FROM {T} RETURNING 1) SELECT * FROM a",
        "SELECT * FROM (WITH d AS (DELETE FROM orders RETURNING id) SELECT id FROM d) t",
        "SELECT id FROM orders WHERE id IN (WITH d AS (DELETE FROM orders RETURNING id) "
        "SELECT id FROM d)",
        "SELECT * FROM orders FOR UPDATE",
        "SELECT * FROM orders FOR NO KEY UPDATE SKIP LOCKED",
        "SELECT * FROM (SELECT * FROM orders FOR SHARE) t",
        "INSERT INTO orders SELECT * FROM orders ON CONFLICT DO NOTHING",
    ),
    "mysql": (
        "TRUNCATE {T}",
        "REPLACE INTO orders SELECT * FROM orders",
        "INSERT INTO orders SELECT * FROM orders ON DUPLICATE KEY UPDATE status = 'x'",
        "INSERT IGNORE INTO orders SELECT * FROM orders",
        "DELETE orders FROM orders JOIN customers ON customers.id = orders.customer_id",
        "UPDATE orders o JOIN customers c ON c.id = o.customer_id SET o.status = 'x'",
        "LOAD DATA INFILE '/etc/passwd' INTO TABLE orders",
        "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE orders",
        "SELECT * FROM orders INTO OUTFILE '/tmp/relay_fuzz.txt'",
        "SELECT * INTO OUTFILE 'relay_fuzz.txt' FROM orders",
        "SELECT id FROM orders LIMIT 1 INTO DUMPFILE 'relay_fuzz.bin'",
        "SELECT id INTO @x FROM orders LIMIT 1",
        "SELECT id FROM orders LIMIT 1 INTO @x",
        "SET GLOBAL general_log = 1",
        "SET @x = 1",
        "SET SESSION sql_mode = ''",
        "SET max_statement_time = 0",
        "DO SLEEP(1)",
        "HANDLER orders OPEN",
        "FLUSH TABLES",
        "KILL 1",
        "LOCK TABLES orders WRITE",
        "UNLOCK TABLES",
        "INSTALL PLUGIN x SONAME 'x.so'",
        "USE mysql",
        "PREPARE s FROM 'DELETE FROM orders'",
        "EXECUTE s",
        "XA START 'x'",
        "RENAME TABLE orders TO pwned",
        "OPTIMIZE TABLE orders",
        "CALL p()",
        "GRANT SELECT ON shop.* TO 'x'@'%'",
        "SELECT * FROM orders FOR UPDATE",
        "SELECT * FROM orders LOCK IN SHARE MODE",
        "START TRANSACTION",
        "EXPLAIN DELETE FROM orders",
    ),
    "sqlite": (
        "INSERT OR REPLACE INTO orders SELECT * FROM orders",
        "REPLACE INTO orders SELECT * FROM orders",
        "INSERT INTO orders SELECT * FROM orders ON CONFLICT DO NOTHING",
        "ATTACH DATABASE 'relay_fuzz.db' AS x",
        "ATTACH ':memory:' AS x",
        "DETACH x",
        "PRAGMA writable_schema = 1",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA user_version = 7",
        "PRAGMA query_only = 0",
        "VACUUM",
        "VACUUM INTO 'relay_fuzz_copy.db'",
        "REINDEX",
        "RELEASE s1",
        "END",
        "CREATE TRIGGER pwned AFTER INSERT ON orders BEGIN DELETE FROM orders; END",
        "CREATE VIRTUAL TABLE pwned USING fts5(x)",
        "EXPLAIN QUERY PLAN DELETE FROM orders",
    ),
    "duckdb": (
        "TRUNCATE {T}",
        "COPY orders TO 'relay_fuzz.csv'",
        "COPY (SELECT * FROM orders) TO 'relay_fuzz.parquet' (FORMAT PARQUET)",
        "COPY orders FROM 'relay_fuzz.csv'",
        "EXPORT DATABASE 'relay_fuzz_export'",
        "IMPORT DATABASE 'relay_fuzz_export'",
        "INSTALL httpfs",
        "FORCE INSTALL httpfs",
        "LOAD httpfs",
        "ATTACH 'relay_fuzz.duckdb' AS x",
        "DETACH x",
        "USE memory",
        "SET enable_external_access = true",
        "SET GLOBAL threads = 1",
        "RESET threads",
        "PRAGMA enable_profiling",
        "CALL pragma_version()",
        "CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')",
        "CREATE MACRO pwned(a) AS a + 1",
        "CREATE OR REPLACE TABLE orders AS SELECT 1 AS x",
        "CREATE SEQUENCE pwned",
        "CHECKPOINT",
        "FORCE CHECKPOINT",
        "DESCRIBE orders",
        "SHOW TABLES",
        "SUMMARIZE orders",
        "INSERT OR REPLACE INTO orders SELECT * FROM orders",
        "UPDATE orders SET status = 'x' FROM customers WHERE customers.id = orders.customer_id",
        "EXPLAIN ANALYZE DELETE FROM orders",
        "SELECT * FROM orders FOR UPDATE",
    ),
}

# side-effect and file functions: (call, usable in FROM as a table function)
_FUNCTIONS: dict[str, tuple[tuple[str, bool], ...]] = {
    "postgres": (
        ("pg_sleep(1)", False), ("pg_sleep_for('1 second')", False),
        ("pg_sleep_until(now())", False), ("setval('s', 1)", False), ("nextval('s')", False),
        ("currval('s')", False), ("lastval()", False), ("lo_import('/etc/passwd')", False),
        ("lo_export(1, '/tmp/x')", False), ("lo_unlink(1)", False),
        ("pg_read_file('/etc/passwd')", False), ("pg_read_binary_file('/etc/passwd')", False),
        ("pg_ls_dir('.')", True), ("pg_stat_file('postgresql.conf')", True),
        ("set_config('search_path', 'x', false)", False),
        ("current_setting('is_superuser')", False), ("pg_terminate_backend(1)", False),
        ("pg_cancel_backend(1)", False), ("pg_reload_conf()", False),
        ("pg_advisory_lock(1)", False), ("pg_try_advisory_xact_lock(1)", False),
        ("pg_notify('c', 'x')", False), ("dblink_exec('host=x', 'DELETE FROM orders')", False),
        ("dblink('host=x', 'SELECT 1')", True),
        ("query_to_xml('DELETE FROM orders', true, true, '')", False),
        ("txid_current()", False), ("pg_current_xact_id()", False),
        ("pg_logical_emit_message(true, 'x', 'y')", False), ("pg_switch_wal()", False),
        ("brin_summarize_new_values('orders')", False),
        ("gin_clean_pending_list('orders')", False), ("pg_file_write('x', 'y', false)", False),
        ("ts_stat('SELECT 1')", True), ("crosstab('SELECT 1')", True),
        ("pg_get_keywords()", True), ("pg_stat_get_activity(NULL)", True),
    ),
    "mysql": (
        ("sleep(1)", False), ("benchmark(1000000, md5('a'))", False),
        ("get_lock('a', 1)", False), ("release_lock('a')", False),
        ("release_all_locks()", False), ("is_free_lock('a')", False),
        ("load_file('/etc/passwd')", False), ("master_pos_wait('x', 1)", False),
        ("master_gtid_wait('0-1-1', 1)", False), ("sys_exec('id')", False),
        ("sys_eval('id')", False), ("last_insert_id(5)", False),
    ),
    "sqlite": (
        ("load_extension('x')", False), ("readfile('x')", False), ("writefile('x', 'y')", False),
        ("edit('x')", False), ("fts3_tokenizer('x')", False), ("fsdir('.')", True),
        ("pragma_table_info('orders')", True), ("sqlite_dbpage('main')", True),
        ("eval('DELETE FROM orders')", False), ("zipfile('x.zip')", True),
    ),
    "duckdb": (
        ("read_csv('x.csv')", True), ("read_csv_auto('x.csv')", True),
        ("read_parquet('s3://bucket/x.parquet')", True), ("read_json('x.json')", True),
        ("read_text('/etc/passwd')", True), ("read_blob('/etc/passwd')", True),
        ("glob('*')", True), ("getenv('HOME')", False), ("query('DELETE FROM orders')", True),
        ("query_table('orders')", True), ("duckdb_secrets()", True),
        ("duckdb_settings()", True), ("current_setting('threads')", False),
        ("which_secret('s3://x', 's3')", False), ("sniff_csv('x.csv')", True),
        ("parquet_metadata('x.parquet')", True), ("iceberg_scan('x')", True),
        ("delta_scan('x')", True), ("st_read('x.shp')", True),
        ("sqlite_scan('x.db', 'orders')", True), ("postgres_scan('host=x', 'public', 't')", True),
        ("pragma_table_info('orders')", True), ("json_execute_serialized_sql('x')", True),
        ("checkpoint()", False), ("duckdb_tables()", True), ("load_aws_credentials()", False),
    ),
}  # fmt: skip
# a function of another engine is refused too (engines speak each other's dialects)
_FOREIGN = (("pg_sleep(1)", False), ("sleep(1)", False), ("read_csv('x.csv')", True))
_HOSTS = (
    "SELECT {@} FROM orders",
    "SELECT id, {@} AS x FROM orders",
    "SELECT id FROM orders WHERE {@} IS NOT NULL",
    "SELECT id FROM orders ORDER BY {@}",
    "SELECT status, COUNT(*) FROM orders GROUP BY status HAVING MAX({@}) IS NULL",
    "SELECT CASE WHEN id = 1 THEN {@} END FROM orders",
    "SELECT * FROM orders WHERE id IN (SELECT {@})",
    "SELECT (SELECT {@}) AS x",
    "WITH c AS (SELECT {@} AS x) SELECT * FROM orders",
    "SELECT * FROM customers WHERE EXISTS (SELECT 1 FROM orders WHERE {@} IS NULL)",
    "SELECT COALESCE(NULL, {@})",
    "SELECT id FROM orders UNION ALL SELECT {@}",
)
_TABLE_HOSTS = (
    "SELECT * FROM {@}",
    "SELECT * FROM {@} AS x",
    "SELECT * FROM orders, {@} AS x",
    "SELECT * FROM orders JOIN {@} AS x ON true",
    "SELECT * FROM (SELECT * FROM {@}) AS x",
    "WITH c AS (SELECT * FROM {@}) SELECT 1",
)
_READS = (
    "SELECT 1",
    "SELECT id FROM orders",
    "SELECT * FROM customers WHERE country = 'DE'",
    "SELECT status, COUNT(*) FROM orders GROUP BY status",
    "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
)
_SCHEMAS = {"postgres": "pg_catalog", "duckdb": "main", "sqlite": "main", "mysql": "mysql"}
_TABLES = ("orders", "customers", "products", "order_items", "events")

# --------------------------------------------------------------------------------------------
# Spelling: case, whitespace, comments


@functools.cache
def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


def _pick(draw: Draw, options: tuple[Any, ...] | list[Any]) -> Any:
    return options[draw(_ints(0, len(options) - 1))]


def _gap(draw: Draw, dialect: str) -> str:
    """Whitespace between two tokens: spaces, tabs, newlines, or a comment."""
    options = [" ", " ", "\n", "\t", "\r\n", "  \t ", "\x0c", " /* x */ ", " /**/ ", " -- c\n"]
    if dialect == "mysql":
        options.append(" # c\n")
    return _pick(draw, options)


def _respell(draw: Draw, sql: str, dialect: str) -> str:
    """Random case for each word outside quotes, random whitespace between words."""
    words = _split_keeping_quotes(sql)
    out = []
    for i, word in enumerate(words):
        if word[:1] not in ("'", '"', "`", "$") and draw(_ints(0, 3)) == 0:
            word = "".join(c.upper() if draw(_ints(0, 1)) else c.lower() for c in word)
        out.append(word if i == 0 else _gap(draw, dialect) + word)
    return "".join(out)


def _split_keeping_quotes(sql: str) -> list[str]:
    """Split on spaces outside '…', "…", `…` and $$…$$ (the templates are simple)."""
    words: list[str] = []
    current = ""
    quote: str | None = None
    i = 0
    while i < len(sql):
        char = sql[i]
        if quote is None and sql.startswith("$$", i):
            end = sql.find("$$", i + 2)
            current += sql[i : end + 2]
            i = end + 2
            continue
        if quote is None and char in "'\"`":
            quote = char
        elif quote == char:
            quote = None
        if char == " " and quote is None:
            if current:
                words.append(current)
            current = ""
        else:
            current += char
        i += 1
    if current:
        words.append(current)
    return words


def _function(draw: Draw, call: str, dialect: str) -> str:
    """A call spelled as written, upper-cased, quoted, or schema-qualified."""
    name, rest = call.split("(", 1)
    style = _pick(draw, ("plain", "upper", "mixed", "quoted", "schema", "spaced"))
    if style == "upper":
        name = name.upper()
    elif style == "mixed":
        name = "".join(c.upper() if i % 2 else c for i, c in enumerate(name))
    elif style == "quoted":
        name = f"`{name}`" if dialect == "mysql" else f'"{name}"'
    elif style == "schema":
        name = f"{_SCHEMAS[dialect]}.{name}"
    elif style == "spaced" and dialect != "mysql":  # MySQL built-ins need name( together
        name += _pick(draw, (" ", " /* x */ ", "\n"))
    return f"{name}({rest}"


# --------------------------------------------------------------------------------------------
# Strategies


@st.composite
def writes(draw: Draw, dialect: str) -> Attack:
    """A statement that writes, runs a command or calls a side-effect function."""
    family = _pick(draw, ("alone", "stacked_after", "stacked_before", "function", "function",
                          "table_function"))  # fmt: skip
    templates = _ALL + _BY_DIALECT[dialect]
    write = _pick(draw, templates).replace("{T}", _pick(draw, _TABLES))
    read = _pick(draw, _READS)
    if family == "alone":
        sql = _respell(draw, write, dialect) + _pick(draw, ("", ";", " ;", ";\n"))
    elif family == "stacked_after":
        separator = _pick(draw, (";", "; ", ";\n", " ; ", ";;", "; /* */ ", " -- x\n;", ";\t"))
        sql = _respell(draw, read, dialect) + separator + _respell(draw, write, dialect)
        sql += _pick(draw, ("", ";", "; -- end", " -- ;"))
    elif family == "stacked_before":
        separator = _pick(draw, (";", "; ", ";\n", "/* */;"))
        sql = _respell(draw, write, dialect) + separator + _respell(draw, read, dialect)
    else:
        functions = _FUNCTIONS[dialect] + _FOREIGN
        if family == "table_function":
            functions = tuple(f for f in functions if f[1])
        call, _ = _pick(draw, functions)
        hosts = _TABLE_HOSTS if family == "table_function" else _HOSTS
        host = _respell(draw, _pick(draw, hosts), dialect)
        sql = host.replace("{@}", _function(draw, call, dialect))
    return Attack(sql, family)


_DISGUISES = {
    "all": (
        "SELECT 1 /* {W} */",
        "SELECT 1 -- ; {W}",
        "SELECT 1 --; {W}",
        "SELECT 1 /* ; */ -- {W}",
        "SELECT '{Q}' AS x",
        'SELECT 1 AS "x; {W}"',
        "SELECT 1 /* /* */ ; {W} */",
        "SELECT 'a\\'; {W}; -- '",
        'SELECT "; {W}; --"',
        "SELECT 1 #; {W}",
        "SELECT 1\uff1b {W}",  # a full-width semicolon
        "SELECT 1 WHERE 'x' = ';{Q}'",
        "SELECT $$; {W}; $$",
        "SELECT $a$ ; {W}; $a$",
        "SELECT E'\\'; {W}; --'",
        "SELECT `; {W}`",
        "SELECT 1 /*! ; {W} */",
        "SELECT N'; {Q}'",
        "SELECT 'x'/* ; */; -- {W}",
        "SELECT 1\\; {W}",
    ),
}


@st.composite
def disguised(draw: Draw, dialect: str) -> Attack:
    """A write inside something that may be a string, an identifier or a comment."""
    write = _pick(draw, _ALL + _BY_DIALECT[dialect]).replace("{T}", _pick(draw, _TABLES))
    template = _pick(draw, _DISGUISES["all"])
    quoted = write.replace("'", "''")
    return Attack(template.replace("{W}", write).replace("{Q}", quoted), "disguised")
