"""Credentials in connection URLs, auth settings and API keys, used for real: none comes back.

Each scenario connects with the canary credentials (against the real PostgreSQL and
SecantusDB services, a hostile echoing HTTP API, an echoing search provider, the Anthropic
stub), asks a question through a scripted model that keeps every request it is sent, and
collects whatever a person or the model could read: reprs, ``connector_status()``, the turn
transcript and events, result tables, exceptions (str, repr, traceback), the prompts, the
recording, the ledger, the DEBUG log and warnings. Every scenario first checks that the
credential was really used (the server refused it, or received it where it belongs), so a
clean scan cannot come from a credential that never left the test.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from secret_echo_server import SEARCH_PATHS, EchoServer
from secret_scan import Canaries, Evidence

from relay_nb import Relay, ScriptedRuntime
from relay_nb.agent.ledger import UsageLedger
from relay_nb.connectors.websearch import WebSearchConnector
from relay_nb.errors import ConfigurationError
from relay_nb.runtime.anthropic import AnthropicRuntime
from relay_nb.runtime.replay import RecordingRuntime
from relay_nb.runtime.types import InvocationRequest, Message
from relay_nb.testing.anthropic_stub import AnthropicStub, ErrorReply, MessageReply, ToolUse
from relay_nb.views import turn_text

pytestmark = pytest.mark.timeout(120)


def _calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": arguments} for name, arguments in calls]}


def _attempt(evidence: Evidence, name: str, action: Callable[[], Any]) -> Any:
    """Run ``action``; what it returns, or the exception it raises, is evidence."""
    try:
        result = action()
    except Exception as exc:
        evidence.add_exception(name, exc)
        return exc
    evidence.add(f"{name}: repr", repr(result))
    return result


def _capture_relay(evidence: Evidence, relay: Relay, model: ScriptedRuntime | None) -> None:
    """What the analyst can print about a session, and every prompt the model received."""
    evidence.add("repr(relay)", repr(relay))
    evidence.add("repr(relay.settings)", repr(relay.settings))
    for connector_id, connector in relay.connectors.items():
        evidence.add(f"repr(connector {connector_id})", repr(connector))
        evidence.add(f"connector {connector_id}.target", str(getattr(connector, "target", "")))
        _attempt(evidence, f"{connector_id}.prompt_context()", connector.prompt_context)
        _attempt(evidence, f"{connector_id}.object_names()", connector.object_names)
    status = relay.connector_status()
    evidence.add("connector_status() as text", status.to_string())
    evidence.add("connector_status() as JSON", status.to_json())
    _attempt(evidence, "relay.refresh()", relay.refresh)
    for number, turn in enumerate(relay.turns):
        evidence.add(f"turn {number}: transcript", turn_text(turn))
        evidence.add(f"turn {number}: repr", repr(turn))
        evidence.add_all(f"turn {number}: event", (e.model_dump_json() for e in turn.events))
        for frame_number, frame in enumerate(turn.frames):
            evidence.add(f"turn {number}: frame {frame_number}", frame.to_json())
    evidence.add_all("history message", (m.model_dump_json() for m in relay.history))
    if model is not None:
        assert model.requests, "the scripted model was never asked: no prompt to scan"
        evidence.add_all("prompt sent to the model", (r.model_dump_json() for r in model.requests))


@contextmanager
def _warnings_into(evidence: Evidence) -> Iterator[None]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    evidence.add_all("warning", (str(w.message) for w in caught))


def _errors(turn: Any) -> dict[str, str]:
    return {r.name: r.content for r in turn.tool_results if r.is_error}


# --------------------------------------------------------------------------- PostgreSQL


def test_postgres_passwords_real_wrong_and_in_query_options(
    canary_env: Canaries, pg_url: str, debug_log: Path, evidence: Evidence, tmp_path: Path
):
    """The real read-only password connects; a wrong canary password (in the URL's userinfo,
    and in ``?password=``) is refused by the server. Neither shows anywhere."""
    model = ScriptedRuntime(
        [
            _calls(
                ("query_shop", {"sql": "SELECT COUNT(*) AS n FROM orders"}),
                ("query_wrong", {"sql": "SELECT 1 AS one"}),
                ("query_query_pw", {"sql": "SELECT 1 AS one"}),
            ),
            {"text": "Counted the orders; two databases refused the login."},
        ],
        model="claude-haiku-4-5",
    )
    recording = tmp_path / "recording.jsonl"
    ledger = tmp_path / "ledger" / "usage.sqlite"
    relay = Relay(RecordingRuntime(model, recording), ledger=ledger)
    try:
        with _warnings_into(evidence):
            relay.connect("shop", pg_url, tables=["orders", "customers"])
            for connector_id, variable in (
                ("wrong", "DATABASE_URL"),
                ("query_pw", "RELAY_WAREHOUSE_URL"),
            ):
                # connecting checks the login: the refusal is evidence too
                _attempt(
                    evidence,
                    f"connect({connector_id})",
                    lambda v=variable: relay.connect("checked", os.environ[v]),
                )
                relay.connect(connector_id, os.environ[variable], check=False)
            turn = relay.ask("How many orders are there?")
            for connector_id in ("wrong", "query_pw"):
                _attempt(
                    evidence,
                    f"{connector_id}.query()",
                    lambda c=connector_id: relay.connectors[c].query("SELECT 1"),
                )
            _capture_relay(evidence, relay, model)
    finally:
        relay.close()
    assert turn.finish_reason == "stop" and turn.df is not None and turn.df["n"][0] > 0
    refused = _errors(turn)
    assert set(refused) == {"query_wrong", "query_query_pw"}, refused
    assert all("password authentication failed" in text for text in refused.values()), refused
    assert recording.stat().st_size > 0 and ledger.stat().st_size > 0
    evidence.add_tree(tmp_path, "files")
    evidence.add_file(debug_log, "relay_nb DEBUG log")
    evidence.assert_clean(canary_env)


# --------------------------------------------------------------------------- MongoDB


def test_mongo_credentials_in_userinfo_and_query_options(
    canary_env: Canaries, mongo_service: str, debug_log: Path, evidence: Evidence
):
    """User and password, an AWS secret and session token (``authMechanismProperties``) and
    a TLS key password (``tlsCertificateKeyFilePassword``): each URL fails on the server or
    the driver, and no part of a credential shows in the failure, the status or the prompt."""
    urls = {
        "events": os.environ["RELAY_MONGO_URL"],
        "aws": os.environ["RELAY_MONGO_AWS_URL"],
        "tls": os.environ["RELAY_MONGO_TLS_URL"],
    }
    model = ScriptedRuntime(
        [
            _calls(*((f"query_{cid}", {"collection": "orders"}) for cid in urls)),
            {"text": "None of the three could be read."},
        ],
        model="claude-haiku-4-5",
    )
    relay = Relay(model, ledger=False)
    try:
        with _warnings_into(evidence):
            for connector_id, url in urls.items():
                # a short server-selection wait: pymongo retries a failed login until it ends
                _attempt(
                    evidence,
                    f"connect({connector_id})",
                    lambda u=url: relay.connect("checked", u, timeout_s=0.5),
                )
                relay.connect(connector_id, url, timeout_s=0.5, check=False)
            turn = relay.ask("How many orders?")
            for connector_id in urls:
                _attempt(
                    evidence,
                    f"{connector_id}.object_names()",
                    relay.connectors[connector_id].object_names,
                )
            _capture_relay(evidence, relay, model)
    finally:
        relay.close()
    refused = _errors(turn)
    assert set(refused) == {f"query_{cid}" for cid in urls}, refused
    assert "authentication failed" in refused["query_events"].lower(), refused
    evidence.add_file(debug_log, "relay_nb DEBUG log")
    evidence.assert_clean(canary_env)


# --------------------------------------------------------------------------- HTTP APIs


@pytest.mark.parametrize("status", [401, 200])
def test_http_credentials_against_an_api_that_echoes_them(
    canary_env: Canaries, debug_log: Path, evidence: Evidence, status: int
):
    """Bearer token, API-key header and Basic password from env vars, and an ``?api_key=`` in
    the OpenAPI URL, all sent to an API that quotes them back — refusing (401: error body,
    ``WWW-Authenticate``) or answering (200: in the records and the OpenAPI summary)."""
    openapi_key = canary_env.url_only["OpenAPI URL ?api_key="]
    auths = {
        "bearer": {"type": "bearer", "token_env": "SHOP_API_TOKEN"},
        "header": {"type": "header", "header": "X-Api-Key", "token_env": "SHOP_API_KEY"},
        "basic": {"type": "basic", "username": "analyst", "password_env": "SHOP_API_PASSWORD"},
    }
    model = ScriptedRuntime(
        [
            _calls(*((f"call_{cid}", {"path": "/echo", "query": {"q": "x"}}) for cid in auths)),
            {"text": "Done."},
        ],
        model="claude-haiku-4-5",
    )
    relay = Relay(model, ledger=False)
    with EchoServer() as api:
        api.status = status
        openapi = f"{api.url}/v1/openapi.json?api_key={quote(openapi_key, safe='')}"
        try:
            with _warnings_into(evidence):
                for connector_id, auth in auths.items():
                    _attempt(
                        evidence,
                        f"connect({connector_id})",
                        lambda a=auth: relay.connect(
                            "checked", f"{api.url}/v1", auth=a, openapi=openapi
                        ),
                    )
                    relay.connect(
                        connector_id, f"{api.url}/v1", auth=auth, openapi=openapi, check=False
                    )
                # an "OpenAPI document" that is not one: the error names its URL
                not_a_spec = openapi.replace("/openapi.json", "/records.json")
                _attempt(
                    evidence,
                    "connect(records)",
                    lambda: relay.connect("checked", f"{api.url}/v1", openapi=not_a_spec),
                )
                relay.connect("records", f"{api.url}/v1", openapi=not_a_spec, check=False)
                turn = relay.ask("What does the echo endpoint say?")
                for connector_id in auths:
                    connector = relay.connectors[connector_id]
                    _attempt(
                        evidence,
                        f"{connector_id}.call()",
                        lambda c=connector: c.call("GET", "/echo"),
                    )
                _capture_relay(evidence, relay, model)
                # credentials in the base URL are refused with a message that does not quote them
                password = quote(canary_env.env["SHOP_API_PASSWORD"], safe="")
                for bad in (
                    f"http://analyst:{password}@127.0.0.1:9/v1",
                    f"http://127.0.0.1:9/v1?api_key={quote(openapi_key, safe='')}",
                ):
                    _attempt(
                        evidence,
                        "connect(base URL with a credential)",
                        lambda u=bad: relay.connect("bad", u),
                    )
        finally:
            relay.close()
        received = [r.everything() for r in api.requests]
    env = canary_env.env
    basic = base64.b64encode(f"analyst:{env['SHOP_API_PASSWORD']}".encode()).decode()
    for credential in (f"Bearer {env['SHOP_API_TOKEN']}", env["SHOP_API_KEY"], f"Basic {basic}"):
        assert any(credential in text for text in received), "a credential was never sent"
    assert any(quote(openapi_key, safe="") in text for text in received), "OpenAPI key unused"
    if status == 200:
        assert turn.frames and not _errors(turn), _errors(turn)
    else:
        assert set(_errors(turn)) == {f"call_{cid}" for cid in auths}
    evidence.add_file(debug_log, "relay_nb DEBUG log")
    evidence.assert_clean(canary_env)


# --------------------------------------------------------------------------- web search


@pytest.mark.parametrize("status", [401, 200])
@pytest.mark.parametrize("provider", ["tavily", "brave", "serper"])
def test_web_search_key_against_a_provider_that_echoes_it(
    canary_env: Canaries, debug_log: Path, evidence: Evidence, provider: str, status: int
):
    """The key (from TAVILY/BRAVE/SERPER_API_KEY) goes to a local provider (the connector's
    ``endpoint=``) that puts it in every field of its answer or its refusal."""
    key_env = {"tavily": "TAVILY_API_KEY", "brave": "BRAVE_API_KEY", "serper": "SERPER_API_KEY"}
    model = ScriptedRuntime(
        [_calls(("web_search", {"query": "relay notebooks"})), {"text": "Searched."}],
        model="claude-haiku-4-5",
    )
    relay = Relay(model, ledger=False)
    with EchoServer() as provider_api:
        provider_api.status, provider_api.mode = status, provider
        try:
            with _warnings_into(evidence):
                web = WebSearchConnector(
                    provider=provider,
                    endpoint=provider_api.url + SEARCH_PATHS[provider],
                    timeout_s=5,
                )
                relay.connect("web", web)
                turn = relay.ask("What is new about relay notebooks?")
                _attempt(evidence, "web.search()", lambda: web.search("relay notebooks"))
                _capture_relay(evidence, relay, model)
                # a key pasted where its variable's name belongs is refused without an echo
                pasted = canary_env.env[key_env[provider]]
                _attempt(
                    evidence,
                    "api_key_env=<the key>",
                    lambda: WebSearchConnector(provider=provider, api_key_env=pasted),
                )
        finally:
            relay.close()
        received = [r.everything() for r in provider_api.requests]
    assert any(canary_env.env[key_env[provider]] in text for text in received), "key never sent"
    if status == 200:
        assert turn.df is not None and len(turn.df) == 1, _errors(turn)
    else:
        assert "key was refused" in _errors(turn)["web_search"]
    evidence.add_file(debug_log, "relay_nb DEBUG log")
    evidence.assert_clean(canary_env)


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_key_goes_only_into_the_auth_header(
    canary_env: Canaries,
    pg_url: str,
    debug_log: Path,
    evidence: Evidence,
    tmp_path: Path,
    loopback_model_requests: None,
):
    """The real SDK with the canary ANTHROPIC_API_KEY against the local stub: the key is in
    the auth header of every request (so it is the key in use) and in nothing else — not in
    a prompt (which carries the connectors' contexts and a failed login), not in the
    recording, the ledger, an error the API sent back quoting it, or the log."""
    key = canary_env.env["ANTHROPIC_API_KEY"]
    pg_password = urlsplit(pg_url).password
    with AnthropicStub() as stub:
        stub.enqueue(
            MessageReply(
                tool_uses=[
                    ToolUse(name="query_shop", input={"sql": "SELECT COUNT(*) AS n FROM orders"}),
                    ToolUse(name="query_wrong", input={"sql": "SELECT 1 AS one"}),
                ]
            ),
            MessageReply(text="There are orders."),
            ErrorReply(status=401, message=f"invalid x-api-key: {key}"),
            ErrorReply(status=400, message=f"bad request from {key} with password {pg_password}"),
            ErrorReply(status=403, message=f"key {key} may not use this model"),
        )
        runtime = AnthropicRuntime("claude-sonnet-4-6", base_url=stub.base_url)
        recording = tmp_path / "recording.jsonl"
        relay = Relay(RecordingRuntime(runtime, recording), ledger=tmp_path / "usage.sqlite")
        try:
            with _warnings_into(evidence):
                relay.connect("shop", pg_url, tables=["orders"])
                relay.connect("wrong", os.environ["DATABASE_URL"], check=False)
                answered = relay.ask("How many orders?")
                refused = relay.ask("And customers?")
                invalid = relay.ask("And products?")
                request = InvocationRequest(messages=[Message.user("hello")])
                _attempt(evidence, "runtime.invoke() refused", lambda: _invoke(runtime, request))
                evidence.add("repr(runtime)", repr(runtime))
                evidence.add("vars(runtime)", repr(vars(runtime)))
                _capture_relay(evidence, relay, None)
        finally:
            relay.close()
        requests = stub.requests
    assert answered.finish_reason == "stop" and answered.df is not None
    assert refused.finish_reason == "error" and invalid.finish_reason == "error"
    assert len(requests) == 5
    for index, sent in enumerate(requests):
        carrying = [name for name, value in sent.headers.items() if key in value]
        assert carrying in (["authorization"], ["x-api-key"]), carrying
        assert sent.headers[carrying[0]] in (key, f"Bearer {key}")
        evidence.add(f"request {index} body (the prompt)", sent.raw_body)
        others = {k: v for k, v in sent.headers.items() if k != carrying[0]}
        evidence.add(f"request {index} headers but the key's", json.dumps(others))
    assert "query_wrong" in requests[1].raw_body.decode(), "the failed login went to the model"
    evidence.add_tree(tmp_path, "files")
    evidence.add_file(debug_log, "relay_nb DEBUG log")
    evidence.assert_clean(canary_env)


def _invoke(runtime: AnthropicRuntime, request: InvocationRequest) -> Any:
    import asyncio

    async def once() -> Any:
        try:
            return await runtime.invoke(request, timeout=30)
        finally:
            await runtime.aclose()

    return asyncio.run(once())


# --------------------------------------------------------------------------- the ledger


def test_a_ledger_url_password_stays_out_of_its_repr_and_log(
    canary_env: Canaries, debug_log: Path, evidence: Evidence, caplog: pytest.LogCaptureFixture
):
    """A usage ledger in a database whose login fails: the turn goes on, the failure is
    logged — without the password of the ledger's URL, there or in the ledger's repr."""
    url = os.environ["RELAY_LEDGER_URL"]
    ledger = UsageLedger(url)
    model = ScriptedRuntime([{"text": "hi"}], model="claude-haiku-4-5")
    relay = Relay(model, ledger=ledger)
    try:
        with caplog.at_level(logging.WARNING, logger="relay_nb.agent.ledger"):
            turn = relay.ask("hello?")
        evidence.add("repr(ledger)", repr(ledger))
        evidence.add("ledger.url", str(ledger.url))
        _attempt(evidence, "relay.usage_report()", relay.usage_report)
        _capture_relay(evidence, relay, model)
    finally:
        relay.close()
    assert turn.finish_reason == "stop"
    warned = [r.getMessage() for r in caplog.records if r.name == "relay_nb.agent.ledger"]
    assert warned and "could not record a call" in warned[0], warned
    evidence.add_all("ledger warning", warned)
    evidence.add_file(debug_log, "relay_nb DEBUG log")
    evidence.assert_clean(canary_env)


# --------------------------------------------------------------------------- config files


def test_config_file_secrets(
    canary_env: Canaries, pg_url: str, debug_log: Path, evidence: Evidence, tmp_path: Path
):
    """``${VAR}`` secrets are filled in and masked; an inline password, token or key header
    is refused with a message that names the place, not the value."""
    hostport = urlsplit(pg_url).netloc.rsplit("@", 1)[1]
    password = canary_env.env["RELAY_CFG_DB_PASSWORD"]
    good = {
        "connectors": [
            {
                "type": "postgres",
                "id": "warehouse",
                "config": {
                    "url": f"postgresql+psycopg://relay_ro:${{RELAY_CFG_DB_PASSWORD}}@{hostport}/shop"
                },
            }
        ]
    }
    inline_url = f"postgresql+psycopg://relay_ro:{quote(password, safe='')}@{hostport}/shop"
    bad = {
        "inline password": {"type": "postgres", "id": "w", "config": {"url": inline_url}},
        "inline token": {
            "type": "http",
            "id": "api",
            "config": {
                "base_url": "http://127.0.0.1:9/v1",
                "auth": {"type": "bearer", "token": canary_env.env["SHOP_API_TOKEN"]},
            },
        },
        "inline key header": {
            "type": "http",
            "id": "api",
            "config": {
                "base_url": "http://127.0.0.1:9/v1",
                "headers": {"X-Api-Key": canary_env.env["SHOP_API_KEY"]},
            },
        },
        "inline search key": {
            "type": "websearch",
            "id": "web",
            "config": {"provider": "tavily", "api_key": canary_env.env["TAVILY_API_KEY"]},
        },
    }
    path = tmp_path / "relay.config.json"
    path.write_text(json.dumps(good))
    model = ScriptedRuntime([_calls(("query_warehouse", {"sql": "SELECT 1"})), {"text": "no"}])
    relay = Relay(model, ledger=False)
    try:
        with _warnings_into(evidence):
            relay.load_config(path)
            turn = relay.ask("anything?")
            for name, entry in bad.items():
                bad_path = tmp_path / f"{name.replace(' ', '_')}.json"
                bad_path.write_text(json.dumps({"connectors": [entry]}))
                error = _attempt(
                    evidence, f"load_config({name})", lambda p=bad_path: relay.load_config(p)
                )
                assert isinstance(error, ConfigurationError), (name, error)
            _capture_relay(evidence, relay, model)
    finally:
        relay.close()
    assert "password authentication failed" in _errors(turn)["query_warehouse"]
    evidence.add_file(debug_log, "relay_nb DEBUG log")
    evidence.assert_clean(canary_env)
