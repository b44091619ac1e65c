"""``MCPConnector``: an MCP server's tools, resources and prompts as a relay_nb connector.

- **tools** become agent tools named ``<id>_<tool>``, with the server's description and input
  schema passed through. A call needs the user's approval unless the server marks the tool
  read-only (``annotations.readOnlyHint``; ignored with ``trust_read_only_hints=False``) or
  the analyst lists it in ``read_only_tools``. Results are mapped by
  :mod:`relay_nb.connectors.mcp.results`.
- **resources** (text ones, size-capped) are offered as :meth:`documents`, which the context
  layer ranks by the question into the prompt (priority 45, see
  :mod:`relay_nb.context.connector_documents`); binary ones are skipped with a note.
- **prompts** are listed (:meth:`prompts`, the prompt context, ``%relay --connectors``),
  never run: a server prompt is a template for a person to pick, not an instruction.

The server is contacted when the tools are first listed (``relay.connect`` does that, so a
server that does not start fails there) and kept connected on a background loop
(:class:`~relay_nb.connectors.mcp.client.MCPClientHost`) until :meth:`close`.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from relay_nb.connectors.base import Connector, ConnectorDocument, check_connector_id
from relay_nb.connectors.mcp.catalog import (
    Catalog,
    ServerPrompt,
    ServerTool,
    agent_tool_names,
    passthrough_model,
    read_catalog,
)
from relay_nb.connectors.mcp.client import MCPClientHost, import_sdk
from relay_nb.connectors.mcp.results import tool_result
from relay_nb.connectors.mcp.spec import MCPSpecConfig, resolve_launch
from relay_nb.errors import ConfigurationError, RelayError
from relay_nb.redaction import redact
from relay_nb.tools import Tool, ToolResult

__all__ = ["MCPConnector"]

_DESCRIPTION_CHARS = 300
_CONNECT_TIMEOUT_S = 30.0
"""Starting a server can take long (``npx`` fetching a package); a call's timeout is apart."""
_TEXT_MIME = re.compile(r"^(text/.*|application/(json|xml|yaml|x-yaml|toml|csv|sql|markdown))$")
_WORD = re.compile(r"[a-z0-9]+")


class MCPConnector(Connector):
    """One MCP server (stdio or streamable HTTP); see the module docstring."""

    kind = "mcp"

    def __init__(
        self,
        id: str,
        spec: MCPSpecConfig,
        *,
        name: str | None = None,
        description: str | None = None,
        warn: bool = True,
    ) -> None:
        self.id = check_connector_id(id)
        import_sdk()  # a missing SDK fails at connect, with the pip command
        self.spec = spec
        self.launch = resolve_launch(spec, self.id, warn=warn)
        self.target = self.launch.target
        self.name = name or id
        self.description = description
        self.timeout_s = float(spec.timeout_s)
        connect_timeout = spec.connect_timeout_s or _CONNECT_TIMEOUT_S
        self._host = MCPClientHost(
            self.launch, label=self.id, connect_timeout_s=connect_timeout, timeout_s=self.timeout_s
        )
        self._catalog: Catalog | None = None
        self._documents: list[ConnectorDocument] | None = None
        self._skipped: list[str] = []
        self._lock = threading.RLock()  # documents() reads the catalog under it

    # ------------------------------------------------------------------ what the server offers
    @property
    def catalog(self) -> Catalog:
        """The server's tools, resources and prompts, listed once and cached until
        :meth:`refresh` (connects on first use; the schema source prewarms it)."""
        if self._catalog is None:
            with self._lock:
                if self._catalog is None:
                    self._catalog = self._host.run(read_catalog, what="the listing of its tools")
        return self._catalog

    def server_tools(self) -> list[ServerTool]:
        """The server tools this connector exposes (after the ``tools`` allowlist)."""
        tools = list(self.catalog.tools)
        wanted = self.spec.tools
        known = {tool.name for tool in tools}
        for label, names in (
            ("tools", wanted or []),
            ("read_only_tools", self.spec.read_only_tools),
        ):
            unknown = sorted(set(names) - known)
            if unknown:
                raise ConfigurationError(
                    f"MCP server {self.id!r} has no tool(s) {', '.join(map(repr, unknown))} "
                    f"named in {label}; it has: {', '.join(sorted(known)) or 'none'}"
                )
        return tools if wanted is None else [t for t in tools if t.name in set(wanted)]

    def prompts(self) -> list[ServerPrompt]:
        """The prompt templates the server offers (listed for people, never run)."""
        return list(self.catalog.prompts)

    def documents(self) -> list[ConnectorDocument]:
        """The server's text resources (at most ``max_resources``, each cut to
        ``max_resource_chars``), read once and cached until :meth:`refresh`."""
        if not self.spec.resources:
            return []
        if self._documents is None:
            with self._lock:
                if self._documents is None:
                    self._documents, self._skipped = self._read_documents()
        return self._documents

    def _read_documents(self) -> tuple[list[ConnectorDocument], list[str]]:
        documents: list[ConnectorDocument] = []
        skipped: list[str] = []
        limit = self.spec.max_resource_chars
        for resource in self.catalog.resources:
            label = f"{resource.name} ({resource.mime_type or 'unknown type'})"
            if resource.mime_type and not _TEXT_MIME.match(resource.mime_type):
                skipped.append(f"{label}: binary, not read")
                continue
            if len(documents) >= self.spec.max_resources:
                skipped.append(f"{resource.name}: over max_resources={self.spec.max_resources}")
                continue
            try:
                read = self._host.run(
                    lambda client, uri=resource.uri: client.read_resource(uri),
                    what=f"the resource {resource.uri}",
                )
            except RelayError as exc:
                skipped.append(f"{resource.name}: could not be read ({_short(exc)})")
                continue
            texts = [c.text for c in read.contents if isinstance(getattr(c, "text", None), str)]
            if not texts:
                skipped.append(f"{label}: binary, not read")
                continue
            text = redact("\n\n".join(texts), extra=self.launch.secrets)
            if len(text) > limit:
                text = text[:limit] + f"\n[cut at {limit} characters]"
            documents.append(ConnectorDocument(title=resource.name, text=text, uri=resource.uri))
        return documents, skipped

    # ------------------------------------------------------------------ model-facing
    def tools(self) -> list[Tool]:
        tools = self.server_tools()
        names = agent_tool_names(self.id, tools)
        read_only = set(self.spec.read_only_tools)
        built = []
        for tool in tools:
            safe = tool.name in read_only or (
                self.spec.trust_read_only_hints and tool.read_only_hint
            )
            description = tool.description or f"The {tool.name} tool of the {self.name} MCP server."
            if not safe:
                description += " Each call needs the user's approval (it may change data)."
            built.append(
                Tool(
                    name=names[tool.name],
                    description=_clip(description, 1024),
                    input_model=passthrough_model(names[tool.name], tool.input_schema),
                    handler=self._handler(tool.name),
                    requires_approval=not safe,
                    timeout_s=self._host.connect_timeout_s + self.timeout_s + 5,
                    metadata={"connector": self.id, "kind": "mcp", "mcp_tool": tool.name},
                )
            )
        return built

    def _handler(self, server_name: str) -> Any:
        async def call(arguments: Any) -> ToolResult:
            values = dict(arguments.root)
            started = time.perf_counter()
            result = await self._host.arun(
                lambda client: client.call_tool(server_name, values),
                what=f"the call to its tool {server_name!r}",
            )
            return tool_result(
                result,
                connector_id=self.id,
                tool=server_name,
                arguments=values,
                elapsed_ms=(time.perf_counter() - started) * 1000,
                max_chars=self.spec.max_result_chars,
                secrets=self.launch.secrets,
            )

        return call

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Call one server tool directly (its server name), e.g. from a notebook cell; no
        approval is asked: the analyst calling it is the approval."""
        server_names = {t.name for t in self.server_tools()}
        if name not in server_names:
            raise ConfigurationError(
                f"MCP server {self.id!r} has no tool {name!r}; it has: "
                + ", ".join(sorted(server_names))
            )
        started = time.perf_counter()
        result = self._host.run(
            lambda client: client.call_tool(name, dict(arguments or {})),
            what=f"the call to its tool {name!r}",
        )
        return tool_result(
            result,
            connector_id=self.id,
            tool=name,
            arguments=dict(arguments or {}),
            elapsed_ms=(time.perf_counter() - started) * 1000,
            max_chars=self.spec.max_result_chars,
            secrets=self.launch.secrets,
        )

    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        label = self.id + (f" ({self.name})" if self.name != self.id else "")
        head = [f"### MCP connector: {label} — {self.target}"]
        if self.description:
            head.append(self.description)
        try:
            catalog = self.catalog
            tools = self.server_tools()
        except RelayError as exc:  # the prompt still says what this connector is
            head.append(f"The server could not be reached ({_short(exc)}); its tools may fail.")
            return "\n".join(head)
        server = " ".join(p for p in (catalog.server_name, catalog.server_version) if p)
        if server or catalog.instructions:
            about = f"Server: {server or 'unnamed'}"
            if catalog.instructions:
                about += f" — {_clip(catalog.instructions, 600)}"
            head.append(about)
        names = agent_tool_names(self.id, tools)
        tool_lines = []
        for tool in tools:
            safe = tool.name in self.spec.read_only_tools or (
                self.spec.trust_read_only_hints and tool.read_only_hint
            )
            flag = "read-only" if safe else "needs approval"
            text = _clip(" ".join(tool.description.split()), _DESCRIPTION_CHARS)
            tool_lines.append(f"- {names[tool.name]} ({flag}): {text}")
        tail = []
        if self.spec.resources and catalog.resources:
            shown = ", ".join(r.name for r in catalog.resources[:20])
            tail.append(
                f"Resources ({len(catalog.resources)}): {shown}. Passages relevant to the "
                f"question appear as context from documents:{self.id}."
            )
            skipped = list(self._skipped) if self._documents is not None else []
            if skipped:
                tail.append("Not read: " + "; ".join(skipped[:10]))
        if catalog.prompts:
            listed = "; ".join(
                p.signature() + (f" — {_clip(p.description, 120)}" if p.description else "")
                for p in catalog.prompts[:20]
            )
            tail.append(f"Prompts the server offers (for the user to pick, not run): {listed}")
        tail += [f"Note: {note}" for note in catalog.notes]
        lines = [
            *head,
            f"Tools ({len(tool_lines)}):" if tool_lines else "Tools: none.",
            *tool_lines,
        ]
        text = "\n".join([*lines, *tail])
        if max_tokens is not None and len(text) > max_tokens * 4:
            text = _fit(head, tool_lines, tail, max_tokens * 4, question)
        # the server wrote the descriptions: it must not put a credential into the prompt
        return redact(text, extra=self.launch.secrets)

    def object_names(self) -> list[str]:
        catalog = self.catalog
        return [
            *(t.name for t in self.server_tools()),
            *(f"resource:{r.uri}" for r in catalog.resources),
            *(f"prompt:{p.name}" for p in catalog.prompts),
        ]

    # ------------------------------------------------------------------ lifecycle
    def refresh(self) -> None:
        """Forget the listing and the resources; the next use lists them again (and may
        reconnect after a failed reconnect)."""
        with self._lock:
            self._catalog = None
            self._documents = None
            self._skipped = []
        self._host.reset()

    def invalidate(self) -> None:
        self.refresh()

    def close(self) -> None:
        """End the session and stop the server process (stdio)."""
        self._host.close()

    def stderr_tail(self, lines: int = 20) -> str:
        """The server's last stderr lines (stdio), redacted: for debugging a server."""
        return self._host.stderr_tail(lines)

    def __repr__(self) -> str:
        return f"<MCPConnector {self.id!r} {self.target}>"


def _fit(
    head: list[str], tool_lines: list[str], tail: list[str], chars: int, question: str | None
) -> str:
    """Cut to ``chars``: the tools the question names first, then the others, then notes."""
    wanted = set(_WORD.findall((question or "").lower()))

    def score(line: str) -> int:
        return -len(wanted & set(_WORD.findall(line.lower())))

    ordered = sorted(tool_lines, key=score) if wanted else tool_lines
    out = list(head)
    used = sum(len(line) + 1 for line in out)
    kept = 0
    for line in [*ordered, *tail]:
        if used + len(line) + 1 > chars:
            continue
        out.append(line)
        used += len(line) + 1
        kept += line in tool_lines
    if kept < len(tool_lines):
        out.append(
            f"({len(tool_lines) - kept} more tools not listed here; their names say what they do)"
        )
    return "\n".join(out)


def _short(exc: BaseException) -> str:
    return _clip(redact(str(exc)), 200)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
