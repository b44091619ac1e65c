"""Read an OpenAPI 3.x / Swagger 2.0 document and reduce it to what a model needs.

A full OpenAPI document is far too large for a prompt (Stripe's is megabytes), and most of it
— response schemas, examples, security schemes — does not help a model pick a call. What
helps is one line per operation: method, path, summary, and the parameters it can set
(name, where it goes, type, allowed values). This module produces those :class:`Operation`
records; :mod:`relay_nb.connectors.http.operations` ranks and renders them.

``$ref`` is followed only inside the document (``#/components/…``, ``#/parameters/…``): a
remote reference would be a fetch the analyst never asked for, so it is left unresolved.
YAML needs PyYAML, which relay_nb does not depend on; a YAML document without it fails with
a message that says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from relay_nb.errors import ConfigurationError
from relay_nb.untrusted import OPENAPI, load_json, load_yaml

__all__ = ["ApiSummary", "Operation", "Parameter", "parse_document", "summarise"]

_METHODS = ("get", "post", "put", "patch", "delete", "head", "options", "trace")
_SHOWN_LOCATIONS = {"query": "query", "path": "path", "formData": "form"}
_TYPE_NAMES = {"integer": "int", "boolean": "bool"}
_MAX_REF_DEPTH = 8
_MAX_ENUM = 8
_MAX_SUMMARY = 120
_WS = re.compile(r"\s+")


class Parameter(BaseModel):
    """One parameter the model can set (headers and cookies are the connector's business)."""

    model_config = ConfigDict(frozen=True)

    name: str
    location: str
    type: str = ""
    required: bool = False
    enum: tuple[str, ...] = ()
    default: str | None = None

    def text(self) -> str:
        parts = [f"{self.name}: {self.location}" + (f" {self.type}" if self.type else "")]
        if self.required and self.location != "path":
            parts.append("required")
        if self.enum:
            shown = "|".join(self.enum[:_MAX_ENUM])
            parts.append(f"enum {shown}" + ("|…" if len(self.enum) > _MAX_ENUM else ""))
        if self.default is not None:
            parts.append(f"default {self.default}")
        return ", ".join(parts)


class Operation(BaseModel):
    """One ``METHOD /path`` of the API, as the model is shown it."""

    model_config = ConfigDict(frozen=True)

    method: str
    path: str
    summary: str = ""
    parameters: tuple[Parameter, ...] = ()
    body: str | None = None
    deprecated: bool = False
    operation_id: str = ""
    tags: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}"

    def text(self) -> str:
        """``GET /orders — List orders (status: query string, enum paid|refunded; …)``."""
        line = self.label + (f" — {self.summary}" if self.summary else "")
        details = [p.text() for p in self.parameters]
        if self.body:
            details.append(f"body: {self.body}")
        if details:
            line += f" ({'; '.join(details)})"
        return line + (" [deprecated]" if self.deprecated else "")


class ApiSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    title: str = ""
    version: str = ""
    description: str = ""
    operations: tuple[Operation, ...] = ()


def parse_document(data: bytes, *, source: str) -> dict[str, Any]:
    """JSON, or YAML when PyYAML is importable; must be OpenAPI 3.x or Swagger 2.0."""
    text = data.decode("utf-8-sig", errors="replace")
    try:
        document = load_json(text, where=f"the OpenAPI document {source}", bounds=OPENAPI)
    except json.JSONDecodeError:
        document = _parse_yaml(text, source)
    if not isinstance(document, dict):
        raise ConfigurationError(f"the OpenAPI document {source} is not a JSON/YAML object")
    openapi, swagger = str(document.get("openapi", "")), str(document.get("swagger", ""))
    if not (openapi.startswith("3.") or swagger == "2.0"):
        raise ConfigurationError(
            f"{source} is not an OpenAPI 3.x or Swagger 2.0 document (no 'openapi: 3.x' or "
            "'swagger: \"2.0\"' field); pass the API's OpenAPI/Swagger JSON or YAML"
        )
    if not isinstance(document.get("paths", {}), dict):
        raise ConfigurationError(
            f"the OpenAPI document {source} has a 'paths' that is not an object"
        )
    return document


def _parse_yaml(text: str, source: str) -> Any:
    try:
        import yaml
    except ImportError:
        raise ConfigurationError(
            f"the OpenAPI document {source} is not JSON and PyYAML is not installed to read it "
            "as YAML; `pip install pyyaml`, or pass the JSON version of the document"
        ) from None
    try:
        return load_yaml(text, where=f"the OpenAPI document {source}", bounds=OPENAPI)[0]
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1})" if where is not None else ""
        raise ConfigurationError(
            f"the OpenAPI document {source} is neither valid JSON nor valid YAML{at}"
        ) from None


def summarise(document: Mapping[str, Any], *, base_path: str = "") -> ApiSummary:
    """Every operation of the document, in document order, paths as seen from the base URL."""
    info = document.get("info")
    if not isinstance(info, dict):
        info = {}
    prefix = _path_prefix(document, base_path)
    operations: list[Operation] = []
    for path, raw_item in document.get("paths", {}).items():
        item = _resolve(document, raw_item)
        if not isinstance(path, str) or not isinstance(item, dict):
            continue
        shared = item.get("parameters")
        for method in _METHODS:
            operation = item.get(method)
            if isinstance(operation, dict):
                operations.append(_operation(document, method, prefix + path, shared, operation))
    return ApiSummary(
        title=_clean(info.get("title")),
        version=_clean(info.get("version")),
        description=_clip(_clean(info.get("description")), 200),
        operations=tuple(operations),
    )


def _operation(
    document: Mapping[str, Any], method: str, path: str, shared: Any, operation: dict[str, Any]
) -> Operation:
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    body: str | None = None
    for raw in [*_as_list(shared), *_as_list(operation.get("parameters"))]:
        parameter = _resolve(document, raw)
        if not isinstance(parameter, dict) or not isinstance(parameter.get("name"), str):
            continue
        merged[(parameter["name"], str(parameter.get("in", "")))] = parameter  # op wins
    parameters = []
    for (name, location), parameter in merged.items():
        if location == "body":  # Swagger 2.0
            body = _schema_text(document, parameter.get("schema"))
        elif location in _SHOWN_LOCATIONS:
            parameters.append(_parameter(document, name, location, parameter))
    request_body = _resolve(document, operation.get("requestBody"))
    if isinstance(request_body, dict):  # OpenAPI 3.x
        body = _schema_text(document, _media_schema(request_body.get("content"))) or "JSON"
    summary = _clean(operation.get("summary")) or _first_sentence(operation.get("description"))
    return Operation(
        method=method.upper(),
        path=path,
        summary=_clip(summary, _MAX_SUMMARY),
        parameters=tuple(parameters),
        body=body,
        deprecated=operation.get("deprecated") is True,
        operation_id=_clean(operation.get("operationId")),
        tags=tuple(str(t) for t in _as_list(operation.get("tags")) if isinstance(t, str)),
    )


def _parameter(
    document: Mapping[str, Any], name: str, location: str, parameter: dict[str, Any]
) -> Parameter:
    # OpenAPI 3 puts the type in `schema` (or `content`); Swagger 2 on the parameter itself
    schema: Any = parameter.get("schema")
    if schema is None and isinstance(parameter.get("content"), dict):
        schema = _media_schema(parameter["content"])
    if schema is None:
        schema = parameter
    resolved = _resolve(document, schema)
    resolved = resolved if isinstance(resolved, dict) else {}
    enum = resolved.get("enum")
    if enum is None and isinstance(_resolve(document, resolved.get("items")), dict):
        enum = _resolve(document, resolved["items"]).get("enum")
    default = resolved.get("default", parameter.get("default"))
    return Parameter(
        name=name,
        location=_SHOWN_LOCATIONS[location],
        type=_schema_text(document, schema),
        required=parameter.get("required") is True or location == "path",
        enum=tuple(_clip(str(v), 40) for v in _as_list(enum) if v is not None),
        default=_clip(json.dumps(default), 30)
        if isinstance(default, (str, int, float, bool))
        else None,
    )


def _schema_text(document: Mapping[str, Any], schema: Any, depth: int = 0) -> str:
    """A short type: ``int``, ``string``, ``array of Order``, ``Order`` (a named $ref)."""
    if not isinstance(schema, dict) or depth > 3:
        return ""
    ref = schema.get("$ref")
    resolved = _resolve(document, schema)
    resolved = resolved if isinstance(resolved, dict) else {}
    kind = resolved.get("type")
    if isinstance(kind, list):  # OpenAPI 3.1: ["string", "null"]
        kind = "|".join(str(k) for k in kind if k != "null")
    if kind == "array":
        inner = _schema_text(document, resolved.get("items"), depth + 1)
        return f"array of {inner}" if inner else "array"
    if isinstance(ref, str) and kind in (None, "object"):
        return ref.rsplit("/", 1)[-1]
    if kind == "string" and resolved.get("format") in ("date", "date-time"):
        return str(resolved["format"])
    if isinstance(kind, str) and kind:
        return _TYPE_NAMES.get(kind, kind)
    for combinator in ("oneOf", "anyOf"):
        options = [_schema_text(document, s, depth + 1) for s in _as_list(resolved.get(combinator))]
        if any(options):
            return "|".join(o for o in options if o)
    return ""


def _media_schema(content: Any) -> Any:
    if not isinstance(content, dict) or not content:
        return None
    media = content.get("application/json") or next(iter(content.values()))
    return media.get("schema") if isinstance(media, dict) else None


def _resolve(document: Mapping[str, Any], node: Any) -> Any:
    """Follow local ``$ref`` pointers (``#/…``); a remote one resolves to nothing."""
    for _ in range(_MAX_REF_DEPTH):
        if not isinstance(node, dict) or "$ref" not in node:
            return node
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return None  # never fetched: the analyst did not ask for other documents
        node = document
        for token in ref[2:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
    return None  # a reference cycle


def _path_prefix(document: Mapping[str, Any], base_path: str) -> str:
    """What to put before the document's paths so they read relative to the base URL.

    Paths in a document are relative to its server URL (``servers[0]`` or ``basePath``). When
    the analyst's base URL is a prefix of that server path, the rest is the prefix.
    """
    if "swagger" in document:
        server_path = document.get("basePath") if isinstance(document.get("basePath"), str) else ""
    else:
        servers = _as_list(document.get("servers"))
        url = servers[0].get("url") if servers and isinstance(servers[0], dict) else None
        if not isinstance(url, str) or "{" in url:
            return ""
        try:
            server_path = urlsplit(url).path
        except ValueError:
            return ""
    server_path = (server_path or "").rstrip("/")
    if server_path == base_path or not server_path.startswith(base_path + "/"):
        return ""
    return server_path[len(base_path) :]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _clean(value: Any) -> str:
    return _WS.sub(" ", value).strip() if isinstance(value, str) else ""


def _first_sentence(value: Any) -> str:
    text = _clean(value)
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return match.group(1) if match else text


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
