"""The MCP connector: a Model Context Protocol server's tools, resources and prompts.

``relay.connect("files", relay_nb.MCP(command=["python", "-m", "my_server"]))`` (stdio) or
``relay.connect("docs", relay_nb.MCP(url="http://127.0.0.1:8000/mcp"))`` (streamable HTTP).
Needs the optional extra: ``pip install 'relay-nb[mcp]'``. The ``mcp`` SDK is imported only
when a connector is built, never by importing this package.
"""

from typing import TYPE_CHECKING

from relay_nb._lazy import lazy_exports
from relay_nb.connectors.mcp.descriptor import MCP, mcp_connector_from_config
from relay_nb.connectors.mcp.spec import MCPSpecConfig

__all__ = ["MCP", "MCPConnector", "MCPSpecConfig", "mcp_connector_from_config"]

_EXPORTS = {"MCPConnector": "relay_nb.connectors.mcp.connector"}
"""Its module imports pandas (results): loaded on first use."""

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from relay_nb.connectors.mcp.connector import MCPConnector
