"""MCP entries in ``relay.config.json`` that name their secrets by environment variable —
``env`` as a mapping, ``headers_env`` / ``headersEnv`` — pass the config file's inline-secret
check and reach the real test server; a ``${…}`` reference where a name belongs is refused
before its value could be read as a variable name (and printed as one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_support import SERVER

from relay_nb import Relay, ScriptedRuntime
from relay_nb.errors import ConfigurationError

SECRET = "mcp-config-secret-value-4711"


def load(tmp_path: Path, config: dict) -> tuple[Relay, list[str]]:
    path = tmp_path / "relay.config.json"
    path.write_text(json.dumps({"connectors": [{"type": "mcp", "id": "srv", "config": config}]}))
    relay = Relay(ScriptedRuntime(), ledger=False)
    try:
        return relay, relay.load_config(path)
    except BaseException:
        relay.close()
        raise


def test_an_env_mapping_of_names_passes_the_variable_to_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_CFG_GITHUB_TOKEN", SECRET)
    relay, ids = load(
        tmp_path,
        {"command": SERVER, "env": {"GITHUB_TOKEN": "MCP_CFG_GITHUB_TOKEN"}, "timeoutS": 10},
    )
    try:
        assert ids == ["srv"]
        status = relay.connectors["srv"].call_tool("env_status", {"name": "GITHUB_TOKEN"})  # type: ignore[attr-defined]
        assert status.content == f"GITHUB_TOKEN is set ({len(SECRET)} chars)"
    finally:
        relay.close()


@pytest.mark.parametrize("key", ["headers_env", "headersEnv"])
def test_headers_env_names_pass_and_the_header_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http_url: str, key: str
) -> None:
    monkeypatch.setenv("MCP_CFG_DOCS_KEY", SECRET)
    relay, _ = load(tmp_path, {"url": http_url, key: {"X-Api-Key": "MCP_CFG_DOCS_KEY"}})
    try:
        sent = relay.connectors["srv"].call_tool("header_status", {"name": "X-Api-Key"})  # type: ignore[attr-defined]
        assert sent.content == f"X-Api-Key is sent ({len(SECRET)} chars)"
    finally:
        relay.close()


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"command": SERVER, "env": {"GITHUB_TOKEN": "${MCP_CFG_GITHUB_TOKEN}"}}, "env"),
        ({"command": SERVER, "env": ["${MCP_CFG_GITHUB_TOKEN}"]}, "env"),
        (
            {"url": "http://127.0.0.1:9/mcp", "headers_env": {"X": "${MCP_CFG_DOCS_KEY}"}},
            "headers_env",
        ),
        (
            {"url": "http://127.0.0.1:9/mcp", "headersEnv": {"X": "${MCP_CFG_DOCS_KEY}"}},
            "headersEnv",
        ),
    ],
)
def test_a_reference_where_a_name_belongs_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict, key: str
) -> None:
    monkeypatch.setenv("MCP_CFG_GITHUB_TOKEN", SECRET)
    monkeypatch.setenv("MCP_CFG_DOCS_KEY", SECRET)
    with pytest.raises(ConfigurationError) as caught:
        load(tmp_path, config)
    assert f"connectors[0].config: {key} names environment variables" in str(caught.value)
    assert SECRET not in str(caught.value)


TOKEN = "ghp_abcdefABCDEF1234567890abcdefABCDEF12"


@pytest.mark.parametrize(
    ("config", "says"),
    [
        (  # the Claude-Desktop style: the token itself where a variable's name belongs
            {"command": SERVER, "env": {"GITHUB_TOKEN": TOKEN}},
            "env maps the server's variable names to names of variables here",
        ),
        ({"command": SERVER, "env": [TOKEN]}, "put a value in env_values as ${VAR}"),
        ({"command": SERVER, "env": {"DB_URL": "pg://u:pw-4711@h/db"}}, "env_values as ${VAR}"),
        ({"command": SERVER, "env": {"AWS_KEY": "AKIAIOSFODNN7EXAMPLE"}}, "env_values as $"),
        (
            {"url": "http://127.0.0.1:9/mcp", "headersEnv": {"X-Api-Key": "Bearer " + TOKEN}},
            "headersEnv maps header names to names of variables here",
        ),
        (
            {"url": "http://127.0.0.1:9/mcp", "auth": {"type": "bearer", "token_env": TOKEN}},
            "token_env holds something other than a variable name",
        ),
    ],
)
def test_a_value_where_a_name_belongs_is_refused_without_showing_it(
    tmp_path: Path, config: dict, says: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load(tmp_path, config)
    message = str(caught.value)
    assert says in message
    for secret in (TOKEN, "pw-4711", "AKIAIOSFODNN7EXAMPLE"):
        assert secret not in message


def test_values_go_in_env_values_by_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_CFG_GITHUB_TOKEN", SECRET)
    relay, _ = load(
        tmp_path,
        {
            "command": SERVER,
            "env": ["MCP_CFG_GITHUB_TOKEN"],
            "env_values": {"GITHUB_TOKEN": "${MCP_CFG_GITHUB_TOKEN}", "LOG_LEVEL": "info"},
            "timeoutS": 10,
        },
    )
    try:
        status = relay.connectors["srv"].call_tool("env_status", {"name": "GITHUB_TOKEN"})  # type: ignore[attr-defined]
        assert status.content == f"GITHUB_TOKEN is set ({len(SECRET)} chars)"
    finally:
        relay.close()
