"""The ``websearch`` connector kind: its options and its :class:`ConnectorType`.

``relay.connect("web", "tavily")`` names a provider as a bare word (or ``"websearch:brave"``);
each option is declared once below, with the default
:class:`~relay_nb.connectors.websearch.connector.WebSearchConnector` takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict, get_args

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.options import option
from relay_nb.connectors.types import ConnectorType, LazyFactory
from relay_nb.connectors.websearch.providers import ProviderName

if TYPE_CHECKING:
    import httpx

__all__ = [
    "WEBSEARCH_TYPE",
    "WEB_SEARCH_PROVIDERS",
    "WebSearchKeywords",
    "WebSearchOptions",
    "WebSearchPythonOptions",
]

WEB_SEARCH_PROVIDERS: tuple[str, ...] = get_args(ProviderName)
"""What ``relay.connect(id, NAME)`` builds a web-search connector from."""


class WebSearchOptions(BaseModel):
    """A ``websearch`` config entry's ``config``; a left-out option takes the default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ProviderName = option(
        "tavily", "``tavily``, ``brave`` or ``serper`` (``relay.connect``'s target word)"
    )
    api_key_env: str = option(
        None,
        "the variable holding the API key; None: the provider's (``TAVILY_API_KEY``…)",
        "api_key_env",
        "apiKeyEnv",
    )
    endpoint: str = option(None, "the search API's URL; None: the provider's own")
    max_results: int = option(5, "hits a search returns at most (up to 20)")
    timeout_s: float = option(20.0, "seconds a search may take")


class WebSearchPythonOptions(WebSearchOptions):
    """Every ``relay.connect`` / ``WebSearchConnector`` keyword: the config file's options,
    and the one only Python passes."""

    transport: Any = option(
        None, "an ``httpx.AsyncBaseTransport`` requests go through (a test's, a proxy's)"
    )


class WebSearchKeywords(TypedDict, total=False):
    """``relay.connect(id, "tavily", **options)``'s options (the provider is the target),
    typed as ``WebSearchConnector`` takes them (checked against its signature and
    :class:`WebSearchPythonOptions` by the tests)."""

    api_key_env: str | None
    endpoint: str | None
    max_results: int
    timeout_s: float
    name: str | None
    description: str | None
    transport: httpx.AsyncBaseTransport | None


def _provider(target: Any) -> str | None:
    if not isinstance(target, str):
        return None
    word = target.strip().lower().removeprefix("websearch:")
    return word if word in WEB_SEARCH_PROVIDERS else None


def _from_target(target: Any) -> Mapping[str, Any]:
    return {"provider": _provider(target)}


WEBSEARCH_TYPE = ConnectorType(
    name="websearch",
    aliases=("web_search",),
    factory=LazyFactory("relay_nb.connectors.websearch.connector:WebSearchConnector"),
    config_model=WebSearchOptions,
    keywords_model=WebSearchPythonOptions,
    accepts=lambda target: _provider(target) is not None,
    from_url=_from_target,
    description="web search (tavily, brave, serper)",
    factory_defaults=True,
    python_keywords=True,
    builtin=True,
)
