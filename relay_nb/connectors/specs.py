"""Connector entries of ``relay.config.json``: one validated record each, built into a live
connector by its type.

An entry is ``{"type", "id", "name", "description", "config"}``. Its ``type`` names a
:class:`~relay_nb.connectors.types.ConnectorType` — a built-in one (``sql`` and its
spellings ``postgres``, ``sqlite``…, ``mongo``, ``http``, ``websearch``, ``mcp``) or a
plugin's — whose options model checks ``config`` during validation, so a typo is reported
with its place in the file (``connectors[2].config.row_limit``) rather than as a driver's
stack trace; relative file options are read from the config file's directory (the validation
context's ``base_dir``). Built-in and plugin types are treated alike; each kind is imported
only when an entry of that kind is built.

The rule that makes a config file safe to commit lives here too: secrets appear only as
environment variable *names* (``token_env``) or as ``${VAR}`` references, never inline —
:func:`check_no_inline_secrets` runs on the text as written, before substitution.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from relay_nb.connectors.base import Connector, check_connector_id
from relay_nb.connectors.kinds import builtin_type
from relay_nb.connectors.plugins import config_type, unknown_type_message
from relay_nb.errors import ConfigurationError
from relay_nb.redaction import is_variable_name, option_secrets

__all__ = [
    "ENV_REFERENCE",
    "ConnectorEntry",
    "build_connector",
    "check_no_inline_secrets",
    "is_secret_option",
]

ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${VAR}``: how a config file refers to an environment variable (group 1: its name)."""
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie|pass|session", re.IGNORECASE)
_SECRET_OPTION = re.compile(
    r"(?:^|_)(?:password|passwd|pwd|passphrase|secret|token|api_?key|access_?key|private_?key"
    r"|credentials?)$"
)
"""A config key holding a credential (``password``, ``auth_token``, ``client_secret``…), read
on the key in snake_case; ``*_env`` keys name a variable and ``sort_key`` is no secret."""
_CREDENTIALS_FILE = re.compile(r"[^\s{}]+\.(?:json|pem|key|p12|pfx|crt|ini|cfg|toml|ya?ml)")
"""A ``credentials`` option naming a file (``service-account.json``), not holding one."""
_CONNECTION_STRING = re.compile(r"^\s*[A-Za-z][\w .-]*=[^;]*(?:;\s*[A-Za-z][\w .-]*=[^;]*)*;?\s*$")
"""``Server=db;User Id=reader;Password=…``: an ODBC / ADO.NET connection string's shape."""
_CONNECTION_STRING_SECRETS = frozenset(
    {"password", "pwd", "passwd", "accountkey", "sharedaccesskey", "sharedaccesssignature"}
)
"""Connection-string keys holding a credential (spaces, ``_`` and ``-`` removed, lower case)."""
_CONNECTION_STRING_REFERENCE = re.compile(
    r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|\{\$\{[A-Za-z_][A-Za-z0-9_]*\}\}"
    r"|'\$\{[A-Za-z_][A-Za-z0-9_]*\}'|\"\$\{[A-Za-z_][A-Za-z0-9_]*\}\""
)
"""A connection-string value that is a reference: ``${VAR}``, ODBC's ``{${VAR}}``, quoted."""
_URL_START = re.compile(r"\s*[A-Za-z][\w+.-]*://")
"""A URL (read by :func:`_inline_url_secret`), not a connection string holding one."""
_ENV_FIELD = re.compile(r"(?:_env|[a-z0-9]Env)$")
"""A built-in's field naming one variable: ``token_env``, ``api_key_env``, ``apiKeyEnv``."""
_MCP_NAME_MAPPINGS = frozenset({"env", "headers_env", "headersEnv"})


class ConnectorEntry(BaseModel):
    """One ``connectors[]`` entry of ``relay.config.json``, its ``config`` checked by its type
    (the type's options model, or its factory's keyword parameters)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    id: str
    name: str | None = None
    description: str | None = None
    knowledge: str | list[str] | None = None
    """A knowledge file for this connector (``relay.knowledge.yaml``), a dbt
    ``target/manifest.json`` or a Cortex semantic model, or a list of them (merged), relative
    to the config file: their rules, metrics and verified queries become context."""
    config: dict[str, Any] = Field(default_factory=dict, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _known_type(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or "type" not in data:
            raise PydanticCustomError(
                "missing_connector_type",
                'an entry needs a "type": a built-in one (sql, postgres, mongo, http, '
                "websearch…) or an installed plugin's",
            )
        kind = data["type"]
        if isinstance(kind, str):
            ctype = config_type(kind)
            if ctype is None or not ctype.in_config:
                raise PydanticCustomError(
                    "unknown_connector_type", "{message}", {"message": unknown_type_message(kind)}
                )
        return data

    @field_validator("config")
    @classmethod
    def _checked_by_its_type(cls, config: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        ctype = config_type(info.data.get("type", ""))
        if ctype is None:  # the type itself was refused: that error says it all
            return config
        base_dir = (info.context or {}).get("base_dir")
        return ctype.check_options(config, base_dir=base_dir)


def build_connector(entry: ConnectorEntry) -> Connector:
    """The live connector a (substituted, validated) entry describes."""
    check_connector_id(entry.id)
    ctype = config_type(entry.type)
    if ctype is None:
        raise ConfigurationError(f"connector type {entry.type!r} is no longer registered")
    return ctype.create(entry.id, entry.config, name=entry.name, description=entry.description)


def _is_builtin(kind: str | None) -> bool:
    return kind is not None and builtin_type(kind) is not None


def check_no_inline_secrets(entry: Mapping[str, Any], where: str) -> None:
    """Refuse secrets written into a config file (before ``${VAR}`` substitution).

    A config file is the kind of file that gets committed; a password in a URL (under any
    key, at any depth), an inline token or a literal ``Authorization`` header would leak
    with it. Only a built-in type's fields are known to hold variable *names* — its ``*_env``
    fields (``token_env``, ``apiKeyEnv``) and the MCP type's ``env`` / ``headers_env``
    mappings — and those must hold names, not values. A plugin's ``env`` may hold anything,
    so it gets the same checks as any other option; the built-ins' own shapes
    (``auth.token``, ``api_key``) get their advice only for built-in types — a plugin's
    option named like a credential just has to be a whole ``${VAR}``.
    """
    config = entry.get("config")
    if not isinstance(config, Mapping):
        return
    kind = entry.get("type")
    kind = kind if isinstance(kind, str) else None
    _check_variable_names(config, kind, where)
    _refuse_inline_strings(config, kind, f"{where}.config")
    if _is_builtin(kind):
        auth = config.get("auth")
        if isinstance(auth, Mapping):
            for key in ("token", "password", "username", "apiKey", "api_key"):
                if key in auth:
                    raise ConfigurationError(
                        f"{where}.config.auth.{key} is an inline secret; config files name "
                        f'environment variables instead: {_env_key(key)!r}: "MY_API_TOKEN"'
                    )
        if "api_key" in config or "apiKey" in config:
            raise ConfigurationError(
                f"{where}.config has an inline API key; name its environment variable instead: "
                '"api_key_env": "TAVILY_API_KEY"'
            )
    for name, value in _headers(config).items():
        if (
            _SECRET_HEADER.search(name)
            and isinstance(value, str)
            and not ENV_REFERENCE.fullmatch(value)
        ):
            raise ConfigurationError(
                f"{where}.config.headers[{name!r}] looks like a secret written inline; put it "
                "in an environment variable and write ${VARIABLE} as the header's value"
            )
    _refuse_secret_options(config, kind, f"{where}.config")


def is_secret_option(key: str) -> bool:
    """Whether a config key names a credential (``password``, ``authToken``, ``api-key``)."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", str(key)).lower().replace("-", "_")
    return bool(_SECRET_OPTION.search(snake))


def _names_variables(kind: str | None, top: bool, key: Any, value: Any) -> bool:
    """Whether a built-in type's option holds variable *names*: a ``*_env`` string field
    (``token_env``, ``apiKeyEnv``) at any depth, or the MCP type's ``env`` / ``headers_env``
    (``headersEnv``) mapping. A plugin's options never do: its ``env`` may hold values."""
    if not _is_builtin(kind):
        return False
    if isinstance(value, str) and _ENV_FIELD.search(str(key)):
        return True
    return kind == "mcp" and top and key in _MCP_NAME_MAPPINGS


def _check_variable_names(config: Mapping[str, Any], kind: str | None, where: str) -> None:
    """A built-in's name fields hold names: a ``${VAR}`` there would turn the secret into a
    variable *name*, which errors then print, and a value written there (a token, a URL)
    would be printed the same way — neither is echoed here."""
    for key, item in _variable_fields(config, kind, top=True):
        if _holds_reference(item):
            what = (
                "an environment variable; write its name"
                if isinstance(item, str)
                else "environment variables; write their names"
            )
            raise ConfigurationError(
                f"{where}.config: {key} names {what} "
                f'("MY_TOKEN"), not a ${{…}} reference to a value'
            )
        names = list(item.values()) if isinstance(item, Mapping) else item
        names = names if isinstance(names, list) else [names]
        if any(isinstance(n, str) and not is_variable_name(n) for n in names):
            if isinstance(item, str):
                raise ConfigurationError(
                    f"{where}.config: {key} holds something other than a variable name; it "
                    'names the environment variable holding the secret ("MY_TOKEN") — put '
                    "the secret in that variable"
                )
            if key == "env":
                raise ConfigurationError(
                    f"{where}.config: env maps the server's variable names to names of "
                    "variables here, and one of its values is no variable name; put a value "
                    'in env_values as ${VAR} (e.g. "env_values": {"GITHUB_TOKEN": '
                    '"${MY_GITHUB_TOKEN}"}), or name the variable here ("MY_GITHUB_TOKEN")'
                )
            raise ConfigurationError(
                f"{where}.config: {key} maps header names to names of variables here, and one "
                "of its values is no variable name; put a value in headers as ${VAR} (e.g. "
                '"headers": {"X-Api-Key": "${DOCS_API_KEY}"}), or name the variable here '
                '("DOCS_API_KEY")'
            )


def _variable_fields(value: Any, kind: str | None, *, top: bool) -> list[tuple[Any, Any]]:
    found: list[tuple[Any, Any]] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if _names_variables(kind, top, key, item):
                found.append((key, item))
            else:
                found += _variable_fields(item, kind, top=False)
    elif isinstance(value, list):
        for item in value:
            found += _variable_fields(item, kind, top=False)
    return found


def _options(
    value: Any, kind: str | None, where: str, *, top: bool = True
) -> Iterator[tuple[str, Any, Any]]:
    """Every ``(place, key, item)`` of a config at any depth (``key`` None in a list), but
    under a built-in's name fields, which :func:`_check_variable_names` checked."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if _names_variables(kind, top, key, item):
                continue
            place = f"{where}.{key}"
            yield place, key, item
            yield from _options(item, kind, place, top=False)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            place = f"{where}[{index}]"
            yield place, None, item
            yield from _options(item, kind, place, top=False)


def _headers(config: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in ("headers", "extraHeaders", "extra_headers"):
        value = config.get(key)
        if isinstance(value, Mapping):
            return value
    return {}


def _env_key(key: str) -> str:
    return {"apiKey": "api_key_env", "api_key": "api_key_env"}.get(key, f"{key}_env")


def _inline_url_secret(url: str) -> bool:
    """Whether ``url`` carries a password (``user:password@``) or a secret-looking option
    (``?password=``, ``?api_key=``, ``authMechanismProperties=AWS_SESSION_TOKEN:…``) written
    as a value rather than a ``${VAR}``.

    Read without a URL parser: ``${VAR}`` is not URL syntax yet, and a password may hold a
    ``/``, so the userinfo is everything before the last ``@`` ahead of the query.
    """
    if "://" not in url:
        return False
    rest, _, query = url.split("://", 1)[1].partition("?")
    if "@" in rest:
        userinfo = rest.rsplit("@", 1)[0]
        password = userinfo.split(":", 1)[1] if ":" in userinfo else ""
        if password and not ENV_REFERENCE.fullmatch(password):
            return True
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if any(not ENV_REFERENCE.fullmatch(secret) for secret in option_secrets(key, value)):
            return True
    return False


def _inline_connection_string_secret(text: str) -> bool:
    """Whether a ``Key=Value;…`` connection string holds a secret inline.

    A string is read as one when it has two ``;``-separated pairs or more
    (``Server=db;Pwd=…``), or is a single pair under a connection-string credential key
    (``Password=…``): a program argument like ``max_tokens=4096`` or
    ``PASSWORD_FILE=/run/secrets/db`` is none. A value that is a whole ``${VAR}`` — bare,
    in ODBC braces (``{${VAR}}``) or quoted — is a reference, not a secret.
    """
    if "=" not in text or _URL_START.match(text) or not _CONNECTION_STRING.match(text):
        return False
    pairs = [part.partition("=") for part in text.split(";") if part.strip()]
    single = len(pairs) == 1
    for key, _, value in pairs:
        compact = re.sub(r"[\s_-]", "", key).lower()
        if single:
            secret = compact in _CONNECTION_STRING_SECRETS
        else:
            secret = compact in _CONNECTION_STRING_SECRETS or (
                is_secret_option(key.strip().replace(" ", "_"))
            )
        if secret and value.strip() and not _CONNECTION_STRING_REFERENCE.fullmatch(value.strip()):
            return True
    return False


def _refuse_inline_strings(config: Mapping[str, Any], kind: str | None, where: str) -> None:
    """A URL with ``user:password@`` (a plugin's ``dsn``, ``uri``…) or a connection string
    with ``Password=…``, under any key but a built-in's name field, at any depth."""
    for place, _, item in _options(config, kind, where):
        if not isinstance(item, str):
            continue
        if _inline_url_secret(item):
            raise ConfigurationError(
                f"{place} has a password or key written in it; put it in an environment "
                "variable and write ${VARIABLE} in its place (e.g. "
                "postgresql+psycopg://reader:${SHOP_DB_PASSWORD}@host/shop)"
            )
        if _inline_connection_string_secret(item):
            raise ConfigurationError(
                f"{place} is a connection string with a password or key written in it; put it "
                "in an environment variable and write ${VARIABLE} as its value (e.g. "
                "Server=db;Uid=reader;Pwd=${DB_PASSWORD})"
            )


def _holds_reference(value: Any) -> bool:
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, Mapping):
        return any(_holds_reference(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_reference(item) for item in value)
    return False


def _refuse_secret_options(config: Mapping[str, Any], kind: str | None, where: str) -> None:
    """Any option named like a credential (a plugin's ``password``, ``token``, an ``env``
    entry ``DB_PASSWORD``…) must be a whole ``${VAR}`` reference, at any depth of the
    entry's ``config`` — except under a built-in's name fields, and a ``credentials`` file's
    path."""
    for place, key, item in _options(config, kind, where):
        if (
            key is not None
            and isinstance(item, str)
            and is_secret_option(key)
            and not ENV_REFERENCE.fullmatch(item.strip())
            and not _names_a_credentials_file(key, item)
        ):
            raise ConfigurationError(
                f"{place} is a secret written inline; put it in an environment variable "
                f'and write "${{VARIABLE}}" as its value (or use the option that names the '
                "variable, if the connector has one)"
            )


def _names_a_credentials_file(key: Any, value: str) -> bool:
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", str(key)).lower()
    return snake.endswith(("credential", "credentials")) and bool(
        _CREDENTIALS_FILE.fullmatch(value.strip())
    )
