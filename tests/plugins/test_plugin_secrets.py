"""The config-file secret rules as they apply to plugin entries: a whole ``${VAR}`` passes
under any credential-like name (the built-ins' own advice is for built-in types only), a
credentials file's path is no secret, and what a plugin's model says is redacted and placed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plugin_support import Echo, echo_type
from pydantic import BaseModel, field_validator

import relay_nb
from relay_nb import ConfigurationError, Relay, ScriptedRuntime
from relay_nb.connectors.plugins import ConnectorType
from relay_nb.facade.config import load_config


def lake(seen: dict[str, Any] | None = None, **overrides: Any) -> ConnectorType:
    def build(connector_id: str, **options: Any) -> Echo:
        if seen is not None:
            seen.update(options)
        return Echo(connector_id)

    return relay_nb.register_connector_type(echo_type(name="lake", factory=build, **overrides))


@pytest.mark.parametrize(
    "config",
    [
        {"api_key": "${LAKE_KEY}"},
        {"apiKey": "${LAKE_KEY}"},
        {"auth": {"token": "${LAKE_TOKEN}", "username": "reader"}},
        {"credentials": "service-account.json"},
        {"dsn": "lake://reader:${LAKE_TOKEN}@h/x"},
        {"connection_string": "Server=db;Password=${LAKE_TOKEN}"},
        # a plugin's env may hold values (only the MCP type's is known to hold names)
        {"env": {"DB_PASSWORD": "${LAKE_TOKEN}"}, "headers_env": {"X-Api-Key": "${LAKE_KEY}"}},
        {"env": {"DB_URL": "lake://reader:${LAKE_TOKEN}@h/x", "REGION": "eu"}},
        {"token_env": "LAKE_TOKEN", "greeting_env": "${LAKE_KEY}"},
        {"args": ["max_tokens=4096", "keyword=python", "PASSWORD_FILE=/run/secrets/db"]},
        {"connection_string": "Driver=x;Server=db;Uid=r;Pwd={${LAKE_TOKEN}}"},
    ],
)
def test_secrets_by_reference_pass_in_plugin_entries(
    config: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAKE_KEY", "lake-key-from-env")
    monkeypatch.setenv("LAKE_TOKEN", "lake-token-from-env")
    seen: dict[str, Any] = {}
    lake(seen)
    relay = Relay(ScriptedRuntime(), ledger=False)
    try:
        assert relay.load_config({"connectors": [{"type": "lake", "id": "l", "config": config}]})
        assert set(seen) == set(config)
    finally:
        relay.close()


def test_built_in_types_keep_their_own_advice() -> None:
    entry = {"type": "websearch", "id": "w", "config": {"api_key": "${KEY}"}}
    with pytest.raises(ConfigurationError, match='"api_key_env": "TAVILY_API_KEY"'):
        load_config({"connectors": [entry]})
    entry = {
        "type": "http",
        "id": "h",
        "config": {"base_url": "https://x/v1", "auth": {"type": "bearer", "token": "${T}"}},
    }
    with pytest.raises(ConfigurationError, match=r"config\.auth\.token is an inline secret"):
        load_config({"connectors": [entry]})


class LakeOptions(BaseModel):
    token: str
    bucket: str = "main"

    @field_validator("token")
    @classmethod
    def _shape(cls, value: str) -> str:
        if not value.startswith("lk_"):
            raise ValueError(f"{value!r} is not a lake token (they start with lk_)")
        return value

    @field_validator("bucket")
    @classmethod
    def _reachable(cls, value: str) -> str:
        if value == "forbidden":
            raise PermissionError(f"cannot list bucket {value}")
        return value


@pytest.mark.parametrize("variable", ["LAKE_TOKEN", "LAKE_SETTING"])
def test_a_model_echoing_its_input_never_shows_a_substituted_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """By the variable's name (LAKE_TOKEN) or by the option's (token), the value is a secret."""
    monkeypatch.setenv(variable, "tok-very-secret-123")
    lake(config_model=LakeOptions)
    path = tmp_path / "relay.config.json"
    entry = {"type": "lake", "id": "l", "config": {"token": f"${{{variable}}}"}}
    path.write_text(json.dumps({"connectors": [entry]}))
    with pytest.raises(ConfigurationError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "connectors[0].config.token: Value error, '[REDACTED]' is not a lake token" in message
    assert "tok-very-secret-123" not in message
    relay = Relay(ScriptedRuntime(), ledger=False)
    with pytest.raises(ConfigurationError) as caught:
        relay.connect("l", "lake", token="tok-very-secret-123")
    assert "tok-very-secret-123" not in str(caught.value)
    assert "token: Value error, '[REDACTED]' is not a lake token" in str(caught.value)
    relay.close()


def test_a_model_failing_other_than_by_validating_is_a_placed_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LAKE_TOKEN", "lk_1")
    lake(config_model=LakeOptions)
    relay = Relay(ScriptedRuntime(), ledger=False)
    entries = [
        {"type": "sqlite", "id": "ok", "config": {"url": "sqlite://"}},
        {"type": "lake", "id": "l", "config": {"token": "${LAKE_TOKEN}", "bucket": "forbidden"}},
    ]
    with pytest.raises(ConfigurationError) as caught:
        relay.load_config({"connectors": entries})
    assert str(caught.value) == (
        "config is not a valid relay config: connectors[1].config: PermissionError: cannot list "
        "bucket forbidden (raised while the lake type checked its options)"
    )
    with pytest.raises(ConfigurationError, match=r"options are not valid: PermissionError: can"):
        relay.connect("l", "lake", token="lk_1", bucket="forbidden")
    assert relay.connectors == {}
    relay.close()
