"""Auth from environment variables, inline secrets with a warning, and secrets kept out of
everything the model or the analyst sees — checked against what the real server received."""

from __future__ import annotations

import base64
import warnings
from typing import Any

import pytest
from http_live_server import LiveServer, start_server

from relay_nb.connectors.http import HTTPAuth, HTTPConnector, InlineSecretWarning
from relay_nb.errors import ConfigurationError, QueryExecutionError

TOKEN = "tok-live-5f2c9a81e7"
PASSWORD = "pw-9d8c7b6a5e4f"


def _everything_shown(connector: HTTPConnector) -> str:
    """All text a model or a notebook could see about the connector itself."""
    specs = [tool.spec() for tool in connector.tools()]
    return "\n".join([connector.prompt_context(), repr(connector), str(specs), connector.target])


async def _echo(connector: HTTPConnector) -> tuple[Any, str]:
    (tool,) = connector.tools()
    result = await tool.run({"path": "/echo-headers"})
    assert not result.is_error, result.content
    return result.artifact, result.content


async def test_bearer_token_from_env_is_sent_and_redacted_from_the_echo(
    api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_API_TOKEN", TOKEN)
    shop = HTTPConnector("shop", api.base, auth={"type": "bearer", "token_env": "SHOP_API_TOKEN"})
    result, preview = await _echo(shop)
    assert api.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert result.df.loc[0, "authorization"] == "Bearer [REDACTED]"
    assert TOKEN not in preview and "Bearer [REDACTED]" in preview
    assert TOKEN not in _everything_shown(shop) and TOKEN not in repr(shop.auth)


async def test_basic_auth_from_env_sends_the_encoded_pair_and_redacts_it(
    api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_USER", "ada")
    monkeypatch.setenv("SHOP_PASSWORD", PASSWORD)
    auth = HTTPAuth(type="basic", username_env="SHOP_USER", password_env="SHOP_PASSWORD")
    shop = HTTPConnector("shop", api.base, auth=auth)
    result, preview = await _echo(shop)
    encoded = base64.b64encode(f"ada:{PASSWORD}".encode()).decode()
    assert api.requests[0].headers["authorization"] == f"Basic {encoded}"
    assert encoded not in preview and encoded not in result.df.to_csv()
    assert PASSWORD not in _everything_shown(shop)


async def test_custom_header_auth_and_extra_headers_are_sent(
    api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_KEY", TOKEN)
    shop = HTTPConnector(
        "shop",
        api.base,
        auth={"type": "header", "header": "X-API-Key", "token_env": "SHOP_KEY"},
        headers={"X-Tenant": "acme", "apikey": "anon-key-31415926535"},
    )
    result, preview = await _echo(shop)
    received = api.requests[0].headers
    assert received["x-api-key"] == TOKEN and received["x-tenant"] == "acme"
    assert received["apikey"] == "anon-key-31415926535"
    assert "authorization" not in received
    # the credential-like extra header is a secret too; the tenant name is not
    assert result.df.loc[0, "apikey"] == "[REDACTED]" and result.df.loc[0, "x-tenant"] == "acme"
    assert TOKEN not in preview and "anon-key-31415926535" not in _everything_shown(shop)


def test_config_file_spelling_is_accepted(monkeypatch: pytest.MonkeyPatch, api: LiveServer) -> None:
    monkeypatch.setenv("SHOP_API_TOKEN", TOKEN)
    shop = HTTPConnector("shop", api.base, auth={"type": "bearer", "tokenEnv": "SHOP_API_TOKEN"})
    assert shop.auth == HTTPAuth(type="bearer", token_env="SHOP_API_TOKEN")


@pytest.mark.parametrize(
    ("auth", "variable"),
    [
        ({"type": "bearer", "token_env": "RELAY_TEST_MISSING_TOKEN"}, "RELAY_TEST_MISSING_TOKEN"),
        (
            {"type": "basic", "username": "ada", "password_env": "RELAY_TEST_MISSING_PW"},
            "RELAY_TEST_MISSING_PW",
        ),
        (
            {"type": "header", "header": "X-Key", "token_env": "RELAY_TEST_MISSING_KEY"},
            "RELAY_TEST_MISSING_KEY",
        ),
    ],
)
def test_missing_env_var_fails_at_construction_naming_it(
    auth: dict[str, Any], variable: str, api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ConfigurationError) as info:
        HTTPConnector("shop", api.base, auth=auth)
    message = str(info.value)
    assert variable in message and "is not set" in message and "os.environ" in message
    monkeypatch.setenv(variable, "")
    with pytest.raises(ConfigurationError, match="is empty"):
        HTTPConnector("shop", api.base, auth=auth)
    assert api.requests == []


async def test_inline_secrets_work_but_warn_without_showing_them(api: LiveServer) -> None:
    with pytest.warns(InlineSecretWarning) as caught:
        shop = HTTPConnector("shop", api.base, auth={"type": "bearer", "token": TOKEN})
    assert len(caught) == 1 and "token_env" in str(caught[0].message)
    assert TOKEN not in str(caught[0].message) and caught[0].filename == __file__
    _, preview = await _echo(shop)
    assert api.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in preview and TOKEN not in _everything_shown(shop)
    assert TOKEN not in repr(HTTPAuth(type="bearer", token=TOKEN))


def test_inline_password_warns_but_inline_user_name_does_not(
    api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_PASSWORD", PASSWORD)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HTTPConnector(
            "shop",
            api.base,
            auth={"type": "basic", "username": "ada", "password_env": "SHOP_PASSWORD"},
        )
    with pytest.warns(InlineSecretWarning, match="password_env"):
        HTTPConnector(
            "shop", api.base, auth={"type": "basic", "username": "ada", "password": PASSWORD}
        )


async def test_credentials_echoed_in_an_error_never_reach_the_model(
    api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_API_TOKEN", TOKEN)
    shop = HTTPConnector("shop", api.base, auth={"type": "bearer", "token_env": "SHOP_API_TOKEN"})
    (tool,) = shop.tools()
    result = await tool.run({"path": "/echo-headers-error"})
    assert result.is_error and "HTTP 401" in result.content and "credentials" in result.content
    assert TOKEN not in result.content and "[REDACTED]" in result.content
    with pytest.raises(QueryExecutionError) as info:
        await shop.acall("GET", "/echo-headers-error")
    assert TOKEN not in str(info.value)


@pytest.mark.parametrize(
    ("auth", "words"),
    [
        ({"type": "bearer"}, "exactly one of token_env"),
        ({"type": "bearer", "token_env": "A", "token": "b" * 12}, "exactly one of token_env"),
        ({"type": "header", "token_env": "A"}, "header='<Header-Name>'"),
        ({"type": "header", "header": "Host", "token_env": "A"}, "cannot be overridden"),
        ({"type": "header", "header": "bad header", "token_env": "A"}, "header='<Header-Name>'"),
        ({"type": "bearer", "token_env": "A", "header": "X-Key"}, "only for type='header'"),
        ({"type": "basic", "token_env": "A"}, "exactly one of username_env"),
        ({"type": "basic", "username": "u", "password_env": "P", "token_env": "A"}, "token_env"),
        ({"type": "bearer", "token_env": "A", "username": "u"}, "cannot be used"),
        ({"type": "bearer", "token_env": "A", "tokn": "x"}, "unknown field"),
        ({"type": "oauth", "token_env": "A"}, "auth.type"),
        ({"type": "bearer", "token_env": "sk-live-0123456789abcdef"}, "name of an environment"),
        ("Bearer abc", "HTTPAuth(...)"),
    ],
)
def test_bad_auth_specs_say_how_to_fix_them(auth: Any, words: str, api: LiveServer) -> None:
    with pytest.raises(ConfigurationError) as info:
        HTTPConnector("shop", api.base, auth=auth)
    assert words in str(info.value)
    assert "sk-live-0123456789abcdef" not in str(info.value)


@pytest.mark.parametrize(
    ("headers", "words"),
    [
        ({"Host": "evil.example"}, "cannot be overridden"),
        ({"Content-Length": "0"}, "cannot be overridden"),
        ({"X-Note": "a\r\nInjected: 1"}, "one-line"),
        ({"X Bad": "1"}, "not valid"),
        ({"X-Tenant\n": "a"}, "not valid"),  # `$` in a pattern matches before a final \n
        ({"X-Tenant": "Zürich"}, "must be ASCII"),  # httpx would fail every call instead
        ({"X-Count": 3}, "one-line string"),
        (["X-Tenant", "acme"], "dict"),
    ],
)
def test_bad_extra_headers_are_refused(headers: Any, words: str, api: LiveServer) -> None:
    with pytest.raises(ConfigurationError, match=None) as info:
        HTTPConnector("shop", api.base, headers=headers)
    assert words in str(info.value)


def test_extra_headers_may_not_fight_the_auth_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_API_TOKEN", TOKEN)
    with pytest.raises(ConfigurationError, match="authorization, which auth= also sets"):
        HTTPConnector(
            "shop",
            "http://127.0.0.1:9/v1",
            auth={"type": "bearer", "token_env": "SHOP_API_TOKEN"},
            headers={"authorization": "Bearer other-token-123"},
        )


def test_openapi_url_on_the_api_origin_is_fetched_with_the_credentials(
    api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPEC_TOKEN", "spec-token-1234567")
    shop = HTTPConnector(
        "shop",
        api.base,
        auth={"type": "bearer", "token_env": "SPEC_TOKEN"},
        headers={"X-Tenant": "acme"},
        openapi=api.url + "/private/openapi.json",
    )
    assert "GET /orders — List orders" in shop.prompt_context()
    (request,) = api.requests
    assert request.headers["authorization"] == "Bearer spec-token-1234567"
    assert request.headers["x-tenant"] == "acme"


def test_openapi_url_on_another_origin_gets_no_credentials(
    api: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_API_TOKEN", TOKEN)
    docs = start_server()  # a third server: the API's documentation host
    docs.foreign_url = "http://127.0.0.1:9"
    try:
        shop = HTTPConnector(
            "shop",
            api.base,
            auth={"type": "bearer", "token_env": "SHOP_API_TOKEN"},
            headers={"apikey": "anon-key-31415926535"},
            openapi=docs.url + "/openapi.json",
        )
        assert "GET /orders — List orders" in shop.prompt_context()
        (request,) = docs.requests
        assert "authorization" not in request.headers and "apikey" not in request.headers
        assert api.requests == []
    finally:
        docs.server.shutdown()
        docs.server.server_close()
