"""The ``http`` connector kind: its options and its :class:`ConnectorType` (the ``http://``
and ``https://`` schemes; a relative ``openapi`` path in a config file is read from the
file's directory). Each option is declared once below, with the default
:class:`~relay_nb.connectors.http.connector.HTTPConnector` takes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.options import max_result_bytes, max_value_bytes, option, required
from relay_nb.connectors.types import ConnectorType, LazyFactory

__all__ = ["HTTP_TYPE", "HTTPAuthOptions", "HTTPOptions", "HTTPPythonOptions"]


class HTTPAuthOptions(BaseModel):
    """``auth`` in a config file: secrets only by their environment variable's name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["bearer", "basic", "header"]
    token_env: str | None = option(
        None, "the variable holding the token (bearer, header)", "token_env", "tokenEnv"
    )
    username_env: str | None = option(
        None, "the variable holding the user name (basic)", "username_env", "usernameEnv"
    )
    password_env: str | None = option(
        None, "the variable holding the password (basic)", "password_env", "passwordEnv"
    )
    header: str | None = option(
        None, "the header the token goes in (header)", "header", "headerName", "header_name"
    )


class HTTPOptions(BaseModel):
    """An ``http`` config entry's ``config``; a left-out option takes the connector's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = required(
        "the API's base URL; every path the model asks for stays under it "
        "(``relay.connect``'s target)",
        "base_url",
        "baseUrl",
    )
    auth: HTTPAuthOptions = option(
        None,
        'credentials from environment variables: ``{"type": "bearer", "token_env": "VAR"}`` '
        '(or ``"basic"`` with ``username_env``/``password_env``, ``"header"`` with ``header``)',
    )
    headers: dict[str, str] = option(
        None,
        "headers sent with every request (a secret one as ``${VAR}`` in a config file)",
        "headers",
        "extraHeaders",
        "extra_headers",
    )
    openapi: str = option(
        None,
        "an OpenAPI document (a file or a URL) whose operations the model reads",
        "openapi",
        "openApiUrl",
        "openapi_url",
    )
    methods: list[str] = option(
        ("GET",), "the methods the model may call; any but GET makes each call need approval"
    )
    timeout_s: float = option(30.0, "seconds for one request and decoding its answer")
    max_response_bytes: int = option(
        5_000_000, "bytes a response may have, counted after decompression"
    )
    max_value_bytes: int = max_value_bytes()
    max_result_bytes: int = max_result_bytes()
    row_limit: int = option(
        200,
        "records of a JSON list (or rows of a CSV body) a result keeps",
        "row_limit",
        "rowLimit",
    )
    max_operations: int = option(
        60, "OpenAPI operations shown to the model at most (the best matches to the question)"
    )


class HTTPPythonOptions(HTTPOptions):
    """Every ``relay.connect`` / ``HTTPConnector`` keyword: the config file's options, and
    the one only Python passes."""

    transport: Any = option(
        None, "an ``httpx.AsyncBaseTransport`` requests go through (a test's, a proxy's)"
    )


def _from_url(url: Any) -> Mapping[str, Any]:
    return {"base_url": url}


HTTP_TYPE = ConnectorType(
    name="http",
    factory=LazyFactory("relay_nb.connectors.http.connector:HTTPConnector"),
    config_model=HTTPOptions,
    keywords_model=HTTPPythonOptions,
    url_schemes=("http", "https"),
    from_url=_from_url,
    path_options=("openapi",),
    description="an HTTP API under a fixed base URL",
    factory_defaults=True,
    python_keywords=True,
    builtin=True,
)
