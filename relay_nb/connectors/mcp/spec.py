"""What an MCP connector connects to: the server's settings (:class:`MCPSpecConfig`, the fields
of the ``MCP(...)`` descriptor in :mod:`~relay_nb.connectors.mcp.descriptor` and the JSON config
form) and the launch they resolve to (environment variables read, secrets registered).

Secrets follow the HTTP connector's rule (:mod:`relay_nb.connectors.http.auth`): they are
named by environment variable — ``env=["GITHUB_TOKEN"]`` passes one through to the server
process, ``headers_env={"X-Api-Key": "DOCS_API_KEY"}`` sends one as a header,
``auth={"type": "bearer", "token_env": "DOCS_TOKEN"}`` — and read when the connector is
built, so a missing one fails then with its name. Values written inline (``env_values``,
``headers``) work for settings, and warn with :class:`InlineSecretWarning` when their name
looks like a credential.

What is redacted (from errors, tool results, resources and the prompt): the values of
environment variables whose name looks like a credential (``is_secret_name`` in
:mod:`relay_nb.redaction`, the name in the server or here), the password in any value that is
a URL, every header value read from the environment (``headers_env``, ``auth``) and the
password in the server URL. Plain settings (a directory, a region) are not: redacting them
would mangle every result that mentions them.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from relay_nb.connectors.bounds import check_byte_limits
from relay_nb.connectors.http.auth import (
    HTTPAuth,
    InlineSecretWarning,
    auth_headers,
    check_extra_headers,
    coerce_auth,
)
from relay_nb.connectors.options import max_result_bytes, max_value_bytes, option
from relay_nb.errors import ConfigurationError
from relay_nb.redaction import (
    is_secret_name,
    is_variable_name,
    redact,
    redact_url,
    register_secret,
    url_secrets,
)

__all__ = ["Launch", "MCPSpecConfig", "resolve_launch", "validate_spec"]


class MCPSpecConfig(BaseModel):
    """An MCP server as a ``relay.config.json`` entry's ``config`` (and the fields of
    :class:`~relay_nb.connectors.mcp.descriptor.MCP`): ``command`` (stdio) or ``url``
    (streamable HTTP), exactly one.

    ``env`` names variables passed through to the server process: a list of names, or a
    mapping ``{"NAME_IN_SERVER": "NAME_HERE"}``. ``timeout_s`` bounds each request,
    ``connect_timeout_s`` (default 30) starting the server and the MCP handshake.
    ``read_only_tools`` lists server tools the analyst declares safe to run without
    approval; ``tools`` keeps only the named ones. A tool's records keep at most
    ``max_result_bytes`` (16 MiB) with values cut at ``max_value_bytes`` (1 MiB); a
    streamable-HTTP reply over twice ``max_result_bytes`` (plus 1 MiB) is not read
    (:mod:`~relay_nb.connectors.mcp.transport`).
    """

    # a value given where a name belongs may be a secret: validation errors never echo input
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, hide_input_in_errors=True
    )

    command: list[str] | None = option(
        None,
        'the program that serves over stdio: ``["python", "-m", "my_server"]`` (or one string)',
    )
    args: list[str] = Field(
        default_factory=list, description="more arguments for ``command``'s program"
    )
    env: list[str] | dict[str, str] | None = option(
        None,
        'variables passed through to a stdio server: names, or ``{"NAME_THERE": "NAME_HERE"}``',
    )
    env_values: dict[str, str] | None = option(
        None,
        "plain settings for a stdio server's environment (a secret-looking name warns)",
        "env_values",
        "envValues",
    )
    cwd: str | None = option(None, "a stdio server's working directory")
    url: str | None = option(
        None, "a streamable-HTTP server's URL (``http://127.0.0.1:8000/mcp``), not ``command``"
    )
    headers: dict[str, str] | None = option(None, "headers sent to a ``url`` server")
    headers_env: dict[str, str] | None = option(
        None,
        'headers read from environment variables: ``{"X-Api-Key": "VAR"}``',
        "headers_env",
        "headersEnv",
    )
    auth: HTTPAuth | None = option(
        None, "a ``url`` server's credentials from environment variables (as HTTP's ``auth``)"
    )
    timeout_s: float = option(
        30.0, "seconds one request to the server may take", "timeout_s", "timeoutS"
    )
    connect_timeout_s: float | None = option(
        None,
        "seconds for starting the server and the MCP handshake; None: 30",
        "connect_timeout_s",
        "connectTimeoutS",
    )
    read_only_tools: list[str] = option(
        [],
        "the server's tools you declare safe to run without approval",
        "read_only_tools",
        "readOnlyTools",
    )
    tools: list[str] | None = option(None, "keep only these of the server's tools; None: all")
    trust_read_only_hints: bool = option(
        True,
        "run a tool the server marks ``readOnlyHint`` without approval (False: only "
        "``read_only_tools``)",
        "trust_read_only_hints",
        "trustReadOnlyHints",
    )
    resources: bool = option(True, "the server's text resources become prompt context")
    max_resources: int = option(20, "resources read at most", "max_resources", "maxResources")
    max_resource_chars: int = option(
        20_000, "characters kept of each resource", "max_resource_chars", "maxResourceChars"
    )
    max_result_chars: int = option(
        4000,
        "characters of a tool's text result the model reads",
        "max_result_chars",
        "maxResultChars",
    )
    max_value_bytes: int = max_value_bytes("max_value_bytes", "maxValueBytes")
    max_result_bytes: int = max_result_bytes("max_result_bytes", "maxResultBytes")

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        command = data.get("command")
        if isinstance(command, str):  # "npx -y @modelcontextprotocol/server-filesystem ."
            data["command"] = shlex.split(command)
        auth = data.get("auth")
        if auth is not None and not isinstance(auth, HTTPAuth):
            try:
                data["auth"] = coerce_auth(auth)
            except ConfigurationError as exc:
                raise ValueError(str(exc)) from None
        return data

    @model_validator(mode="after")
    def _consistent(self) -> MCPSpecConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give exactly one of command=[...] (a server started over stdio) or "
                "url='http://host:port/mcp' (a streamable-HTTP server)"
            )
        if self.command is not None and (not self.command or not self.command[0].strip()):
            raise ValueError("command must name the program to run, e.g. ['python', '-m', 'srv']")
        if self.url is not None:
            scheme = urlsplit(self.url).scheme.lower()
            if scheme not in ("http", "https") or not urlsplit(self.url).hostname:
                raise ValueError("url must be an http(s) URL such as 'http://127.0.0.1:8000/mcp'")
            for secret in url_secrets(self.url):
                register_secret(secret)
        http_only = ("headers", "headers_env", "auth")
        if self.command is not None and any(getattr(self, f) for f in http_only):
            raise ValueError("headers, headers_env and auth are for url= servers only")
        stdio_only = ("env", "env_values", "cwd")
        if self.url is not None and (any(getattr(self, f) for f in stdio_only) or self.args):
            raise ValueError("args, env, env_values and cwd are for command= servers only")
        for name in _env_sources(self.env).values():
            _check_env_name(name, "env")
        for name in (self.headers_env or {}).values():
            _check_env_name(name, "headers_env")
        for name in self.env_values or {}:
            _check_env_name(name, "env_values")
        for what in ("timeout_s", "connect_timeout_s"):
            value = getattr(self, what)
            if value is not None and not 0 < value <= 3600:
                raise ValueError(f"{what} must be between 0 and 3600 seconds, got {value!r}")
        for what in ("max_resources", "max_resource_chars", "max_result_chars"):
            if getattr(self, what) < 1:
                raise ValueError(f"{what} must be at least 1")
        try:
            check_byte_limits(self.max_value_bytes, self.max_result_bytes)
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"


def validate_spec(data: dict[str, Any]) -> MCPSpecConfig:
    """``data`` as settings; the first problem is a :class:`ConfigurationError` that never
    echoes a value (it may be a secret)."""
    try:
        return MCPSpecConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown field; see MCPSpecConfig for the fields an MCP server takes"
        raise ConfigurationError(f"MCP {where + ': ' if where else ''}{message}") from None


# --------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class Launch:
    """A resolved server: what to start (stdio) or where to connect (HTTP), with values.

    ``repr`` and ``target`` never show a value from the environment or a header.
    """

    transport: Literal["stdio", "http"]
    target: str
    command: str = ""
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict, repr=False)
    url: str = field(default="", repr=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """The values handed to the server that are credentials (see the module docstring):
    redacted from errors, results, resources and the prompt."""


def resolve_launch(spec: MCPSpecConfig, connector_id: str, *, warn: bool = True) -> Launch:
    """Read the environment variables ``spec`` names; fails naming a missing one."""
    if spec.command is not None:
        env: dict[str, str] = {}
        for child, parent in _env_sources(spec.env).items():
            shown = child if is_variable_name(child) else "(unnamed)"
            env[child] = _env_value(parent, connector_id, f"environment variable {shown}")
        for child, value in (spec.env_values or {}).items():
            if warn and is_secret_name(child):
                _warn_inline(connector_id, f"env_values[{child!r}]", f'env=["{child}"]')
            env[child] = value
        secrets = _env_secrets(env, _env_sources(spec.env))
        for value in secrets:
            register_secret(value)
        argv = [*spec.command, *spec.args]
        cwd = os.path.expanduser(spec.cwd) if spec.cwd else None
        if cwd is not None and not os.path.isdir(cwd):
            raise ConfigurationError(
                redact(f"MCP server {connector_id!r}: cwd {cwd} is not a directory")
            )
        return Launch(
            transport="stdio",
            # the program's name, not its path: a venv's interpreter path says nothing to a
            # reader of the status table and differs on every machine
            target="stdio: " + shlex.join([os.path.basename(argv[0]) or argv[0], *argv[1:]]),
            command=argv[0],
            args=tuple(argv[1:]),
            cwd=cwd,
            env=env,
            secrets=secrets,
        )
    assert spec.url is not None  # the validator requires one of the two
    extra = check_extra_headers(spec.headers)
    if warn:
        for header in extra:
            if _secret_header(header):
                _warn_inline(
                    connector_id, f"header {header!r}", f'headers_env={{"{header}": "VAR"}}'
                )
    from_env = {
        header: _env_value(variable, connector_id, f"header {header}")
        for header, variable in (spec.headers_env or {}).items()
    }
    from_env = check_extra_headers(from_env)
    for value in from_env.values():
        register_secret(value)
    credentials = auth_headers(spec.auth, connector_id)
    headers = {**extra, **from_env, **credentials}
    if "authorization" in {h.lower() for h in headers} and urlsplit(spec.url).username:
        raise ConfigurationError(
            f"MCP server {connector_id!r}: the URL carries a user name and password and an "
            "Authorization header is set too; give the credentials one way"
        )
    if len({h.lower() for h in headers}) < len(headers):
        raise ConfigurationError(
            f"MCP server {connector_id!r}: a header is set twice (headers, headers_env, auth); "
            "give each header once"
        )
    return Launch(
        transport="http",
        target=redact_url(spec.url),
        url=spec.url,
        headers=headers,
        secrets=tuple([*from_env.values(), *credentials.values(), *url_secrets(spec.url)]),
    )


def _env_sources(env: list[str] | dict[str, str] | None) -> dict[str, str]:
    """``{name in the server: name here}`` for the variables passed through."""
    if env is None:
        return {}
    if isinstance(env, dict):
        return dict(env)
    return {name: name for name in env}


def _env_secrets(env: Mapping[str, str], sources: Mapping[str, str]) -> tuple[str, ...]:
    """The values of ``env`` that are credentials: named like one (in the server, or the
    variable read here), or the password and secret options inside a URL value."""
    found: list[str] = []
    for child, value in env.items():
        if is_secret_name(child) or is_secret_name(sources.get(child, child)):
            found.append(value)
        elif "://" in value:
            with contextlib.suppress(ValueError):  # not a URL after all
                found += url_secrets(value)
    return tuple(dict.fromkeys(found))


def _check_env_name(name: str, where: str) -> None:
    if not is_variable_name(name):
        raise ValueError(
            f"{where} must hold environment variable names (e.g. 'GITHUB_TOKEN'), not values"
        )


def _env_value(variable: str, connector_id: str, what: str) -> str:
    # a literal where a name belongs (a config file's ${VAR} substituted into env) may be a
    # secret: such a "name" is never quoted, only said to be in the wrong place
    if not is_variable_name(variable):
        raise ConfigurationError(
            f"MCP server {connector_id!r}: a value was given where an environment variable "
            "name was expected; env maps names to names; put values in env_values"
        )
    # redacted all the same (belt and braces: the value of a name is never quoted either)
    value = os.environ.get(variable)
    if not value:
        state = "is empty" if value == "" else "is not set"
        raise ConfigurationError(
            redact(
                f"environment variable {variable} {state}; MCP server {connector_id!r} reads "
                f"its {what} from it. Set it before connecting (os.environ[{variable!r}] = '…' "
                f"in a cell, better a .env file or `export {variable}=…` before starting "
                "Jupyter)"
            )
        )
    if "\0" in value:
        raise ConfigurationError(
            redact(f"environment variable {variable} contains a NUL character")
        )
    return value


def _secret_header(name: str) -> bool:
    lower = name.lower()
    return lower in ("authorization", "proxy-authorization", "cookie") or is_secret_name(
        lower.replace("-", "_")
    )


def _warn_inline(connector_id: str, what: str, instead: str) -> None:
    warnings.warn(
        f"MCP server {connector_id!r}: {what} looks like a secret written inline, so it "
        f"travels with this notebook or config file; put it in an environment variable and "
        f"name it instead ({instead})",
        InlineSecretWarning,
        stacklevel=5,
    )
