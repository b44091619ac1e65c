"""Keep secrets out of anything relay_nb writes: recordings, logs, prompts, outputs.

Secrets reach relay_nb as environment variables (API keys, tokens, database passwords) and
inside connection URLs. Rather than trusting every writer to remember them, writers pass
their text or JSON through :func:`redact`, which replaces every known secret value with
``[REDACTED]``. Values shorter than 8 characters are not treated as secrets: replacing
"1" or "true" everywhere would corrupt data without protecting anything.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple
from urllib.parse import unquote, unquote_plus, urlsplit

__all__ = [
    "REDACTED",
    "SECRET_ENV_PATTERN",
    "SECRET_OPTION_PATTERN",
    "Secret",
    "SecretPatterns",
    "is_secret_name",
    "is_variable_name",
    "known_secrets",
    "option_secrets",
    "redact",
    "redact_url",
    "secret_patterns",
    "register_secret",
    "url_secrets",
]

REDACTED = "[REDACTED]"
SECRET_ENV_PATTERN = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|AUTH|COOKIE)"
    r"(?:_|$)",
    re.IGNORECASE,
)
"""Whole name segments only: ``SHOP_DB_PASSWORD`` and ``API_KEY`` are secrets,
``KEYBOARD_LAYOUT`` is not."""
# Names that match by segment but hold no secret: the working directory, sockets, buses.
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
_NOT_SECRET_SUFFIXES = ("_SOCK", "_BUS_ADDRESS", "_SOCKET")
_MIN_SECRET_LEN = 8
_extra_secrets: set[str] = set()


def register_secret(value: str) -> None:
    """Add a secret that did not come from the environment (e.g. a key passed to a constructor)."""
    if value and len(value) >= _MIN_SECRET_LEN:
        _extra_secrets.add(value)


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Does an environment variable of this name hold a credential? (Cached: every result
    the connectors build asks it of every variable.)"""
    upper = name.upper()
    if upper in _NOT_SECRET_NAMES or upper.endswith(_NOT_SECRET_SUFFIXES):
        return False
    return bool(SECRET_ENV_PATTERN.search(upper))


def known_secrets(extra: Iterable[str] = ()) -> list[str]:
    """Secret values from secret-named env vars, registered secrets and ``extra``; longest first."""
    found = set(_environment_secrets())
    found |= _extra_secrets
    found |= set(extra)
    return sorted((s for s in found if len(s) >= _MIN_SECRET_LEN), key=len, reverse=True)


_env_seen: tuple[dict[Any, Any] | None, tuple[str, ...]] = (None, ())


def _environment_secrets() -> tuple[str, ...]:
    """The values of secret-named environment variables, read again whenever the environment
    changed. Every result, event and log line asks (several times a question); walking
    ``os.environ`` decodes each name in Python (~25 µs), while comparing its underlying dict
    with the copy taken at the last walk is one C-level comparison."""
    global _env_seen
    data = getattr(os.environ, "_data", None)  # CPython's dict behind os.environ
    seen, secrets = _env_seen
    if data is not None and seen is not None and data == seen:
        return secrets
    # the copy first: a variable set while the names are walked differs from it next time
    copy = dict(data) if isinstance(data, dict) else None
    values = (os.environ.get(name) for name in list(os.environ) if is_secret_name(name))
    secrets = tuple(value for value in values if value is not None)
    _env_seen = (copy, secrets)
    return secrets


def redact(value: Any, extra: Iterable[str] = ()) -> Any:
    """Return ``value`` (str, bytes, or a dict/list/tuple nesting of them, keys included)
    with every known secret replaced, also where JSON escaped it (a secret holding a quote
    or a backslash, inside JSON text)."""
    patterns = secret_patterns(extra)
    return value if patterns is None else patterns.redact(value)


class SecretPatterns(NamedTuple):
    """Every form of every known secret as one compiled alternation, for text and bytes."""

    text: re.Pattern[str]
    data: re.Pattern[bytes]
    longest: int
    """The longest form, in characters: how far a cut may reach into a secret."""

    def redact(self, value: Any) -> Any:
        """``value`` with every match replaced; containers walked, keys included."""
        if isinstance(value, str):
            return self.text.sub(REDACTED, value)
        if isinstance(value, bytes | bytearray | memoryview):
            raw = bytes(value)
            return self.data.sub(_REDACTED_BYTES, raw) if self.data.search(raw) else value
        if isinstance(value, dict):
            return {self.redact(k): self.redact(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.redact(v) for v in value)
        return value


def secret_patterns(extra: Iterable[str] = ()) -> SecretPatterns | None:
    """The known secrets as :class:`SecretPatterns`, or ``None`` when there is none: one
    regex pass per value instead of one substring test per secret. Cached per set."""
    secrets = known_secrets(extra)
    return _compiled(tuple(secrets)) if secrets else None


@lru_cache(maxsize=16)
def _compiled(secrets: tuple[str, ...]) -> SecretPatterns:
    forms = {form for secret in secrets for form in _forms(secret)}
    ordered = sorted(forms, key=len, reverse=True)  # a form containing another wins
    text = re.compile("|".join(re.escape(form) for form in ordered))
    data = re.compile(
        b"|".join(re.escape(form.encode("utf-8", "surrogatepass")) for form in ordered)
    )
    return SecretPatterns(text, data, max(len(form) for form in ordered))


def _forms(secret: str) -> set[str]:
    """How a secret may be written in text relay_nb shows: as is, and JSON-escaped (with and
    without non-ASCII escapes), which changes a secret holding a quote, a backslash, a
    control or a non-ASCII character."""
    return {secret, *(json.dumps(secret, ensure_ascii=flag)[1:-1] for flag in (False, True))}


_REDACTED_BYTES = REDACTED.encode()


def redact_url(url: str) -> str:
    """A connection URL with its password, and any secret-looking query option
    (``?password=``, ``api_key=``, ``token=``…), replaced: fit to print or log."""
    # edited as text: urlsplit().geturl() would also "normalise" sqlite:////abs/path
    parts = urlsplit(url)
    if parts.password is not None:
        netloc = parts.netloc.replace(f":{parts.password}@", f":{REDACTED}@", 1)
        url = url.replace(parts.netloc, netloc, 1)
    head, mark, query = url.partition("?")
    if not mark:
        return url
    fragment = ""
    if "#" in query:
        query, fragment = query.split("#", 1)
        fragment = "#" + fragment
    options = []
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if not option_secrets(key, value):
            options.append(pair)
        elif SECRET_OPTION_PATTERN.search(unquote_plus(key)):
            options.append(f"{key}={REDACTED}")
        else:
            options.append(f"{key}=" + _PROPERTY.sub(_redact_property, value))
    return head + "?" + "&".join(options) + fragment


def url_secrets(url: str) -> list[str]:
    """The URL's password and the secrets of its options (:func:`option_secrets`), as
    written and decoded: what :func:`register_secret` must learn before the URL's owner can
    fail on it."""
    parts = urlsplit(url)
    found: list[str] = []
    if parts.password:
        found += [parts.password, unquote(parts.password)]
    for pair in parts.query.split("&"):
        key, _, value = pair.partition("=")
        for secret in option_secrets(key, value):
            found += [secret, unquote(secret), unquote_plus(secret)]
    return list(dict.fromkeys(found))


def option_secrets(key: str, value: str) -> list[str]:
    """The secrets one URL query option carries, as written: the whole value when the
    option's name looks secret (``password=``, ``api_key=``), else the values of the
    secret-named items of a ``NAME:VALUE,…`` list — MongoDB's
    ``authMechanismProperties=AWS_SESSION_TOKEN:…`` holds a credential under a harmless name.
    """
    if not value:
        return []
    if SECRET_OPTION_PATTERN.search(unquote_plus(key)):
        return [value]
    if not _has_property(value):
        return []
    return [match["value"] for match in _PROPERTY.finditer(value) if _is_secret_property(match)]


# one ``NAME:VALUE`` item of a comma-separated option value; ``:`` and ``,`` may be
# percent-encoded (%3A, %2C), so they are matched in both forms
_PROPERTY = re.compile(
    r"(?P<name>[^,:%]+(?:%(?!2C|3A)[^,:%]*)*)(?P<sep>:|%3A)(?P<value>(?:[^,%]|%(?!2C))*)",
    re.IGNORECASE,
)


def _has_property(value: str) -> bool:
    """Whether ``value`` has a ``NAME:VALUE`` item at all: without a separator the pattern
    would try every start and fail each time (quadratic in a long option value)."""
    return ":" in value or "%3a" in value.lower()


def _is_secret_property(match: re.Match[str]) -> bool:
    return bool(match["value"]) and bool(SECRET_OPTION_PATTERN.search(unquote_plus(match["name"])))


def _redact_property(match: re.Match[str]) -> str:
    if _is_secret_property(match):
        return f"{match['name']}{match['sep']}{REDACTED}"
    return match[0]


SECRET_OPTION_PATTERN = re.compile(r"pass|pwd|token|secret|key|credential|signature", re.IGNORECASE)
"""URL query options whose values are secrets (``?password=``, ``api_key=``, ``sig…``)."""


class Secret:
    """Holds a credential so no ``repr``, ``vars()`` dump or traceback local shows it;
    ``reveal()`` is the one place it is read."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__


_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_TOKEN_PREFIX = re.compile(
    r"gh[oprsu]_|github_pat_|glpat|xox[a-z]_?|(?:sk|rk|pk)_(?:live|test)_|hf_|npm_|shpat_"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}$"
)
"""Tokens spelled like variable names: GitHub, GitLab, Slack, Stripe, Hugging Face, npm,
Shopify, AWS access key ids."""
_MIN_TOKEN_LEN = 20


def is_variable_name(value: object) -> bool:
    """Whether ``value`` can be an environment variable's name rather than a value: a name
    (``GITHUB_TOKEN``), and not a token that happens to be spelled like one (``ghp_…``, a
    long mix of upper case, lower case and digits). Where a name is expected, anything else
    is treated as a value that may be a secret, and never quoted."""
    if not isinstance(value, str) or not _VARIABLE_NAME.fullmatch(value):
        return False
    if _TOKEN_PREFIX.match(value):
        return False
    mixed = (
        any(c.islower() for c in value)
        and any(c.isupper() for c in value)
        and any(c.isdigit() for c in value)
    )
    return not (mixed and len(value) >= _MIN_TOKEN_LEN)
