"""The web search connector: Tavily, Brave or Serper behind one ``web_search`` tool.

``httpx`` is imported only when a search runs, and the connector's module on first access,
so registering a connector costs nothing and the kind's record (:mod:`.kind`:
:data:`WEBSEARCH_TYPE`, its options) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relay_nb._lazy import lazy_exports

if TYPE_CHECKING:
    from relay_nb.connectors.websearch.connector import MAX_RESULTS, WebSearchConnector
    from relay_nb.connectors.websearch.hits import SearchHit
    from relay_nb.connectors.websearch.kind import (
        WEB_SEARCH_PROVIDERS,
        WEBSEARCH_TYPE,
        WebSearchKeywords,
        WebSearchOptions,
        WebSearchPythonOptions,
    )
    from relay_nb.connectors.websearch.providers import PROVIDERS

__all__ = [
    "MAX_RESULTS",
    "PROVIDERS",
    "SearchHit",
    "WEBSEARCH_TYPE",
    "WEB_SEARCH_PROVIDERS",
    "WebSearchConnector",
    "WebSearchKeywords",
    "WebSearchOptions",
    "WebSearchPythonOptions",
]

_EXPORTS = {
    "MAX_RESULTS": "relay_nb.connectors.websearch.connector",
    "WebSearchConnector": "relay_nb.connectors.websearch.connector",
    "SearchHit": "relay_nb.connectors.websearch.hits",
    "PROVIDERS": "relay_nb.connectors.websearch.providers",
    "WEBSEARCH_TYPE": "relay_nb.connectors.websearch.kind",
    "WEB_SEARCH_PROVIDERS": "relay_nb.connectors.websearch.kind",
    "WebSearchKeywords": "relay_nb.connectors.websearch.kind",
    "WebSearchOptions": "relay_nb.connectors.websearch.kind",
    "WebSearchPythonOptions": "relay_nb.connectors.websearch.kind",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
