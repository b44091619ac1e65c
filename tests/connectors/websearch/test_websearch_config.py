"""Construction errors: each names the problem and the fix, and none echoes a secret."""

from __future__ import annotations

import pytest
from websearch_fakes import KEY_ENVS

from relay_nb.connectors.websearch import WebSearchConnector
from relay_nb.errors import ConfigurationError


@pytest.mark.parametrize("provider_name", ["tavily", "brave", "serper"])
def test_missing_key_names_the_variable_and_how_to_set_it(provider_name: str) -> None:
    env = KEY_ENVS[provider_name]
    with pytest.raises(ConfigurationError) as caught:
        WebSearchConnector(provider=provider_name)  # type: ignore[arg-type]
    message = str(caught.value)
    assert f"environment variable {env}, which is not set" in message
    assert f'os.environ["{env}"] = "..."' in message
    assert f"export {env}=..." in message
    assert f"'web' ({provider_name})" in message


def test_blank_key_is_refused_like_a_missing_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "   ")
    with pytest.raises(ConfigurationError, match="TAVILY_API_KEY is set but empty"):
        WebSearchConnector()


def test_custom_key_variable_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_SEARCH_TOKEN", "brave-token-0123456789")
    web = WebSearchConnector(provider="brave", api_key_env="TEAM_SEARCH_TOKEN")
    assert web.api_key_env == "TEAM_SEARCH_TOKEN"
    with pytest.raises(ConfigurationError, match="OTHER_VAR, which is not set"):
        WebSearchConnector(provider="brave", api_key_env="OTHER_VAR")


def test_a_key_passed_as_api_key_env_is_refused_without_echoing_it() -> None:
    key = "tvly-dev-8f3a9c0d1e2b4a5f"
    with pytest.raises(ConfigurationError) as caught:
        WebSearchConnector(api_key_env=key)
    message = str(caught.value)
    assert "must be the *name* of an environment variable" in message
    assert "'TAVILY_API_KEY'" in message and key not in message


def test_a_variable_name_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="environment variable"):
        WebSearchConnector(api_key_env="TAVILY_API_KEY\n")


@pytest.mark.parametrize(
    "pasted", ["0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c", "BSAxK29dPq7LmN4RtY"]
)
def test_a_key_shaped_like_a_variable_name_is_not_echoed_either(pasted: str) -> None:
    """Serper keys are hex and Brave's alphanumeric: both are valid variable *names*."""
    with pytest.raises(ConfigurationError) as caught:
        WebSearchConnector(provider="serper", api_key_env=pasted)
    message = str(caught.value)
    assert "must be the *name* of an environment variable" in message
    assert "'SERPER_API_KEY'" in message and pasted not in message


def test_a_lower_case_variable_name_that_is_set_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("search_key", "serper-0123456789abcdef")
    assert (
        WebSearchConnector(provider="serper", api_key_env="search_key").api_key_env == "search_key"
    )


def test_unknown_provider_lists_the_three(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError) as caught:
        WebSearchConnector(provider="bing")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "unknown web search provider 'bing'; use one of 'tavily', 'brave', 'serper'"
    )


def test_provider_name_is_case_insensitive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPER_API_KEY", "serper-0123456789abcdef")
    assert WebSearchConnector(provider=" Serper ").provider == "serper"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("endpoint", "fragment"),
    [
        ("ftp://api.tavily.com/search", "is not an http(s) URL"),
        ("api.tavily.com/search", "is not an http(s) URL"),
        ("https:///search", "is not an http(s) URL"),
        ("http://search.internal.example/search", "uses plain http"),
        ("https://user:hunter2-password@proxy.example/search", "must not carry credentials"),
        (42, "must be an http(s) URL string"),
    ],
)
def test_bad_endpoints(monkeypatch: pytest.MonkeyPatch, endpoint: object, fragment: str) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-dev-0123456789")
    with pytest.raises(
        ConfigurationError, match=fragment.replace("(", r"\(").replace(")", r"\)")
    ) as e:
        WebSearchConnector(endpoint=endpoint)  # type: ignore[arg-type]
    assert "hunter2-password" not in str(e.value)


@pytest.mark.parametrize("endpoint", ["http://localhost:8080/search", "http://127.0.0.1:9/x"])
def test_plain_http_is_fine_on_loopback(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-dev-0123456789")
    assert WebSearchConnector(endpoint=endpoint).endpoint == endpoint


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"max_results": 0}, "max_results must be from 1 to 20"),
        ({"max_results": 21}, "max_results must be from 1 to 20"),
        ({"max_results": True}, "max_results must be an integer"),
        ({"max_results": "5"}, "max_results must be an integer"),
        ({"timeout_s": 0}, "timeout_s must be a positive number"),
        ({"timeout_s": -1.5}, "timeout_s must be a positive number"),
        ({"id": "Web Search"}, "must be snake_case"),
    ],
)
def test_bad_options(monkeypatch: pytest.MonkeyPatch, options: dict, fragment: str) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-dev-0123456789")
    with pytest.raises(ConfigurationError, match=fragment):
        WebSearchConnector(**options)


def test_bad_max_results_in_a_direct_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-dev-0123456789")
    web = WebSearchConnector(endpoint="http://127.0.0.1:9/search")
    with pytest.raises(ConfigurationError, match="max_results must be an integer"):
        web.search("anything", max_results="ten")  # type: ignore[arg-type]
