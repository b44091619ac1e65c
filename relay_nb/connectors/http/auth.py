"""Credentials for the HTTP connector: named by environment variable, never written down.

A notebook is shared, committed and rendered; a token typed into a cell travels with it. So
the spec names environment variables (``token_env="SHOP_API_TOKEN"``) and reads them when
the connector is built — a missing one fails then, with the name and how to set it. Inline
values still work (a quick local test) but warn. Every value, including the encoded
``Basic`` credential, is registered with :func:`relay_nb.redaction.register_secret`, so an API
that echoes a header cannot put it in front of the model or into an output.
"""

from __future__ import annotations

import base64
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator

from relay_nb.errors import ConfigurationError
from relay_nb.redaction import is_secret_name, register_secret

__all__ = ["HTTPAuth", "InlineSecretWarning", "auth_headers", "check_extra_headers", "coerce_auth"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")  # used with fullmatch
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")  # fullmatch: `$` allows "\n"
# set by httpx from the URL and body; an override could retarget or desync the request
_RESERVED_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer"}
)
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


class InlineSecretWarning(UserWarning):
    """A secret was written into code or config instead of named by environment variable."""


def _field(*names: str, repr_: bool = True) -> Any:
    """A field that also accepts the camelCase spelling of ``relay.config.json`` files."""
    return Field(default=None, validation_alias=AliasChoices(*names), repr=repr_)


class HTTPAuth(BaseModel):
    """How the connector authenticates: ``bearer``, ``basic`` or a custom ``header``.

    Give secrets as environment variable names (``token_env``, ``username_env``,
    ``password_env``); inline ``token``/``password`` work but warn. ``repr`` never shows them.
    """

    # an inline token may be among the fields: validation errors never echo input
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, hide_input_in_errors=True
    )

    type: Literal["bearer", "basic", "header"]
    token_env: str | None = _field("token_env", "tokenEnv")
    token: str | None = _field("token", repr_=False)
    username_env: str | None = _field("username_env", "usernameEnv")
    password_env: str | None = _field("password_env", "passwordEnv")
    username: str | None = _field("username")
    password: str | None = _field("password", repr_=False)
    header: str | None = _field("header", "headerName", "header_name")

    @model_validator(mode="after")
    def _consistent(self) -> HTTPAuth:
        for secret in (self.token, self.password):
            if secret:
                register_secret(secret)
        for name in ("token_env", "username_env", "password_env"):
            value = getattr(self, name)
            if value is not None and not _ENV_NAME.fullmatch(value):
                raise ValueError(
                    f"{name} must be the name of an environment variable (e.g. "
                    "'SHOP_API_TOKEN'), not the secret itself"
                )
        if self.type == "basic":
            _one_of(self, "username_env", "username")
            _one_of(self, "password_env", "password")
            _none_of(self, "basic", ("token_env", "token", "header"))
        else:
            _one_of(self, "token_env", "token")
            _none_of(self, self.type, ("username_env", "username", "password_env", "password"))
            if self.type == "header":
                if not self.header or not _HEADER_NAME.fullmatch(self.header):
                    raise ValueError("type='header' needs header='<Header-Name>', e.g. 'X-API-Key'")
                _check_header_name(self.header)
            elif self.header is not None:
                raise ValueError("header= is only for type='header'")
        return self


def _one_of(auth: HTTPAuth, env_field: str, inline_field: str) -> None:
    given = [f for f in (env_field, inline_field) if getattr(auth, f) is not None]
    if len(given) != 1:
        raise ValueError(
            f"type={auth.type!r} needs exactly one of {env_field} (recommended) or {inline_field}"
        )


def _none_of(auth: HTTPAuth, kind: str, fields: tuple[str, ...]) -> None:
    extra = [f for f in fields if getattr(auth, f) is not None]
    if extra:
        raise ValueError(f"{', '.join(extra)} cannot be used with type={kind!r}")


def coerce_auth(value: HTTPAuth | Mapping[str, Any] | None) -> HTTPAuth | None:
    """Accept an ``HTTPAuth`` or a plain mapping (a JSON config entry)."""
    if value is None or isinstance(value, HTTPAuth):
        return value
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            "auth must be HTTPAuth(...) or a dict such as "
            "{'type': 'bearer', 'token_env': 'SHOP_API_TOKEN'}"
        )
    try:
        return HTTPAuth.model_validate(dict(value))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = (
                "unknown field; use type, token_env, token, username_env, password_env, "
                "username, password, header"
            )
        raise ConfigurationError(f"auth{'.' + where if where else ''}: {message}") from None


def auth_headers(auth: HTTPAuth | None, connector_id: str) -> dict[str, str]:
    """The header(s) ``auth`` stands for, read from the environment now; secrets registered.

    Raises ConfigurationError naming any missing variable; warns once per inline secret.
    """
    if auth is None:
        return {}
    if auth.type == "basic":
        username = _value(auth.username_env, auth.username, connector_id, "user name", secret=False)
        password = _value(auth.password_env, auth.password, connector_id, "password")
        encoded = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
        register_secret(encoded)
        return {"Authorization": f"Basic {encoded}"}
    token = _value(auth.token_env, auth.token, connector_id, "token")
    if auth.type == "bearer":
        return {"Authorization": f"Bearer {token}"}
    assert auth.header is not None  # checked by the model validator
    return {auth.header: token}


def _value(
    env: str | None, inline: str | None, connector_id: str, what: str, *, secret: bool = True
) -> str:
    """One credential part, from its environment variable or inline (with a warning)."""
    if env is not None:
        value = os.environ.get(env)
        if not value:
            state = "is empty" if value == "" else "is not set"
            raise ConfigurationError(
                f"environment variable {env} {state}; connector {connector_id!r} reads its "
                f"{what} from it. Set it before connecting: os.environ[{env!r}] = '…' in a cell "
                f"(better: a .env file or your shell), or `export {env}=…` before starting Jupyter"
            )
    else:
        assert inline is not None  # the model validator requires one of the two
        value = inline
        if secret:
            warnings.warn(
                f"connector {connector_id!r}: the {what} is written inline, so it travels with "
                "this notebook or config file; put it in an environment variable and pass its "
                "name instead (token_env= / password_env=)",
                InlineSecretWarning,
                stacklevel=4,
            )
    if any(ch in value for ch in "\r\n\0"):
        raise ConfigurationError(
            f"the {what} of connector {connector_id!r} contains a line break; remove it"
        )
    if secret:
        register_secret(value)
    return value


def check_extra_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Validate the analyst's extra headers; values of credential-like headers are secrets."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise ConfigurationError("headers must be a dict of header name to value")
    checked: dict[str, str] = {}
    for name, value in headers.items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise ConfigurationError(
                f"header name {name!r} is not valid; use letters, digits and '-', e.g. 'X-Tenant'"
            )
        _check_header_name(name, error=ConfigurationError)
        if not isinstance(value, str) or any(ch in value for ch in "\r\n\0"):
            raise ConfigurationError(
                f"header {name!r} must have a one-line string value (no line breaks)"
            )
        if not value.isascii():  # HTTP sends header values as ASCII; httpx fails on every call
            raise ConfigurationError(
                f"header {name!r} must be ASCII text; percent-encode or transliterate the value"
            )
        if _is_secret_header(name):
            register_secret(value)
        checked[name] = value
    return checked


def _is_secret_header(name: str) -> bool:
    lower = name.lower()
    return lower in _SECRET_HEADERS or is_secret_name(lower.replace("-", "_"))


def _check_header_name(name: str, error: type[Exception] = ValueError) -> None:
    if name.lower() in _RESERVED_HEADERS:
        raise error(
            f"header {name!r} is set by the HTTP client from the URL and body and cannot be "
            "overridden; remove it"
        )
