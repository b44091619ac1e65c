"""The ``mcp`` connector kind in a config file (from Python: ``relay_nb.MCP(...)``, a
descriptor that builds its own connector). Its options are
:class:`~relay_nb.connectors.mcp.spec.MCPSpecConfig`; a relative ``cwd`` is read from the
config file's directory."""

from __future__ import annotations

from typing import Any

from relay_nb.connectors.base import Connector
from relay_nb.connectors.mcp.spec import MCPSpecConfig
from relay_nb.connectors.types import ConnectorType

__all__ = ["MCP_TYPE"]


def _from_config(
    connector_id: str, *, name: str | None = None, description: str | None = None, **config: Any
) -> Connector:
    from relay_nb.connectors.mcp.descriptor import mcp_connector_from_config

    return mcp_connector_from_config(connector_id, config, name=name, description=description)


MCP_TYPE = ConnectorType(
    name="mcp",
    factory=_from_config,
    config_model=MCPSpecConfig,
    path_options=("cwd",),
    description="an MCP server (stdio or streamable HTTP): relay_nb.MCP(...)",
    factory_defaults=True,
    builtin=True,
)
