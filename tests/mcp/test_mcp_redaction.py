"""What the MCP connector redacts: credentials only (not plain settings), before anything is
clipped, in messages that may carry a substituted secret, and in the server's stderr."""

from __future__ import annotations

import sys

import pytest
from mcp_support import SERVER
from pydantic import ValidationError

from relay_nb.connectors.mcp import MCP
from relay_nb.connectors.mcp.results import content_text
from relay_nb.errors import ConnectorError

SECRET = "pw-4c1e9d0b7a2f-supersecret"


def test_only_credentials_are_redacted_not_plain_settings(monkeypatch) -> None:
    monkeypatch.setenv("MCP_TEST_PLAIN", "sk-inner-91b2c3d4e5")  # a credential by its server name
    connector = MCP(
        command=SERVER,
        env={"DRIVE_TOKEN": "MCP_TEST_PLAIN"},
        env_values={
            "DRIVE_DIR": "notes/q3.txt",  # a setting: results mention it as is
            "DRIVE_DB": "postgresql://reader:pw-in-url-5e6f7a@127.0.0.1/drive",
        },
    ).build_connector("files")
    try:
        assert set(connector.launch.secrets) == {"sk-inner-91b2c3d4e5", "pw-in-url-5e6f7a"}
        listed = connector.call_tool("list_files").content
        assert listed == "notes/q3.txt\nnotes/q4.txt\nreadme.md"
        text = "dir notes/q3.txt, db pw-in-url-5e6f7a, token sk-inner-91b2c3d4e5"
        connector.call_tool("write_note", {"path": "echo.txt", "text": text})
        echoed = connector.call_tool("read_file", {"path": "echo.txt"}).content
        assert echoed == "dir notes/q3.txt, db [REDACTED], token [REDACTED]"
    finally:
        connector.close()


def test_a_secret_at_the_clip_boundary_is_redacted_whole(monkeypatch) -> None:
    monkeypatch.setenv("MCP_TEST_DB_PASSWORD", SECRET)
    connector = MCP(
        command=SERVER, env=["MCP_TEST_DB_PASSWORD"], max_result_chars=120, timeout_s=10
    ).build_connector("files")
    try:
        text = "x" * 100 + SECRET  # the secret runs across character 120
        connector.call_tool("write_note", {"path": "a.txt", "text": text})
        result = connector.call_tool("read_file", {"path": "a.txt"}).content
        assert result == "x" * 100 + "[REDACTED]"
        # "fail failed: Error executing tool fail: " (40 characters), then the reason
        failed = connector.call_tool("fail", {"reason": "y" * 55 + SECRET})
        assert failed.is_error and len(failed.content) <= 120
        assert SECRET[:4] not in failed.content and failed.content.endswith("[REDACTED]")
        long = connector.call_tool("fail", {"reason": "z" * 200 + SECRET})
        assert long.content.endswith("…") and "pw-" not in long.content
    finally:
        connector.close()


def test_a_token_given_where_a_variable_name_belongs_is_refused_unquoted(monkeypatch) -> None:
    # a config file's ${GITHUB_TOKEN} substituted into env=[...] puts the value where a
    # variable *name* is expected; no message may print it, and a token spelled like a
    # name (ghp_…) is refused before anything is looked up
    monkeypatch.setenv("MCP_TEST_GH_TOKEN", "ghp_4f9a8b7c6d5e4f3a")
    with pytest.raises(ValidationError) as raised:
        MCP(command=SERVER, env=["ghp_4f9a8b7c6d5e4f3a"]).build_connector("files")
    assert "ghp_4f9a8b7c6d5e4f3a" not in str(raised.value)
    assert "must hold environment variable names" in str(raised.value)


def test_long_stderr_lines_are_kept_cut_and_redacted(monkeypatch) -> None:
    monkeypatch.setenv("MCP_TEST_API_TOKEN", SECRET)
    script = (
        "import os, sys; sys.stderr.write('a' * 985 + os.environ['MCP_TEST_API_TOKEN'] + "
        "'b' * 100000 + chr(10) + 'last line' + chr(10)); sys.exit(2)"
    )
    broken = MCP(
        command=[sys.executable, "-c", script], env=["MCP_TEST_API_TOKEN"], connect_timeout_s=10
    ).build_connector("noisy")
    try:
        with pytest.raises(ConnectorError) as raised:
            broken.tools()
        assert SECRET[:5] not in str(raised.value)
        first, last = broken.stderr_tail(2).splitlines()
        assert first.startswith("a" * 985 + "[REDACTED]") and first.endswith("… [line cut]")
        assert len(first) < 1100 and "b" * 10 not in first.split("[REDACTED]")[0]
        assert last == "last line"
    finally:
        broken.close()


def test_binary_sizes_come_from_the_base64_length() -> None:
    class Block:
        type, mime_type = "image", "image/png"

        def __init__(self, data: str) -> None:
            self.data = data

    assert content_text([Block("QUJD")]) == (
        "[image (image/png, 3 bytes) returned; not shown to the model]"
    )
    assert "2 bytes" in content_text([Block("QUI=")]) and "(image/png, 1 byte)" in content_text(
        [Block("QQ==")]
    )
    assert "3 KB" in content_text([Block("A" * 4096)])
