"""The web search connector: Tavily, Brave or Serper behind one ``web_search`` tool.

``httpx`` is imported only when a search runs, and the connector's module on first access,
so registering a connector costs nothing and the kind's record (:mod:`.kind`:
:data:`WEBSEARCH_TYPE`, its options) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

_MODULES = {
    "MAX_RESULTS": "connector",
    "WebSearchConnector": "connector",
    "SearchHit": "hits",
    "PROVIDERS": "providers",
    "WEBSEARCH_TYPE": "kind",
    "WEB_SEARCH_PROVIDERS": "kind",
    "WebSearchKeywords": "kind",
    "WebSearchOptions": "kind",
    "WebSearchPythonOptions": "kind",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"relay_nb.connectors.websearch.{module}"), name)
