"""Secrets stored in the data itself (issue 17, class 6): selected through a real turn, none
reaches the model, the trace, the events, the result tables or a file.

The secrets are credential-named environment variables, so relay_nb knows them:
``SHOP_API_TOKEN`` (the suite's canary, plain characters) and ``SHOP_EXPORT_PASSWORD`` (added
here: a quote, a backslash, ``é`` and ``<&>``, so JSON, Python ``repr`` and HTML each write it
differently). Both carry the run's marker, so the scan finds any part of them that keeps it.

Each scenario first reads the secret back through the raw driver (as the role relay_nb
connects as): a clean scan cannot come from a secret that never made it into the data. Then
a scripted model asks through a real ``Relay`` turn (with a recording and a ledger), and
everything a person or the model could read is scanned: every prompt the model received,
the events, the text transcript, the static HTML and the notebook bundle, the result frames
(JSON, CSV, repr), the history, the connector's status and prompt context, a direct
``connector.query()``, the recording, the ledger and the DEBUG log. Last, the result must show
``[REDACTED]`` where the secret was (the data was really selected).

Forms: a whole cell, inside a longer text, a column name (from the catalog, from a query's
alias, from a Mongo/HTTP/MCP key), inside a JSON value, as bytes, split by the value clip
(``max_value_bytes``), in a database error message, in container types (arrays, structs,
maps), in column comments and sample values; over SQLite, DuckDB, PostgreSQL and MariaDB, the
DataFrame connector, MongoDB, an MCP server, an HTTP API, and the ``%relay`` magic.

This suite found six paths that leaked (catalog names and comments and sample values in the
prompt, container cells, JSON-escaped secrets, a secret cut by the value clip, Mongo binary
turned to base64 first, and a secret the model wrote shown in the trace); each case below
failed until its path was fixed.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from secret_data_stores import (
    CLIP_AT,
    ENGINES,
    MAX_VALUE_BYTES,
    DataSecrets,
    Store,
    holds,
    mongo_url,
    open_store,
    service_url,
)
from secret_scan import Canaries, Canary, Evidence

from relay_nb import MCP, Relay, ScriptedRuntime
from relay_nb.connectors.bounds import CLIP_MARK
from relay_nb.connectors.results import preview_for_model
from relay_nb.notebook.view import turn_bundle
from relay_nb.runtime.replay import RecordingRuntime
from relay_nb.views import turn_html, turn_text
from relay_nb.views.html import table_html

pytestmark = pytest.mark.timeout(120)

MODEL = "claude-haiku-4-5"
HOSTILE_ENV = "SHOP_EXPORT_PASSWORD"
R = "[REDACTED]"

# ------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def values(canaries: Canaries) -> DataSecrets:
    return DataSecrets(
        token=canaries.env["SHOP_API_TOKEN"],
        hostile=f'Cnry"{canaries.marker}\\pw-é<&>',
    )


@pytest.fixture
def data_env(
    canary_env: Canaries, values: DataSecrets, monkeypatch: pytest.MonkeyPatch
) -> Canaries:
    """Every canary in the environment (SHOP_API_TOKEN among them), plus the hostile one."""
    monkeypatch.setenv(HOSTILE_ENV, values.hostile)
    return canary_env.with_extra(Canary(HOSTILE_ENV, values.hostile))


@pytest.fixture(scope="module")
def stores(
    values: DataSecrets, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], Store]]:
    """One store per engine, made on first use and dropped when the module ends."""
    made: dict[str, Store] = {}
    directory = tmp_path_factory.mktemp("vault-data")  # never scanned: it holds the secrets

    def get(engine: str) -> Store:
        if engine not in made:
            made[engine] = open_store(engine, values, directory)
        return made[engine]

    yield get
    for store in made.values():
        store.drop()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """Where a turn's recording and ledger go (all of it is scanned)."""
    path = tmp_path / "run"
    path.mkdir()
    return path


# ------------------------------------------------------------------------ running and scanning


def _calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": arguments} for name, arguments in calls]}


@dataclass
class Asked:
    relay: Relay
    model: ScriptedRuntime
    turn: Any


def _ask(
    target: Any,
    calls: list[tuple[str, dict[str, Any]]],
    run_dir: Path,
    *,
    connector_id: str = "vault",
    question: str = "What credentials are stored in the vault?",
    **options: Any,
) -> Asked:
    model = ScriptedRuntime([_calls(*calls), {"text": "The vault holds a token."}], model=MODEL)
    relay = Relay(
        RecordingRuntime(model, run_dir / "recording.jsonl"), ledger=run_dir / "usage.sqlite"
    )
    try:
        relay.connect(connector_id, target, **options)
        turn = relay.ask(question)
    except BaseException:
        relay.close()
        raise
    return Asked(relay, model, turn)


def _turn_evidence(evidence: Evidence, turn: Any, label: str = "turn") -> None:
    """What a person sees of one turn, and what its tools returned."""
    evidence.add(f"{label}: transcript", turn_text(turn))
    evidence.add(f"{label}: static HTML", turn_html(turn))
    data, metadata = turn_bundle(turn)
    evidence.add(f"{label}: notebook bundle", json.dumps(data, ensure_ascii=False))
    evidence.add(f"{label}: notebook metadata", json.dumps(metadata, default=str))
    evidence.add(f"{label}: repr", repr(turn))
    evidence.add(f"{label}: answer", turn.answer)
    evidence.add_all(f"{label}: event", (e.model_dump_json() for e in turn.events))
    evidence.add_all(f"{label}: tool result content", (r.content for r in turn.tool_results))
    evidence.add_all(f"{label}: messages", (m.model_dump_json() for m in turn.messages))
    evidence.add_all(f"{label}: query", turn.queries)
    for number, frame in enumerate(turn.frames):
        _frame_evidence(evidence, frame, f"{label}: frame {number}")


def _frame_evidence(evidence: Evidence, frame: pd.DataFrame, label: str) -> None:
    # bytes as Latin-1 text: pandas' JSON writer refuses bytes, and every byte stays visible
    readable = frame.map(
        lambda x: bytes(x).decode("latin-1") if isinstance(x, bytes | bytearray | memoryview) else x
    )
    evidence.add(f"{label} as JSON", readable.to_json(default_handler=str, force_ascii=False))
    evidence.add(f"{label} as CSV", frame.to_csv(index=False))
    evidence.add(f"{label} repr", frame.to_string())
    evidence.add(f"{label} HTML table", table_html(frame))
    evidence.add(f"{label} columns", json.dumps([str(c) for c in frame.columns]))


def _collect(
    evidence: Evidence,
    asked: Asked,
    run_dir: Path,
    debug_log: Path,
    *,
    direct: str | None = None,
) -> None:
    """Everything of one scenario; closes its Relay (so the recording and ledger are whole)."""
    relay, model = asked.relay, asked.model
    try:
        assert model.requests, "the scripted model was never asked: no prompt to scan"
        evidence.add_all("prompt sent to the model", (r.model_dump_json() for r in model.requests))
        _turn_evidence(evidence, asked.turn)
        evidence.add_all("history message", (m.model_dump_json() for m in relay.history))
        evidence.add("repr(relay)", repr(relay))
        status = relay.connector_status()
        evidence.add("connector_status() as text", status.to_string())
        evidence.add("connector_status() as JSON", status.to_json())
        for connector_id, connector in relay.connectors.items():
            evidence.add(f"{connector_id}: repr", repr(connector))
            evidence.add(f"{connector_id}: prompt_context()", connector.prompt_context())
            evidence.add(f"{connector_id}: object_names()", repr(connector.object_names()))
            if direct is not None:  # the same query straight through the connector (§4)
                result = connector.query(direct)
                _frame_evidence(evidence, result.df, f"{connector_id}.query()")
                evidence.add(f"{connector_id}.query(): preview", preview_for_model(result))
    finally:
        relay.close()
    evidence.add_tree(run_dir, "files")
    evidence.add_file(debug_log, "relay_nb DEBUG log")


def _ok(turn: Any) -> None:
    assert turn.finish_reason == "stop", turn.finish_reason
    errors = {r.name: r.content for r in turn.tool_results if r.is_error}
    assert not errors, errors
    assert turn.frames, "no result frame: nothing was selected"


# ------------------------------------------------------------------------ SQL engines


@dataclass(frozen=True)
class SqlForm:
    name: str
    table: str
    sql: str | dict[str, str]
    """The model's query (per engine when dialects differ); it never spells a secret."""
    proof: Callable[[Store, DataSecrets], bool]
    """The secret is in the data: read back through the raw driver, as the read-only role."""
    shown: Callable[[Any, DataSecrets], bool]
    """What the redacted result shows instead (so the row really was selected)."""
    options: dict[str, Any] = field(default_factory=dict)
    engines: tuple[str, ...] = ENGINES
    error: bool = False

    def query(self, engine: str) -> str:
        return self.sql if isinstance(self.sql, str) else self.sql[engine]


def _first(store: Store, sql: str) -> Any:
    found = store.read(sql)
    assert found.error is None and found.rows, found.error
    return found.rows[0]


def _cell(turn: Any, column: str = "v") -> Any:
    return turn.df[column].iloc[0]


SQL_FORMS = [
    SqlForm(
        "whole cell",
        "vault_cell",
        "SELECT id, v FROM vault_cell ORDER BY id",
        lambda s, v: _first(s, "SELECT v FROM vault_cell WHERE id = 1")[0] == v.token,
        lambda t, v: list(t.df["v"]) == [R, "plain"],
    ),
    SqlForm(
        "inside a text",
        "vault_text",
        "SELECT v FROM vault_text",
        lambda s, v: _first(s, "SELECT v FROM vault_text")[0] == v.sentence(),
        lambda t, v: _cell(t) == f"rotate {R} monthly; the old one was {R}",
    ),
    SqlForm(
        "JSON value and key",
        "vault_json",
        "SELECT v FROM vault_json",
        lambda s, v: holds(_first(s, "SELECT v FROM vault_json")[0], v.token),
        lambda t, v: R in str(_cell(t)),
    ),
    SqlForm(
        "JSON value needing escapes",
        "vault_json_escaped",
        "SELECT v FROM vault_json_escaped",
        lambda s, v: holds(_first(s, "SELECT v FROM vault_json_escaped")[0], v.hostile),
        lambda t, v: R in str(_cell(t)),
    ),
    SqlForm(
        "bytes",
        "vault_blob",
        "SELECT v FROM vault_blob",
        lambda s, v: holds(_first(s, "SELECT v FROM vault_blob")[0], v.token),
        lambda t, v: bytes(_cell(t)) == b"\x00\x01" + R.encode() + b"\xfe\xff",
    ),
    SqlForm(
        "split by the value clip",
        "vault_long",
        "SELECT v FROM vault_long",
        lambda s, v: (
            (text := _first(s, "SELECT v FROM vault_long")[0]).find(v.token) == CLIP_AT
            and len(text) > MAX_VALUE_BYTES
        ),
        lambda t, v: str(_cell(t)).endswith(CLIP_MARK),
        options={"max_value_bytes": MAX_VALUE_BYTES},
    ),
    SqlForm(
        "column name in the table",
        "vault_columns",
        "SELECT * FROM vault_columns",
        lambda s, v: v.token in s.read("SELECT * FROM vault_columns").columns,
        lambda t, v: list(t.df.columns) == ["id", R],
    ),
    SqlForm(
        "column comment",
        "vault_comment",
        "SELECT v FROM vault_comment",
        lambda s, v: v.token in (s.comment("vault_comment", "v") or ""),
        lambda t, v: _cell(t) == "x",
        engines=("duckdb", "postgresql", "mariadb"),
    ),
    SqlForm(
        "sample values",
        "vault_cell",
        "SELECT COUNT(*) AS n FROM vault_cell",
        lambda s, v: _first(s, "SELECT v FROM vault_cell WHERE id = 1")[0] == v.token,
        lambda t, v: int(_cell(t, "n")) == 2,
        options={"sample_values": 5},
    ),
    SqlForm(
        "database error quoting a value",
        "vault_cell",
        "SELECT CAST(v AS INTEGER) AS n FROM vault_cell WHERE id = 1",
        lambda s, v: (
            v.token
            in (s.read("SELECT CAST(v AS INTEGER) AS n FROM vault_cell WHERE id = 1").error or "")
        ),
        lambda t, v: R in t.tool_results[0].content,
        engines=("duckdb", "postgresql"),  # SQLite and MariaDB cast it to 0
        error=True,
    ),
    SqlForm(
        "array, struct, map",
        "vault_nested",
        {
            "duckdb": "SELECT lst, st, mp FROM vault_nested",
            "postgresql": "SELECT arr, ROW(arr[1], 1) AS rec FROM vault_nested",
        },
        lambda s, v: holds(_first(s, "SELECT * FROM vault_nested"), v.token),
        lambda t, v: len(t.df) == 1 and R in t.df.to_string(),
        engines=("duckdb", "postgresql"),  # SQLite and MariaDB have no container types
    ),
]


def _sql_cases() -> list[Any]:
    cases = []
    for form in SQL_FORMS:
        for engine in form.engines:
            cases.append(pytest.param(engine, form, id=f"{engine}-{form.name}"))
    return cases


@pytest.mark.parametrize(("engine", "form"), _sql_cases())
def test_sql_secret_in_the_data(
    engine: str,
    form: SqlForm,
    stores: Callable[[str], Store],
    values: DataSecrets,
    data_env: Canaries,
    debug_log: Path,
    evidence: Evidence,
    run_dir: Path,
):
    store = stores(engine)
    assert form.proof(store, values), f"the secret is not in {form.table}: the scenario is void"
    sql = form.query(engine)
    asked = _ask(
        store.url, [("query_vault", {"sql": sql})], run_dir, tables=[form.table], **form.options
    )
    _collect(evidence, asked, run_dir, debug_log, direct=None if form.error else sql)
    turn = asked.turn
    if form.error:
        assert turn.finish_reason == "stop" and turn.tool_results[0].is_error
    else:
        _ok(turn)
    evidence.assert_clean(data_env)
    assert form.shown(turn, values), turn_text(turn)


@pytest.mark.parametrize("engine", ENGINES)
def test_sql_column_alias_the_model_writes_is_redacted_in_the_result(
    engine: str,
    stores: Callable[[str], Store],
    values: DataSecrets,
    data_env: Canaries,
    evidence: Evidence,
    run_dir: Path,
):
    """``SELECT v AS "<secret>"``: the result's column name is redacted wherever the result
    goes (the frame, the model's tool result, the HTML table, a direct query). The SQL itself
    is the model's own text: see the next test."""
    store = stores(engine)
    sql = f"SELECT v AS {store.ident(values.token)} FROM vault_cell WHERE id = 1"
    assert store.read(sql).columns == [values.token]
    asked = _ask(store.url, [("query_vault", {"sql": sql})], run_dir, tables=["vault_cell"])
    try:
        _ok(asked.turn)
        tool_messages = [m for r in asked.model.requests for m in r.messages if m.role == "tool"]
        assert tool_messages, "no tool result reached the model"
        evidence.add_all(
            "tool result sent to the model", (m.model_dump_json() for m in tool_messages)
        )
        evidence.add_all("tool result content", (r.content for r in asked.turn.tool_results))
        _frame_evidence(evidence, asked.turn.df, "turn.df")
        direct = asked.relay.connectors["vault"].query(sql)
        _frame_evidence(evidence, direct.df, "connector.query()")
        evidence.add("connector.query(): preview", preview_for_model(direct))
    finally:
        asked.relay.close()
    evidence.assert_clean(data_env)
    assert list(asked.turn.df.columns) == [R] and _cell(asked.turn, R) == R


def test_a_secret_the_model_writes_is_redacted_in_the_trace(
    stores: Callable[[str], Store],
    values: DataSecrets,
    data_env: Canaries,
    debug_log: Path,
    evidence: Evidence,
    run_dir: Path,
):
    """A credential in the model's own SQL (a column alias here) is redacted wherever the
    trace shows it: the tool_call event, the transcript and the static HTML."""
    store = stores("sqlite")
    sql = f"SELECT v AS {store.ident(values.token)} FROM vault_cell WHERE id = 1"
    asked = _ask(store.url, [("query_vault", {"sql": sql})], run_dir, tables=["vault_cell"])
    asked.relay.close()
    _ok(asked.turn)
    evidence.add_all("event", (e.model_dump_json() for e in asked.turn.events))
    evidence.add("transcript", turn_text(asked.turn))
    evidence.add("static HTML", turn_html(asked.turn))
    evidence.add_file(debug_log, "relay_nb DEBUG log")
    evidence.assert_clean(data_env)


# ------------------------------------------------------------------------ the DataFrame connector


@dataclass(frozen=True)
class FrameForm:
    name: str
    frame: Callable[[DataSecrets], pd.DataFrame]
    sql: str
    secret: Callable[[DataSecrets], str]
    shown: Callable[[Any, DataSecrets], bool]
    options: dict[str, Any] = field(default_factory=dict)


FRAME_FORMS = [
    FrameForm(
        "cells",
        lambda v: pd.DataFrame(
            {
                "id": [1, 2],
                "note": [v.token, "plain"],
                "memo": [v.sentence(), ""],
                "raw": [v.blob(), b""],
            }
        ),
        "SELECT note, memo, raw FROM sales ORDER BY id",
        lambda v: v.token,
        lambda t, v: (
            list(t.df["note"]) == [R, "plain"]
            and t.df["memo"].iloc[0] == f"rotate {R} monthly; the old one was {R}"
            and bytes(t.df["raw"].iloc[0]) == b"\x00\x01" + R.encode() + b"\xfe\xff"
        ),
    ),
    FrameForm(
        "column name",
        lambda v: pd.DataFrame({"id": [1], v.token: ["x"]}),
        "SELECT * FROM sales",
        lambda v: v.token,
        lambda t, v: list(t.df.columns) == ["id", R],
    ),
    FrameForm(
        "JSON text needing escapes",
        lambda v: pd.DataFrame({"id": [1], "payload": [v.json_escaped_text()]}),
        "SELECT payload FROM sales",
        lambda v: v.hostile,
        lambda t, v: R in t.df["payload"].iloc[0],
    ),
    FrameForm(
        "dict and list cells",
        lambda v: pd.DataFrame({"id": [1], "obj": [{"token": v.token}], "lst": [[v.token]]}),
        "SELECT obj, lst FROM sales",
        lambda v: v.token,
        lambda t, v: R in t.df.to_string(),
    ),
    FrameForm(
        "split by the value clip",
        lambda v: pd.DataFrame({"id": [1], "v": [v.long_text()]}),
        "SELECT v FROM sales",
        lambda v: v.token,
        lambda t, v: t.df["v"].iloc[0].endswith(CLIP_MARK),
        options={"max_value_bytes": MAX_VALUE_BYTES},
    ),
]


@pytest.mark.parametrize(
    "form",
    [pytest.param(f, id=f.name) for f in FRAME_FORMS],
)
def test_dataframe_secret_in_the_data(
    form: FrameForm,
    values: DataSecrets,
    data_env: Canaries,
    debug_log: Path,
    evidence: Evidence,
    run_dir: Path,
):
    import duckdb

    frame = form.frame(values)
    with duckdb.connect() as raw:  # the engine the connector uses, reading the same frame
        raw.register("sales", frame)
        cursor = raw.execute(form.sql)
        columns = [d[0] for d in cursor.description]
        read = cursor.fetchall()
    assert holds([columns, *read], form.secret(values)), "the secret is not in the frame"
    asked = _ask(
        frame, [("query_sales", {"sql": form.sql})], run_dir, connector_id="sales", **form.options
    )
    _collect(evidence, asked, run_dir, debug_log, direct=form.sql)
    _ok(asked.turn)
    evidence.assert_clean(data_env)
    assert form.shown(asked.turn, values), turn_text(asked.turn)


# ------------------------------------------------------------------------ MongoDB


@dataclass(frozen=True)
class MongoForm:
    name: str
    document: Callable[[DataSecrets], dict[str, Any]]
    secret: Callable[[DataSecrets], str]
    shown: Callable[[Any, DataSecrets], bool]
    pipeline: list[dict[str, Any]] | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def collection(self) -> str:
        return "vault_" + self.name.replace(" ", "_").replace(",", "")


def _binary(data: bytes) -> Any:
    from bson import Binary

    return Binary(data)


MONGO_FORMS = [
    MongoForm(
        "field value",
        lambda v: {"_id": 1, "token": v.token, "memo": v.sentence()},
        lambda v: v.token,
        lambda t, v: _cell(t, "token") == R and R in _cell(t, "memo"),
    ),
    MongoForm(
        "nested field",
        lambda v: {"_id": 1, "cfg": {"auth": {"token": v.token}}},
        lambda v: v.token,
        lambda t, v: _cell(t, "cfg.auth.token") == R,
    ),
    MongoForm(
        "deeply nested field",
        lambda v: {"_id": 1, "a": {"b": {"c": {"d": {"token": v.token}}}}},
        lambda v: v.token,
        lambda t, v: R in t.df.to_string(),
    ),
    MongoForm(
        "array",
        lambda v: {"_id": 1, "tokens": [v.token, "old"]},
        lambda v: v.token,
        lambda t, v: _cell(t, "tokens") == f'["{R}","old"]',
    ),
    MongoForm(
        "key made from a value",
        lambda v: {"_id": 1, "name": v.token, "n": 1},
        lambda v: v.token,
        lambda t, v: list(t.df.columns) == [R],
        pipeline=[{"$replaceWith": {"$arrayToObject": [[{"k": "$name", "v": "$n"}]]}}],
    ),
    MongoForm(
        "stored key",
        lambda v: {"_id": 1, "keys": {v.token: 1}},
        lambda v: v.token,
        lambda t, v: f"keys.{R}" in t.df.columns,
    ),
    MongoForm(
        "value needing escapes in a JSON cell",
        lambda v: {"_id": 1, "creds": [{"password": v.hostile}]},
        lambda v: v.hostile,
        lambda t, v: R in _cell(t, "creds"),  # scrubbed before it is written as JSON
    ),
    MongoForm(
        "binary",
        lambda v: {"_id": 1, "raw": _binary(v.blob())},
        lambda v: v.token,
        lambda t, v: R.encode() in base64.b64decode(_cell(t, "raw")),  # redacted, then encoded
    ),
    MongoForm(
        "split by the value clip",
        lambda v: {"_id": 1, "long": v.long_text()},
        lambda v: v.token,
        lambda t, v: _cell(t, "long").endswith(CLIP_MARK),
        options={"max_value_bytes": MAX_VALUE_BYTES},
    ),
]


@pytest.fixture(scope="module")
def mongo_vault(values: DataSecrets) -> Iterator[tuple[Any, str]]:
    """A scratch database with one collection per form; dropped when the module ends."""
    import secrets

    import pymongo

    base = service_url("RELAY_TEST_SECANTUS_URL")
    client = pymongo.MongoClient(base, serverSelectionTimeoutMS=5000)
    name = "relay_sid_" + secrets.token_hex(4)
    database = client[name]
    try:
        for form in MONGO_FORMS:
            database[form.collection].insert_one(form.document(values))
        yield database, mongo_url(base, name)
    finally:
        client.drop_database(name)
        client.close()


@pytest.mark.parametrize(
    "form",
    [pytest.param(f, id=f.name) for f in MONGO_FORMS],
)
def test_mongo_secret_in_the_data(
    form: MongoForm,
    mongo_vault: tuple[Any, str],
    values: DataSecrets,
    data_env: Canaries,
    debug_log: Path,
    evidence: Evidence,
    run_dir: Path,
):
    database, url = mongo_vault
    stored = database[form.collection].find_one({})
    assert holds(stored, form.secret(values)), "the secret is not in the collection"
    query: dict[str, Any] = {"collection": form.collection}
    if form.pipeline is not None:
        query |= {"operation": "aggregate", "pipeline": form.pipeline}
    asked = _ask(
        url,
        [("query_vault", query)],
        run_dir,
        collections=[form.collection],
        timeout_s=5,
        **form.options,
    )
    _collect(evidence, asked, run_dir, debug_log)
    _ok(asked.turn)
    evidence.assert_clean(data_env)
    assert form.shown(asked.turn, values), turn_text(asked.turn)


# ------------------------------------------------------------------------ an MCP server

MCP_SERVER = Path(__file__).with_name("secret_data_mcp_server.py")
MCP_TOOLS = ("vault_records", "vault_note", "vault_settings")


@dataclass
class McpTurn:
    raw: Any
    """The SDK's own result of calling the tool (before relay_nb maps it)."""
    turn: Any
    evidence: Evidence


@pytest.fixture(scope="module")
def mcp_turns(
    canaries: Canaries, values: DataSecrets, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, McpTurn]:
    """One server (starting one costs seconds), one turn per tool, each turn's evidence kept
    apart (its prompts, views, frames and DEBUG log) so one leak fails only its own test."""
    directory = tmp_path_factory.mktemp("mcp-vault")  # the data file: not scanned
    data = {
        "instructions": f"A vault of team credentials; the admin token is {values.token}.",
        "records": [
            {
                "id": 1,
                "token": values.token,
                "cfg": {"auth": {"token": values.token}},
                "tokens": [values.token, "old"],
                values.token: "its key",
                "deep": {"a": {"b": {"c": {"password": values.hostile}}}},
                "long": values.long_text(),
            }
        ],
        "note": f"The vault token is {values.token}; the export password is {values.hostile}.",
        "settings": {"token": values.token, "export": {"password": values.hostile}},
        "document": f"Vault handbook. The vault token is {values.token}. {values.hostile}",
    }
    data_file = directory / "vault.json"
    data_file.write_text(json.dumps(data), encoding="utf-8")
    turns: dict[str, McpTurn] = {}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in canaries.env.items():
            patch.setenv(name, value)
        patch.setenv(HOSTILE_ENV, values.hostile)
        script: list[Any] = []
        for tool in MCP_TOOLS:
            script += [_calls((f"vault_{tool}", {})), {"text": "The vault holds a token."}]
        model = ScriptedRuntime(script, model=MODEL)
        relay = Relay(model, ledger=False)
        relay_logger = logging.getLogger("relay_nb")
        level = relay_logger.level
        relay_logger.setLevel(logging.DEBUG)
        try:
            # the value clip of MCP records, where this relay_nb has one
            clip = {"max_value_bytes": MAX_VALUE_BYTES} if _mcp_clips() else {}
            command = [sys.executable, str(MCP_SERVER), str(data_file)]
            connector = relay.connect("vault", MCP(command=command, timeout_s=20, **clip))
            for tool in MCP_TOOLS:
                evidence = Evidence()
                log = directory / f"{tool}.log"
                handler = logging.FileHandler(log, encoding="utf-8")
                handler.setLevel(logging.DEBUG)
                logging.getLogger().addHandler(handler)
                try:
                    relay.reset()
                    before = len(model.requests)
                    turn = relay.ask("What is the vault token?")
                    raw = connector._host.run(  # the SDK client: what the server really sent
                        lambda client, t=tool: client.call_tool(t, {}), what="a raw call"
                    )
                    evidence.add_all(
                        "prompt sent to the model",
                        (r.model_dump_json() for r in model.requests[before:]),
                    )
                    _turn_evidence(evidence, turn)
                    evidence.add("prompt_context()", connector.prompt_context())
                    evidence.add_all("document", (d.text for d in connector.documents()))
                    direct = connector.call_tool(tool)
                    evidence.add("call_tool(): content", direct.content)
                    if getattr(direct.artifact, "df", None) is not None:
                        _frame_evidence(evidence, direct.artifact.df, "call_tool(): frame")
                finally:
                    logging.getLogger().removeHandler(handler)
                    handler.close()
                evidence.add_file(log, "relay_nb DEBUG log")
                turns[tool] = McpTurn(raw, turn, evidence)
        finally:
            relay_logger.setLevel(level)
            relay.close()
    return turns


def _mcp_clips() -> bool:
    from relay_nb.connectors.mcp.spec import MCPSpecConfig

    return "max_value_bytes" in MCPSpecConfig.model_fields


def _mcp_sent(raw: Any, secret: str) -> bool:
    """Whether the server's answer (its text blocks, its structured content) holds ``secret``."""
    blocks = [getattr(b, "text", "") for b in getattr(raw, "content", None) or []]
    return holds(blocks, secret) or holds(getattr(raw, "structured_content", None), secret)


@pytest.mark.parametrize(
    ("tool", "shown"),
    [
        pytest.param(
            "vault_records",
            lambda t: _cell(t, "token") == R and R in t.df.columns and R in _cell(t, "deep.a"),
            id="records: value, nested, array, key, escaped, long value",
        ),
        pytest.param("vault_note", lambda t: R in t.tool_results[0].content, id="text"),
        pytest.param(
            "vault_settings",
            lambda t: R in t.tool_results[0].content,
            id="one JSON object",
        ),
    ],
)
def test_mcp_secret_in_what_the_server_returns(
    tool: str,
    shown: Callable[[Any], bool],
    mcp_turns: dict[str, McpTurn],
    values: DataSecrets,
    data_env: Canaries,
):
    """The server's instructions and its resource (context) hold the secrets too: every
    turn's prompt carries them."""
    run = mcp_turns[tool]
    assert _mcp_sent(run.raw, values.token) and _mcp_sent(run.raw, values.hostile), (
        "the server never sent the secrets: the scenario is void"
    )
    turn = run.turn
    assert turn.finish_reason == "stop" and not any(r.is_error for r in turn.tool_results)
    prompt = b"\n".join(
        data for name, data in run.evidence.artifacts.items() if name.startswith("prompt sent")
    ).decode()
    assert "documents:vault" in prompt, "the server's resource never reached the prompt"
    run.evidence.assert_clean(data_env)
    assert shown(turn), turn_text(turn)


# ------------------------------------------------------------------------ an HTTP API


class _JsonApi:
    """A local API answering every GET with one JSON document."""

    def __init__(self, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.body = body
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def test_http_secret_as_a_key_nested_escaped_and_clipped(
    values: DataSecrets, data_env: Canaries, debug_log: Path, evidence: Evidence, run_dir: Path
):
    """test_connections.py covers credentials echoed in cell values; this adds a JSON key
    (a column name), a value deep enough to stay JSON text, the hostile secret, and a value
    clipped across a secret."""
    import httpx

    records = [
        {
            "id": 1,
            values.token: "its key",
            "profile": {"a": {"b": {"c": {"password": values.hostile}}}},
            "tokens": [values.token, values.hostile],
            "long": values.long_text(),
        }
    ]
    api = _JsonApi(records)
    try:
        sent = httpx.get(f"{api.url}/v1/records").content
        assert values.token.encode() in sent
        assert json.dumps(values.hostile, ensure_ascii=False)[1:-1].encode() in sent
        asked = _ask(
            f"{api.url}/v1",
            [("call_vault", {"path": "/records"})],
            run_dir,
            max_value_bytes=MAX_VALUE_BYTES,
        )
        _collect(evidence, asked, run_dir, debug_log)
    finally:
        api.close()
    _ok(asked.turn)
    evidence.assert_clean(data_env)
    df = asked.turn.df
    assert R in df.columns and R in df.to_string() and df["long"].iloc[0].endswith(CLIP_MARK)


# ------------------------------------------------------------------------ the %relay magic


def test_relay_magic_cell_outputs(
    stores: Callable[[str], Store],
    values: DataSecrets,
    data_env: Canaries,
    debug_log: Path,
    evidence: Evidence,
):
    """``%relay --connect`` and a ``%%relay --out`` question selecting the secrets: nothing
    the cells print, display or return, nor the ``--out`` variable, shows them."""
    from relay_nb.facade import default as facade
    from relay_nb.testing.shell import TestingShell

    store = stores("sqlite")
    assert _first(store, "SELECT v FROM vault_text")[0] == values.sentence()
    model = ScriptedRuntime(
        [
            _calls(
                ("query_vault", {"sql": "SELECT id, v FROM vault_cell ORDER BY id"}),
                ("query_vault", {"sql": "SELECT v FROM vault_blob"}),
                ("query_vault", {"sql": "SELECT v FROM vault_text"}),
            ),
            {"text": "The vault holds a token and a password."},
        ],
        model=MODEL,
    )
    shell = TestingShell()
    relay = Relay(model, ledger=False)
    facade._default = relay
    shell.user_ns["vault_url"] = store.url
    cells = [
        "%relay --connect vault {vault_url} --tables vault_cell,vault_blob,vault_text",
        "%%relay --out found\nWhat credentials are stored in the vault?",
        "%relay --history",
        "found",
    ]
    shown: dict[str, Any] = {}
    try:
        for cell in cells:
            shown[cell] = run = shell.run(cell)
            evidence.add(f"cell {cell!r}: printed", run.stdout)
            evidence.add(f"cell {cell!r}: displayed", json.dumps(run.outputs, default=str))
            evidence.add(f"cell {cell!r}: value", repr(run.result))
        found = shell.user_ns["found"]
        _frame_evidence(evidence, found, "--out variable")
        turn = relay.turns[-1]
        evidence.add_all("prompt sent to the model", (r.model_dump_json() for r in model.requests))
        _turn_evidence(evidence, turn)
    finally:
        facade._default = None
        relay.close()
        for name in ("vault_url", "found"):
            shell.user_ns.pop(name, None)
    _ok(turn)
    assert len(turn.frames) == 3
    saved = shown[cells[1]]  # the question's saved output: the trace with its result tables
    assert any(R in html for html in saved.htmls) and any(R in text for text in saved.texts)
    evidence.add_file(debug_log, "relay_nb DEBUG log")
    evidence.assert_clean(data_env)
    assert found["v"].iloc[0] == f"rotate {R} monthly; the old one was {R}"
