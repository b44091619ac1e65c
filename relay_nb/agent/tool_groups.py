"""Which connector tools a turn declares: each connector's own, or one per kind that takes
the connector's name, when the connectors' own would not fit the system allotment.

Every connector brings its tools (a SQL connector ``query_<id>`` and ``describe_<id>``, about
250 tokens); at 300 connectors their declarations alone outgrow a 200k-token window's whole
context budget. Past the allotment, the tools of one verb and one kind that take the same
input — ``query_shop``, ``query_sales``, ``query_eu`` … — become one tool, ``query_sql``,
with a ``connector`` argument, which runs the named connector's own tool unchanged (its guard,
its limits, its timeout). The declarations then stay the same size whatever the number of
connectors; each connector's section in the prompt still names it, which is what
``connector`` takes.

A tool that does not follow the ``<verb>_<connector id>`` pattern (an MCP server's own
tools), a family of one and a tool that needs approval stay as they are.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, create_model

from relay_nb.tools import Tool, ToolResult

__all__ = ["ToolGrouper", "declared_tokens"]

_SHOWN_IDS = 12
"""How many connector ids a grouped tool's ``connector`` argument names as examples."""


def declared_tokens(tools: Sequence[Tool]) -> int:
    """The tokens the tools' declarations cost in a request (chars/4 of their JSON)."""
    return sum(-(-tool.declaration_chars // 4) for tool in tools)


@dataclass(frozen=True)
class _Family:
    """Tools that can share one declaration: one verb, one kind, one input model."""

    verb: str
    kind: str
    input_model: type[BaseModel]


class ToolGrouper:
    """Groups connector tools into one tool per family past a token allotment; the grouped
    tools are kept between turns while their members stay the same objects."""

    def __init__(self) -> None:
        self._built: dict[_Family, tuple[tuple[Tool, ...], Tool]] = {}
        self._last: tuple[tuple[Tool, ...], int, frozenset[str], list[Tool]] | None = None

    def select(self, tools: Sequence[Tool], *, allotment: int, taken: set[str]) -> list[Tool]:
        """``tools`` as they are when their declarations fit ``allotment`` tokens, else with
        each family of connector tools as one tool; ``taken`` are the names of the turn's
        other tools (a grouped tool's name never shadows one). The same tools as the last
        turn's get the last turn's answer without a look at each."""
        if len(tools) < 3:
            return list(tools)
        last, frozen = self._last, frozenset(taken)
        if last is not None and last[1:3] == (allotment, frozen) and _same(last[0], tools):
            return list(last[3])
        selected = self._select(tools, allotment, taken)
        self._last = (tuple(tools), allotment, frozen, selected)
        return list(selected)

    def _select(self, tools: Sequence[Tool], allotment: int, taken: set[str]) -> list[Tool]:
        if declared_tokens(tools) <= allotment:
            return list(tools)
        families: dict[_Family, list[Tool]] = {}
        kept: list[Tool | _Family] = []
        for tool in tools:
            family = _family_of(tool)
            if family is None:
                kept.append(tool)
                continue
            if family not in families:
                families[family] = []
                kept.append(family)
            families[family].append(tool)
        names = taken | {t.name for t in tools}
        out: list[Tool] = []
        for entry in kept:
            if isinstance(entry, Tool):
                out.append(entry)
                continue
            members = families[entry]
            if len(members) == 1:
                out.append(members[0])
                continue
            grouped = self._grouped(entry, tuple(members), names)
            names.add(grouped.name)
            out.append(grouped)
        return out

    def _grouped(self, family: _Family, members: tuple[Tool, ...], taken: set[str]) -> Tool:
        built = self._built.get(family)
        if built is not None and _same(built[0], members) and built[1].name not in taken:
            return built[1]
        tool = _group(family, members, _free_name(family, taken))
        self._built[family] = (members, tool)
        return tool


def _same(kept: Sequence[Tool], tools: Sequence[Tool]) -> bool:
    """The same tool objects in the same order (tools compare by identity: each is built
    once per registration, and comparing their fields would cost more than grouping)."""
    return len(kept) == len(tools) and all(a is b for a, b in zip(kept, tools, strict=True))


def _family_of(tool: Tool) -> _Family | None:
    """The family of a connector's ``<verb>_<id>`` tool; None for any other tool."""
    connector, kind = tool.metadata.get("connector"), tool.metadata.get("kind")
    if not isinstance(connector, str) or not isinstance(kind, str) or tool.requires_approval:
        return None
    suffix = f"_{connector}"
    if not tool.name.endswith(suffix) or len(tool.name) == len(suffix):
        return None
    return _Family(tool.name[: -len(suffix)], kind, tool.input_model)


def _free_name(family: _Family, taken: set[str]) -> str:
    base = f"{family.verb}_{family.kind}"[:56]
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def _group(family: _Family, members: tuple[Tool, ...], name: str) -> Tool:
    by_id = {tool.metadata["connector"]: tool for tool in members}
    ids = list(by_id)
    shown = ", ".join(ids[:_SHOWN_IDS]) + (
        f" … ({len(ids)} in all)" if len(ids) > _SHOWN_IDS else ""
    )
    connector_arg = Field(
        description=f"The connector's id, as its section of the prompt names it: {shown}."
    )
    model = create_model(  # type: ignore[call-overload]
        f"{family.input_model.__name__}ByConnector",
        __base__=family.input_model,
        connector=(str, connector_arg),
    )
    example = members[0]
    description = (
        f"{family.verb}_<id> of any of the {len(ids)} {family.kind} connectors: the one "
        f"`connector` names (where a connector's section says {family.verb}_<id>, call "
        f"{name} with connector=<id>). As for {example.metadata['connector']}: "
        f"{example.description}"
    )

    async def run(arguments: Any) -> ToolResult:
        raw: dict[str, Any] = arguments.model_dump(exclude={"connector"}, by_alias=True)
        target = by_id.get(arguments.connector)
        if target is None:
            asked = arguments.connector.lower()
            near = [i for i in ids if asked and asked in i.lower()][:3]
            near += difflib.get_close_matches(arguments.connector, ids, n=3 - len(near))
            hint = f"; did you mean {', '.join(dict.fromkeys(near))}?" if near else ""
            return ToolResult(
                content=f"no {family.kind} connector is named {arguments.connector!r}{hint} "
                "(the connector ids are in the prompt, one section each)",
                is_error=True,
                failure="error",
            )
        return await target.run(raw)

    timeouts = [t.timeout_s for t in members]
    return Tool(
        name=name,
        description=description,
        input_model=model,
        handler=run,
        # the member's own run keeps its own bound; this one only has to outlast it
        timeout_s=None if None in timeouts else max(t for t in timeouts if t is not None) + 1.0,
        metadata={"kind": family.kind, "connectors": tuple(ids), "grouped": family.verb},
    )
