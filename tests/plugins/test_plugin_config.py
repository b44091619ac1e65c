"""relay.config.json with plugin types: validated by the plugin's model, errors placed in the
file like a built-in's, secrets refused, ${VAR} substituted, all or nothing."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from plugin_support import Echo, echo_type, write_csv_dir

import relay_nb
from relay_nb import ConfigurationError, Relay, ScriptedRuntime
from relay_nb.connectors.plugins import ConnectorType
from relay_nb.facade.config import load_config


@pytest.fixture
def csvdir(csvdir_module: ModuleType) -> ConnectorType:
    return relay_nb.register_connector_type(csvdir_module.CSVDIR)


def write(directory: Path, *entries: dict[str, Any], **top: Any) -> Path:
    path = directory / "relay.config.json"
    path.write_text(json.dumps({"connectors": list(entries), **top}, indent=2))
    return path


def test_a_plugin_entry_registers_like_a_built_in(
    tmp_path: Path, csvdir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    write_csv_dir(project / "data")
    monkeypatch.setenv("EXPORTS_DIR", "data")
    path = write(
        project,
        {
            "type": "csvdir",
            "id": "files",
            "name": "Exports",
            "description": "monthly CSV exports",
            "config": {"path": "${EXPORTS_DIR}/", "row_limit": 10},
        },
        skills=[{"name": "exports", "prompt": "Use the exports.", "connectors": ["files"]}],
    )
    monkeypatch.chdir(tmp_path)  # the relative path is the config file's, not the cwd's
    relay = Relay(ScriptedRuntime(), ledger=False, config=path)
    files = relay.connectors["files"]
    assert files.directory == (project / "data").resolve()  # type: ignore[attr-defined]
    assert (files.name, files.description, files.row_limit) == (  # type: ignore[attr-defined]
        "Exports",
        "monthly CSV exports",
        10,
    )
    assert relay.skills.get("exports").connectors == ("files",)
    status = relay.connector_status().to_dict("records")
    assert status == [
        {
            "id": "files",
            "type": "csvdir",
            "target": f"csvdir://{(project / 'data').resolve()}",
            "objects": "regions_2026, sales",
            "status": "ok",
        }
    ]
    relay.close()


def test_the_validated_spec_holds_the_plugin_s_checked_options(tmp_path: Path, csvdir: Any) -> None:
    write_csv_dir(tmp_path / "data")
    config = load_config(write(tmp_path, {"type": "csvdir", "id": "f", "config": {"path": "data"}}))
    (spec,) = config.connectors
    assert spec.config == {  # type: ignore[union-attr]
        "path": str((tmp_path / "data").resolve()),
        "pattern": "*.csv",
        "row_limit": 200,
        "statement_timeout_s": 30.0,
    }


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"type": "csvdir", "id": "f", "config": {"path": "data", "rows": 5}},
            "connectors[0].config.rows: Extra inputs are not permitted (csvdir takes: path, "
            "pattern, row_limit, statement_timeout_s)",
        ),
        (
            {"type": "csvdir", "id": "f", "config": {}},
            "connectors[0].config.path: Field required",
        ),
        (
            {"type": "csvdir", "id": "f"},
            "connectors[0].config.path: Field required",
        ),
        (
            {"type": "csvdir", "id": "f", "config": {"path": "data", "row_limit": "many"}},
            "connectors[0].config.row_limit: Input should be a valid integer",
        ),
        (
            {"type": "csvdir", "id": "f", "config": {"path": "nowhere"}},
            "connectors[0].config.path: Value error, no directory at",
        ),
        (
            {"type": "csvdir", "id": "f", "config": ["data"]},
            "connectors[0].config: Input should be a valid dictionary",
        ),
        (
            {"type": "csvdir", "id": "f", "conf": {"path": "data"}},
            "connectors[0].conf: Extra inputs are not permitted",
        ),
        (
            {"id": "f", "config": {"path": "data"}},
            'connectors[0]: an entry needs a "type"',
        ),
        (
            {"type": "dataframe", "id": "f", "config": {}},
            "connectors[0]: 'dataframe' connectors are built from Python, not from a config file",
        ),
    ],
)
def test_a_bad_plugin_entry_is_reported_with_its_place(
    tmp_path: Path, csvdir: Any, entry: dict, message: str
) -> None:
    write_csv_dir(tmp_path / "data")
    path = write(tmp_path, {"type": "sqlite", "id": "ok", "config": {"url": "sqlite://"}}, entry)
    with pytest.raises(ConfigurationError) as caught:
        load_config(path)
    assert message.replace("connectors[0]", "connectors[1]") in str(caught.value)
    assert str(caught.value).startswith("relay.config.json is not a valid relay config: ")


def test_an_unknown_type_lists_the_known_ones_and_says_how_to_install_one(
    tmp_path: Path, csvdir: Any
) -> None:
    path = write(tmp_path, {"type": "snowflake", "id": "s", "config": {}})
    with pytest.raises(ConfigurationError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "connectors[0]: Input tag 'snowflake' found using 'type' does not match" in message
    assert "built-in: duckdb, http, mariadb, mcp, mongo, mongodb, mysql, postgres," in message
    assert "from plugins and notebook cells: csvdir)" in message
    assert "needs its package installed where the kernel runs" in message
    assert "'relay_nb.connectors' entry point group" in message
    assert "relay_nb.register_connector_type(...)" in message


def test_errors_in_built_in_and_plugin_entries_are_reported_together(
    tmp_path: Path, csvdir: Any
) -> None:
    path = write(
        tmp_path,
        {"type": "sqlite", "id": "s", "config": {"url": "sqlite://", "tabels": []}},
        {"type": "csvdir", "id": "f", "config": {}},
    )
    with pytest.raises(ConfigurationError) as caught:
        load_config(path)
    assert "connectors[0].config.tabels: Extra inputs" in str(caught.value)
    assert "connectors[1].config.path: Field required" in str(caught.value)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"token": "hunter2-inline"}, "connectors[0].config.token is a secret written inline"),
        ({"apiKey": "hunter2-inline"}, "connectors[0].config.apiKey is a secret written inline"),
        ({"pwd": "hunter2-inline"}, "connectors[0].config.pwd is a secret written inline"),
        ({"dsn": "lake://reader:hunter2-inline@h/x"}, "config.dsn has a password or key written"),
        ({"nested": {"uri": "lake://u:hunter2-inline@h"}}, "config.nested.uri has a password"),
        (
            {"connection_string": "Server=db;User Id=r;Password=hunter2-inline"},
            "connectors[0].config.connection_string is a connection string with a password",
        ),
        # a plugin's env is no list of names: what it holds is checked like any option
        ({"env": {"DB_PASSWORD": "hunter2-inline"}}, "config.env.DB_PASSWORD is a secret"),
        ({"env": {"DB": "pg://u:hunter2-inline@h/db"}}, "config.env.DB has a password or key"),
        ({"headers_env": {"X-Api-Key": "hunter2-inline"}}, "headers_env.X-Api-Key is a secret"),
        (
            {"auth": {"client_secret": "hunter2-inline"}},
            "connectors[0].config.auth.client_secret is a secret written inline",
        ),
        ({"password": "pre-${PW}"}, "connectors[0].config.password is a secret written inline"),
        ({"url": "lake://reader:hunter2-inline@host/x"}, "has a password or key written in it"),
        ({"settings_env": {"API_TOKEN": "hunter2-inline"}}, "settings_env.API_TOKEN is a"),
    ],
)
def test_inline_secrets_are_refused_in_plugin_entries_too(
    tmp_path: Path, config: dict, message: str
) -> None:
    relay_nb.register_connector_type(echo_type(factory=lambda cid, **kw: Echo(cid)))
    path = write(tmp_path, {"type": "echo", "id": "e", "config": config})
    with pytest.raises(ConfigurationError) as caught:
        load_config(path)
    assert message in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_secret_by_reference_is_substituted_and_options_not_named_like_secrets_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def build(connector_id: str, **options: Any) -> Echo:
        seen.update(options)
        return Echo(connector_id)

    relay_nb.register_connector_type(echo_type(name="lake", factory=build))
    monkeypatch.setenv("LAKE_TOKEN", "s3cret-from-env")
    path = write(
        tmp_path,
        {
            "type": "lake",
            "id": "lake",
            "config": {"token": "${LAKE_TOKEN}", "sort_key": "date", "max_tokens": 5},
        },
    )
    relay = Relay(ScriptedRuntime(), ledger=False, config=path)
    assert seen == {"token": "s3cret-from-env", "sort_key": "date", "max_tokens": 5}
    assert relay_nb.redaction.redact("s3cret-from-env") == "[REDACTED]"
    relay.close()


def test_a_missing_variable_in_a_plugin_entry_is_named_with_its_place(
    tmp_path: Path, csvdir: Any
) -> None:
    path = write(tmp_path, {"type": "csvdir", "id": "f", "config": {"path": "${NO_SUCH_DIR}"}})
    with pytest.raises(ConfigurationError, match=r"connectors\[0\]\.config\.path uses \$\{NO_SUCH"):
        load_config(path)


def test_a_factory_without_a_model_reports_unknown_keys_with_its_parameters(
    tmp_path: Path,
) -> None:
    relay_nb.register_connector_type(echo_type())
    path = write(tmp_path, {"type": "echo", "id": "e", "config": {"greting": "hi"}})
    with pytest.raises(ConfigurationError) as caught:
        load_config(path)
    assert (
        "connectors[0].config.greting: Extra inputs are not permitted (echo takes: greeting)"
        in (str(caught.value))
    )


def test_all_or_nothing_when_a_plugin_connector_cannot_be_built(
    tmp_path: Path, csvdir: Any
) -> None:
    write_csv_dir(tmp_path / "data")
    relay_nb.register_connector_type(ConnectorType(name="broken", factory=lambda cid: 1 / 0))
    relay = Relay(ScriptedRuntime(), ledger=False)
    path = write(
        tmp_path,
        {"type": "csvdir", "id": "files", "config": {"path": "data"}},
        {"type": "broken", "id": "b"},
    )
    with pytest.raises(ConfigurationError) as caught:
        relay.load_config(path)
    assert str(caught.value) == (
        "connector 'b': the 'broken' connector could not be built: ZeroDivisionError: "
        "division by zero"
    )
    assert relay.connectors == {}
    relay.close()
