"""Secrets from the environment, URLs and constructors never survive redact()."""

from __future__ import annotations

import pytest

from relay_nb.connectors.base import check_connector_id
from relay_nb.errors import ConfigurationError
from relay_nb.redaction import (
    REDACTED,
    is_variable_name,
    known_secrets,
    redact,
    redact_url,
    register_secret,
)


def test_secret_named_env_vars_are_redacted_in_nested_json(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdefgh12345")
    monkeypatch.setenv("HOME_DIR_NAME", "not-a-secret-value")
    data = {"a": ["x tok-abcdefgh12345 y", {"tok-abcdefgh12345": 1}], "b": 3}
    assert redact(data) == {"a": [f"x {REDACTED} y", {REDACTED: 1}], "b": 3}
    assert redact("not-a-secret-value") == "not-a-secret-value"


def test_short_values_are_not_treated_as_secrets(monkeypatch):
    monkeypatch.setenv("DEBUG_TOKEN", "1")
    assert "1" not in known_secrets()
    assert redact("1 + 1") == "1 + 1"


def test_registered_secrets_and_extra(monkeypatch):
    register_secret("constructor-key-987654")
    assert redact("k=constructor-key-987654") == f"k={REDACTED}"
    assert redact("x=explicit-secret-1", extra=["explicit-secret-1"]) == f"x={REDACTED}"


def test_longer_secrets_win_over_their_prefixes(monkeypatch):
    monkeypatch.setenv("A_KEY", "abcdefgh")
    monkeypatch.setenv("B_KEY", "abcdefgh-longer")
    assert redact("abcdefgh-longer") == REDACTED


def test_redact_url_hides_only_the_password():
    url = "postgresql+psycopg://ro:s3cr3t-pass@127.0.0.1:5432/shop?sslmode=disable"
    assert (
        redact_url(url) == f"postgresql+psycopg://ro:{REDACTED}@127.0.0.1:5432/shop?sslmode=disable"
    )
    assert redact_url("sqlite:///shop.db") == "sqlite:///shop.db"


@pytest.mark.parametrize("bad", ["Shop", "1shop", "shop-db", "", "a" * 41, "shop db"])
def test_connector_ids_must_be_snake_case(bad):
    with pytest.raises(ConfigurationError, match="snake_case"):
        check_connector_id(bad)


def test_good_connector_id():
    assert check_connector_id("sales_2026") == "sales_2026"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("ANTHROPIC_API_KEY", True),
        ("SHOP_DB_PASSWORD", True),
        ("GITHUB_TOKEN", True),
        ("DB_PWD", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("PWD", False),
        ("OLDPWD", False),
        ("SSH_AUTH_SOCK", False),
        ("DBUS_SESSION_BUS_ADDRESS", False),
        ("KEYBOARD_LAYOUT", False),
        ("XAUTHORITY", False),
        ("MONKEY_NAME", False),
    ],
)
def test_secret_names_match_whole_segments(name, secret):
    from relay_nb.redaction import is_secret_name

    assert is_secret_name(name) is secret


def test_working_directory_paths_survive(monkeypatch, tmp_path):
    monkeypatch.setenv("PWD", str(tmp_path))
    text = f"rows from {tmp_path}/sales.csv"
    assert redact(text) == text


@pytest.mark.parametrize(
    ("value", "is_name"),
    [
        ("GITHUB_TOKEN", True),
        ("my_var_2", True),
        ("_X", True),
        ("2FAST", False),
        ("with-dash", False),
        ("", False),
        ("ghp_abcdefABCDEF1234567890abcdefABCDEF12", False),
        ("AKIAABCDEFGHIJKLMNOP", False),
        ("sk_live_abc", False),
        ("aB3" * 7, False),  # a long mix of cases and digits reads as a token
        ("ShortMixed1", True),
    ],
)
def test_is_variable_name_tells_names_from_tokens(value: str, is_name: bool) -> None:
    assert is_variable_name(value) is is_name


def test_a_changed_environment_value_is_redacted_at_once(monkeypatch) -> None:
    """The environment's secrets are cached between reads; any change to it is seen."""
    from relay_nb.redaction import REDACTED, redact

    monkeypatch.setenv("RELAY_TEST_CACHE_TOKEN", "first-value-123")
    assert redact("a first-value-123 b") == f"a {REDACTED} b"
    monkeypatch.setenv("RELAY_TEST_CACHE_TOKEN", "second-value-456")  # same name, same size
    assert redact("first-value-123 second-value-456") == f"first-value-123 {REDACTED}"
    monkeypatch.delenv("RELAY_TEST_CACHE_TOKEN")
    assert redact("second-value-456") == "second-value-456"


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abc123def", "a JSON Web Token"),
        ("AKIAIOSFODNN7EXAMPLE", "an AWS access key"),
        ("ghp_" + "a1" * 18, "a GitHub token"),
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "a Stripe key"),
        ("4111 1111 1111 1111", "a card number"),
        ("123-45-6789", "a social security number"),
        ("+1 (415) 555-2671", "a phone number"),
        ("JBSWY3DPEHPK3PXP", "a one-time-password seed"),
        ("postgres://user:pw@host/db", "a password in a URL"),
        ("-----BEGIN RSA PRIVATE KEY-----", "a private key"),
        ("xK9mQ2pL7vR4tW8zY1bN6cF3hJ5dG0sA", "a token"),
        # what categories hold: never taken for a credential
        ("delivered", None),
        ("2024-01-05", None),
        ("4111111111111112", None),  # fails the Luhn check
        ("550e8400-e29b-41d4-a716-446655440000", None),  # an id, not a token
        ("SKU-2024-ABCD-1234", None),
        ("ENGINEERINGDEPARTMENT", None),
        ("Northwind Roasters Ltd", None),
        ("https://example.com/path", None),
    ],
)
def test_secret_shapes(value: str, kind: str | None) -> None:
    from relay_nb.secret_shapes import secret_kind

    assert secret_kind(value) == kind
