"""The ``MCP(...)`` descriptor and the config file's ``mcp`` entries: each builds an
:class:`~relay_nb.connectors.mcp.connector.MCPConnector` from an
:class:`~relay_nb.connectors.mcp.spec.MCPSpecConfig`.

The connector's module is imported only when one is built: it loads pandas (its results), which
importing :mod:`relay_nb.connectors.mcp` must not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from relay_nb.connectors.mcp.spec import MCPSpecConfig, validate_spec
from relay_nb.errors import ConfigurationError

if TYPE_CHECKING:
    from relay_nb.connectors.mcp.connector import MCPConnector

__all__ = ["MCP", "mcp_connector_from_config"]


class MCP(MCPSpecConfig):
    """An MCP server to connect: ``relay.connect("files", MCP(command=["python", "-m",
    "my_server"]))`` (stdio) or ``relay.connect("docs", MCP(url="http://127.0.0.1:8000/mcp"))``
    (streamable HTTP). See :class:`MCPSpecConfig` for the fields.

    A frozen description only: nothing starts until :meth:`build_connector` (which
    ``relay.connect`` calls) builds the connector, and the server is contacted when its tools
    are first listed.

    **Read-only tools.** A tool the server annotates ``readOnlyHint: true`` runs without the
    user's approval. That annotation is the server's own claim — the MCP specification calls
    tool annotations untrusted unless the server is — so for a server you do not trust give
    ``trust_read_only_hints=False``: then only the tools you list in ``read_only_tools`` skip
    approval.

    **The stdio server's environment** is not the notebook's: it gets only ``HOME``,
    ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM`` and ``USER`` (the MCP SDK's safe defaults),
    plus the variables named in ``env`` and the values of ``env_values``. A server that needs
    a credential gets it only when you name it, e.g. ``env=["GITHUB_TOKEN"]``.
    """

    def build_connector(self, connector_id: str, **options: Any) -> MCPConnector:
        """The :class:`MCPConnector` for this server under ``connector_id``.

        ``name`` and ``description`` label it; any other option overrides the field of the
        same name (``timeout_s=5``, ``read_only_tools=[...]``).
        """
        name = options.pop("name", None)
        description = options.pop("description", None)
        spec: MCPSpecConfig = self
        if options:
            unknown = sorted(set(options) - set(type(self).model_fields))
            if unknown:
                accepted = ", ".join(["name", "description", *type(self).model_fields])
                raise ConfigurationError(
                    f"MCP does not take {', '.join(unknown)}; it takes: {accepted}"
                )
            spec = validate_spec({**self.model_dump(exclude_unset=True), **options})
        return _connector(connector_id, spec, name=name, description=description, warn=True)


def mcp_connector_from_config(
    connector_id: str,
    config: MCPSpecConfig | Mapping[str, Any],
    *,
    name: str | None = None,
    description: str | None = None,
) -> MCPConnector:
    """The connector a ``{"type": "mcp", "id": ..., "config": {...}}`` entry describes.

    Config files have their inline secrets refused before this runs (``${VAR}`` references
    are substituted by then), so values here do not warn.
    """
    spec = config if isinstance(config, MCPSpecConfig) else validate_spec(dict(config))
    return _connector(connector_id, spec, name=name, description=description, warn=False)


def _connector(
    connector_id: str,
    spec: MCPSpecConfig,
    *,
    name: str | None,
    description: str | None,
    warn: bool,
) -> MCPConnector:
    from relay_nb.connectors.mcp.connector import MCPConnector

    return MCPConnector(connector_id, spec, name=name, description=description, warn=warn)
