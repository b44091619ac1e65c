"""Connector specifications: one validated record per connector, built into a live connector.

A spec is what a ``relay.config.json`` entry says (``{"type", "id", "name", "config"}``),
checked by pydantic before anything connects, so a typo is reported with its place in the
file rather than as a driver's stack trace. The rule that makes a config file safe to commit
lives here too: secrets appear only as environment variable *names* (``token_env``) or as
``${VAR}`` references, never inline — :func:`check_no_inline_secrets` runs on the text as
written, before substitution.

A ``type`` that is not built-in is a plugin's (:mod:`relay_nb.connectors.plugins`): its entry
is a :class:`PluginSpec`, whose ``config`` the plugin type's own model validates, with errors
placed in the file like a built-in's. Each connector kind is imported only when a spec of
that kind is built.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from relay_nb.connectors.base import Connector, check_connector_id
from relay_nb.connectors.mcp.spec import MCPSpecConfig
from relay_nb.connectors.plugins import find_connector_type, unknown_type_message
from relay_nb.errors import ConfigurationError
from relay_nb.redaction import is_variable_name, option_secrets

__all__ = [
    "ENTRY_TAGS",
    "ENV_REFERENCE",
    "SPEC_TYPES",
    "ConfigEntry",
    "ConnectorSpec",
    "HTTPSpecConfig",
    "MCPSpecConfig",
    "MongoSpecConfig",
    "PluginSpec",
    "SQLSpecConfig",
    "WebSearchSpecConfig",
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


def _aliases(*names: str) -> Any:
    """snake_case first, then the Relay-E config's camelCase spellings."""
    return Field(default=None, validation_alias=AliasChoices(*names))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SQLSpecConfig(_Strict):
    url: str
    tables: list[str] | None = _aliases("tables", "tableAllowlist", "table_allowlist")
    schemas: list[str] | None = None
    row_limit: int = Field(default=200, validation_alias=AliasChoices("row_limit", "rowLimit"))
    statement_timeout_s: float = Field(
        default=30.0, validation_alias=AliasChoices("statement_timeout_s", "statementTimeoutS")
    )
    sample_values: int = 0


class MongoSpecConfig(_Strict):
    url: str
    database: str | None = None
    collections: list[str] | None = _aliases(
        "collections", "collectionAllowlist", "collection_allowlist"
    )
    sample_size: int = Field(
        default=100, validation_alias=AliasChoices("sample_size", "sampleSize")
    )
    max_depth: int = 3
    row_limit: int = Field(default=200, validation_alias=AliasChoices("row_limit", "rowLimit"))
    timeout_s: float = 30.0


class HTTPAuthSpec(_Strict):
    type: Literal["bearer", "basic", "header"]
    token_env: str | None = _aliases("token_env", "tokenEnv")
    username_env: str | None = _aliases("username_env", "usernameEnv")
    password_env: str | None = _aliases("password_env", "passwordEnv")
    header: str | None = _aliases("header", "headerName", "header_name")


class HTTPSpecConfig(_Strict):
    base_url: str = Field(validation_alias=AliasChoices("base_url", "baseUrl"))
    auth: HTTPAuthSpec | None = None
    headers: dict[str, str] | None = _aliases("headers", "extraHeaders", "extra_headers")
    openapi: str | None = _aliases("openapi", "openApiUrl", "openapi_url")
    methods: list[str] = ["GET"]
    timeout_s: float = 30.0
    max_response_bytes: int = 5_000_000
    row_limit: int = Field(default=200, validation_alias=AliasChoices("row_limit", "rowLimit"))
    max_operations: int = 60


class WebSearchSpecConfig(_Strict):
    provider: Literal["tavily", "brave", "serper"] = "tavily"
    api_key_env: str | None = _aliases("api_key_env", "apiKeyEnv")
    endpoint: str | None = None
    max_results: int = 5
    timeout_s: float = 20.0


class _SpecBase(_Strict):
    id: str
    name: str | None = None
    description: str | None = None


class SQLSpec(_SpecBase):
    type: Literal["sql", "postgres", "postgresql", "mysql", "mariadb", "sqlite", "duckdb"]
    config: SQLSpecConfig


class MongoSpec(_SpecBase):
    type: Literal["mongo", "mongodb"]
    config: MongoSpecConfig


class HTTPSpec(_SpecBase):
    type: Literal["http"]
    config: HTTPSpecConfig


class WebSearchSpec(_SpecBase):
    type: Literal["websearch", "web_search"]
    config: WebSearchSpecConfig = WebSearchSpecConfig()


class MCPSpec(_SpecBase):
    type: Literal["mcp"]
    config: MCPSpecConfig


SPEC_TYPES = frozenset(
    tag
    for spec in (SQLSpec, MongoSpec, HTTPSpec, WebSearchSpec, MCPSpec)
    for tag in get_args(spec.model_fields["type"].annotation)
)
"""Every ``type`` a config entry may have (pydantic puts the one given into error paths)."""

ConnectorSpec = Annotated[
    SQLSpec | MongoSpec | HTTPSpec | WebSearchSpec | MCPSpec, Field(discriminator="type")
]
"""A built-in ``connectors[]`` entry of ``relay.config.json`` (see :data:`ConfigEntry`)."""


class PluginSpec(_SpecBase):
    """An entry of a type a plugin or a notebook cell registered (``relay_nb.ConnectorType``).

    Its ``config`` is checked by that type (its ``config_model``, or its factory's keyword
    parameters) during validation, so a mistake is reported as ``connectors[2].config.path``
    like a built-in's; relative ``path_options`` are read from the config file's directory
    (the validation context's ``base_dir``).
    """

    type: str
    config: dict[str, Any] = Field(default_factory=dict, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _known_type(cls, data: Any) -> Any:
        kind = data.get("type") if isinstance(data, Mapping) else None
        if isinstance(kind, str) and find_connector_type(kind) is None:
            raise PydanticCustomError(
                "unknown_connector_type", "{message}", {"message": unknown_type_message(kind)}
            )
        return data

    @field_validator("config")
    @classmethod
    def _checked_by_its_type(cls, config: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        ctype = find_connector_type(info.data.get("type", ""))
        if ctype is None:  # the type itself was refused: that error says it all
            return config
        base_dir = (info.context or {}).get("base_dir")
        return ctype.check_options(config, base_dir=base_dir)


def _entry_kind(value: Any) -> str | None:
    kind = value.get("type") if isinstance(value, Mapping) else getattr(value, "type", None)
    if not isinstance(kind, str):
        return None
    return "builtin" if kind in SPEC_TYPES else "plugin"


ENTRY_TAGS = frozenset({"builtin", "plugin"})
"""The tags :data:`ConfigEntry` adds to pydantic's error locations (before the type's own)."""

ConfigEntry = Annotated[
    Annotated[ConnectorSpec, Tag("builtin")] | Annotated[PluginSpec, Tag("plugin")],
    Discriminator(
        _entry_kind,
        custom_error_type="missing_connector_type",
        custom_error_message=(
            'an entry needs a "type": a built-in one (sql, postgres, mongo, http, websearch…) '
            "or an installed plugin's"
        ),
        custom_error_context={},
    ),
]
"""One ``connectors[]`` entry of ``relay.config.json``: a built-in spec, or a plugin's."""


def build_connector(
    spec: SQLSpec | MongoSpec | HTTPSpec | WebSearchSpec | MCPSpec | PluginSpec,
    *,
    base_dir: Path | None = None,
) -> Connector:
    """The live connector a (substituted) spec describes; relative file paths in it are
    resolved against ``base_dir`` (the config file's directory)."""
    check_connector_id(spec.id)
    common = {"name": spec.name, "description": spec.description}
    if isinstance(spec, PluginSpec):
        ctype = find_connector_type(spec.type)
        if ctype is None:
            raise ConfigurationError(f"connector type {spec.type!r} is no longer registered")
        return ctype.create(spec.id, spec.config, **common)
    if isinstance(spec, MCPSpec):
        from relay_nb.connectors.mcp import mcp_connector_from_config

        config = spec.config
        if config.cwd and base_dir is not None:  # a server's directory, next to the config
            config = config.model_copy(
                update={"cwd": str((base_dir / Path(config.cwd).expanduser()).resolve())}
            )
        return mcp_connector_from_config(spec.id, config, **common)
    if isinstance(spec, SQLSpec):
        from relay_nb.connectors.sql.connector import SQLConnector

        return SQLConnector(
            spec.id, spec.config.url, **spec.config.model_dump(exclude={"url"}), **common
        )
    if isinstance(spec, MongoSpec):
        from relay_nb.connectors.mongo import MongoConnector

        return MongoConnector(
            spec.id, spec.config.url, **spec.config.model_dump(exclude={"url"}), **common
        )
    if isinstance(spec, HTTPSpec):
        from relay_nb.connectors.http import HTTPConnector

        options = spec.config.model_dump(exclude={"base_url", "openapi", "auth"})
        openapi = spec.config.openapi
        if openapi and "://" not in openapi:
            path = Path(openapi).expanduser()
            openapi = str(path if base_dir is None else (base_dir / path).resolve())
        auth = spec.config.auth.model_dump(exclude_none=True) if spec.config.auth else None
        return HTTPConnector(
            spec.id, spec.config.base_url, auth=auth, openapi=openapi, **options, **common
        )
    from relay_nb.connectors.websearch import WebSearchConnector

    return WebSearchConnector(spec.id, **spec.config.model_dump(), **common)


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
    if kind in SPEC_TYPES:
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
    if kind not in SPEC_TYPES:
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
