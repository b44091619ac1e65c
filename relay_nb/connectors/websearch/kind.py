"""The ``websearch`` connector kind: its config options and its :class:`ConnectorType`.

``relay.connect("web", "tavily")`` names a provider as a bare word (or ``"websearch:brave"``);
defaults are :class:`~relay_nb.connectors.websearch.connector.WebSearchConnector`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from relay_nb.connectors.types import ConnectorType, LazyFactory
from relay_nb.connectors.websearch.providers import ProviderName

__all__ = ["WEB_SEARCH_PROVIDERS", "WEBSEARCH_TYPE", "WebSearchOptions"]

WEB_SEARCH_PROVIDERS: tuple[str, ...] = get_args(ProviderName)
"""What ``relay.connect(id, NAME)`` builds a web-search connector from."""


class WebSearchOptions(BaseModel):
    """A ``websearch`` config entry's ``config``; a left-out option takes the default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ProviderName = Field(default=None)
    api_key_env: str = Field(
        default=None, validation_alias=AliasChoices("api_key_env", "apiKeyEnv")
    )
    endpoint: str = Field(default=None)
    max_results: int = Field(default=None)
    timeout_s: float = Field(default=None)


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
    accepts=lambda target: _provider(target) is not None,
    from_url=_from_target,
    description="web search (tavily, brave, serper)",
    factory_defaults=True,
    python_keywords=True,
    builtin=True,
)
