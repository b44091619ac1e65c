"""Fuzzing the HTTP connector's path guard (``relay_nb.connectors.http.paths``) and calls.

1. Valid relative paths are accepted; the URL built from them, with any query parameters,
   keeps the base URL's scheme, host and port, its path stays under the base path in every
   reading a server might apply (``http_strategies.server_views``), it passes the guard's
   own final-URL check, and the parameters arrive as sent — none can add another parameter,
   touch the path or smuggle a raw CR/LF into the request.
2. Paths mixed with traversal, encoded separators, schemes, ``//host``, userinfo, NUL, CR/LF
   and look-alike characters are refused with a rule from ``PATH_RULES`` — or, when accepted
   (a hostile-looking piece can be harmless data), every server reading of what would be
   sent still stays under the base path.
3. Through the real connector against a live local API: a random method string passes only
   if it is one of the connector's methods; a refused call sends nothing; an accepted one
   sends exactly one request, under ``/v1``, with the configured credentials untouched by any
   parameter (``Authorization``, ``Host`` …), and nothing ever reaches the foreign server.
   Headers are the analyst's alone, and none that could split or retarget a request passes.
4. The OpenAPI operation list shown to the model stays within its budget and accounts for
   every operation (shown, or counted in the closing line).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import httpx
import pytest
from fuzz_support import fuzz_settings, load_sibling
from http_strategies import hostile_paths, query_params, server_views, valid_paths
from hypothesis import example, given, note
from hypothesis import strategies as st

from relay_nb.connectors.http import HTTPConnector
from relay_nb.connectors.http.connector import _check_query
from relay_nb.connectors.http.openapi import Operation, Parameter
from relay_nb.connectors.http.operations import render_operations
from relay_nb.connectors.http.paths import PATH_RULES, check_path, check_resolved, parse_base_url
from relay_nb.errors import ConfigurationError, QueryExecutionError, UnsafeQueryError

BASES = st.sampled_from(
    [
        "http://api.test:8080/v1",
        "https://api.test/api/v2/",
        "http://[::1]:8000/base",
        "https://x.test",
    ]
)
TOKEN = "fuzz-token-0d6f2c91"
T = TypeVar("T")


def _outcome(call: Callable[[], T]) -> tuple[T | None, UnsafeQueryError | None]:
    """(the result, None) or (None, the refusal): both outcomes are legitimate here."""
    try:
        return call(), None
    except UnsafeQueryError as error:
        return None, error


def _under(base_path: str, path: str) -> bool:
    return not base_path or path == base_path or path.startswith(base_path + "/")


def _assert_stays_under_base(base_url: str, relative: str, params: Any) -> httpx.URL:
    base = parse_base_url(base_url)
    url = httpx.URL(base.url_for(relative), params=params or None)  # what fetch() requests
    assert (url.scheme, url.host, url.port or {"http": 80, "https": 443}[url.scheme]) == (
        base.scheme, base.host, base.port,
    )  # fmt: skip
    raw_path = url.raw_path.decode("ascii").split("?", 1)[0]
    note(f"sent path: {raw_path}")
    assert not re.search(r"[\x00-\x20\x7f]", url.raw_path.decode("ascii")), "raw control/space"
    for view in server_views(raw_path):
        assert _under(base.path, view), f"{raw_path!r} can be read as {view!r}"
    check_resolved(base, str(url))
    return url


# --------------------------------------------------------------------------------------------
# 1-2: the guard as pure functions


@fuzz_settings(200)
@given(base_url=BASES, path=valid_paths(), query=query_params())
@example(base_url="http://api.test:8080/v1", path="orders/a:b@c", query={"a=b&status": "x#y"})
def test_valid_paths_are_accepted_and_stay_under_the_base(
    base_url: str, path: str, query: dict[str, Any]
) -> None:
    relative = check_path(path)
    assert relative == path.removeprefix("/")
    params = _check_query(query)
    url = _assert_stays_under_base(base_url, relative, params)
    # every parameter arrives as itself: none adds, drops or renames another
    expected = [(k, v) for k, values in (params or {}).items() for v in values]
    assert parse_qsl(url.query.decode("ascii"), keep_blank_values=True) == expected
    # and the path is the same with or without them
    assert (
        url.raw_path.split(b"?")[0]
        == httpx.URL(parse_base_url(base_url).url_for(relative)).raw_path
    )


@fuzz_settings(400)
@given(base_url=BASES, path=hostile_paths())
@example(base_url="http://api.test:8080/v1", path="a/%252e%252e/%252e%252e/admin")
@example(base_url="http://api.test:8080/v1", path="..;/admin")
@example(base_url="http://api.test:8080/v1", path="\uff0e\uff0e/admin")
def test_hostile_paths_are_refused_or_stay_under_the_base(base_url: str, path: str) -> None:
    relative, refusal = _outcome(lambda: check_path(path))
    if refusal is not None:
        assert refusal.rule in PATH_RULES
        assert 20 < len(refusal.message) < 200
        return
    _assert_stays_under_base(base_url, relative, None)


# --------------------------------------------------------------------------------------------
# 3: the real connector against a live API


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Any, Any]]:
    live = load_sibling("connectors/http/http_live_server.py", "http_live_server")
    api, foreign = live.start_server(), live.start_server()
    api.foreign_url = foreign.url
    try:
        yield api, foreign
    finally:
        for state in (api, foreign):
            state.server.shutdown()
            state.server.server_close()


@pytest.fixture(scope="module")
def connector(servers: tuple[Any, Any]) -> Iterator[HTTPConnector]:
    api, _ = servers
    previous = os.environ.get("RELAY_FUZZ_API_TOKEN")
    os.environ["RELAY_FUZZ_API_TOKEN"] = TOKEN
    try:
        yield HTTPConnector(
            "shop", api.base, auth={"type": "bearer", "token_env": "RELAY_FUZZ_API_TOKEN"},
            methods=("GET", "POST"), timeout_s=5.0, max_response_bytes=50_000, row_limit=20,
        )  # fmt: skip
    finally:
        if previous is None:
            os.environ.pop("RELAY_FUZZ_API_TOKEN", None)
        else:
            os.environ["RELAY_FUZZ_API_TOKEN"] = previous


METHODS = st.sampled_from(
    ["GET", "get", " Get ", "POST", "post\n", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS",
     "TRACE", "CONNECT", "", "G\x00ET", "GET\r\nX-Evil: 1", "GET /admin HTTP/1.1\r\n", "GE T",
     "\uff27\uff25\uff34"]
)  # fmt: skip


@fuzz_settings(80)
@given(
    method=METHODS,
    path=st.one_of(valid_paths(), hostile_paths(), st.sampled_from(["orders", "/orders/2"])),
    query=query_params(),
)
@example(method="GET", path="orders", query={"Authorization": "Bearer stolen", "Host": "evil"})
def test_calls_reach_only_the_base_with_allowed_methods(
    method: str, path: str, query: dict[str, Any], servers: tuple[Any, Any],
    connector: HTTPConnector,
) -> None:  # fmt: skip
    api, foreign = servers
    api.clear()
    foreign.clear()
    verb = method.strip().upper()
    body = {"x": 1} if verb == "POST" else None

    def call() -> None:
        with contextlib.suppress(QueryExecutionError):  # most random paths are a 404
            connector.call(method, path, query, body)

    _, refusal = _outcome(call)
    if refusal is not None:
        assert refusal.rule in PATH_RULES | {"method_not_allowed", "bad_query", "query_too_large"}
        assert api.requests == [], "a refused call sent a request"
        if verb not in connector.methods:
            assert refusal.rule == "method_not_allowed"
    else:
        assert verb in connector.methods
        (request,) = api.requests
        note(f"received: {request.method} {request.path}")
        assert request.method == verb
        raw_path, _, raw_query = request.path.partition("?")
        for view in server_views(raw_path):
            assert _under("/v1", view), f"{raw_path!r} can be read as {view!r}"
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["host"] == api.hostport
        assert "x-evil" not in request.headers
        params = _check_query(query) or {}
        expected = [(k, v) for k, values in params.items() for v in values]
        assert parse_qsl(raw_query, keep_blank_values=True) == expected
    assert foreign.requests == []


_HEADER_TEXT = st.lists(
    # ASCII only: a non-ASCII value passes the connect-time check and then makes httpx raise
    # UnicodeEncodeError on every call (auth.check_extra_headers / fetch.py; reported)
    st.sampled_from(("X-Tenant", "Host", "host", "Content-Length", "a b", "x:y", "\r\n",
                     "\n", "\x00", "evil: 1", "Transfer-Encoding", "abc", "-", "\t")),
    min_size=1, max_size=3,
).map("".join)  # fmt: skip


@fuzz_settings(100)
@given(headers=st.dictionaries(_HEADER_TEXT, _HEADER_TEXT, max_size=3))
@example(headers={"X-Tenant\n": "x"})  # passes the connect-time check today: see below
def test_configured_headers_cannot_split_or_retarget_a_request(
    headers: dict[str, str], servers: tuple[Any, Any]
) -> None:
    """The analyst's extra headers (the model sets none): a header that could split the
    request (CR, LF, NUL) or retarget it (Host, Content-Length …) never reaches the wire.

    Most are refused when connecting. A name with a trailing newline still passes that check
    (auth._HEADER_NAME ends in ``$``, which matches before a final ``\n``); httpx then
    refuses to send it, so every call fails instead — asserted here as "nothing sent"."""
    api, foreign = servers
    try:
        connector = HTTPConnector("shop", api.base, headers=headers, timeout_s=5.0)
    except ConfigurationError:
        return
    api.clear()
    with contextlib.suppress(QueryExecutionError):
        connector.call("GET", "/echo-headers")
    for request in api.requests:
        assert request.headers["host"] == api.hostport
        for name, value in request.headers.items():
            assert not re.search(r"[\r\n\x00]", name + value), (name, value)
    for name, value in headers.items():
        if api.requests:  # it was sent: then it was a clean, non-derived header
            assert name.lower() not in ("host", "content-length", "transfer-encoding"), name
            assert not re.search(r"[\r\n\x00]", name + value), (name, value)
    assert foreign.requests == []


# --------------------------------------------------------------------------------------------
# 4: the operation list shown to the model


_WORDS = st.sampled_from(("orders", "customers", "list", "get", "refund", "stats", "é", "{id}"))
_OPERATIONS = st.lists(
    st.builds(
        lambda m, words, summary, params: Operation(
            method=m, path="/" + "/".join(words), summary=summary,
            parameters=tuple(Parameter(name=p, location="query") for p in params),
        ),
        st.sampled_from(("GET", "POST", "DELETE")), st.lists(_WORDS, min_size=1, max_size=3),
        st.text(max_size=30).map(lambda s: " ".join(s.split())),  # as openapi.summarise cleans
        st.lists(_WORDS, max_size=3),
    ),
    max_size=40,
)  # fmt: skip


@fuzz_settings(120)
@given(
    operations=_OPERATIONS,
    max_operations=st.integers(1, 50),
    max_chars=st.one_of(st.none(), st.integers(60, 3000)),
    question=st.one_of(st.none(), st.text(max_size=40)),
)
def test_the_operation_list_is_bounded_and_complete(
    operations: list[Operation], max_operations: int, max_chars: int | None, question: str | None
) -> None:
    rendered = render_operations(
        operations, max_operations=max_operations, max_chars=max_chars, question=question
    )
    lines = rendered.split("\n") if rendered else []
    note_line = lines[-1] if lines and "not shown" in lines[-1] else None
    shown = [line for line in lines if line is not note_line]
    assert len(shown) <= max_operations
    if max_chars is not None and note_line is not None:
        assert len(rendered) <= max_chars
    omitted = int(re.search(r"\((\d+) more", note_line).group(1)) if note_line else 0
    assert len(shown) + omitted == len(operations)
    for line in shown:  # every shown line is one operation, whole or without its parameters
        assert any(line.strip().startswith(op.label) for op in operations)
