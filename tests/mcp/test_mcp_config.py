"""An MCP server from ``relay.config.json``: the built-in ``"mcp"`` type, placed errors,
inline secrets refused, and the ``%relay --connectors`` row — like every other connector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_support import SERVER

from relay_nb import Relay, ScriptedRuntime
from relay_nb.errors import ConfigurationError


def write_config(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "relay.config.json"
    path.write_text(json.dumps({"connectors": [{"type": "mcp", "id": "drive", **config}]}))
    return path


def test_a_stdio_server_from_a_config_file(tmp_path: Path) -> None:
    (tmp_path / "servers").mkdir()
    path = write_config(
        tmp_path, {"name": "Team drive", "config": {"command": SERVER, "cwd": "servers"}}
    )
    relay = Relay(ScriptedRuntime(), ledger=False)
    try:
        assert relay.load_config(path) == ["drive"]
        connector = relay.connectors["drive"]
        assert connector.kind == "mcp" and connector.name == "Team drive"
        assert connector.spec.cwd == str(tmp_path / "servers")  # read from the file's folder
        (row,) = relay.connector_status().to_dict("records")
        assert row["type"] == "mcp" and row["status"] == "ok"
        assert "list_files" in row["objects"]
        assert "drive_list_files" in [tool.name for tool in connector.tools()]
    finally:
        relay.close()


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"config": {}}, "connectors[0]"),
        ({"config": {"command": SERVER, "url": "http://127.0.0.1:9/mcp"}}, "connectors[0]"),
        ({"config": {"command": SERVER, "colour": "red"}}, "colour"),
        (
            {
                "config": {
                    "url": "http://127.0.0.1:9/mcp",
                    "headers": {"Authorization": "Bearer x1"},
                }
            },
            "Authorization",
        ),
        ({"config": {"url": "http://user:pw-in-file@127.0.0.1:9/mcp"}}, "password or key"),
    ],
)
def test_bad_mcp_entries_say_where_and_how_to_fix(
    tmp_path: Path, config: dict, fragment: str
) -> None:
    relay = Relay(ScriptedRuntime(), ledger=False)
    try:
        with pytest.raises(ConfigurationError) as info:
            relay.load_config(write_config(tmp_path, config))
        assert fragment in str(info.value)
        assert "x1" not in str(info.value) and "pw-in-file" not in str(info.value)
        assert relay.connectors == {}  # all or nothing
    finally:
        relay.close()
