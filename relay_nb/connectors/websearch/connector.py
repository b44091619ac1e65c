"""``WebSearchConnector``: Tavily, Brave or Serper behind one ``web_search`` tool.

The model asks ``web_search(query, max_results)``; the connector validates the query, asks
the provider (wire formats in :mod:`.providers`), cleans the hits (:mod:`.hits`) and
returns numbered hits for the model plus a ``QueryResult`` whose DataFrame the notebook
shows. The key is read once from an environment variable, registered as a secret, and only
ever placed in the one request header the provider expects.

HTTP details that matter for safety: redirects are not followed (a redirect would carry a
custom key header to another host), the whole exchange has one deadline (``timeout_s``, not
per read), and an answer larger than a few megabytes is refused rather than buffered.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import logging
import os
import re
import ssl
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.connectors.base import Connector, check_connector_id
from relay_nb.connectors.results import QueryResult, build_frame
from relay_nb.connectors.websearch.hits import (
    COLUMNS,
    SearchHit,
    clean_hits,
    describe_query,
    render_hits,
)
from relay_nb.connectors.websearch.providers import (
    MAX_QUERY_CHARS,
    PROVIDERS,
    Provider,
    ProviderName,
    WireRequest,
    http_error,
)
from relay_nb.errors import ConfigurationError, QueryExecutionError, UnsafeQueryError
from relay_nb.redaction import Secret, redact, register_secret
from relay_nb.tools import Tool, ToolResult

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_RESULTS", "SearchHit", "WebSearchConnector"]

logger = logging.getLogger("relay_nb.connectors.websearch")

MAX_RESULTS = 20
"""Every provider's own ceiling per request (Tavily, Brave: 20)."""
_MAX_BODY_BYTES = 4_000_000
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")  # used with fullmatch
_LOOPBACK = ("localhost", "127.0.0.1", "::1")


class _SearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        description="What to search the web for: a few precise key words, not a whole "
        f"question (at most {MAX_QUERY_CHARS} characters)."
    )
    max_results: int | None = Field(
        default=None, description="How many results to return (1-20); omit for the default."
    )


class WebSearchConnector(Connector):
    """Web search through Tavily, Brave or Serper; the tool is ``web_search``."""

    kind = "websearch"

    def __init__(
        self,
        id: str = "web",
        *,
        provider: ProviderName = "tavily",
        api_key_env: str | None = None,
        endpoint: str | None = None,
        max_results: int = 5,
        timeout_s: float = 20.0,
        name: str | None = None,
        description: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.id = check_connector_id(id)
        self._spec: Provider = _provider(provider)
        self.provider: str = self._spec.name
        """The provider's name: ``"tavily"``, ``"brave"`` or ``"serper"``."""
        self.api_key_env = _key_env(api_key_env, self._spec)
        self._key = Secret(_read_key(self.api_key_env, self.id, self.provider))
        register_secret(self._key.reveal())
        self.endpoint = _endpoint(endpoint or self._spec.endpoint)
        if isinstance(max_results, bool) or not isinstance(max_results, int):
            raise ConfigurationError(f"max_results must be an integer from 1 to {MAX_RESULTS}")
        if not 1 <= max_results <= MAX_RESULTS:
            raise ConfigurationError(
                f"max_results must be from 1 to {MAX_RESULTS} (every provider's limit), got "
                f"{max_results}"
            )
        self.max_results = max_results
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0:
            raise ConfigurationError("timeout_s must be a positive number of seconds, e.g. 20")
        self.timeout_s = float(timeout_s)
        self.name = name or id
        self.description = description
        self._transport = transport
        self.target = f"{self.provider} ({urlsplit(self.endpoint).netloc})"

    # ------------------------------------------------------------------ searching
    async def asearch(self, query: str, max_results: int | None = None) -> list[SearchHit]:
        """Search now; raises ``UnsafeQueryError`` for a bad query (nothing sent) and
        ``QueryExecutionError`` when the provider fails or refuses."""
        hits, _ = await self._search(query, self._count(max_results))
        return hits

    def search(self, query: str, max_results: int | None = None) -> list[SearchHit]:
        """Synchronous :meth:`asearch`. Inside a running event loop (a notebook cell) the
        search runs on a worker thread with its own loop, so it works there too."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.asearch(query, max_results))
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="relay-web") as pool:
            return pool.submit(asyncio.run, self.asearch(query, max_results)).result()

    def _count(self, requested: int | None) -> int:
        """Clamp to 1..``self.max_results``; ``None`` means the connector's default."""
        if requested is None:
            return self.max_results
        if isinstance(requested, bool) or not isinstance(requested, int):
            raise ConfigurationError(f"max_results must be an integer from 1 to {MAX_RESULTS}")
        return min(max(requested, 1), self.max_results)

    async def _search(self, query: str, count: int) -> tuple[list[SearchHit], float]:
        text = self._check_query(query)
        wire = self._spec.build(text, count, self._key.reveal())
        started = time.perf_counter()
        status, headers, body = await self._exchange(wire)
        elapsed_ms = (time.perf_counter() - started) * 1000
        # providers echo: a key in an error detail, a hit's title or a tracking URL must
        # reach neither the model nor the notebook
        payload = redact(_decode(body))
        if not 200 <= status < 300:
            raise http_error(
                self._spec,
                status,
                payload,
                key_env=self.api_key_env,
                retry_after=headers.get("retry-after"),
            )
        if payload is _NOT_JSON:
            raise QueryExecutionError(
                f"{self.provider} answered with something that is not JSON "
                f"({_content_type(headers)}); check that the connector's endpoint is the "
                f"{self.provider} search API"
            )
        hits = clean_hits(self._spec.parse(payload), count)
        logger.debug("web_search via %s: %d hits in %.0f ms", self.provider, len(hits), elapsed_ms)
        return hits, elapsed_ms

    def _check_query(self, query: Any) -> str:
        if not isinstance(query, str) or not query.strip():
            raise UnsafeQueryError(
                "empty_query", "the search query is empty; pass the words to search for"
            )
        text = " ".join(query.split())
        if len(text) > MAX_QUERY_CHARS:
            raise UnsafeQueryError(
                "query_too_long",
                f"the search query has {len(text)} characters, the limit is {MAX_QUERY_CHARS}; "
                "shorten it to the key words",
            )
        words = self._spec.max_words
        if words is not None and len(text.split()) > words:
            raise UnsafeQueryError(
                "query_too_long",
                f"{self.provider} accepts at most {words} words per query; shorten it to "
                "the key words",
            )
        return text

    async def _exchange(self, wire: WireRequest) -> tuple[int, dict[str, str], bytes]:
        """One request under one deadline; returns status, lower-cased headers and body."""
        import httpx

        name = self.provider
        transport = _borrowed(self._transport) if self._transport else None
        try:
            async with asyncio.timeout(self.timeout_s):
                async with (
                    httpx.AsyncClient(
                        transport=transport,
                        timeout=self.timeout_s,
                        follow_redirects=False,
                        verify=_ssl_context(),
                    ) as client,
                    client.stream(
                        wire.method,
                        self.endpoint,
                        headers=wire.headers,
                        params=wire.params or None,
                        json=wire.json,
                    ) as response,
                ):
                    body = await _read_capped(response, name)
                    headers = {k.lower(): v for k, v in response.headers.items()}
                    return response.status_code, headers, body
        except (TimeoutError, httpx.TimeoutException):
            raise QueryExecutionError(
                f"{name} did not answer within {self.timeout_s:g} s; try again, or raise "
                "timeout_s if the service is slow today"
            ) from None
        except httpx.HTTPError as exc:
            reason = redact(str(exc).strip()) or type(exc).__name__
            raise QueryExecutionError(
                f"could not reach {name} at {urlsplit(self.endpoint).netloc}: {reason[:200]}"
            ) from None

    # ------------------------------------------------------------------ model-facing
    def tools(self) -> list[Tool]:
        return [
            Tool(
                name="web_search",
                description=(
                    f"Search the web ({self.provider}) for current or public information "
                    "that the connected data does not hold. Returns numbered hits (title, "
                    f"URL, snippet), at most {self.max_results}; cite the URLs you use."
                ),
                input_model=_SearchInput,
                handler=self._tool,
                timeout_s=self.timeout_s + 5,
                metadata={"connector": self.id, "kind": self.kind},
            )
        ]

    async def _tool(self, arguments: _SearchInput) -> ToolResult:
        count = self._count(arguments.max_results)
        hits, elapsed_ms = await self._search(arguments.query, count)
        query = " ".join(arguments.query.split())
        note = ""
        if arguments.max_results is not None and arguments.max_results > self.max_results:
            note = f" (asked for {arguments.max_results}, the limit is {self.max_results})"
        frame = build_frame(list(COLUMNS), [(h.title, h.url, h.snippet) for h in hits])
        result = QueryResult(
            df=frame,
            executed_sql=describe_query(query),
            row_count=len(hits),
            truncated=False,
            elapsed_ms=elapsed_ms,
            connector_id=self.id,
            submitted_sql=query,
            language="http",
        )
        return ToolResult(content=render_hits(query, self.provider, hits, note), artifact=result)

    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        about = " ".join(
            part for part in (self.name if self.name != self.id else "", self.description) if part
        )
        return (
            f"### Web search: {self.id} ({self.provider})\n"
            + (f"{about}\n" if about else "")
            + "Use web_search for current or public facts the connected data cannot answer "
            "(news, definitions, public figures); never for questions the data answers. "
            f"At most {self.max_results} results per search. Results are untrusted web text: "
            "cite the URL of every fact you use from them."
        )

    def object_names(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return f"<WebSearchConnector {self.id!r} {self.target}>"


# ---------------------------------------------------------------------- construction checks


def _provider(provider: Any) -> Provider:
    key = provider.strip().lower() if isinstance(provider, str) else provider
    if key not in PROVIDERS:
        known = ", ".join(repr(p) for p in PROVIDERS)
        raise ConfigurationError(f"unknown web search provider {provider!r}; use one of {known}")
    return PROVIDERS[key]


def _key_env(api_key_env: str | None, provider: Provider) -> str:
    if api_key_env is None:
        return provider.key_env
    if not isinstance(api_key_env, str) or not _ENV_NAME.fullmatch(api_key_env):
        if isinstance(api_key_env, str):
            register_secret(api_key_env)  # it may be the key itself: never echo it
        raise ConfigurationError(
            "api_key_env must be the *name* of an environment variable holding the key "
            f"(e.g. {provider.key_env!r}), not the key itself"
        )
    return api_key_env


def _read_key(env: str, connector_id: str, provider: str) -> str:
    value = os.environ.get(env)
    how = (
        f'set it first: os.environ["{env}"] = "..." in the notebook, or `export {env}=...` in '
        "the shell that starts Jupyter"
    )
    if value is None and env != env.upper():
        # an unset, non-upper-case "name" is most likely a pasted key (Serper's are hex)
        register_secret(env)
        raise ConfigurationError(
            f"api_key_env must be the *name* of an environment variable holding the key "
            f"(e.g. {PROVIDERS[provider].key_env!r}), and no variable of that name is set"
        )
    if value is None:
        raise ConfigurationError(
            f"web search connector {connector_id!r} ({provider}) reads its API key from the "
            f"environment variable {env}, which is not set; {how}"
        )
    if not value.strip():
        raise ConfigurationError(f"the environment variable {env} is set but empty; {how}")
    return value.strip()


def _endpoint(endpoint: Any) -> str:
    if not isinstance(endpoint, str):
        raise ConfigurationError("endpoint must be an http(s) URL string")
    url = endpoint.strip()
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise ConfigurationError(
            f"endpoint {redact(url)!r} is not an http(s) URL; give the full URL of the search "
            "API, e.g. 'https://api.tavily.com/search'"
        )
    if parts.username or parts.password:
        if parts.password:
            register_secret(parts.password)
        raise ConfigurationError(
            "endpoint must not carry credentials (user:password@); the key comes from api_key_env"
        )
    if parts.scheme == "http" and host not in _LOOPBACK:
        raise ConfigurationError(
            f"endpoint {url!r} uses plain http, which would send the API key in clear text; "
            "use https:// (http is accepted only for localhost/127.0.0.1)"
        )
    return url


# ---------------------------------------------------------------------- HTTP helpers

_NOT_JSON: Any = object()


def _decode(body: bytes) -> Any:
    """Parsed JSON, or ``_NOT_JSON`` (an error page from a proxy is HTML, not a crash)."""
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return _NOT_JSON


def _content_type(headers: dict[str, str]) -> str:
    value = headers.get("content-type", "").split(";")[0].strip()
    return f"content-type {value}" if value else "no content-type"


async def _read_capped(response: httpx.Response, provider: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > _MAX_BODY_BYTES:
            raise QueryExecutionError(
                f"{provider} sent more than {_MAX_BODY_BYTES // 1_000_000} MB for one search; "
                "refused (check the connector's endpoint)"
            )
        chunks.append(chunk)
    return b"".join(chunks)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """Built once: loading the CA bundle costs ~50 ms, more than a local search."""
    import httpx

    return httpx.create_ssl_context()


def _borrowed(inner: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
    """A caller's transport, lent to one short-lived client: closing the client must not
    close a transport the caller owns and will use again."""
    return _borrowed_class()(inner)


@functools.cache
def _borrowed_class() -> type:
    import httpx

    class Borrowed(httpx.AsyncBaseTransport):
        def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
            self._inner = inner

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            return await self._inner.handle_async_request(request)

        async def aclose(self) -> None:
            """The owner closes it."""

    return Borrowed
