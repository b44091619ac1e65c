"""Canary credentials and the scan that must find none of them in anything relay_nb wrote.

Every canary value carries the run's random ``marker`` (12 hex digits), so a hit is never a
coincidence, and any leak that keeps the marker — clipped, partly escaped, re-quoted by a
driver — is found even when it matches none of the listed encodings. Base64 hides the
marker, so each value is also searched base64-encoded at all three byte alignments (a
``Basic`` header, or the value inside a larger encoded blob), alone and as ``user:value``.

Secrets that do not carry the marker (the services' real test passwords) are searched in
the same encodings, raw and escaped.
"""

from __future__ import annotations

import base64
import html
import json
import os
import secrets
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, quote_plus, urlsplit

__all__ = ["Canaries", "Canary", "Evidence", "Leak", "find_leaks", "make_canaries"]

_CONTEXT_CHARS = 60
_MIN_BASE64_CORE = 12


@dataclass(frozen=True)
class Canary:
    """One secret: where it came from (``label``), its value, and the user it pairs with in
    a ``Basic`` credential or a URL, if any."""

    label: str
    value: str = field(repr=False)  # a failing test prints its locals; the label is enough
    user: str | None = None

    def needles(self) -> dict[str, bytes]:
        """Every form the value could be written in, by name of the encoding."""
        value = self.value
        forms = {
            "raw": value,
            "url-quoted": quote(value, safe=""),
            "url-quoted (/ kept)": quote(value),
            "form-encoded": quote_plus(value),
            "JSON-escaped": json.dumps(value)[1:-1],
            "JSON-in-JSON": json.dumps(json.dumps(value)[1:-1])[1:-1],
            "HTML-escaped": html.escape(value),
        }
        found = {name: text.encode() for name, text in forms.items()}
        pairs = [("", value)] + ([(f"{self.user}:", f"{self.user}:{value}")] if self.user else [])
        for prefix, text in pairs:
            data = text.encode()
            found[f"base64({prefix}value)"] = base64.b64encode(data)
            for offset in range(3):
                for kind, encode in (("base64", base64.b64encode), ("urlsafe-b64", _urlsafe)):
                    core = _base64_core(encode, data, offset)
                    if len(core) >= _MIN_BASE64_CORE:
                        found[f"{kind}({prefix}value) at offset {offset}"] = core
        unique: dict[bytes, str] = {}
        for name, needle in found.items():
            unique.setdefault(needle, name)  # one report per distinct form
        return {name: needle for needle, name in unique.items()}


def _urlsafe(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data)


def _base64_core(encode, data: bytes, offset: int) -> bytes:
    """The part of ``encode(b'?' * offset + data + …)`` that depends only on ``data``: the
    first and last 4-character groups mix in neighbouring bytes, so they are dropped."""
    encoded = encode(b"\0" * offset + data).rstrip(b"=")
    start = 4 if offset else 0
    whole_groups = (len(encoded) // 4) * 4
    end = whole_groups if whole_groups < len(encoded) else whole_groups - 4
    return encoded[start:end]


@dataclass(frozen=True)
class Canaries:
    """The run's canaries: ``env`` is what every run gets; ``url_only`` are secrets that
    reach relay_nb only inside a URL (no secret-named variable holds them)."""

    marker: str
    env: dict[str, str]
    canaries: tuple[Canary, ...]
    url_only: dict[str, str] = field(default_factory=dict)

    def with_extra(self, *extra: Canary) -> Canaries:
        return Canaries(self.marker, self.env, self.canaries + extra, self.url_only)

    def needles(self) -> list[tuple[Canary, str, bytes]]:
        marker = Canary("the run's canary marker", self.marker)
        found = [(marker, "marker", self.marker.encode())]
        # the marker alone, base64-encoded: a clipped base64 blob still gives it away
        for offset in range(3):
            for kind, encode in (("base64", base64.b64encode), ("urlsafe-b64", _urlsafe)):
                core = _base64_core(encode, self.marker.encode(), offset)
                if all(core != needle for _, _, needle in found):
                    found.append((marker, f"{kind}(marker) at offset {offset}", core))
        for canary in self.canaries:
            found += [(canary, name, needle) for name, needle in canary.needles().items()]
        return found


def make_canaries(*, pg_url: str | None, mongo_host: str) -> Canaries:
    """Fresh canaries for one test session.

    ``pg_url`` is the real read-only PostgreSQL URL (its password is a secret like the
    others); wrong-password URLs point at the same server so the refusal comes from it.
    """
    marker = secrets.token_hex(6)
    pg = urlsplit(pg_url) if pg_url else None
    pg_host = f"{pg.hostname}:{pg.port}" if pg else "127.0.0.1:9"
    pg_user = pg.username if pg and pg.username else "relay_ro"
    url_only = {
        "DATABASE_URL password": f"CanaryPw-{marker}/a+b@c&d:e",
        "RELAY_WAREHOUSE_URL ?password=": f"CanaryPw-{marker}-query+opt/x",
        "RELAY_MONGO_URL password": f"CanaryPw-{marker}-mongo/+@x",
        "RELAY_MONGO_AWS_URL secret": f"CanaryPw-{marker}-awssecret/+x",
        "RELAY_MONGO_AWS_URL session token": f"CanaryTok-{marker}-awssession/+x",
        "RELAY_MONGO_TLS_URL key password": f"CanaryPw-{marker}-tlskey/+x",
        "RELAY_LEDGER_URL password": f"CanaryPw-{marker}-ledger/+@x",
        "OpenAPI URL ?api_key=": f"CanaryKey-{marker}-openapi",
    }
    q = lambda text: quote(text, safe="")  # noqa: E731 - four URLs below read better with it
    env = {
        "ANTHROPIC_API_KEY": f"sk-ant-api03-CANARY{marker}-AnthropicKey_x9",
        "TAVILY_API_KEY": f"tvly-dev-CANARY{marker}Tavily",
        "BRAVE_API_KEY": f"BSACANARY{marker}Brave",
        "SERPER_API_KEY": f"CANARY{marker}serper0",
        "AWS_ACCESS_KEY_ID": f"AKIACANARY{marker}",
        "AWS_SECRET_ACCESS_KEY": f"CANARY{marker}/AwsSecret+Key/x",
        "AWS_SESSION_TOKEN": f"CANARY{marker}AwsSession/Token+==",
        "GITHUB_TOKEN": f"ghp_CANARY{marker}GitHub",
        "SHOP_API_TOKEN": f"CANARY{marker}-ShopBearer",
        "SHOP_API_KEY": f"CANARY{marker}-ShopHeaderKey",
        "SHOP_API_PASSWORD": f"CANARY{marker}-Shop:Basic/Pw",
        # URL syntax inside: a config's ${VAR} must not split it into user, host and path
        "RELAY_CFG_DB_PASSWORD": f"CanaryPw-{marker}-config/+@tail-{marker}",
        "DATABASE_URL": (
            f"postgresql+psycopg://{pg_user}:{q(url_only['DATABASE_URL password'])}@{pg_host}"
            "/shop?application_name=relay_secrets"
        ),
        "RELAY_WAREHOUSE_URL": (
            f"postgresql+psycopg://{pg_user}@{pg_host}/shop"
            f"?password={q(url_only['RELAY_WAREHOUSE_URL ?password='])}"
        ),
        "RELAY_MONGO_URL": (
            f"mongodb://canary_mongo:{q(url_only['RELAY_MONGO_URL password'])}@{mongo_host}"
            "/shop?authSource=admin"
        ),
        "RELAY_MONGO_AWS_URL": (
            # the user name (an AWS access key id) is shown like any user name; the rest is not
            f"mongodb://AKIAEXAMPLEUSER:{q(url_only['RELAY_MONGO_AWS_URL secret'])}"
            f"@{mongo_host}/shop?authMechanism=MONGODB-AWS&authMechanismProperties="
            f"AWS_SESSION_TOKEN:{q(url_only['RELAY_MONGO_AWS_URL session token'])}"
        ),
        "RELAY_MONGO_TLS_URL": (
            f"mongodb://{mongo_host}/shop?tls=true&tlsCertificateKeyFilePassword="
            f"{q(url_only['RELAY_MONGO_TLS_URL key password'])}"
        ),
        "RELAY_LEDGER_URL": (
            f"postgresql+psycopg://{pg_user}:{q(url_only['RELAY_LEDGER_URL password'])}"
            f"@{pg_host}/shop"
        ),
    }
    canaries = [Canary(name, value) for name, value in env.items() if not name.endswith("_URL")]
    basic = next(c for c in canaries if c.label == "SHOP_API_PASSWORD")
    canaries[canaries.index(basic)] = Canary(basic.label, basic.value, user="analyst")
    canaries += [Canary(label, value) for label, value in url_only.items()]
    canaries += [
        Canary(name + " (whole URL)", value) for name, value in env.items() if "_URL" in name
    ]
    canaries += service_passwords()
    return Canaries(marker=marker, env=env, canaries=tuple(canaries), url_only=url_only)


def service_passwords() -> list[Canary]:
    """The real passwords of the test services (``RELAY_TEST_*_URL``): secrets too."""
    found: dict[str, Canary] = {}
    for name, value in sorted(os.environ.items()):
        if name.startswith("RELAY_TEST_") and name.endswith("_URL"):
            parts = urlsplit(value)
            if parts.password and parts.password not in found:
                found[parts.password] = Canary(f"{name} password", parts.password, parts.username)
    return list(found.values())


# ---------------------------------------------------------------------------- the scan


@dataclass(frozen=True)
class Leak:
    artifact: str
    canary: str
    encoding: str
    offset: int
    context: str

    def __str__(self) -> str:
        return (
            f"{self.artifact} @ {self.offset}: {self.canary} ({self.encoding}) in …{self.context}…"
        )


def find_leaks(artifacts: Mapping[str, bytes], canaries: Canaries) -> list[Leak]:
    """Every place a canary occurs, in any of its forms (the match itself is masked)."""
    leaks: list[Leak] = []
    needles = canaries.needles()
    for name, data in artifacts.items():
        for canary, encoding, needle in needles:
            start = data.find(needle)
            while start != -1:
                before = data[max(0, start - _CONTEXT_CHARS) : start]
                after = data[start + len(needle) : start + len(needle) + _CONTEXT_CHARS]
                context = (
                    before.decode("utf-8", "replace")
                    + f"«{canary.label}»"
                    + after.decode("utf-8", "replace")
                )
                leaks.append(Leak(name, canary.label, encoding, start, _mask(context, canaries)))
                start = data.find(needle, start + 1)
    return leaks


def _mask(text: str, canaries: Canaries) -> str:
    """Keep a failure report free of the secrets it reports (the real passwords too)."""
    for canary in sorted(canaries.canaries, key=lambda c: len(c.value), reverse=True):
        text = text.replace(canary.value, f"«{canary.label}»")
    return text.replace(canaries.marker, "«marker»").replace("\n", "⏎")


class Evidence:
    """Everything a scenario produced that a person or a model could read, by name."""

    def __init__(self) -> None:
        self.artifacts: dict[str, bytes] = {}

    def add(self, name: str, data: str | bytes) -> None:
        blob = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        key, n = name, 2
        while key in self.artifacts:
            key, n = f"{name} #{n}", n + 1
        self.artifacts[key] = blob

    def add_exception(self, name: str, exc: BaseException) -> None:
        """What a user sees of a failure: its message, repr and whole traceback (chain too)."""
        self.add(f"{name}: str", str(exc))
        self.add(f"{name}: repr", repr(exc))
        self.add(f"{name}: traceback", "".join(traceback.format_exception(exc)))

    def add_file(self, path: Path, name: str | None = None) -> None:
        self.add(name or str(path), path.read_bytes())

    def add_tree(self, root: Path, label: str) -> int:
        """Every file under ``root`` (recordings, ledgers, databases, logs); how many."""
        count = 0
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                self.add_file(path, f"{label}/{path.relative_to(root)}")
                count += 1
        return count

    def add_all(self, name: str, texts: Iterable[str | bytes]) -> None:
        for text in texts:
            self.add(name, text)

    def names(self) -> list[str]:
        return list(self.artifacts)

    def assert_clean(self, canaries: Canaries) -> None:
        """Zero occurrences of any canary, or a report of every leak and what was scanned."""
        assert self.artifacts, "nothing was collected to scan: the scenario did not run"
        leaks = find_leaks(self.artifacts, canaries)
        if leaks:
            shown = "\n  ".join(str(leak) for leak in leaks[:40])
            more = f"\n  … and {len(leaks) - 40} more" if len(leaks) > 40 else ""
            raise AssertionError(
                f"{len(leaks)} secret occurrence(s) found:\n  {shown}{more}\n"
                f"scanned {len(self.artifacts)} artifacts "
                f"({sum(map(len, self.artifacts.values())):,} bytes):\n  " + self.inventory()
            )

    def inventory(self) -> str:
        return "\n  ".join(f"{name}: {len(data):,} bytes" for name, data in self.artifacts.items())
