"""Fixtures for the web search connector tests; the fake provider APIs live in
``websearch_fakes.py`` (real sockets on 127.0.0.1, one wire format each)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from websearch_fakes import KEY_ENVS, PROVIDER_NAMES, FakeSearchAPI, make_key

from relay_nb.connectors.websearch import WebSearchConnector

# ------------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's real keys must never be used (or needed) by these tests."""
    for env in KEY_ENVS.values():
        monkeypatch.delenv(env, raising=False)


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], FakeSearchAPI]]:
    """``fake_api(provider)``: a running fake whose key is also in the provider's env var."""
    started: list[FakeSearchAPI] = []

    def start(provider: str) -> FakeSearchAPI:
        key = make_key(provider)
        monkeypatch.setenv(KEY_ENVS[provider], key)
        api = FakeSearchAPI(provider, key)
        started.append(api)
        return api

    yield start
    for api in started:
        api.close()


@pytest.fixture(params=PROVIDER_NAMES)
def provider(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def api(fake_api: Callable[[str], FakeSearchAPI], provider: str) -> FakeSearchAPI:
    return fake_api(provider)


@pytest.fixture
def web(api: FakeSearchAPI) -> WebSearchConnector:
    return WebSearchConnector(provider=api.provider, endpoint=api.endpoint, timeout_s=5)
