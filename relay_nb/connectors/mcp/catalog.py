"""What an MCP server offers, read once per connection: its tools, resources and prompts.

Also the two translations the agent needs: a server tool name into an agent tool name
(``<connector id>_<tool>``, within the charset and length every model provider accepts),
and a server's raw JSON input schema into the pydantic input model a ``Tool`` carries.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import RootModel

from relay_nb.errors import ConfigurationError

__all__ = [
    "MAX_SCHEMA_CHARS",
    "MAX_TOOLS",
    "Catalog",
    "ServerPrompt",
    "ServerResource",
    "ServerTool",
    "agent_tool_names",
    "passthrough_model",
    "read_catalog",
]

_MAX_TOOL_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_MAX_PAGES = 50
"""A paginating server that never stops cannot hang a listing."""
MAX_TOOLS = 128
"""Tools offered to the model from one server: each is declared in every model request, so
a server listing thousands would cost megabytes per request (a red team's listed 25,000)."""
MAX_SCHEMA_CHARS = 32_000
"""Characters of one tool's input schema (as JSON); a tool with a larger one is left out."""


@dataclass(frozen=True)
class ServerTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    title: str | None = None
    read_only_hint: bool = False


@dataclass(frozen=True)
class ServerResource:
    uri: str
    name: str
    description: str = ""
    mime_type: str | None = None
    size: int | None = None


@dataclass(frozen=True)
class ServerPrompt:
    name: str
    description: str = ""
    arguments: tuple[tuple[str, bool], ...] = ()
    """``(name, required)`` for each argument."""

    def signature(self) -> str:
        args = ", ".join(name if required else f"{name}?" for name, required in self.arguments)
        return f"{self.name}({args})"


@dataclass(frozen=True)
class Catalog:
    server_name: str = ""
    server_version: str = ""
    instructions: str = ""
    tools: tuple[ServerTool, ...] = ()
    resources: tuple[ServerResource, ...] = ()
    prompts: tuple[ServerPrompt, ...] = ()
    notes: tuple[str, ...] = field(default=())
    """What could not be listed (e.g. a server that advertises prompts but fails to list
    them): said in the prompt context instead of failing the connection."""


async def read_catalog(client: Any) -> Catalog:
    """List everything the server advertises, page by page (``client``: an ``mcp.Client``)."""
    capabilities = client.server_capabilities
    info = client.server_info
    notes: list[str] = []
    listed = (
        await _all(client.list_tools, "tools", most=MAX_TOOLS + 1) if capabilities.tools else []
    )
    tools: list[ServerTool] = []
    oversized: list[str] = []
    for tool in listed:
        schema = _object_schema(tool.input_schema)
        if len(json.dumps(schema, default=str)) > MAX_SCHEMA_CHARS:
            oversized.append(str(tool.name)[:64])
            continue
        tools.append(
            ServerTool(
                name=tool.name,
                description=(tool.description or tool.title or "").strip(),
                input_schema=schema,
                title=tool.title,
                read_only_hint=bool(tool.annotations and tool.annotations.read_only_hint),
            )
        )
    if oversized:
        notes.append(
            f"{len(oversized)} tool(s) left out, their input schema over {MAX_SCHEMA_CHARS:,} "
            f"characters: {', '.join(oversized[:5])}"
        )
    if len(tools) > MAX_TOOLS:
        tools = tools[:MAX_TOOLS]
        notes.append(
            f"the server lists more than {MAX_TOOLS} tools; the first {MAX_TOOLS} are offered "
            "(choose others with tools=[...])"
        )
    resources: list[ServerResource] = []
    if capabilities.resources is not None:
        try:
            resources = [
                ServerResource(
                    uri=str(r.uri),
                    name=r.name or str(r.uri),
                    description=(r.description or "").strip(),
                    mime_type=r.mime_type,
                    size=r.size,
                )
                for r in await _all(client.list_resources, "resources")
            ]
        except Exception as exc:  # resources are context, not the connection
            notes.append(f"resources could not be listed ({type(exc).__name__})")
    prompts: list[ServerPrompt] = []
    if capabilities.prompts is not None:
        try:
            prompts = [
                ServerPrompt(
                    name=p.name,
                    description=(p.description or "").strip(),
                    arguments=tuple((a.name, bool(a.required)) for a in p.arguments or ()),
                )
                for p in await _all(client.list_prompts, "prompts")
            ]
        except Exception as exc:
            notes.append(f"prompts could not be listed ({type(exc).__name__})")
    return Catalog(
        server_name=(info.name if info else "") or "",
        server_version=(info.version if info else "") or "",
        instructions=(client.instructions or "").strip(),
        tools=tuple(tools),
        resources=tuple(resources),
        prompts=tuple(prompts),
        notes=tuple(notes),
    )


async def _all(method: Any, attribute: str, *, most: int | None = None) -> list[Any]:
    """Every item, page by page: at most :data:`_MAX_PAGES` pages, and ``most`` items."""
    items: list[Any] = []
    cursor = None
    for _ in range(_MAX_PAGES):
        page = await method(cursor=cursor)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not cursor or (most is not None and len(items) >= most):
            break
    return items if most is None else items[:most]


def _object_schema(schema: Any) -> dict[str, Any]:
    """Tool inputs are JSON objects; providers refuse a schema without ``type: object``."""
    schema = dict(schema) if isinstance(schema, dict) else {}
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    return schema


def agent_tool_names(
    connector_id: str, tools: list[ServerTool], *, lenient: bool = False
) -> dict[str, str]:
    """``{server tool name: agent tool name}``; two server tools that would share one agent
    name are refused, naming both — or, ``lenient`` (a background re-list, which must not
    fail the session's turns), the second is left out."""
    names: dict[str, str] = {}
    owner: dict[str, str] = {}
    for tool in tools:
        agent = _agent_name(connector_id, tool.name)
        if agent in owner and lenient:
            continue
        if agent in owner:
            raise ConfigurationError(
                f"MCP server {connector_id!r} has tools {owner[agent]!r} and {tool.name!r}, "
                f"which both become the tool name {agent!r}; keep one with tools=[...]"
            )
        owner[agent] = tool.name
        names[tool.name] = agent
    return names


def _agent_name(connector_id: str, name: str) -> str:
    """``<id>_<name>`` with anything but letters, digits, ``_`` and ``-`` as ``_``; cut to
    64 characters with a short hash of the full name when too long (so cut names differ)."""
    safe = _UNSAFE.sub("_", name).strip("_") or "tool"
    agent = f"{connector_id}_{safe}"
    if len(agent) <= _MAX_TOOL_NAME:
        return agent
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{agent[: _MAX_TOOL_NAME - 9]}_{digest}"


class _PassthroughInput(RootModel[dict[str, Any]]):
    """Any JSON object; advertises the server's own schema instead of pydantic's.

    The server validates the arguments itself (and reports bad ones as an error result the
    model reads), so relay_nb neither re-implements JSON Schema nor narrows what the server
    accepts; the model sees exactly the schema the server published.
    """

    relay_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.relay_schema)


def passthrough_model(agent_name: str, schema: dict[str, Any]) -> type[_PassthroughInput]:
    """An input model for one tool: validation accepts any object, the schema is ``schema``."""
    title = "".join(part.capitalize() for part in re.split(r"[_-]+", agent_name)) or "Tool"
    return type(
        f"{title}Input",
        (_PassthroughInput,),
        {"relay_schema": copy.deepcopy(schema), "__module__": __name__},
    )
