"""The path guard as pure functions: the corpus, the base URL, the final-URL check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from relay_nb.connectors.http.paths import (
    MAX_PATH_CHARS,
    PATH_RULES,
    BaseURL,
    check_path,
    check_resolved,
    parse_base_url,
)
from relay_nb.errors import ConfigurationError, UnsafeQueryError
from relay_nb.redaction import redact

CORPUS = yaml.safe_load(
    (Path(__file__).parents[1] / "corpus" / "http_paths.yaml").read_text(encoding="utf-8")
)
REFUSED: list[dict[str, Any]] = CORPUS["refused"]
ALLOWED: list[dict[str, Any]] = CORPUS["allowed"]
FOREIGN = "127.0.0.1:9"  # the pure tests need a host:port; the live tests use a real one
BASE = parse_base_url("http://api.test:8080/v1")
# rules the corpus cannot express as one literal path; each has its own test below
_NOT_IN_CORPUS = {"not_a_path", "path_too_long", "outside_base"}


def _path(entry: dict[str, Any]) -> str:
    return entry["path"].replace("{foreign}", FOREIGN)


def refusal(path: object) -> UnsafeQueryError:
    with pytest.raises(UnsafeQueryError) as info:
        check_path(path)
    return info.value


def test_corpus_is_large_well_formed_and_covers_every_rule() -> None:
    assert len(REFUSED) >= 100 and len(ALLOWED) >= 20
    ids = [e["id"] for e in REFUSED + ALLOWED]
    assert len(ids) == len(set(ids)), "duplicate ids"
    assert all(set(e) == {"id", "path", "rule"} for e in REFUSED)
    assert all(set(e) == {"id", "path", "sent"} for e in ALLOWED)
    assert {e["rule"] for e in REFUSED} == PATH_RULES - _NOT_IN_CORPUS
    assert sum("{foreign}" in e["path"] for e in REFUSED) >= 20


@pytest.mark.parametrize("entry", REFUSED, ids=[e["id"] for e in REFUSED])
def test_refused_payload_names_its_rule(entry: dict[str, Any]) -> None:
    error = refusal(_path(entry))
    assert error.rule == entry["rule"], error.message
    assert 20 < len(error.message) < 200
    assert _path(entry) not in error.message or len(_path(entry)) < 3  # never echoes payloads


@pytest.mark.parametrize("entry", ALLOWED, ids=[e["id"] for e in ALLOWED])
def test_allowed_path_joins_under_the_base(entry: dict[str, Any]) -> None:
    relative = check_path(entry["path"])
    url = httpx.URL(BASE.url_for(relative))
    assert url.raw_path.decode() == entry["sent"]
    check_resolved(BASE, str(url))  # the final URL passes the defence-in-depth check too


def test_non_strings_and_overlong_paths_are_refused() -> None:
    assert refusal(None).rule == "not_a_path"
    assert refusal(["orders"]).rule == "not_a_path"
    assert refusal("a/" * (MAX_PATH_CHARS // 2 + 1)).rule == "path_too_long"
    assert check_path("a/" * (MAX_PATH_CHARS // 2 - 1)).startswith("a/a/")


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.test:8080/v1/orders",  # another host
        "https://api.test:8080/v1/orders",  # another scheme
        "http://api.test:8081/v1/orders",  # another port
        "http://api.test/v1/orders",  # default port 80 is not 8080
        "http://api.test:8080/admin",  # outside the base path
        "http://api.test:8080/v10/orders",  # a prefix of the string, not of the path
        "http://api.test:8080/",
        "http://api.test:8080/v1/%2e%2e/admin",  # encoded traversal after the base
        "http://api.test:8080/v1/..%2fadmin",
        "http://user:pw@api.test:8080/v1/orders",  # credentials in the URL
        "http://api.test:8080/v1/orders#x",
        "not a url",
        "http://api.test:99999/v1",
    ],
)
def test_resolved_urls_outside_the_base_are_refused(url: str) -> None:
    with pytest.raises(UnsafeQueryError) as info:
        check_resolved(BASE, url)
    assert info.value.rule == "outside_base"


@pytest.mark.parametrize(
    "url",
    [
        "http://api.test:8080/v1",
        "http://api.test:8080/v1/",
        "http://API.test:8080/v1/orders?status=paid",
        "http://api.test:8080/v1/orders/42?x=%2e%2e",  # the query string is data
    ],
)
def test_resolved_urls_under_the_base_pass(url: str) -> None:
    check_resolved(BASE, url)


def test_root_base_url_accepts_any_guarded_path() -> None:
    root = parse_base_url("https://API.Example.com/")
    assert (root.path, root.port, root.host, str(root)) == (
        "",
        443,
        "api.example.com",
        "https://api.example.com",
    )
    assert root.url_for(check_path("")) == "https://api.example.com/"
    assert root.url_for(check_path("/orders")) == "https://api.example.com/orders"
    check_resolved(root, "https://api.example.com/anything/here")
    with pytest.raises(UnsafeQueryError):
        check_resolved(root, "https://api.example.com:444/x")


def test_base_url_keeps_its_port_and_brackets_ipv6() -> None:
    base = parse_base_url("http://[::1]:8000/api/v2/")
    assert base == BaseURL(scheme="http", host="::1", port=8000, path="/api/v2")
    assert str(base) == "http://[::1]:8000/api/v2"
    check_resolved(base, "http://[::1]:8000/api/v2/items")


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://files.example.com/v1", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("api.example.com/v1", "http:// or https://"),
        ("https:///v1", "no host"),
        ("https://api.example.com/v1?key=1", "query string"),
        ("https://api.example.com/v1#top", "fragment"),
        ("https://api.example.com/v1/../admin", "unusable path"),
        ("https://api.example.com/v1/%2e%2e", "unusable path"),
        ("https://api.example.com//v1", "unusable path"),
        ("https://api.example.com/v 1", "whitespace"),
        ("https://api.example.com:port/v1", "not a valid URL"),
        ("", "http(s) URL"),
    ],
)
def test_bad_base_urls_say_how_to_fix_them(url: str, words: str) -> None:
    with pytest.raises(ConfigurationError, match=None) as info:
        parse_base_url(url)
    assert words in str(info.value)


def test_credentials_in_the_base_url_are_refused_and_never_echoed() -> None:
    password = "base-url-password-5521"
    with pytest.raises(ConfigurationError) as info:
        parse_base_url(f"https://ada:{password}@api.example.com/v1")
    assert password not in str(info.value) and "auth=HTTPAuth" in str(info.value)
    assert redact(f"leaked {password}") == "leaked [REDACTED]"  # registered as a secret
