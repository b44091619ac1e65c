"""``HTTPConnector``: one REST API, behind a fixed base URL, as a guarded ``call_<id>`` tool.

The analyst fixes where requests go (the base URL), who they are (auth from environment
variables) and what they may do (GET unless other methods are opted into, which then need
the user's approval per call). The model chooses only a method from that list, a path under
the base URL, query parameters and a JSON body. Pipeline per call: method check → path guard
→ join → check of the final URL → request with a deadline and a streamed size cap (redirects
only inside the base URL; gzip or deflate decoded under the cap) → records as a bounded
DataFrame, a compact preview for the model — all within the one ``timeout_s``.

An OpenAPI document (file or URL), read lazily on the first prompt and cached until
:meth:`refresh`, tells the model which operations exist.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode, urlsplit

from pydantic import BaseModel, ConfigDict, Field, create_model

from relay_nb.connectors.base import Connector, check_connector_id
from relay_nb.connectors.bounds import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
    check_byte_limits,
)
from relay_nb.connectors.http.auth import HTTPAuth, auth_headers, check_extra_headers, coerce_auth
from relay_nb.connectors.http.decode import decode_response
from relay_nb.connectors.http.fetch import Deadline, fetch
from relay_nb.connectors.http.openapi import ApiSummary, parse_document, summarise
from relay_nb.connectors.http.operations import render_operations
from relay_nb.connectors.http.paths import check_path, check_resolved, parse_base_url
from relay_nb.connectors.results import QueryResult
from relay_nb.errors import ConfigurationError, QueryExecutionError, RelayError, UnsafeQueryError
from relay_nb.redaction import redact, redact_url, register_secret, url_secrets
from relay_nb.tools import Tool, ToolResult

if TYPE_CHECKING:
    import httpx

__all__ = ["HTTPConnector"]

T = TypeVar("T")
SUPPORTED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_OPENAPI_MAX_BYTES = 64_000_000  # whole API descriptions are big (Stripe's is ~7 MB)
_MAX_QUERY_CHARS = 4000
_MAX_BODY_CHARS = 1_000_000

QueryValue = str | int | float | bool | None
_QUERY_DOC = (
    'Query parameters as an object, e.g. {"status": "paid", "limit": 50}; a list value '
    "repeats the parameter. Never put them in path."
)


class _CallInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: str = Field(default="GET", description="HTTP method; GET unless told otherwise.")
    path: str = Field(
        description="Path relative to the base URL, as listed in the API summary, e.g. "
        "'/orders/42'. No scheme, host, '..' or query string."
    )
    query: dict[str, QueryValue | list[QueryValue]] | None = Field(
        default=None, description=_QUERY_DOC
    )
    body: dict[str, Any] | list[Any] | None = Field(
        default=None, description="JSON request body (only for methods other than GET)."
    )


class HTTPConnector(Connector):
    """A REST API at a fixed base URL: ``call_<id>(method, path, query, body)``.

    Three byte limits bound a call, each at the point where its bytes exist:

    * ``max_response_bytes`` (5 MB) — the response body as read off the network, counted
      *after* decompression: reading stops (and the call fails) as soon as the decoded body
      passes it. It bounds what is held and parsed at once.
    * ``max_value_bytes`` (1 MiB) — one value kept in the result (a cell, a text body);
      longer ones are clipped with a note.
    * ``max_result_bytes`` (16 MiB) — everything kept in the result; records past it are
      left out with a note and the result is marked truncated (``limit="bytes"``).

    They are independent on purpose: the response cap bounds the wire and the parser, the
    result limits bound what the kernel keeps once the body is gone. A body under its cap can
    still make a result over its limit (every value is charged its decoded size plus a
    per-value overhead, so many tiny values cost more kept than sent), and a body over the
    result limit can yield a small result (only ``row_limit`` records are kept). ``timeout_s``
    covers the request *and* decoding its answer.
    """

    kind = "http"

    def __init__(
        self,
        id: str,
        base_url: str,
        *,
        auth: HTTPAuth | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        openapi: str | os.PathLike[str] | None = None,
        methods: Sequence[str] = ("GET",),
        timeout_s: float = 30.0,
        max_response_bytes: int = 5_000_000,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        row_limit: int = 200,
        max_operations: int = 60,
        name: str | None = None,
        description: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.id = check_connector_id(id)
        self.base = parse_base_url(base_url)
        self.target = str(self.base)
        self.name = name or id
        self.description = description
        self.methods = _check_methods(methods)
        self.timeout_s = _positive("timeout_s", timeout_s, float)
        self.max_response_bytes = _positive("max_response_bytes", max_response_bytes, int)
        self.max_value_bytes, self.max_result_bytes = check_byte_limits(
            max_value_bytes, max_result_bytes
        )
        self.row_limit = _positive("row_limit", row_limit, int)
        self.max_operations = _positive("max_operations", max_operations, int)
        self.auth = coerce_auth(auth)
        extra = check_extra_headers(headers)
        if any(name.lower() == "accept-encoding" for name in extra):
            raise ConfigurationError(
                "headers sets Accept-Encoding, which the connector sets itself (gzip, deflate: "
                "what it decodes under max_response_bytes); remove it"
            )
        credentials = auth_headers(self.auth, self.id)  # reads env vars: fails now, not later
        clash = {name.lower() for name in extra} & {name.lower() for name in credentials}
        if clash:
            raise ConfigurationError(
                f"headers sets {', '.join(sorted(clash))}, which auth= also sets; remove it from "
                "headers"
            )
        self._headers = {**extra, **credentials}
        self.openapi = _check_openapi(openapi)
        if isinstance(self.openapi, str):  # e.g. ?api_key=…: never into a prompt or status
            for secret in url_secrets(self.openapi):
                register_secret(secret)
        self._transport = transport
        self._summary: ApiSummary | None = None
        self._summary_lock = threading.Lock()

    @property
    def requires_approval(self) -> bool:
        """Any method other than GET can change data, so each call then needs a yes."""
        return any(method != "GET" for method in self.methods)

    # ------------------------------------------------------------------ calls
    async def acall(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> QueryResult:
        """Send one guarded request; raises UnsafeQueryError before sending anything unsafe."""
        result, _ = await self._call(method, path, query, body)
        return result

    def call(
        self,
        method: str,
        path: str,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> QueryResult:
        """Blocking form of :meth:`acall` (also from a notebook cell, where a loop runs)."""
        return _run_sync(lambda: self.acall(method, path, query, body))

    async def _call(
        self, method: Any, path: Any, query: Mapping[str, Any] | None, body: Any
    ) -> tuple[QueryResult, str]:
        verb = self._check_method(method)
        relative = check_path(path)
        params = _check_query(query)
        if verb == "GET" and body in ({}, []):
            body = None  # an empty body is what "no body" looks like to some models
        if body is not None and verb == "GET":
            raise UnsafeQueryError(
                "body_not_allowed", "GET requests carry no body; put parameters in 'query'"
            )
        if body is not None and len(_json_text(body)) > _MAX_BODY_CHARS:
            raise UnsafeQueryError("body_too_large", "the request body is over 1 MB; send less")
        url = self.base.url_for(relative)
        deadline = Deadline.after(self.timeout_s)  # decoding the answer runs on the same clock
        fetched = await fetch(
            verb,
            url,
            what=f"the {self.id} API",
            params=params,
            json_body=body,
            headers=self._headers,
            timeout_s=self.timeout_s,
            max_bytes=self.max_response_bytes,
            transport=self._transport,
            guard=lambda final: check_resolved(self.base, final),
        )
        sent = urlsplit(fetched.url)  # what was actually requested, encoded, after redirects
        request_line = f"{verb} {sent.path or '/'}" + (f"?{sent.query}" if sent.query else "")
        submitted = f"{verb} {path}" + (f" query={_json_text(query)}" if query else "")
        return decode_response(
            fetched,
            request_line=request_line,
            submitted=submitted,
            relative_path="/" + relative,
            connector_id=self.id,
            row_limit=self.row_limit,
            max_value_bytes=self.max_value_bytes,
            max_result_bytes=self.max_result_bytes,
            deadline=deadline,
        )

    def _check_method(self, method: Any) -> str:
        verb = method.strip().upper() if isinstance(method, str) else ""
        if verb not in self.methods:
            allowed = ", ".join(self.methods)
            raise UnsafeQueryError(
                "method_not_allowed",
                f"method must be one of {allowed} on this connector; "
                + (
                    "use GET to read (other methods need the analyst to enable them)"
                    if self.methods == ("GET",)
                    else "pick one of those"
                ),
            )
        return verb

    # ------------------------------------------------------------------ model-facing
    def tools(self) -> list[Tool]:
        methods = ", ".join(self.methods)
        approval = (
            " Every call needs the user's approval because methods that change data are enabled."
            if self.requires_approval
            else ""
        )
        return [
            Tool(
                name=f"call_{self.id}",
                description=(
                    f"Call the {self.name} HTTP API at {self.target}. Methods: {methods}. path is "
                    "relative to the base URL (as in the API summary); query parameters go in "
                    f"query. JSON records come back as a table of at most {self.row_limit} "
                    f"rows.{approval}"
                ),
                input_model=self._input_model,
                handler=self._call_tool,
                requires_approval=self.requires_approval,
                timeout_s=self.timeout_s + 5,
                metadata={"connector": self.id, "kind": "http"},
            )
        ]

    @functools.cached_property
    def _input_model(self) -> type[_CallInput]:
        """The call schema with this connector's methods as the ``method`` enum."""
        default = "GET" if "GET" in self.methods else self.methods[0]
        return create_model(
            f"Call{self.id.title().replace('_', '')}Input",
            __base__=_CallInput,
            method=(
                str,
                Field(
                    default=default,
                    description=f"HTTP method: {' or '.join(self.methods)}.",
                    json_schema_extra={"enum": list(self.methods)},
                ),
            ),
        )

    async def _call_tool(self, arguments: _CallInput) -> ToolResult:
        result, preview = await self._call(
            arguments.method, arguments.path, arguments.query, arguments.body
        )
        return ToolResult(content=preview, artifact=result)

    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        label = self.id + (f" ({self.name})" if self.name != self.id else "")
        lines = [f"### HTTP connector: {label} — {self.target}"]
        if self.description:
            lines.append(self.description)
        body = ", a JSON body in body" if self.requires_approval else ""
        lines.append(
            f"Call with call_{self.id}: method ({', '.join(self.methods)}), path relative to the "
            f"base URL (e.g. '/orders/42'), query parameters in query{body}. JSON records come "
            f"back as a table of at most {self.row_limit} rows."
        )
        if self.openapi is None:
            lines.append(
                "No API description was given: call only paths the user or the API's "
                "documentation names; do not guess endpoints."
            )
            return "\n".join(lines)
        try:
            summary = self.api_summary()
        except RelayError as exc:  # the tool still works: say so instead of failing the prompt
            lines.append(
                "The API description could not be loaded "
                f"({_clip(redact(str(exc)), 200)}); call only paths the user names."
            )
            return "\n".join(lines)
        if summary.title:
            about = f"API: {summary.title}" + (f" {summary.version}" if summary.version else "")
            lines.append(about + (f" — {summary.description}" if summary.description else ""))
        shown = [op for op in summary.operations if op.method in self.methods]
        skipped = len(summary.operations) - len(shown)
        if skipped:
            lines.append(f"({skipped} operations use methods not enabled here and are not listed)")
        lines.append(f"Operations ({len(shown)}):" if shown else "Operations: none usable.")
        head = "\n".join(lines)
        room = None if max_tokens is None else max(0, max_tokens * 4 - len(head) - 1)
        if shown:
            rendered = render_operations(
                shown, max_operations=self.max_operations, max_chars=room, question=question
            )
            return head + "\n" + rendered
        return head

    # ------------------------------------------------------------------ OpenAPI
    def api_summary(self) -> ApiSummary:
        """The OpenAPI operations, read once (lazily) and cached until :meth:`refresh`."""
        if self.openapi is None:
            return ApiSummary()
        if self._summary is None:
            with self._summary_lock:
                if self._summary is None:
                    document = parse_document(self._read_openapi(), source=self._openapi_shown)
                    # an API may echo the credentials it was sent into its own description
                    # (a title, an example): the summary goes into every prompt
                    document = redact(document)
                    self._summary = summarise(document, base_path=self.base.path)
        return self._summary

    @property
    def _openapi_shown(self) -> str:
        """The OpenAPI source as errors name it: a URL without its ``?api_key=``."""
        source = self.openapi
        return redact_url(source) if isinstance(source, str) else str(source)

    def _read_openapi(self) -> bytes:
        source = self.openapi
        if isinstance(source, Path):
            try:
                if source.stat().st_size > _OPENAPI_MAX_BYTES:
                    raise ConfigurationError(f"the OpenAPI file {source} is over 64 MB")
                return source.read_bytes()
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot read the OpenAPI file {source}: {exc.strerror or exc}"
                ) from None
        assert isinstance(source, str)
        # credentials go only to the API's own origin, never to a third-party host
        same = self.base.same_origin(source)
        headers = self._headers if same else {}
        fetched = _run_sync(
            lambda: fetch(
                "GET",
                source,
                what=f"the OpenAPI URL of {self.id}",
                headers=headers,
                timeout_s=self.timeout_s,
                max_bytes=_OPENAPI_MAX_BYTES,
                transport=self._transport,
            )
        )
        if fetched.status != 200:
            raise QueryExecutionError(
                f"fetching the OpenAPI document of {self.id} returned HTTP {fetched.status}"
                + (" (a redirect: pass the final URL)" if 300 <= fetched.status < 400 else "")
            )
        return fetched.content

    def object_names(self) -> list[str]:
        return [op.label for op in self.api_summary().operations if op.method in self.methods]

    def refresh(self) -> None:
        """Forget the OpenAPI summary; the next prompt reads the document again."""
        with self._summary_lock:
            self._summary = None

    def __repr__(self) -> str:
        return f"<HTTPConnector {self.id!r} {self.target} methods={','.join(self.methods)}>"


def _check_methods(methods: Sequence[str]) -> tuple[str, ...]:
    if isinstance(methods, str) or not isinstance(methods, Sequence) or not methods:
        raise ConfigurationError(
            "methods must be a non-empty list such as ('GET',) or ('GET', 'POST')"
        )
    checked: list[str] = []
    for method in methods:
        verb = method.strip().upper() if isinstance(method, str) else ""
        if verb not in SUPPORTED_METHODS:
            raise ConfigurationError(
                f"unsupported method {method!r}; choose from {', '.join(SUPPORTED_METHODS)}"
            )
        if verb not in checked:
            checked.append(verb)
    return tuple(checked)


def _positive(name: str, value: Any, kind: type) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigurationError(f"{name} must be a positive number, got {value!r}")
    if kind is int and not isinstance(value, int):
        raise ConfigurationError(f"{name} must be a positive integer, got {value!r}")
    return kind(value)


def _check_openapi(source: str | os.PathLike[str] | None) -> str | Path | None:
    """A URL stays a string (fetched lazily); anything else is a file that must exist now."""
    if source is None:
        return None
    if isinstance(source, str) and "://" in source:
        scheme = source.split("://", 1)[0].lower()
        if scheme not in ("http", "https"):
            raise ConfigurationError(
                f"openapi must be a file path or an http(s) URL, not a {scheme}:// URL"
            )
        parse_base_url(source.split("?", 1)[0].split("#", 1)[0])  # a sane URL, no credentials
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise ConfigurationError("openapi must be a file path or an http(s) URL")
    path = Path(source).expanduser()
    if not path.is_file():
        raise ConfigurationError(
            f"OpenAPI file not found: {path}; pass an existing .json/.yaml file or an http(s) URL"
        )
    return path


def _check_query(query: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if query is None:
        return None
    if not isinstance(query, Mapping):
        raise UnsafeQueryError("bad_query", "query must be an object of parameter names to values")
    params: dict[str, Any] = {}
    for key, value in query.items():
        if value is None:
            continue
        if not isinstance(key, str) or not key:
            raise UnsafeQueryError("bad_query", "query parameter names must be non-empty strings")
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, (dict, list)) for v in values):
            raise UnsafeQueryError(
                "bad_query",
                f"query parameter {key!r} must be a string, number, boolean or a list of them",
            )
        params[key] = [_query_text(v) for v in values if v is not None]
    if len(urlencode(params, doseq=True)) > _MAX_QUERY_CHARS:
        raise UnsafeQueryError(
            "query_too_large",
            f"the query string is over {_MAX_QUERY_CHARS} characters; ask for less",
        )
    return params


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion from sync code, even where an event loop already runs
    (a notebook cell): then it runs on a fresh loop in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_await(factory))
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="relay-http")
    try:
        return pool.submit(asyncio.run, _await(factory)).result()
    finally:
        pool.shutdown(wait=False)


async def _await(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()
