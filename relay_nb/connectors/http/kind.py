"""The ``http`` connector kind: its config options and its :class:`ConnectorType` (the
``http://`` and ``https://`` schemes; a relative ``openapi`` path in a config file is read
from the file's directory; defaults are
:class:`~relay_nb.connectors.http.connector.HTTPConnector`'s)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from relay_nb.connectors.types import ConnectorType, LazyFactory

__all__ = ["HTTP_TYPE", "HTTPAuthOptions", "HTTPOptions"]


def _alias(*names: str) -> Any:
    return Field(default=None, validation_alias=AliasChoices(*names))


class HTTPAuthOptions(BaseModel):
    """``auth`` in a config file: secrets only by their environment variable's name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["bearer", "basic", "header"]
    token_env: str | None = _alias("token_env", "tokenEnv")
    username_env: str | None = _alias("username_env", "usernameEnv")
    password_env: str | None = _alias("password_env", "passwordEnv")
    header: str | None = _alias("header", "headerName", "header_name")


class HTTPOptions(BaseModel):
    """An ``http`` config entry's ``config``; a left-out option takes the connector's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(validation_alias=AliasChoices("base_url", "baseUrl"))
    auth: HTTPAuthOptions = Field(default=None)
    headers: dict[str, str] = _alias("headers", "extraHeaders", "extra_headers")
    openapi: str = _alias("openapi", "openApiUrl", "openapi_url")
    methods: list[str] = Field(default=None)
    timeout_s: float = Field(default=None)
    max_response_bytes: int = Field(default=None)
    max_value_bytes: int = Field(default=None)
    max_result_bytes: int = Field(default=None)
    row_limit: int = _alias("row_limit", "rowLimit")
    max_operations: int = Field(default=None)


def _from_url(url: Any) -> Mapping[str, Any]:
    return {"base_url": url}


HTTP_TYPE = ConnectorType(
    name="http",
    factory=LazyFactory("relay_nb.connectors.http.connector:HTTPConnector"),
    config_model=HTTPOptions,
    url_schemes=("http", "https"),
    from_url=_from_url,
    path_options=("openapi",),
    description="an HTTP API under a fixed base URL",
    factory_defaults=True,
    python_keywords=True,
    builtin=True,
)
