"""relay.config.json: validation, ${VAR} substitution, secrets by name only, all or nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.errors import ConfigurationError
from relay_nb.facade.config import load_config
from relay_nb.redaction import redact
from relay_nb.testing.seed import seed_database


@pytest.fixture(scope="module")
def shop_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config_shop") / "shop.sqlite"
    seed_database(f"sqlite:///{path}")
    return path


def write(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "relay.config.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def relay() -> Relay:
    return Relay(ScriptedRuntime(), ledger=False)


def test_a_config_registers_connectors_and_skills_with_variables_substituted(
    tmp_path: Path, shop_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_DIR", str(shop_file.parent))
    path = write(
        tmp_path,
        {
            "connectors": [
                {
                    "type": "sqlite",
                    "id": "shop",
                    "name": "Shop",
                    # the Relay-E spellings are accepted too
                    "config": {
                        "url": "sqlite:///${SHOP_DIR}/shop.sqlite",
                        "tableAllowlist": ["orders", "customers"],
                        "rowLimit": 7,
                    },
                }
            ],
            "skills": [
                {"name": "sales", "systemPrompt": "Revenue only.", "connectorIds": ["shop"]}
            ],
            "schema_ttl_s": 60,
        },
    )
    r = Relay(ScriptedRuntime(), ledger=False, config=path)
    shop = r.connectors["shop"]
    assert shop.row_limit == 7 and shop.name == "Shop"  # type: ignore[attr-defined]
    assert sorted(shop.object_names()) == ["customers", "orders"]
    assert r.skills.get("sales").connectors == ("shop",)
    assert r.schema_ttl_s == 60
    status = r.connector_status()
    assert status.to_dict("records") == [
        {
            "id": "shop",
            "type": "sql",
            "target": f"sqlite:///{shop_file}",
            "objects": "customers, orders",
            "status": "ok",
        }
    ]
    r.close()


def test_a_missing_variable_fails_loudly_naming_it_and_its_place(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"connectors": [{"type": "postgres", "id": "pg", "config": {"url": "${NO_SUCH_URL}"}}]},
    )
    r = relay()
    with pytest.raises(ConfigurationError) as caught:
        r.load_config(path)
    message = str(caught.value)
    assert "connectors[0].config.url uses ${NO_SUCH_URL}" in message
    assert "export NO_SUCH_URL=" in message
    assert r.connectors == {}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"type": "postgres", "id": "pg", "config": {"url": "postgresql://ro:hunter2@db/x"}},
            "has a password or key written in it",
        ),
        (
            {
                "type": "http",
                "id": "api",
                "config": {
                    "base_url": "https://api.example.com",
                    "auth": {"type": "bearer", "token": "hunter2"},
                },
            },
            "auth.token is an inline secret",
        ),
        (
            {
                "type": "http",
                "id": "api",
                "config": {
                    "base_url": "https://api.example.com",
                    "headers": {"X-Api-Key": "hunter2"},
                },
            },
            "looks like a secret written inline",
        ),
        (
            {"type": "websearch", "id": "web", "config": {"api_key": "hunter2"}},
            "inline API key",
        ),
    ],
)
def test_secrets_are_refused_unless_named_by_an_environment_variable(
    tmp_path: Path, config: dict, message: str
) -> None:
    path = write(tmp_path, {"connectors": [config]})
    with pytest.raises(ConfigurationError, match=message) as caught:
        load_config(path)
    assert "hunter2" not in str(caught.value)


def test_a_secret_from_the_environment_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PG_PASSWORD", "s3cret-from-env")
    path = write(
        tmp_path,
        {
            "connectors": [
                {
                    "type": "postgres",
                    "id": "pg",
                    "config": {"url": "postgresql+psycopg://ro:${PG_PASSWORD}@127.0.0.1:1/x"},
                }
            ]
        },
    )
    config = load_config(path)
    assert config.connectors[0].config["url"].endswith("ro:s3cret-from-env@127.0.0.1:1/x")
    assert redact("login failed for s3cret-from-env") == "login failed for [REDACTED]"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"connectors": [', "not valid JSON: Expecting value at line 1, column 17"),
        ("[]", 'must be a JSON object like {"connectors": [...]}'),
        (
            '{"connectors": [{"type": "sqlite", "id": "s", "config": {"url": "sqlite://", '
            '"tabels": ["a"]}}]}',
            "connectors[0].config.tabels: Extra inputs are not permitted",
        ),
        (
            '{"connectors": [{"type": "oracle", "id": "s", "config": {}}]}',
            "connectors[0]: Input tag 'oracle' found using 'type' does not match",
        ),
        ('{"conectors": []}', "conectors: Extra inputs are not permitted"),
    ],
)
def test_a_malformed_file_is_reported_with_its_place(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "relay.config.json"
    path.write_text(text)
    with pytest.raises(ConfigurationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(path)


def test_no_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no config file at"):
        load_config(tmp_path / "missing.json")


def test_all_or_nothing_when_one_connector_cannot_be_built(tmp_path: Path, shop_file: Path) -> None:
    r = relay()
    r.connect("keep", f"sqlite:///{shop_file}")
    path = write(
        tmp_path,
        {
            "connectors": [
                {"type": "sqlite", "id": "shop", "config": {"url": f"sqlite:///{shop_file}"}},
                {"type": "sql", "id": "bad", "config": {"url": "nosuchdialect://x"}},
            ]
        },
    )
    with pytest.raises(ConfigurationError, match="connector 'bad': "):
        r.load_config(path)
    assert list(r.connectors) == ["keep"]  # the session as it was
    r.close()


def test_a_skill_naming_a_missing_connector_says_which(tmp_path: Path, shop_file: Path) -> None:
    path = write(
        tmp_path,
        {
            "connectors": [
                {"type": "sqlite", "id": "shop", "config": {"url": f"sqlite:///{shop_file}"}}
            ],
            "skills": [{"name": "support", "prompt": "Help.", "connectors": ["shop", "crm"]}],
        },
    )
    r = relay()
    with pytest.raises(ConfigurationError, match=r"skill 'support' names connector\(s\) \['crm'\]"):
        r.load_config(path)
    assert r.connectors == {} and "support" not in r.skills
    r.close()


def test_duplicate_ids_are_refused(tmp_path: Path, shop_file: Path) -> None:
    entry = {"type": "sqlite", "id": "shop", "config": {"url": f"sqlite:///{shop_file}"}}
    with pytest.raises(ConfigurationError, match=r"repeated: \['shop'\]"):
        relay().load_config(write(tmp_path, {"connectors": [entry, entry]}))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"type": "postgres", "id": "pg", "config": {"url": "postgresql://ro:hun/ter2@db/x"}},
            "has a password or key written in it",
        ),
        (
            {"type": "postgres", "id": "pg", "config": {"url": "postgresql://ro@db/x?password=p1"}},
            "has a password or key written in it",
        ),
        (
            {
                "type": "http",
                "id": "api",
                "config": {
                    "base_url": "https://api.example.com",
                    "openapi": "https://docs.example.com/o.json?api_key=k1",
                },
            },
            "config.openapi has a password or key written in it",
        ),
        (
            {
                "type": "http",
                "id": "api",
                "config": {
                    "base_url": "https://api.example.com",
                    "auth": {"type": "bearer", "token_env": "${BILLING_TOKEN}"},
                },
            },
            "token_env names an environment variable; write its name",
        ),
        (
            {
                "type": "mcp",
                "id": "gh",
                "config": {"command": ["srv"], "env": {"GITHUB_TOKEN": "${MY_GITHUB_TOKEN}"}},
            },
            "config: env names environment variables; write their names",
        ),
        (
            {
                "type": "mcp",
                "id": "docs",
                "config": {"url": "http://127.0.0.1:9/mcp", "headersEnv": {"X-Key": "${K}"}},
            },
            "config: headersEnv names environment variables; write their names",
        ),
        (
            {"type": "mcp", "id": "x", "config": {"command": ["srv", "--db=pg://u:pw1@h/d"]}},
            r"config.command\[1\] has a password or key written in it",
        ),
    ],
)
def test_more_ways_of_writing_a_secret_into_the_file_are_refused(
    tmp_path: Path, config: dict, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_config(write(tmp_path, {"connectors": [config]}))


def test_nothing_half_applies_when_a_later_step_would_fail(tmp_path: Path, shop_file: Path) -> None:
    r = relay()
    old = r.connect("shop", f"sqlite:///{shop_file}")
    url = f"sqlite:///{shop_file}"
    cases = [
        (  # a skill pydantic refuses: one line, not a traceback
            {
                "connectors": [{"type": "sqlite", "id": "shop", "config": {"url": url}}],
                "skills": [{"name": "s", "prompt": "p", "connectors": ["shop"], "max_steps": 0}],
            },
            "skill 's': max_steps",
        ),
    ]
    for config, message in cases:
        with pytest.raises(ConfigurationError, match=message):
            r.load_config(write(tmp_path, config))
        assert r.connectors == {"shop": old} and "s" not in r.skills
    old.query("SELECT 1 AS one")  # type: ignore[attr-defined] - still open, not replaced
    r.close()


def test_two_web_search_connectors_are_refused_before_anything_changes(
    tmp_path: Path, shop_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-key-123456")
    monkeypatch.setenv("BRAVE_API_KEY", "brave-test-key-123456")
    r = relay()
    old = r.connect("shop", f"sqlite:///{shop_file}")
    config = {
        "connectors": [
            {"type": "sqlite", "id": "shop", "config": {"url": f"sqlite:///{shop_file}"}},
            {"type": "websearch", "id": "web", "config": {"provider": "tavily"}},
            {"type": "websearch", "id": "web2", "config": {"provider": "brave"}},
        ]
    }
    with pytest.raises(ConfigurationError, match="connector 'web2': a tool named 'web_search'"):
        r.load_config(write(tmp_path, config))
    assert r.connectors == {"shop": old}
    r.close()


def test_schema_ttl_from_the_file_applies_however_it_is_loaded(
    tmp_path: Path, shop_file: Path
) -> None:
    r = relay()
    entry = {"type": "sqlite", "id": "shop", "config": {"url": f"sqlite:///{shop_file}"}}
    r.load_config(write(tmp_path, {"connectors": [entry], "schema_ttl_s": 5}))
    assert r.schema_ttl_s == 5
    r.load_config(write(tmp_path, {"connectors": [entry], "schema_ttl_s": None}))
    assert r.schema_ttl_s is None
    r.close()


def mcp_args(*args: str) -> dict:
    return {
        "connectors": [{"type": "mcp", "id": "m", "config": {"command": ["srv"], "args": args}}]
    }


@pytest.mark.parametrize(
    "arg",
    [
        "max_tokens=4096",
        "keyword=python",
        "PASSWORD_FILE=/run/secrets/db",
        "Pwd={${DB_PW}}",
        "Password=${DB_PW}",
        "Server=db;Uid=reader;Pwd={${DB_PW}};",
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=${DB_PW}",
    ],
)
def test_arguments_that_are_no_inline_connection_string_secret_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arg: str
) -> None:
    monkeypatch.setenv("DB_PW", "pw-from-env")
    config = load_config(write(tmp_path, mcp_args(arg)))
    assert config.connectors[0].config["args"] == [arg.replace("${DB_PW}", "pw-from-env")]


@pytest.mark.parametrize(
    "arg",
    [
        "Password=hunter2",
        "Pwd={hunter2}",
        "Server=db;Uid=reader;Pwd=hunter2;",
        "Server=db;Uid=reader;Password=${DB_PW}x-hunter2",
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=hunter2==",
        "Endpoint=sb://x/;SharedAccessSignature=sv=hunter2",
    ],
)
def test_connection_strings_with_a_literal_credential_are_refused(tmp_path: Path, arg: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_config(write(tmp_path, mcp_args(arg)))
    message = str(caught.value)
    assert "config.args[0] is a connection string with a password or key written in it" in message
    assert "Pwd=${DB_PASSWORD}" in message and "postgresql" not in message
    assert "hunter2" not in message
