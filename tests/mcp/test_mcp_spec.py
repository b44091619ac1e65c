"""The ``MCP`` descriptor and its config form: validation, secrets from the environment only
(inline ones warn), redaction of what the server sends back, the missing-SDK error."""

from __future__ import annotations

import sys
import warnings

import pytest
from mcp_support import SERVER, by_name
from pydantic import ValidationError

from relay_nb.connectors.http import InlineSecretWarning
from relay_nb.connectors.mcp import MCP, MCPSpecConfig, mcp_connector_from_config
from relay_nb.connectors.mcp.catalog import ServerTool, agent_tool_names
from relay_nb.connectors.mcp.client import import_sdk
from relay_nb.connectors.mcp.spec import resolve_launch
from relay_nb.errors import ConfigurationError

SECRET = "pw-4c1e9d0b7a2f"


def test_exactly_one_of_command_or_url() -> None:
    with pytest.raises(ValueError, match="exactly one of command"):
        MCP()
    with pytest.raises(ValueError, match="exactly one of command"):
        MCP(command=["srv"], url="http://127.0.0.1:1/mcp")
    with pytest.raises(ValueError, match="for url= servers only"):
        MCP(command=["srv"], headers={"X-Tenant": "acme"})
    with pytest.raises(ValueError, match="for command= servers only"):
        MCP(url="http://127.0.0.1:1/mcp", env=["HOME"])
    with pytest.raises(ValueError, match="must be an http"):
        MCP(url="ftp://example.org/mcp")
    with pytest.raises(ValueError, match="environment variable names"):
        MCP(command=["srv"], env={"TOKEN": "not a name!"})
    assert MCP(command="npx -y @acme/server --root '/data dir'").command == [
        "npx",
        "-y",
        "@acme/server",
        "--root",
        "/data dir",
    ]


def test_config_form_forbids_unknown_fields_and_takes_camel_case() -> None:
    config = MCPSpecConfig.model_validate(
        {"command": SERVER, "readOnlyTools": ["write_note"], "timeoutS": 5}
    )
    assert config.read_only_tools == ["write_note"] and config.timeout_s == 5
    assert config.transport == "stdio"
    with pytest.raises(ConfigurationError, match=r"MCP commnd: unknown field"):
        mcp_connector_from_config("files", {"commnd": SERVER})
    connector = mcp_connector_from_config(
        "files", {"command": SERVER, "read_only_tools": ["write_note"]}, name="Team drive"
    )
    try:
        assert connector.name == "Team drive" and connector.kind == "mcp"
        assert not by_name(connector)["files_write_note"].requires_approval
    finally:
        connector.close()


def test_build_connector_takes_labels_and_overrides() -> None:
    spec = MCP(command=SERVER)
    connector = spec.build_connector("files", name="Drive", description="notes", timeout_s=5)
    try:
        assert (connector.name, connector.description, connector.timeout_s) == (
            "Drive",
            "notes",
            5.0,
        )
    finally:
        connector.close()
    with pytest.raises(ConfigurationError, match="MCP does not take tables; it takes: name"):
        spec.build_connector("files", tables=["x"])
    with pytest.raises(ConfigurationError, match="snake_case"):
        spec.build_connector("Files!")


def test_env_is_passed_by_name_and_never_shown(monkeypatch) -> None:
    monkeypatch.setenv("MCP_TEST_DB_PASSWORD", SECRET)
    monkeypatch.setenv("MCP_TEST_UNLISTED", "not-passed-along")
    connector = MCP(
        command=SERVER,
        env={
            "MCP_TEST_DB_PASSWORD": "MCP_TEST_DB_PASSWORD",
            "INNER_SECRET": "MCP_TEST_DB_PASSWORD",
        },
        env_values={"LOG_STYLE": "plain"},
    ).build_connector("files")
    try:
        status = connector.call_tool("env_status", {"name": "MCP_TEST_DB_PASSWORD"}).content
        assert status == f"MCP_TEST_DB_PASSWORD is set ({len(SECRET)} chars)"
        assert connector.call_tool("env_status", {"name": "INNER_SECRET"}).content.endswith(
            f"is set ({len(SECRET)} chars)"
        )
        assert connector.call_tool("env_status", {"name": "LOG_STYLE"}).content.endswith(
            "(5 chars)"
        )
        unlisted = connector.call_tool("env_status", {"name": "MCP_TEST_UNLISTED"}).content
        assert unlisted == "MCP_TEST_UNLISTED is not set"  # only what the analyst names
        assert SECRET not in connector.target and SECRET not in repr(connector.launch)
        # the server echoing the value back: the model sees it redacted
        connector.call_tool("write_note", {"path": "leak.txt", "text": f"pw={SECRET}"})
        echoed = connector.call_tool("read_file", {"path": "leak.txt"})
        assert echoed.content == "pw=[REDACTED]"
    finally:
        connector.close()


def test_a_missing_env_var_fails_before_anything_starts(monkeypatch) -> None:
    monkeypatch.delenv("MCP_TEST_MISSING_TOKEN", raising=False)
    with pytest.raises(ConfigurationError, match="MCP_TEST_MISSING_TOKEN is not set"):
        MCP(command=SERVER, env=["MCP_TEST_MISSING_TOKEN"]).build_connector("files")


def test_inline_secrets_warn() -> None:
    with pytest.warns(InlineSecretWarning, match=r"env_values\['API_TOKEN'\]"):
        MCP(command=SERVER, env_values={"API_TOKEN": "inline-token-123"}).build_connector("a")
    with pytest.warns(InlineSecretWarning, match="header 'Authorization'"):
        MCP(
            url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer inline-123456"}
        ).build_connector("b")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        MCP(url="http://127.0.0.1:1/mcp", headers={"X-Tenant": "acme"}).build_connector("c")
        mcp_connector_from_config(  # config files are checked for inline secrets elsewhere
            "d", {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer x-123456"}}
        )


def test_headers_from_env_reach_the_http_server_and_never_an_output(
    http_url: str, monkeypatch
) -> None:
    monkeypatch.setenv("MCP_TEST_API_KEY", SECRET)
    monkeypatch.setenv("MCP_TEST_BEARER", "bearer-" + SECRET)
    with pytest.raises(ConfigurationError, match="give the credentials one way"):
        MCP(
            url=http_url.replace("http://", f"http://reader:{SECRET}x@"),
            auth={"type": "bearer", "token_env": "MCP_TEST_BEARER"},
        ).build_connector("docs")
    with_password = MCP(url=http_url.replace("http://", f"http://reader:{SECRET}x@"))
    masked = with_password.build_connector("docs")
    assert masked.target == http_url.replace("http://", "http://reader:[REDACTED]@")
    masked.close()
    connector = MCP(
        url=http_url,
        headers_env={"X-Api-Key": "MCP_TEST_API_KEY"},
        auth={"type": "bearer", "token_env": "MCP_TEST_BEARER"},
        timeout_s=10,
    ).build_connector("docs")
    try:
        assert SECRET not in connector.target and SECRET not in repr(connector.launch)
        sent = connector.call_tool("header_status", {"name": "X-Api-Key"}).content
        assert sent == f"X-Api-Key is sent ({len(SECRET)} chars)"
        auth = connector.call_tool("header_status", {"name": "Authorization"}).content
        assert auth == f"Authorization is sent ({len('Bearer bearer-' + SECRET)} chars)"
        failed = connector.call_tool("fail", {"reason": f"key {SECRET} rejected"})
        assert failed.is_error and failed.content.endswith("key [REDACTED] rejected")
    finally:
        connector.close()


def test_a_missing_sdk_says_how_to_install_it(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # what a failed import leaves behind
    with pytest.raises(ConfigurationError, match=r"pip install 'relay-nb\[mcp\]'"):
        import_sdk()
    with pytest.raises(ConfigurationError, match=r"pip install 'relay-nb\[mcp\]'"):
        MCP(command=SERVER).build_connector("files")


def test_tool_names_are_sanitised_cut_and_collisions_refused() -> None:
    def tool(name: str) -> ServerTool:
        return ServerTool(name=name, description="d", input_schema={"type": "object"})

    long_a, long_b = "x" * 80 + "a", "x" * 80 + "b"
    names = agent_tool_names(
        "files", [tool("files.search"), tool("get weather!"), tool(long_a), tool(long_b)]
    )
    assert names["files.search"] == "files_files_search"
    assert names["get weather!"] == "files_get_weather"
    assert len(names[long_a]) == len(names[long_b]) == 64 and names[long_a] != names[long_b]
    with pytest.raises(ConfigurationError, match=r"tools 'a\.b' and 'a_b', which both become"):
        agent_tool_names("files", [tool("a.b"), tool("a_b")])


def test_a_literal_where_a_variable_name_belongs_is_never_echoed() -> None:
    """Validation refuses it; the launch (reached by specs built without validation) must
    not quote it either: it is likely a token a config file substituted in."""
    literal = "ghp-Lit3ral.Token/value"
    for spec in (
        MCPSpecConfig.model_construct(command=["srv"], env={"GITHUB_TOKEN": literal}),
        MCPSpecConfig.model_construct(
            url="http://127.0.0.1:1/mcp", headers_env={"Authorization": literal}
        ),
    ):
        with pytest.raises(ConfigurationError) as caught:
            resolve_launch(spec, "gh", warn=False)
        message = str(caught.value)
        assert "env maps names to names; put values in env_values" in message
        assert literal not in message and "Lit3ral" not in message


@pytest.mark.parametrize(
    "token", ["ghp_abcdefABCDEF1234567890abcdefABCDEF12", "AKIAABCDEFGHIJKLMNOP", "xAb3" * 6]
)
def test_a_token_spelled_like_a_name_in_env_is_refused_and_never_echoed(token: str) -> None:
    """MCP(env={...}) maps names to names; a token there (Claude Desktop configs put values
    in ``env``) is refused from Python too, and the validation error does not quote it."""
    with pytest.raises(ValidationError) as info:
        MCP(command=SERVER, env={"GITHUB_TOKEN": token})
    assert "environment variable names" in str(info.value)
    assert token not in str(info.value) and token[-8:] not in str(info.value)
