"""Values that look like credentials or personal identifiers, whatever their column is called.

A column's name is not enough to know what it holds (``cvv2``, ``mfa_seed``,
``session_cookie``, ``notes`` holding pasted tokens): the value profile the model sees asks this
module about every value it would show, and a column with one such value shows none
(:mod:`relay_nb.sql.catalog.profile`). The shapes are the documented formats of the
credentials people leak most — the key prefixes their vendors publish (AWS, GitHub, GitLab,
Slack, Stripe, Google, OpenAI, Anthropic, SendGrid, npm), JSON Web Tokens, PEM private keys,
passwords in URLs, ``Bearer`` headers — as secret scanners (gitleaks, detect-secrets) match
them, plus card numbers that pass the Luhn check, US social security numbers, international
phone numbers, base32 one-time-password seeds, and long high-entropy tokens.

:func:`secret_kind` names the shape (``"a JSON Web Token"``) or returns None. It errs towards
saying yes: a withheld value costs the model an example; a shown one costs a credential.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = ["MAX_READ", "secret_kind"]

MAX_READ = 4096
"""Characters of one value read for a credential's shape."""

_PREFIXED: tuple[tuple[str, str], ...] = (
    ("a private key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY"),
    ("a JSON Web Token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ("an AWS access key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    ("a GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("a GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("a Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("a Stripe key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("a Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("an API key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),
    ("a SendGrid key", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    ("an npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("a password in a URL", r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@"),
    ("a bearer token", r"\b(?i:bearer)\s+[A-Za-z0-9._~+/=-]{12,}"),
)
"""Credentials with a published prefix or structure: ``(what it is, pattern)``."""
_COMPILED = tuple((kind, re.compile(pattern)) for kind, pattern in _PREFIXED)
_WORDS = re.compile(r"[A-Za-z ]+")
"""Letters and spaces only: what most category values are, and no shape but a bearer token's
can be made of them (each other needs a digit, or ``. - _ : / @``)."""
_CARD = re.compile(r"^(?:\d[ -]?){12,18}\d$")
_SSN = re.compile(r"^(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}$")
_PHONE = re.compile(r"^\+\d[\d ().-]{6,20}\d$")
_OTP_SEED = re.compile(r"^[A-Z2-7]{16,}={0,6}$")
_TOKEN = re.compile(r"^[A-Za-z0-9+/=_.~-]{24,}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")


def secret_kind(value: str) -> str | None:
    """What credential or identifier ``value`` looks like (``"a card number"``), or None.
    Only its first :data:`MAX_READ` characters are read: a profile shows at most 60 of a
    value, and a patterns' worst case grows with the square of what it reads."""
    text = value[:MAX_READ].strip()
    if len(text) < 8:
        return None
    if _WORDS.fullmatch(text) and "bearer" not in text.lower():
        return None  # the profile asks about every value: words are answered at once
    for kind, pattern in _COMPILED:
        if pattern.search(text):
            return kind
    if _CARD.match(text) and _luhn(re.sub(r"[ -]", "", text)):
        return "a card number"
    if _SSN.match(text):
        return "a social security number"
    if _PHONE.match(text) and 8 <= sum(c.isdigit() for c in text) <= 15:
        return "a phone number"
    if _OTP_SEED.match(text) and len(set(text)) >= 8 and any(c in "234567" for c in text):
        return "a one-time-password seed"
    if _TOKEN.match(text) and not _UUID.match(text) and _random_looking(text):
        return "a token"
    return None


def _luhn(digits: str) -> bool:
    """The check digit of payment card numbers (ISO/IEC 7812): not all one digit, and valid."""
    if len(set(digits)) == 1:
        return False
    total = 0
    for index, char in enumerate(reversed(digits)):
        digit = int(char)
        if index % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _random_looking(text: str) -> bool:
    """A long string whose characters look drawn at random: hex of 32+ characters, or
    letters of both cases and digits with at least 4 bits of entropy per character
    (English words and product codes stay well below)."""
    if re.fullmatch(r"[0-9a-f]{32,}|[0-9A-F]{32,}", text):
        return _entropy(text) >= 3.0
    classes = sum(
        (
            any(c.islower() for c in text),
            any(c.isupper() for c in text),
            any(c.isdigit() for c in text),
        )
    )
    return classes == 3 and _entropy(text) >= 4.0


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())
