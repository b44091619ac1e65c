"""``MCPConnector``: an MCP server's tools, resources and prompts as a relay_nb connector.

- **tools** become agent tools named ``<id>_<tool>``, with the server's description and input
  schema passed through. A call needs the user's approval unless the server marks the tool
  read-only (``annotations.readOnlyHint``; ignored with ``trust_read_only_hints=False``) or
  the analyst lists it in ``read_only_tools``. Results are mapped by
  :mod:`relay_nb.connectors.mcp.results`.
- **resources** (text ones, size-capped) are offered as :meth:`documents`, which the context
  layer ranks by the question into the prompt (see
  :mod:`relay_nb.context.connector_documents`); binary ones are skipped with a note.
- **prompts** are listed (:meth:`prompts`, the prompt context, ``%relay --connectors``),
  never run: a server prompt is a template for a person to pick, not an instruction.

The server is contacted when the tools are first listed (``relay.connect`` does that, so a
server that does not start fails there) and kept connected on a background loop
(:class:`~relay_nb.connectors.mcp.client.MCPClientHost`) until :meth:`close`.

Caching: the listing (tools, resources, prompts) and the resources read are kept. When the
registry's schema TTL expires, :meth:`invalidate` keeps them and re-reads them in a
background thread, swapping the new ones in only if that succeeds — so building a turn's
tools never waits on the server, and a server that went away leaves the last good listing
(its tool calls then fail as tool errors). A swapped-in listing with different tools bumps
:attr:`MCPConnector.tools_version`, so the registry rebuilds the tools it offers; a tool named
in ``tools``/``read_only_tools`` that a re-list no longer has is left out with a note in the
prompt (at connect and :meth:`refresh` it is a ConfigurationError). After a failed re-list,
prompts no longer wait for the next try. :meth:`refresh` (``relay.refresh(id)``) re-reads
now and reconnects a connection given up on. No lock is held while the server is asked.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass, field
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
from relay_nb.connectors.mcp.text import redacted_clip
from relay_nb.connectors.mcp.transport import message_limit
from relay_nb.errors import ConfigurationError, RelayError
from relay_nb.redaction import known_secrets, redact
from relay_nb.tools import Tool, ToolResult

__all__ = ["MCPConnector"]

_DESCRIPTION_CHARS = 300
_CONNECT_TIMEOUT_S = 30.0
"""Starting a server can take long (``npx`` fetching a package); a call's timeout is apart."""
_TEXT_MIME = re.compile(r"^(text/.*|application/(json|xml|yaml|x-yaml|toml|csv|sql|markdown))$")
_WORD = re.compile(r"[a-z0-9]+")
_REFRESH_WAIT_S = 4.0
"""How long a prompt waits for a background re-list before using the previous listing (well
inside the context sources' 10 s timeout)."""
logger = logging.getLogger("relay_nb.connectors.mcp")


@dataclass
class _Reload:
    """One background re-read after :meth:`MCPConnector.invalidate`."""

    generation: int
    listed: threading.Event = field(default_factory=threading.Event)
    """Set when the listing was re-read (or failed to be)."""
    finished: threading.Event = field(default_factory=threading.Event)
    """Set when the resources were re-read too (or that failed)."""


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
        self.startup_timeout_s = connect_timeout + self.timeout_s
        """Starting the server, its handshake and the first listing (``check_reachable``)."""
        self._host = MCPClientHost(
            self.launch,
            label=self.id,
            connect_timeout_s=connect_timeout,
            timeout_s=self.timeout_s,
            max_message_bytes=message_limit(spec.max_result_bytes),
        )
        # the cached state; the lock guards it and is never held while the server is asked
        self._lock = threading.Lock()
        self._catalog: Catalog | None = None
        self._documents: list[ConnectorDocument] | None = None
        self._skipped: list[str] = []
        self._generation = 0
        """Bumped by :meth:`refresh`: a read started before it is not stored."""
        self._stale = False
        """Set by :meth:`invalidate`: the cached state is kept until a re-read succeeds."""
        self._reload: _Reload | None = None
        self._reload_note: str | None = None
        """Why the last background re-list failed (said in the prompt), else None."""
        self._lenient = False
        """The listing came from a background re-list: tools named in ``tools`` or
        ``read_only_tools`` that the server dropped are left out (with a note), not an
        error; a listing read at connect or :meth:`refresh` is checked strictly."""
        self.tools_version = 0
        """Bumped whenever a new listing brings a different tool list (the registry
        rebuilds its cached tools when it changes)."""

    # ------------------------------------------------------------------ what the server offers
    @property
    def catalog(self) -> Catalog:
        """The server's tools, resources and prompts, listed once and kept (see the module
        docstring). Only the first use asks the server (``relay.connect`` makes that use);
        after that this never waits on it."""
        with self._lock:
            catalog, generation = self._catalog, self._generation
        if catalog is not None:
            return catalog
        catalog = self._list()
        with self._lock:
            if self._generation == generation and self._catalog is None:
                self._catalog = catalog
        return catalog

    def _list(self) -> Catalog:
        return self._host.run(read_catalog, what="the listing of its tools")

    def server_tools(self) -> list[ServerTool]:
        """The server tools this connector exposes (after the ``tools`` allowlist).

        A tool named in ``tools`` or ``read_only_tools`` that the server lacks is a
        ConfigurationError for the listing read at connect or :meth:`refresh`; after a
        background re-list it is left out and the prompt says so (a turn must not fail
        because the server was upgraded meanwhile)."""
        catalog = self.catalog
        with self._lock:
            lenient = self._lenient and catalog is self._catalog
        tools = list(catalog.tools)
        if not lenient:
            self._check_names(catalog)
        wanted = self.spec.tools
        return tools if wanted is None else [t for t in tools if t.name in set(wanted)]

    def _relisted(self) -> bool:
        """Whether the listing in use came from a background re-list (lenient: a turn must
        not fail because the server changed meanwhile)."""
        with self._lock:
            return self._lenient and self._catalog is not None

    def _check_names(self, catalog: Catalog) -> None:
        problems = self._missing_names(catalog)
        if problems:
            label, unknown = problems[0]
            known = sorted(tool.name for tool in catalog.tools)
            raise ConfigurationError(
                f"MCP server {self.id!r} has no tool(s) {', '.join(map(repr, unknown))} "
                f"named in {label}; it has: {', '.join(known) or 'none'}"
            )

    def _missing_names(self, catalog: Catalog) -> list[tuple[str, list[str]]]:
        """``[(option, names the server lacks)]`` for ``tools`` and ``read_only_tools``."""
        known = {tool.name for tool in catalog.tools}
        found = []
        for label, names in (
            ("tools", self.spec.tools or []),
            ("read_only_tools", self.spec.read_only_tools),
        ):
            unknown = sorted(set(names) - known)
            if unknown:
                found.append((label, unknown))
        return found

    def _missing_note(self, catalog: Catalog) -> str | None:
        problems = self._missing_names(catalog)
        if not problems:
            return None
        said = "; ".join(f"{', '.join(names)} (named in {label})" for label, names in problems)
        return (
            f"the server no longer offers {said}; left out. relay.refresh({self.id!r}) "
            "checks the configuration again"
        )

    def _swap(self, catalog: Catalog, *, lenient: bool) -> None:
        """Store a new listing (the caller holds the lock), bumping :attr:`tools_version`
        when its tools differ from the previous one's."""
        previous = self._catalog
        if previous is not None and previous.tools != catalog.tools:
            self.tools_version += 1
        self._catalog, self._lenient = catalog, lenient

    def prompts(self) -> list[ServerPrompt]:
        """The prompt templates the server offers (listed for people, never run)."""
        return list(self.catalog.prompts)

    def documents(self) -> list[ConnectorDocument]:
        """The server's text resources (at most ``max_resources``, each cut to
        ``max_resource_chars``), read once and kept. After :meth:`invalidate` the kept ones
        are returned while a background re-read runs (waited for a few seconds)."""
        if not self.spec.resources:
            return []
        with self._lock:
            documents, generation, stale = self._documents, self._generation, self._stale
            failed = self._reload_note is not None
        if documents is not None:
            if stale:
                reload = self._start_reload()
                if not failed:  # after a failed re-list, retry without waiting every time
                    reload.finished.wait(_REFRESH_WAIT_S)
                with self._lock:
                    documents = self._documents if self._documents is not None else documents
            return documents
        documents, skipped = self._read_documents(self.catalog)
        with self._lock:
            if self._generation == generation and self._documents is None:
                self._documents, self._skipped = documents, skipped
        return documents

    def _read_documents(self, catalog: Catalog) -> tuple[list[ConnectorDocument], list[str]]:
        """Read the text resources one request each (no lock held: each may take up to
        ``timeout_s``)."""
        documents: list[ConnectorDocument] = []
        skipped: list[str] = []
        limit = self.spec.max_resource_chars
        for resource in catalog.resources:
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
            texts = [t for c in read.contents if isinstance(t := getattr(c, "text", None), str)]
            if not texts:
                skipped.append(f"{label}: binary, not read")
                continue
            # only the part that is kept is joined and redacted, with room for a secret at
            # the cut (a resource may be far larger than max_resource_chars)
            secrets = known_secrets(self.launch.secrets)
            room = limit + max((len(secret) for secret in secrets), default=0) + 1
            head, more = _head(texts, "\n\n", room)
            text = redact(head, extra=self.launch.secrets)
            if more or len(text) > limit:
                text = text[:limit] + f"\n[cut at {limit} characters]"
            documents.append(ConnectorDocument(title=resource.name, text=text, uri=resource.uri))
        return documents, skipped

    # ------------------------------------------------------------------ model-facing
    def tools(self) -> list[Tool]:
        tools = self.server_tools()
        names = agent_tool_names(self.id, tools, lenient=self._relisted())
        tools = [tool for tool in tools if tool.name in names]
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
                    description=redacted_clip(description, 1024, secrets=self.launch.secrets),
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
                max_value_bytes=self.spec.max_value_bytes,
                max_result_bytes=self.spec.max_result_bytes,
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
            max_value_bytes=self.spec.max_value_bytes,
            max_result_bytes=self.spec.max_result_bytes,
            secrets=self.launch.secrets,
        )

    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        label = self.id + (f" ({self.name})" if self.name != self.id else "")
        # the model needs the server, not how this machine starts it (paths, interpreter)
        where = "a local server (stdio)" if self.launch.transport == "stdio" else self.target
        head = [f"### MCP connector: {label} — {where}"]
        if self.description:
            head.append(self.description)
        with self._lock:
            stale = self._stale and self._catalog is not None
            failed = self._reload_note is not None
        if stale:  # a re-list runs in the background: give it a moment, else use the last one
            reload = self._start_reload()
            if not failed:  # after a failed one, retry without waiting on every prompt
                reload.listed.wait(_REFRESH_WAIT_S)
        try:
            catalog = self.catalog
            tools = self.server_tools()
        except RelayError as exc:  # the prompt still says what this connector is
            head.append(f"The server could not be reached ({_short(exc)}); its tools may fail.")
            return redact("\n".join(head), extra=self.launch.secrets)
        server = " ".join(p for p in (catalog.server_name, catalog.server_version) if p)
        if server or catalog.instructions:
            about = f"Server: {server or 'unnamed'}"
            if catalog.instructions:
                about += (
                    f" — {redacted_clip(catalog.instructions, 600, secrets=self.launch.secrets)}"
                )
            head.append(about)
        names = agent_tool_names(self.id, tools, lenient=self._relisted())
        tool_lines = []
        for tool in (tool for tool in tools if tool.name in names):
            safe = tool.name in self.spec.read_only_tools or (
                self.spec.trust_read_only_hints and tool.read_only_hint
            )
            flag = "read-only" if safe else "needs approval"
            text = redacted_clip(
                tool.description, _DESCRIPTION_CHARS, secrets=self.launch.secrets, one_line=True
            )
            tool_lines.append(f"- {names[tool.name]} ({flag}): {text}")
        tail = []
        if self.spec.resources and catalog.resources:
            shown = ", ".join(r.name for r in catalog.resources[:20])
            tail.append(
                f"Resources ({len(catalog.resources)}): {shown}. Passages relevant to the "
                f"question appear as context from documents:{self.id}."
            )
            with self._lock:
                skipped = list(self._skipped) if self._documents is not None else []
            if skipped:
                tail.append("Not read: " + "; ".join(skipped[:10]))
        if catalog.prompts:
            listed = "; ".join(
                p.signature()
                + (
                    f" — {redacted_clip(p.description, 120, secrets=self.launch.secrets)}"
                    if p.description
                    else ""
                )
                for p in catalog.prompts[:20]
            )
            tail.append(f"Prompts the server offers (for the user to pick, not run): {listed}")
        tail += [f"Note: {note}" for note in catalog.notes]
        with self._lock:
            lenient = self._lenient and catalog is self._catalog
            if self._reload_note:
                tail.append(f"Note: {self._reload_note}")
        missing = self._missing_note(catalog) if lenient else None
        if missing:
            tail.append(f"Note: {missing}")
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
        """List the server's tools again now (reconnecting at once if a reconnect had failed),
        and forget the resources read (the next prompt reads them again). Raises the
        server's error, keeping the previous listing, if it cannot be listed."""
        self._host.reset()
        with self._lock:
            self._generation += 1
            generation = self._generation
            superseded = self._reload  # a re-list in flight: its result will be dropped
        try:
            catalog = self._list()
            self._check_names(catalog)  # strict, as at connect
            with self._lock:
                if self._generation == generation:
                    self._swap(catalog, lenient=False)
                    self._documents, self._skipped = None, []
                    self._stale, self._reload_note = False, None
        finally:
            if superseded is not None:  # its waiters get this listing, not a dropped one
                superseded.listed.set()
                superseded.finished.set()

    def invalidate(self) -> None:
        """The schema TTL expired: keep what was read, re-read it in the background. Never
        waits on the server (it runs on the turn's event loop)."""
        with self._lock:
            if self._catalog is None:
                return  # nothing read yet: the first use reads it
            self._stale = True
        self._start_reload()

    def _start_reload(self) -> _Reload:
        """The background re-read in flight, or a new one."""
        with self._lock:
            if self._reload is not None and not self._reload.finished.is_set():
                return self._reload
            reload = self._reload = _Reload(self._generation)
        threading.Thread(
            target=self._run_reload, args=(reload,), name=f"relay-mcp-relist-{self.id}", daemon=True
        ).start()
        return reload

    def _run_reload(self, reload: _Reload) -> None:
        """List again, then re-read the resources if they had been read; each result is
        swapped in only when its read succeeded and no :meth:`refresh` came in between."""
        try:
            try:
                catalog = self._list()
            except Exception as exc:
                logger.info("MCP server %r: listing again failed: %s", self.id, _short(exc))
                with self._lock:
                    if self._generation == reload.generation:
                        self._reload_note = (
                            f"listing its tools again failed ({_short(exc)}); the tools shown "
                            "are from the previous listing and may fail"
                        )
                return
            with self._lock:
                if self._generation != reload.generation:
                    return
                self._swap(catalog, lenient=True)
                self._reload_note = None
                reread = self.spec.resources and self._documents is not None
            reload.listed.set()
            documents, skipped = self._read_documents(catalog) if reread else (None, [])
            with self._lock:
                if self._generation == reload.generation:
                    if documents is not None:
                        self._documents, self._skipped = documents, skipped
                    self._stale = False
        finally:
            reload.listed.set()
            reload.finished.set()

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


def _head(texts: list[str], separator: str, room: int) -> tuple[str, bool]:
    """The first ``room`` characters of ``texts`` joined by ``separator`` (without joining
    the rest), and whether there was more."""
    parts: list[str] = []
    size = 0
    for index, text in enumerate(texts):
        for piece in (separator, text) if index else (text,):
            if size + len(piece) > room:
                parts.append(piece[: room - size])  # a head, not a copy of the whole
                return "".join(parts), True
            parts.append(piece)
            size += len(piece)
    return "".join(parts), False


def _short(exc: BaseException) -> str:
    return redacted_clip(str(exc), 200)
