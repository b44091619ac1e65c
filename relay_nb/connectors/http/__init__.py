"""The HTTP connector: a REST API at a fixed base URL as a guarded ``call_<id>`` tool.

httpx is imported only when a request is sent; PyYAML only for a YAML OpenAPI document.
"""

from relay_nb.connectors.http.auth import HTTPAuth, InlineSecretWarning
from relay_nb.connectors.http.connector import HTTPConnector

__all__ = ["HTTPAuth", "HTTPConnector", "InlineSecretWarning"]
