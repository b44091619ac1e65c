"""The web search connector: Tavily, Brave or Serper behind one ``web_search`` tool.

``httpx`` is imported only when a search runs, so registering a connector costs nothing.
"""

from relay_nb.connectors.websearch.connector import MAX_RESULTS, WebSearchConnector
from relay_nb.connectors.websearch.hits import SearchHit
from relay_nb.connectors.websearch.providers import PROVIDERS

__all__ = ["MAX_RESULTS", "PROVIDERS", "SearchHit", "WebSearchConnector"]
