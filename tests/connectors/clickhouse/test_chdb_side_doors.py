"""ClickHouse's side doors, shown harmful on plain chDB, then refused through relay_nb.

ClickHouse's table functions (``SELECT name FROM system.table_functions``: 94 in chdb 4.4)
include many that leave the database: they read and write local files, list directories, open
SQLite files, read the kernel's own Python variables, run programs, and connect to other
servers over HTTP, S3, the native protocol, MySQL's, PostgreSQL's, MongoDB's, Redis' or HDFS'
protocols. Each door below is first opened on a plain chDB connection (no relay_nb) to show the
harm — a file read or written, a connection that reached a listener on 127.0.0.1 (nothing
leaves the machine), a program run — and then sent through ``relay.connect("ch",
"chdb:///…")``'s query tool, which refuses it with the guard's rule while the harm does not
happen. Past the guard, the statement's read-only session (``readonly = 1``) refuses the table
functions a second time; the doors it does not shut are listed in
:func:`test_what_only_the_guard_stops`.
"""

from __future__ import annotations

import asyncio
import stat
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from chdb_helpers import HTTP_REPLY, Listener, run_raw, url

from relay_nb import Relay, ScriptedRuntime
from relay_nb.connectors.sql.readonly import build_engine, run_read_only

SECRET = "top-secret-marker"
HIDDEN = "secret-in-a-table-the-model-may-not-read"
kernel_secrets = pd.DataFrame({"api_key": ["sk-live-kernel-variable"]})
"""A variable of the Python process: chDB's ``python()`` table function reads it by name."""


@dataclass(frozen=True)
class Door:
    id: str
    sql: str
    """``{files}``: a folder holding ``secret.txt`` and ``app.db``; ``{out}``: an empty folder;
    ``{port}``: the listener's."""
    harm: str
    """``reads`` (a secret comes back), ``writes`` (``{out}/written.csv`` appears),
    ``connects`` (the listener is reached), ``runs`` (a program ran)."""
    rules: tuple[str, ...]
    reply: bytes = b""
    engine_refuses: bool = True
    """``readonly = 1`` refuses it too (past the guard)."""
    slow: bool = False


_HTTP = "from-the-listener"
DOORS = [
    Door(
        "file-reads-a-local-file",
        "SELECT * FROM file('{files}/secret.txt', 'LineAsString')",
        "reads",
        ("file_access",),
    ),
    Door(
        "file-reads-etc-hostname",
        "SELECT * FROM file('/etc/hostname', 'LineAsString')",
        "reads",
        ("file_access",),
    ),
    Door(
        "file-writes-a-file",
        "INSERT INTO FUNCTION file('{out}/written.csv', 'CSV') SELECT 1",
        "writes",
        ("forbidden_statement",),
    ),
    Door(
        "url-file-scheme-reads",
        "SELECT * FROM url('file://{files}/secret.txt', 'LineAsString')",
        "reads",
        ("file_access",),
    ),
    Door(
        "filesystem-lists-a-folder",
        "SELECT name FROM filesystem('{files}')",
        "reads",
        ("table_function_not_allowed",),
    ),
    Door(
        "sqlite-reads-a-local-database",
        "SELECT * FROM sqlite('{files}/app.db', 'users')",
        "reads",
        ("table_function_not_allowed",),
    ),
    Door(
        "python-reads-a-kernel-variable",
        "SELECT * FROM python(kernel_secrets)",
        "reads",
        ("table_function_not_allowed",),
    ),
    Door(
        "executable-runs-a-program",
        "SELECT * FROM executable('probe.sh', 'TabSeparated', 'line String')",
        "runs",
        ("forbidden_function",),
    ),
    Door(
        "url-fetches-over-http",
        "SELECT * FROM url('http://127.0.0.1:{port}/data.csv', 'LineAsString')",
        "connects",
        ("file_access",),
        reply=HTTP_REPLY,
    ),
    Door(
        "s3-fetches-over-http",
        "SELECT * FROM s3('http://127.0.0.1:{port}/bucket/data.csv', 'LineAsString')",
        "connects",
        ("file_access",),
        reply=HTTP_REPLY,
    ),
    Door(
        "gcs-fetches-over-http",
        "SELECT * FROM gcs('http://127.0.0.1:{port}/bucket/data.csv', 'LineAsString')",
        "connects",
        ("file_access",),
        reply=HTTP_REPLY,
    ),
    Door(
        "azure-blob-storage-connects",
        "SELECT * FROM azureBlobStorage('DefaultEndpointsProtocol=http;AccountName=a;"
        "AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:{port}/a;', 'c', 'data.csv', "
        "'LineAsString')",
        "connects",
        ("table_function_not_allowed",),
        reply=HTTP_REPLY,
    ),
    Door(
        "remote-connects-natively",
        "SELECT * FROM remote('127.0.0.1:{port}', system.one)",
        "connects",
        ("file_access",),
    ),
    Door(
        "remote-secure-connects",
        "SELECT * FROM remoteSecure('127.0.0.1:{port}', system.one)",
        "connects",
        ("file_access",),
    ),
    Door(
        "postgresql-connects",
        "SELECT * FROM postgresql('127.0.0.1:{port}', 'db', 't', 'u', 'p')",
        "connects",
        ("table_function_not_allowed",),
    ),
    Door(
        "mysql-connects",
        "SELECT * FROM mysql('127.0.0.1:{port}', 'db', 't', 'u', 'p')",
        "connects",
        ("table_function_not_allowed",),
        slow=True,  # three attempts, a second each
    ),
    Door(
        "mongodb-connects",
        "SELECT * FROM mongodb('127.0.0.1:{port}', 'db', 'c', 'u', 'p', 'x String')",
        "connects",
        ("table_function_not_allowed",),
    ),
    Door(
        "redis-connects",
        "SELECT * FROM redis('127.0.0.1:{port}', 'k', 'k String, v String')",
        "connects",
        ("table_function_not_allowed",),
    ),
    Door(
        "hdfs-connects",
        "SELECT * FROM hdfs('hdfs://127.0.0.1:{port}/x.csv', 'LineAsString')",
        "connects",
        ("file_access",),
    ),
    Door(
        "merge-reads-tables-by-pattern",
        "SELECT * FROM merge(currentDatabase(), '^hidden$')",
        "reads",
        ("table_function_not_allowed",),
        engine_refuses=False,
    ),
    Door(
        "loop-reads-a-table-forever",
        "SELECT * FROM loop(currentDatabase(), 'hidden') LIMIT 3",
        "reads",
        ("table_function_not_allowed",),
    ),
    Door(
        "scalar-file-reads-a-local-file",
        "SELECT file('{files}/secret.txt') AS text",
        "reads",
        ("file_access",),
        engine_refuses=False,
    ),
    Door(
        "joinget-reads-a-join-table",
        "SELECT joinGet('hidden_join', 'v', toUInt64(1)) AS v",
        "reads",
        ("forbidden_function",),
        engine_refuses=False,
    ),
]
REFUSED_ONLY = {
    # not run here: input() exists only inside INSERT … SELECT; odbc() and jdbc() start or
    # wait for a bridge process (about 30 s each); cluster() needs a configured cluster
    "SELECT * FROM input('a String')": ("table_function_not_allowed",),
    "SELECT * FROM odbc('DSN=x', 't')": ("table_function_not_allowed",),
    "SELECT * FROM jdbc('jdbc:x', 't')": ("table_function_not_allowed",),
    "SELECT * FROM cluster('default', system.one)": ("table_function_not_allowed",),
    "SELECT * FROM urlCluster('default', 'http://127.0.0.1:1/x', 'CSV')": (
        "table_function_not_allowed",
    ),
    "SELECT * FROM s3Cluster('default', 'http://127.0.0.1:1/b/x', 'CSV')": (
        "table_function_not_allowed",
    ),
    "SELECT * FROM fileCluster('default', '/etc/hostname', 'LineAsString')": (
        "table_function_not_allowed",
    ),
    "SELECT * FROM icebergLocal('/tmp')": ("table_function_not_allowed",),
    "SELECT * FROM deltaLakeLocal('/tmp')": ("table_function_not_allowed",),
    "SELECT * FROM dictionary('status_names')": ("table_not_allowed",),
    "SELECT * FROM system.one": ("table_not_allowed", "system_catalog"),
}


def _params(doors: list[Door]) -> list:
    return [
        pytest.param(door, id=door.id, marks=[pytest.mark.slow] if door.slow else [])
        for door in doors
    ]


@pytest.fixture(scope="module")
def database(chdb_database):
    path = chdb_database(
        [
            "CREATE TABLE orders (id UInt64, v String) ENGINE = MergeTree ORDER BY id",
            "INSERT INTO orders SELECT number, 'o' FROM numbers(5)",
            "CREATE TABLE hidden (id UInt64, v String) ENGINE = MergeTree ORDER BY id",
            f"INSERT INTO hidden VALUES (1, '{HIDDEN}')",
            "CREATE TABLE hidden_join (id UInt64, v String) ENGINE = Join(ANY, LEFT, id)",
            f"INSERT INTO hidden_join VALUES (1, '{HIDDEN}')",
            "CREATE TABLE tokens (token String) ENGINE = MergeTree ORDER BY token",
            "INSERT INTO tokens VALUES ('sk-live-42')",
        ]
    )
    # executable() runs programs from the database's user_scripts folder
    scripts = path / "user_scripts"
    scripts.mkdir()
    probe = scripts / "probe.sh"
    probe.write_text(f"#!/bin/sh\ntouch '{path}/program-ran'\necho ran\n")
    probe.chmod(probe.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    import sqlite3

    folder = tmp_path_factory.mktemp("files")
    (folder / "secret.txt").write_text(SECRET + "\n")
    with sqlite3.connect(folder / "app.db") as db:
        db.execute("CREATE TABLE users (name TEXT, password TEXT)")
        db.execute(f"INSERT INTO users VALUES ('ada', '{SECRET}')")
    return folder


@pytest.fixture(scope="module")
def query_tool(database):
    relay = Relay(ScriptedRuntime(), ledger=False)
    connector = relay.connect("ch", url(database), tables=["orders"], statement_timeout_s=10)
    (tool,) = [t for t in connector.tools() if t.name == "query_ch"]
    yield tool
    relay.close()


@pytest.fixture(scope="module")
def engine(database):
    engine = build_engine(url(database))
    yield engine
    engine.dispose()


class Harm:
    """Where a door's harm would show, for one test."""

    def __init__(self, door: Door, database: Path, files: Path, out: Path) -> None:
        self.door, self.database, self.out = door, database, out
        self.listener = Listener(door.reply) if door.harm == "connects" else None
        port = self.listener.port if self.listener else 0
        self.sql = door.sql.format(files=files, out=out, port=port)
        (database / "program-ran").unlink(missing_ok=True)

    def shown(self, rows: object) -> bool:
        text = repr(rows)
        if self.door.harm == "reads":
            hostname = Path("/etc/hostname")
            marks = [SECRET, HIDDEN, "sk-live-kernel-variable", "secret.txt"]
            if "/etc/hostname" in self.sql and hostname.exists():
                marks.append(hostname.read_text().strip())
            return any(mark in text for mark in marks)
        if self.door.harm == "writes":
            return (self.out / "written.csv").exists()
        if self.door.harm == "runs":
            return (self.database / "program-ran").exists()
        assert self.listener is not None
        return bool(self.listener.received)

    def close(self) -> None:
        if self.listener:
            self.listener.close()


@pytest.fixture
def harm_of(database, files, tmp_path):
    made: list[Harm] = []

    def make(door: Door) -> Harm:
        made.append(Harm(door, database, files, tmp_path))
        return made[-1]

    yield make
    for harm in made:
        harm.close()


@pytest.mark.parametrize("door", _params(DOORS))
def test_on_plain_chdb_the_door_does_harm(database, harm_of, door):
    harm = harm_of(door)
    rows: object = []
    failure = None
    try:
        (rows,) = run_raw(database, [harm.sql])
    except Exception as exc:  # the remote end is no server: the connection was still made
        failure = exc
    assert failure is None or door.harm == "connects", failure
    assert harm.shown(rows), f"{door.id}: no harm seen ({rows!r})"


@pytest.mark.parametrize("door", _params(DOORS))
def test_through_the_query_tool_it_is_refused_with_its_rule(query_tool, harm_of, door):
    harm = harm_of(door)
    result = asyncio.run(query_tool.run({"sql": harm.sql}))
    assert result.is_error and result.failure == "refused", result.content
    assert result.content.split(":", 1)[0] in door.rules, result.content
    assert not harm.shown(result.content)


@pytest.mark.parametrize("door", _params([d for d in DOORS if d.engine_refuses]))
def test_past_the_guard_the_read_only_session_refuses_it(engine, harm_of, door):
    harm = harm_of(door)
    with pytest.raises(Exception, match=r"readonly mode\. \(READONLY\)"):
        run_read_only(engine, harm.sql, max_rows=10, timeout_s=10)
    assert not harm.shown([])


@pytest.mark.parametrize("door", _params([d for d in DOORS if not d.engine_refuses]))
def test_what_only_the_guard_stops(engine, harm_of, door):
    """``readonly = 1`` is about writes and the table functions that reach outside; it lets
    the scalar ``file()`` function read any local file (chDB is clickhouse-local, which
    allows any path) and ``merge()``/``joinGet`` read the database's other tables. Past the
    guard these run: the guard is the only wall (tested above)."""
    harm = harm_of(door)
    fetched = run_read_only(engine, harm.sql, max_rows=10, timeout_s=10)
    assert harm.shown(fetched.rows)


@pytest.mark.parametrize("sql", sorted(REFUSED_ONLY))
def test_the_other_doors_are_refused_too(query_tool, sql):
    result = asyncio.run(query_tool.run({"sql": sql}))
    assert result.is_error and result.failure == "refused", result.content
    assert result.content.split(":", 1)[0] in REFUSED_ONLY[sql], result.content


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count() AS hits FROM orders WHERE 'sk-live-42' IN tokens",
        "SELECT count() AS hits FROM orders WHERE 'sk-live-42' IN (tokens)",
        "SELECT count() AS hits FROM orders WHERE 'sk-live-42' GLOBAL NOT IN default.tokens",
        "SELECT count() AS hits FROM orders PREWHERE 'sk-live-42' IN tokens",
    ],
)
def test_in_a_table_that_is_not_allowed_is_refused(query_tool, sql: str):
    """ClickHouse reads the table named after IN: a membership oracle on any table, had the
    guard taken the name for a column."""
    result = asyncio.run(query_tool.run({"sql": sql}))
    assert result.is_error and result.content.startswith("table_not_allowed"), result.content


def test_in_a_table_reads_it_on_the_engine(engine):
    """What the guard bug above lets through, run past the guard: the answer says whether
    ``tokens`` holds the guessed value."""
    hit = "SELECT count() FROM orders WHERE 'sk-live-42' IN tokens"
    miss = "SELECT count() FROM orders WHERE 'sk-live-43' IN tokens"
    assert run_read_only(engine, hit, max_rows=1, timeout_s=5).rows == [(5,)]
    assert run_read_only(engine, miss, max_rows=1, timeout_s=5).rows == [(0,)]


def test_the_listener_sees_nothing_from_relay_nb(query_tool, engine):
    """All doors at once through the tool and past the guard: no connection reaches it."""
    listener = Listener(HTTP_REPLY)
    try:
        for door in DOORS:
            if door.harm != "connects" or door.slow:
                continue
            sql = door.sql.format(files="/nonexistent", out="/nonexistent", port=listener.port)
            asyncio.run(query_tool.run({"sql": sql}))
            with pytest.raises(Exception, match="READONLY"):
                run_read_only(engine, sql, max_rows=1, timeout_s=5)
        assert listener.received == []
    finally:
        listener.close()


def test_numbers_a_generator_is_allowed(query_tool):
    sql = "SELECT toDate('2024-01-01') + number AS day FROM numbers(31)"
    result = asyncio.run(query_tool.run({"sql": sql}))
    assert not result.is_error, result.content
    assert result.artifact.row_count == 31
