"""The wire formats of the three search APIs: how to ask, how to read the answer, and what
each provider's refusals mean.

Verified against each provider's public documentation and official clients (2025-2026):

* **Tavily** — ``POST https://api.tavily.com/search``, JSON body ``{"query", "max_results",
  "search_depth"}`` (``max_results`` 0-20, default 5; ``basic`` depth costs one credit),
  key as ``Authorization: Bearer tvly-…`` (the current docs and ``tavily-python``; older
  clients put ``api_key`` in the body, which we never do: a body is likelier to be logged
  than a header). Answer: ``results[].title/url/content`` (+ ``score``, ``answer``…).
  Refusals, as ``tavily-python`` maps them: 401 bad or missing key, 429 rate limit,
  403/432/433 plan or usage limit, 400 bad request; body ``{"detail": {"error": "…"}}``.
* **Brave** — ``GET https://api.search.brave.com/res/v1/web/search?q=…&count=…``
  (``count`` 1-20, query at most 400 characters and 50 words), key in the
  ``X-Subscription-Token`` header. Answer: ``web.results[].title/url/description``;
  descriptions carry ``<strong>`` highlighting, so markup is stripped. A bad token is
  **422** with ``{"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID",
  "detail": …}}`` — not 401 — and 429 is ``RATE_LIMITED``.
* **Serper** — ``POST https://google.serper.dev/search``, JSON body ``{"q", "num"}``, key in
  the ``X-API-KEY`` header. Answer: ``organic[].title/link/snippet`` (+ ``position``). A bad
  key is 403 ``{"message": "Unauthorized.", "statusCode": 403}``. Serper may return more
  organic hits than ``num``; the connector cuts them to what was asked.

Everything here is pure data handling (no HTTP client), so the connector can swap transports
and the tests can check each format without a network.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from relay_nb.errors import QueryExecutionError
from relay_nb.redaction import redact

__all__ = [
    "MAX_QUERY_CHARS",
    "PROVIDERS",
    "Provider",
    "ProviderName",
    "RawHit",
    "WireRequest",
    "http_error",
]

ProviderName = Literal["tavily", "brave", "serper"]
MAX_QUERY_CHARS = 400
"""Brave's documented limit; applied to every provider so a query behaves the same on all."""
_MAX_DETAIL_CHARS = 200


@dataclass(frozen=True)
class RawHit:
    """One result as the provider sent it, before cleaning (strings may hold markup)."""

    title: Any
    url: Any
    snippet: Any


@dataclass(frozen=True)
class WireRequest:
    """One HTTP request, transport-neutral; ``headers`` holds the key, so never log it."""

    method: Literal["GET", "POST"]
    headers: dict[str, str]
    params: dict[str, str] = field(default_factory=dict)
    json: dict[str, Any] | None = None


@dataclass(frozen=True)
class Provider:
    """How one search API is called and read."""

    name: ProviderName
    endpoint: str
    key_env: str
    max_words: int | None
    build: Callable[[str, int, str], WireRequest]
    parse: Callable[[Any], list[RawHit]]
    detail: Callable[[Any], tuple[str, str]]
    """``payload -> (code, message)`` of an error body; empty strings when absent."""
    key_statuses: frozenset[int] = frozenset({401, 403})
    key_codes: frozenset[str] = frozenset()
    """Error codes that mean "bad key" whatever the status (Brave's 422)."""
    quota_statuses: frozenset[int] = frozenset()


# ------------------------------------------------------------------ Tavily


def _tavily_request(query: str, count: int, key: str) -> WireRequest:
    return WireRequest(
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        json={"query": query, "max_results": count, "search_depth": "basic"},
    )


def _tavily_hits(payload: Any) -> list[RawHit]:
    results = _list_at(payload, "results", "tavily")
    return [RawHit(r.get("title"), r.get("url"), r.get("content")) for r in results]


def _tavily_detail(payload: Any) -> tuple[str, str]:
    detail = payload.get("detail") if isinstance(payload, Mapping) else None
    if isinstance(detail, Mapping):
        return "", _text(detail.get("error") or detail.get("message"))
    return "", _text(detail)


# ------------------------------------------------------------------ Brave


def _brave_request(query: str, count: int, key: str) -> WireRequest:
    return WireRequest(
        method="GET",
        headers={"X-Subscription-Token": key, "Accept": "application/json"},
        params={"q": query, "count": str(count)},
    )


def _brave_hits(payload: Any) -> list[RawHit]:
    if not isinstance(payload, Mapping) or payload.get("type") not in (None, "search"):
        raise _shape_error("brave", "type 'search'")
    web = payload.get("web")
    if web is None:  # Brave leaves "web" out when nothing matched
        return []
    results = _list_at(web, "results", "brave", where="web.results")
    return [RawHit(r.get("title"), r.get("url"), r.get("description")) for r in results]


def _brave_detail(payload: Any) -> tuple[str, str]:
    error = payload.get("error") if isinstance(payload, Mapping) else None
    if isinstance(error, Mapping):
        return _text(error.get("code")), _text(error.get("detail"))
    return "", ""


# ------------------------------------------------------------------ Serper


def _serper_request(query: str, count: int, key: str) -> WireRequest:
    return WireRequest(
        method="POST",
        headers={"X-API-KEY": key, "Content-Type": "application/json"},
        json={"q": query, "num": count},
    )


def _serper_hits(payload: Any) -> list[RawHit]:
    if isinstance(payload, Mapping) and "organic" not in payload and "searchParameters" in payload:
        return []  # a valid answer without organic results
    results = _list_at(payload, "organic", "serper")
    return [RawHit(r.get("title"), r.get("link"), r.get("snippet")) for r in results]


def _serper_detail(payload: Any) -> tuple[str, str]:
    if isinstance(payload, Mapping):
        return "", _text(payload.get("message"))
    return "", ""


PROVIDERS: dict[str, Provider] = {
    "tavily": Provider(
        name="tavily",
        endpoint="https://api.tavily.com/search",
        key_env="TAVILY_API_KEY",
        max_words=None,
        build=_tavily_request,
        parse=_tavily_hits,
        detail=_tavily_detail,
        key_statuses=frozenset({401}),
        quota_statuses=frozenset({403, 432, 433}),
    ),
    "brave": Provider(
        name="brave",
        endpoint="https://api.search.brave.com/res/v1/web/search",
        key_env="BRAVE_API_KEY",
        max_words=50,
        build=_brave_request,
        parse=_brave_hits,
        detail=_brave_detail,
        key_codes=frozenset({"SUBSCRIPTION_TOKEN_INVALID"}),
    ),
    "serper": Provider(
        name="serper",
        endpoint="https://google.serper.dev/search",
        key_env="SERPER_API_KEY",
        max_words=None,
        build=_serper_request,
        parse=_serper_hits,
        detail=_serper_detail,
    ),
}


# ------------------------------------------------------------------ refusals


def http_error(
    provider: Provider,
    status: int,
    payload: Any,
    *,
    key_env: str,
    retry_after: str | None = None,
) -> QueryExecutionError:
    """A short message for a non-2xx answer that says what to do, never the key itself."""
    name = provider.name
    code, detail = provider.detail(payload)
    said = f": {_clip(detail)}" if detail else ""
    if status in provider.key_statuses or code in provider.key_codes:
        return QueryExecutionError(
            f"the {name} key was refused (HTTP {status}): check {key_env} holds a valid "
            f"{name} API key"
        )
    if status == 429:
        wait = f"; the service asks to wait {_clip(retry_after, 20)} s" if retry_after else ""
        return QueryExecutionError(
            f"{name} rate-limited the search (HTTP 429){wait}; wait before searching again "
            "and search less often"
        )
    if status in provider.quota_statuses:
        return QueryExecutionError(
            f"the {name} account is over its plan or usage limit (HTTP {status}){said}; "
            "raise the limit in the provider's dashboard or wait for it to reset"
        )
    if status >= 500:
        return QueryExecutionError(
            f"{name} failed to answer (HTTP {status}); the service may be down, try again later"
        )
    return QueryExecutionError(f"{name} refused the search (HTTP {status}){said}")


# ------------------------------------------------------------------ helpers


def _list_at(payload: Any, key: str, name: str, *, where: str | None = None) -> list[Mapping]:
    value = payload.get(key) if isinstance(payload, Mapping) else None
    if not isinstance(value, list):
        raise _shape_error(name, f"a {where or key!r} list")
    return [item for item in value if isinstance(item, Mapping)]


def _shape_error(name: str, expected: str) -> QueryExecutionError:
    return QueryExecutionError(
        f"{name} answered with JSON that is not a search result (expected {expected}); check "
        f"that the connector's endpoint is the {name} search API"
    )


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _clip(text: str, limit: int = _MAX_DETAIL_CHARS) -> str:
    text = " ".join(redact(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
