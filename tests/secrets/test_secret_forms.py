"""The scan can fail, and the forms a secret takes in a URL are known to relay_nb.

First the scan itself: a canary planted in each encoding the suite claims to catch is
found (and the report names the artifact, never the secret). Then the URL forms the suite's
leaks came from: a credential inside ``authMechanismProperties`` (masked, learned, refused
inline in a config file) and a ``${VAR}`` password holding URL syntax (percent-encoded into
the URL instead of splitting it into host and path).
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from secret_scan import Canaries, Canary, Evidence, find_leaks, make_canaries
from sqlalchemy import make_url

from relay_nb.errors import ConfigurationError
from relay_nb.facade.config import load_config
from relay_nb.redaction import REDACTED, option_secrets, redact_url, url_secrets


@pytest.fixture(scope="module")
def planted() -> Canaries:
    return make_canaries(pg_url=None, mongo_host="127.0.0.1:9")


def _blob(prefix: str, text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return b"some output before " + prefix.encode() + data + b" and after"


@pytest.mark.parametrize(
    ("form", "encode"),
    [
        ("raw", lambda v: v),
        ("url-quoted", lambda v: quote(v, safe="")),
        ("form-encoded", quote_plus),
        ("JSON-escaped", lambda v: json.dumps(v)[1:-1]),
        ("HTML-escaped", html.escape),
        ("clipped to its first 26 characters", lambda v: v[:26] + "…"),
        ("base64, standalone", lambda v: base64.b64encode(v.encode())),
        ("base64 inside a larger blob", lambda v: base64.b64encode(b"x:" + v.encode() + b"!")),
        ("urlsafe base64", lambda v: base64.urlsafe_b64encode(b"ab" + v.encode())),
    ],
)
def test_the_scan_finds_a_canary_in_every_form(planted: Canaries, form: str, encode):
    value = planted.env["AWS_SECRET_ACCESS_KEY"]  # holds '/' and '+': every encoding differs
    leaks = find_leaks({"artifact": _blob("", encode(value))}, planted)
    assert leaks, f"a {form} canary was not found"
    assert all(leak.artifact == "artifact" for leak in leaks)


def test_the_scan_finds_a_basic_credential_and_a_real_password(planted: Canaries):
    basic = next(c for c in planted.canaries if c.label == "SHOP_API_PASSWORD")
    header = base64.b64encode(f"analyst:{basic.value}".encode()).decode()
    service = Canary("a service password", "relay-test-only-pw", user="relay_ro")
    canaries = planted.with_extra(service)
    found = find_leaks(
        {"header": _blob("Authorization: Basic ", header), "dsn": _blob("pw=", service.value)},
        canaries,
    )
    assert {leak.canary for leak in found} >= {"SHOP_API_PASSWORD", "a service password"}
    assert find_leaks({"clean": b"nothing secret here, relay_ro@127.0.0.1"}, canaries) == []


def test_a_failure_names_the_artifact_and_never_shows_the_secret(planted: Canaries):
    evidence = Evidence()
    evidence.add("clean output", "nothing here")
    password = planted.url_only["DATABASE_URL password"]
    evidence.add("planted output", f"login as relay_ro with {quote(password, safe='')}")
    with pytest.raises(AssertionError) as failed:
        evidence.assert_clean(planted)
    report = str(failed.value)
    assert "planted output @ 23: DATABASE_URL password (url-quoted)" in report
    assert "clean output: 12 bytes" in report and "planted output: " in report
    assert planted.marker not in report and quote(password, safe="") not in report


def test_nothing_to_scan_is_a_failure_too(planted: Canaries):
    with pytest.raises(AssertionError, match="nothing was collected"):
        Evidence().assert_clean(planted)


# ------------------------------------------------------------------ credentials inside options

AWS = (
    "mongodb://AKIAEXAMPLEUSER:aws%2Fsecret%2Bkey@127.0.0.1:27017/app?authMechanism=MONGODB-AWS"
    "&authMechanismProperties=SERVICE_NAME:mongodb,AWS_SESSION_TOKEN:session%2Ftoken%2B123"
)


def test_a_session_token_in_auth_mechanism_properties_is_masked_and_learned():
    assert redact_url(AWS) == (
        f"mongodb://AKIAEXAMPLEUSER:{REDACTED}@127.0.0.1:27017/app?authMechanism=MONGODB-AWS"
        f"&authMechanismProperties=SERVICE_NAME:mongodb,AWS_SESSION_TOKEN:{REDACTED}"
    )
    assert {"session%2Ftoken%2B123", "session/token+123"} <= set(url_secrets(AWS))
    encoded = "mongodb://h/app?authMechanismProperties=AWS_SESSION_TOKEN%3Atok%2Fen99%2CX%3Ay"
    assert redact_url(encoded).endswith(f"AWS_SESSION_TOKEN%3A{REDACTED}%2CX%3Ay")
    assert option_secrets("authMechanismProperties", "SERVICE_NAME:mongodb") == []
    assert option_secrets("api%5Fkey", "k3y-value") == ["k3y-value"]


def test_a_config_refuses_an_inline_session_token(tmp_path: Path):
    url = AWS.replace("AKIAEXAMPLEUSER:aws%2Fsecret%2Bkey@", "")  # no password: only the token
    path = tmp_path / "relay.config.json"
    path.write_text(
        json.dumps({"connectors": [{"type": "mongo", "id": "e", "config": {"url": url}}]})
    )
    with pytest.raises(ConfigurationError, match=r"config\.url has a password or key") as error:
        load_config(path)
    assert "session" not in str(error.value)
    reference = url.replace("session%2Ftoken%2B123", "${AWS_SESSION_TOKEN}")
    path.write_text(
        json.dumps({"connectors": [{"type": "mongo", "id": "e", "config": {"url": reference}}]})
    )
    with pytest.raises(ConfigurationError, match=r"uses \$\{AWS_SESSION_TOKEN\}, but"):
        load_config(path)  # a reference is accepted as such: only the variable is missing


# ------------------------------------------------------------------ ${VAR} in a URL


def test_a_config_password_with_url_syntax_stays_one_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    password = "pw/with+@all:the&syntax?#%"
    monkeypatch.setenv("WAREHOUSE_PASSWORD", password)
    monkeypatch.setenv("WAREHOUSE_HOST", "db.internal")
    url = "postgresql+psycopg://reader:${WAREHOUSE_PASSWORD}@${WAREHOUSE_HOST}:5432/shop"
    options = "?application_name=${WAREHOUSE_HOST}&password=${WAREHOUSE_PASSWORD}"
    path = tmp_path / "relay.config.json"
    config = {"connectors": [{"type": "postgres", "id": "w", "config": {"url": url + options}}]}
    path.write_text(json.dumps(config))
    parsed = make_url(load_config(path).connectors[0].config["url"])
    assert parsed.password == password
    assert parsed.host == "db.internal" and parsed.database == "shop"  # host: not encoded
    assert parsed.query == {"application_name": "db.internal", "password": password}
