"""The HTTP connector: a REST API at a fixed base URL as a guarded ``call_<id>`` tool.

httpx is imported only when a request is sent; PyYAML only for a YAML OpenAPI document.
``HTTPConnector`` (whose module loads pandas) is imported on first access, so the auth
model here stays cheap for the connectors that reuse it (MCP over HTTP); the kind's record
(:mod:`.kind`: :data:`HTTP_TYPE`, its options) too.
"""

import importlib
from typing import TYPE_CHECKING

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

_MODULES = {
    "HTTPConnector": "connector",
    "HTTP_TYPE": "kind",
    "HTTPAuthOptions": "kind",
    "HTTPOptions": "kind",
    "HTTPPythonOptions": "kind",
}


def __getattr__(name: str) -> object:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
