"""A tiny stdio MCP server (official ``mcp`` SDK) whose answers hold whatever data it is given.

Run as ``python secret_data_mcp_server.py DATA.json``. The JSON file is the data: the test
writes secrets into it, so the server never needs one in its environment (the MCP connector
passes the server no variable it is not told to). It serves:

- ``vault_records``: ``data["records"]``, a list of records, as structured content (the
  connector makes a table of it);
- ``vault_note``: ``data["note"]``, one text;
- ``vault_settings``: ``data["settings"]``, one JSON object (structured content that is not
  records: the connector shows its JSON text);
- the resource ``docs://vault`` (``data["document"]``, text: ranked into the prompt as a
  document) and the server's ``instructions`` (``data["instructions"]``: in the prompt).

Every tool is marked read-only, so a turn calls it without asking for approval.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)


def build_server(data: dict[str, Any]) -> MCPServer:
    server = MCPServer(
        "relay-secret-data",
        instructions=data.get("instructions", "A vault of records."),
        version="1.0",
        log_level="WARNING",
    )

    @server.tool(annotations=READ_ONLY)
    def vault_records() -> list[dict[str, Any]]:
        """Every record of the vault."""
        return data["records"]

    @server.tool(annotations=READ_ONLY)
    def vault_note() -> str:
        """The vault's note, as text."""
        return data["note"]

    @server.tool(annotations=READ_ONLY)
    def vault_settings() -> dict[str, Any]:
        """The vault's settings, as one JSON object."""
        return data["settings"]

    @server.resource("docs://vault", name="vault", mime_type="text/plain")
    def vault_document() -> str:
        """How the vault is organised."""
        return data["document"]

    return server


if __name__ == "__main__":
    build_server(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))).run("stdio")
