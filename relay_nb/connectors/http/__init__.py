"""The HTTP connector: a REST API at a fixed base URL as a guarded ``call_<id>`` tool.

httpx is imported only when a request is sent; PyYAML only for a YAML OpenAPI document.
``HTTPConnector`` (whose module loads pandas) is imported on first access, so the auth
model here stays cheap for the connectors that reuse it (MCP over HTTP); the kind's record
(:mod:`.kind`: :data:`HTTP_TYPE`, its options) too.
"""

from typing import TYPE_CHECKING

from relay_nb._lazy import lazy_exports
from relay_nb.connectors.http.auth import HTTPAuth, InlineSecretWarning

if TYPE_CHECKING:
    from relay_nb.connectors.http.connector import HTTPConnector
    from relay_nb.connectors.http.kind import (
        HTTP_TYPE,
        HTTPAuthOptions,
        HTTPOptions,
        HTTPPythonOptions,
    )

__all__ = [
    "HTTPAuth",
    "HTTPAuthOptions",
    "HTTPConnector",
    "HTTPOptions",
    "HTTPPythonOptions",
    "HTTP_TYPE",
    "InlineSecretWarning",
]

_EXPORTS = {
    "HTTPConnector": "relay_nb.connectors.http.connector",
    "HTTP_TYPE": "relay_nb.connectors.http.kind",
    "HTTPAuthOptions": "relay_nb.connectors.http.kind",
    "HTTPOptions": "relay_nb.connectors.http.kind",
    "HTTPPythonOptions": "relay_nb.connectors.http.kind",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
