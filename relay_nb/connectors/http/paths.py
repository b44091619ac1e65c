"""The path guard of ``call_<id>``: the model names a path, never a place.

The base URL is the analyst's; the model only writes a path *relative* to it. Everything
that could make a URL parser, a proxy or the server land somewhere else is refused before a
request exists: schemes, ``//host``, backslashes, ``user@host``, ``.``/``..`` segments (also
percent-encoded, double-encoded, look-alike or with ``;params``), encoded separators, control
characters, fragments and query strings. Decoding is repeated, because a server or a proxy in
front of it may decode once more than we did.

After joining, :func:`check_resolved` checks the final URL again — same scheme, host and port,
a path under the base path — so a gap in the text rules, or a redirect, still cannot leave the
base URL. Everything here is pure: strings in, a value or an ``UnsafeQueryError`` out.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes, urlsplit

from relay_nb.errors import ConfigurationError, UnsafeQueryError
from relay_nb.redaction import register_secret

__all__ = [
    "MAX_PATH_CHARS",
    "PATH_RULES",
    "BaseURL",
    "check_path",
    "check_resolved",
    "join_path",
    "parse_base_url",
]

MAX_PATH_CHARS = 2048
_DECODE_ROUNDS = 4
_DEFAULT_PORTS = {"http": 80, "https": 443}
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_HOW = "write a path relative to the base URL, e.g. '/orders' or '/orders/42'"

PATH_RULES = frozenset(
    {
        "not_a_path",
        "path_too_long",
        "control_character",
        "backslash",
        "fragment",
        "query_in_path",
        "network_path",
        "scheme",
        "userinfo",
        "empty_segment",
        "bad_encoding",
        "encoded_separator",
        "dot_segment",
        "outside_base",
    }
)
"""Every ``UnsafeQueryError.rule`` the path guard raises (the corpus must cover them all)."""


@dataclass(frozen=True)
class BaseURL:
    """The analyst's base URL, split and normalised; ``path`` has no trailing slash."""

    scheme: str
    host: str
    port: int
    path: str

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = _DEFAULT_PORTS[self.scheme] == self.port
        return f"{self.scheme}://{host}" + ("" if default else f":{self.port}")

    def url_for(self, relative: str) -> str:
        """The absolute URL of a path already passed through :func:`check_path`."""
        return self.origin + join_path(self.path, relative)

    def same_origin(self, url: str) -> bool:
        """Does ``url`` (absolute) have this scheme, host and port?"""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return False
        scheme = parts.scheme.lower()
        return (
            scheme == self.scheme
            and (parts.hostname or "") == self.host
            and (port if port is not None else _DEFAULT_PORTS.get(scheme)) == self.port
        )

    def __str__(self) -> str:
        return self.origin + self.path


def parse_base_url(url: str) -> BaseURL:
    """Check the analyst's base URL: http(s), a host, no credentials, no query or fragment."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigurationError(
            "base_url must be an http(s) URL such as 'https://api.example.com/v1'"
        )
    if any(_refused_char(ch) or ch.isspace() for ch in url):
        raise ConfigurationError("base_url contains whitespace or a control character; remove it")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ConfigurationError(
            "base_url is not a valid URL (check the host and port), e.g. 'https://api.example.com/v1'"
        ) from None
    if parts.password:
        register_secret(parts.password)
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise ConfigurationError(
            "base_url must not contain a user name or password (they would show wherever the URL "
            "does); pass auth=HTTPAuth(type='basic', username_env=..., password_env=...) instead"
        )
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ConfigurationError(
            "base_url must start with http:// or https://, e.g. 'https://api.example.com/v1'"
        )
    if not parts.hostname:
        raise ConfigurationError("base_url has no host; write it like 'https://api.example.com/v1'")
    if parts.query or parts.fragment or url.rstrip().endswith(("?", "#")):
        raise ConfigurationError(
            "base_url must not contain a query string or fragment; the model passes query "
            "parameters per call"
        )
    path = parts.path.rstrip("/")
    if path:
        try:
            for segment in path[1:].split("/"):
                _check_segment(segment)
            if "//" in path:
                raise UnsafeQueryError("empty_segment", "it contains '//'")
        except UnsafeQueryError as exc:
            raise ConfigurationError(f"base_url has an unusable path ({exc.message})") from None
    return BaseURL(
        scheme=scheme,
        host=_ascii_host(parts.hostname),
        port=port if port is not None else _DEFAULT_PORTS[scheme],
        path=path,
    )


def check_path(path: object) -> str:
    """Return ``path`` relative to the base (no leading slash) or raise ``UnsafeQueryError``.

    A leading ``/`` is allowed and means the base URL's root: with base ``…/v1``, ``/orders``
    and ``orders`` both call ``…/v1/orders``.
    """
    if not isinstance(path, str):
        raise UnsafeQueryError("not_a_path", f"path must be a string; {_HOW}")
    if len(path) > MAX_PATH_CHARS:
        raise UnsafeQueryError(
            "path_too_long",
            f"path is longer than {MAX_PATH_CHARS} characters; put parameters in 'query'",
        )
    if any(_refused_char(ch) or ch.isspace() for ch in path):
        raise UnsafeQueryError(
            "control_character",
            "path contains whitespace or a control character; percent-encode a space as %20 "
            "and remove control characters",
        )
    if "\\" in path:
        raise UnsafeQueryError(
            "backslash", f"path must separate segments with '/', not '\\'; {_HOW}"
        )
    if "#" in path:
        raise UnsafeQueryError(
            "fragment", "remove the '#…' fragment from path; servers never see it"
        )
    if "?" in path:
        raise UnsafeQueryError(
            "query_in_path",
            "put query parameters in 'query', not in path: path='/orders', "
            "query={'status': 'paid'}",
        )
    if path.startswith("//"):
        raise UnsafeQueryError(
            "network_path", f"a path starting with '//' names another host; {_HOW}"
        )
    relative = path[1:] if path.startswith("/") else path
    first = relative.split("/", 1)[0]
    if ":" in first:
        raise UnsafeQueryError(
            "scheme",
            f"path must not carry a scheme or host ('https://…', 'file:…', 'host:port'); {_HOW}",
        )
    if "@" in first:
        raise UnsafeQueryError(
            "userinfo", f"path must not name a user or host ('user@host'); {_HOW}"
        )
    if "//" in relative:
        raise UnsafeQueryError("empty_segment", "path contains '//'; remove the empty segment")
    for segment in relative.split("/"):
        _check_segment(segment)
    return relative


def join_path(base_path: str, relative: str) -> str:
    """``/v1`` + ``orders/42`` → ``/v1/orders/42``; an empty relative path is the base itself."""
    if not relative:
        return base_path or "/"
    return f"{base_path}/{relative}"


def check_resolved(base: BaseURL, url: str) -> None:
    """Defence in depth: the final URL (after joining, encoding, or a redirect) must have the
    base's scheme, host and port and a path under the base path that passes the path guard."""
    outside = UnsafeQueryError(
        "outside_base", f"the request would leave the base URL {base}; {_HOW}"
    )
    if not base.same_origin(url):
        raise outside
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None or parts.fragment:
        raise outside
    path = parts.path or "/"
    if base.path and path != base.path and not path.startswith(base.path + "/"):
        raise outside
    rest = path[len(base.path) :]
    if rest in ("", "/"):
        return
    try:
        check_path(rest)
    except UnsafeQueryError:
        raise outside from None


def _check_segment(segment: str) -> None:
    """One segment at every decoding depth: no separators, controls or dot-only names."""
    text = segment
    for depth in range(_DECODE_ROUNDS + 1):
        folded = unicodedata.normalize("NFKC", text)
        if depth and any(_refused_char(ch) or (ch.isspace() and ch != " ") for ch in text):
            raise UnsafeQueryError(
                "control_character",
                "path contains a percent-encoded control character (%00, %0a, %0d, …); remove it",
            )
        if any(sep in candidate for candidate in (text, folded) for sep in ("/", "\\")):
            raise UnsafeQueryError(
                "encoded_separator",
                "path contains an encoded or look-alike '/' or '\\' (%2f, %5c, a full-width "
                "slash); use a plain '/' between segments and no backslashes",
            )
        core = folded.split(";", 1)[0].strip()
        if core and set(core) == {"."}:
            raise UnsafeQueryError(
                "dot_segment",
                f"path must not contain '.' or '..' segments (also not encoded as %2e); {_HOW}",
            )
        if "%" not in text:
            return
        if _PERCENT.search(text):
            if depth == 0:
                raise UnsafeQueryError(
                    "bad_encoding",
                    "path has a '%' not followed by two hex digits; write a literal '%' as %25",
                )
            return  # a literal '%' in the data: nothing is encoded below this level
        try:
            decoded = unquote_to_bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise UnsafeQueryError(
                "bad_encoding",
                "path has percent-encoded bytes that are not UTF-8 (e.g. %c0%ae); encode text "
                "as UTF-8",
            ) from None
        if decoded == text:
            return
        text = decoded
    raise UnsafeQueryError(
        "bad_encoding",
        f"path is percent-encoded more than {_DECODE_ROUNDS} times; encode each character once",
    )


def _ascii_host(host: str) -> str:
    """Hosts compare as httpx sends them: lowercase, internationalised names in IDNA form."""
    host = host.lower()
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        raise ConfigurationError("base_url has a host name that cannot be encoded") from None


def _refused_char(ch: str) -> bool:
    return unicodedata.category(ch) in _REFUSED_CATEGORIES
