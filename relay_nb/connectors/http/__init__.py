"""The HTTP connector: a REST API at a fixed base URL as a guarded ``call_<id>`` tool.

httpx is imported only when a request is sent; PyYAML only for a YAML OpenAPI document.
``HTTPConnector`` (whose module loads pandas) is imported on first access, so the auth
model here stays cheap for the connectors that reuse it (MCP over HTTP).
"""

from typing import TYPE_CHECKING

from relay_nb.connectors.http.auth import HTTPAuth, InlineSecretWarning

if TYPE_CHECKING:
    from relay_nb.connectors.http.connector import HTTPConnector

__all__ = ["HTTPAuth", "HTTPConnector", "InlineSecretWarning"]


def __getattr__(name: str) -> object:
    if name == "HTTPConnector":
        from relay_nb.connectors.http.connector import HTTPConnector

        return HTTPConnector
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
