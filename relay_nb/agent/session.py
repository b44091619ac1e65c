"""``Session``: the agent layer's engine behind ``Relay`` — one conversation's connectors,
tools, skills, context sources, history, settings layers and accountant.

``run_turn`` answers one question; a session decides everything around it. Per question:
which skills apply and what they ask for (a settings layer), which model answers (the merged
``model`` and ``tier`` through a router), what the conversation so far is (history with large
results by reference, older turns compacted into a memory), and who pays (the accountant:
prices, caps, meters and the ledger for every call, compactions included). The public object
is :class:`relay_nb.Relay`; this class is async only and has no notebook conveniences.

Concurrency: questions asked through :meth:`ask_async` on one session run one at a time (a
lock), since each builds on the previous one's history. :meth:`ask_many` runs *independent*
questions concurrently; they neither read nor extend the history.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from relay_nb.agent.accounting import NO_USAGE, Accountant
from relay_nb.agent.approval import Approver
from relay_nb.agent.caps import UsageLimit
from relay_nb.agent.charts import CHART_TOOL, ResultStore, chart_tool
from relay_nb.agent.clarify import CLARIFY_TOOL, Clarifier, clarify_tool
from relay_nb.agent.compaction import compact_history
from relay_nb.agent.events import Event
from relay_nb.agent.history import History
from relay_nb.agent.loop import TurnResult, first_request, run_turn
from relay_nb.agent.many import INDEPENDENT, AsksMany
from relay_nb.agent.prompt import base_prompt
from relay_nb.agent.routing import ModelRouter, ModelSetting
from relay_nb.agent.services import EventSink, TurnServices
from relay_nb.agent.settings import TurnSettings, merge_settings, settings_layer, skill_layer
from relay_nb.agent.skills import Skill, SkillRegistry
from relay_nb.agent.tool_calls import ToolOutcome
from relay_nb.agent.tool_groups import ToolGrouper
from relay_nb.connectors.base import Connector
from relay_nb.connectors.registry import DEFAULT_SCHEMA_TTL_S, ConnectorRegistry
from relay_nb.context import (
    Budget,
    ConnectorDocumentsSource,
    ConnectorSchemaSource,
    ContextResolver,
    ContextSource,
    RecentTurnsSource,
    allocate_budget,
)
from relay_nb.context.connector_documents import has_documents
from relay_nb.errors import ConfigurationError
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.base import ModelRuntime
from relay_nb.runtime.types import InvocationRequest, Message, Usage
from relay_nb.tools import Tool

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Session"]

logger = logging.getLogger("relay_nb.agent")


class Session(AsksMany):
    """One analyst's conversation; see the module docstring.

    ``model`` is the session layer's model (``settings`` the rest of that layer: see
    :mod:`relay_nb.agent.settings`); ``accountant`` prices, caps and records every call (a
    fresh one records nothing). A connector's schema is re-read at the start of the first
    turn after it is ``schema_ttl_s`` old (None: only on ``refresh``). Tool results longer
    than ``inline_result_chars`` are kept by reference in the history; the last
    ``keep_turns`` results are kept whole; ``compact_with_model=False`` folds old turns into
    a deterministic digest instead of a model's summary.
    """

    def __init__(
        self,
        model: ModelSetting = None,
        *,
        settings: Mapping[str, Any] | None = None,
        accountant: Accountant | None = None,
        approver: Approver | None = None,
        routes: Mapping[str, str] | None = None,
        inline_result_chars: int = 2000,
        compact_with_model: bool = True,
        keep_turns: int = 100,
        charts: bool = True,
        schema_ttl_s: float | None = DEFAULT_SCHEMA_TTL_S,
        connectors: Iterable[Connector] = (),
        tools: Iterable[Tool] = (),
        skills: Iterable[Skill] = (),
        sources: Iterable[ContextSource] = (),
    ) -> None:
        session_layer = dict(settings or {})
        if model is not None:
            session_layer["model"] = model
        self._layers: dict[str, dict[str, Any]] = {
            "config": {},
            "session": settings_layer(session_layer, where="session"),
        }
        self.routes = dict(routes or {})
        self._routers: dict[object, ModelRouter] = {}
        self._router(self._layers["session"].get("model"))  # a bad profile fails now
        self.accountant = accountant or Accountant()
        self.approver = approver
        self.connectors = ConnectorRegistry(schema_ttl_s=schema_ttl_s)
        """Registered connectors by id (a read-only mapping; change it with add/remove)."""
        self.tools: dict[str, Tool] = {}
        self.skills = SkillRegistry()
        self.history = History(inline_chars=inline_result_chars)
        self.turns: list[TurnResult] = []
        """The last ``keep_turns`` results, with their DataFrames and events."""
        self.keep_turns = keep_turns
        self.compaction_usage = NO_USAGE
        self.compact_with_model = compact_with_model
        self.resolver = ContextResolver(
            [RecentTurnsSource((), memory=self._memory, max_turns=0, name="memory")]
        )
        self._results = ResultStore()
        """Recent tool artifacts by call id, taken from ``tool_result`` events: what the
        ``chart`` tool draws from."""
        self._chart_tool = chart_tool(self._results) if charts else None
        self._tool_groups = ToolGrouper()
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        for connector in connectors:
            self.add_connector(connector)
        for tool in tools:
            self.add_tool(tool)
        for skill in skills:
            self.add_skill(skill)
        for source in sources:
            self.resolver.add(source)

    def __repr__(self) -> str:
        return (
            f"<Session {self.id[:8]} connectors={list(self.connectors)} "
            f"skills={list(self.skills.names())} turns={len(self.turns)}>"
        )

    @property
    def id(self) -> str:
        """The session's id: its ledger rows carry it."""
        return self.accountant.session_id

    @property
    def usage(self) -> Usage:
        """Everything the session spent: its turns, ask_many runs and compactions."""
        return self.accountant.total

    # -- settings ------------------------------------------------------------------------------

    def configure(self, layer: str = "session", **values: Any) -> TurnSettings:
        """Set values of the ``session`` (or ``config``) layer; returns what a question with
        no options of its own now gets. ``None`` leaves a value as it is."""
        if layer not in self._layers:
            raise ConfigurationError(f"settings layer must be one of {list(self._layers)}")
        checked = settings_layer(values, where=layer)
        if "model" in checked:
            self._router(checked["model"])  # an unknown profile fails here
        before = self._layers[layer]
        self._layers[layer] = {**before, **checked}
        try:
            return self.plan()[0]
        except BaseException:  # a value only the plan can check (a skill's name): as it was
            self._layers[layer] = before
            raise

    @property
    def settings(self) -> TurnSettings:
        """What a question asked with no options gets (skills included)."""
        return self.plan()[0]

    @property
    def budget(self) -> Budget:
        """How the session's context window splits into system, context and history."""
        return allocate_budget(self.settings.context_window)

    def plan(
        self, call: Mapping[str, Any] | None = None
    ) -> tuple[TurnSettings, list[Skill], list[str]]:
        """``(settings, active skills, connector ids)`` for one question asked with ``call``.

        No skills named: every registered skill is active (none registered: every connector
        is). The active skills' tier and step limit form the ``skill`` layer, between the
        session's and the call's (see :mod:`relay_nb.agent.settings`).
        """
        call = settings_layer(call or {}, where="ask")
        below = [("config", self._layers["config"]), ("session", self._layers["session"])]
        chosen = merge_settings([*below, ("call", call)])
        names = chosen.skills if chosen.skills is not None else self.skills.names()
        active = [self.skills.get(name) for name in names]
        if not active:
            return chosen, [], list(self.connectors)
        asked = skill_layer([s.tier for s in active], [s.max_steps for s in active])
        settings = merge_settings([*below, ("skill", asked), ("call", call)])
        connector_ids = list(dict.fromkeys(c for s in active for c in s.connectors))
        return settings, active, connector_ids

    def _router(self, model: ModelSetting) -> ModelRouter:
        """The router for ``model`` (None: the default one), kept so its runtimes (clients)
        are reused across questions."""
        key = model if model is None or isinstance(model, str) else id(model)
        if key not in self._routers:
            self._routers[key] = ModelRouter(model, routes=self.routes)
        return self._routers[key]

    def runtime_for(self, settings: TurnSettings) -> ModelRuntime:
        """The runtime that answers under ``settings`` (its model, routed by its tier)."""
        return self._router(settings.model).runtime_for(settings.tier)

    # -- registration --------------------------------------------------------------------------

    def add_connector(self, connector: Connector, *, replace: bool = False) -> Connector:
        """Register a connector: its tools become callable, its schema part of the prompt.

        ``replace=True`` swaps (and closes) a connector registered under the same id, so a
        re-run notebook cell reconnects; skills naming the id keep working.
        """
        old = self.connectors.get(connector.id)
        if old is not None and not replace:
            raise ConfigurationError(
                f"a connector with id {connector.id!r} is already registered; remove it first"
                " or pass replace=True"
            )
        for tool in connector.tools():
            self._check_tool_name(tool.name, ignore=old)
        if old is not None:
            self.resolver.remove_connector(connector.id)
        self.connectors.add(connector, replace=True)  # closes the one it replaces
        self.resolver.add(ConnectorSchemaSource(connector))
        if has_documents(connector):  # e.g. an MCP server's resources
            self.resolver.add(ConnectorDocumentsSource(connector))
        return connector

    def remove_connector(self, connector_id: str, *, close: bool = True) -> None:
        """Unregister (and by default close) a connector; skills that use it go too."""
        self.connectors.remove(connector_id, close=close)
        self.resolver.remove_connector(connector_id)
        for name in [
            n for n in self.skills.names() if connector_id in self.skills.get(n).connectors
        ]:
            self.skills.remove(name)

    def add_tool(self, tool: Tool | Callable[..., Any], *, replace: bool = False) -> Tool:
        """Register an extra tool (a ``Tool`` or a plain typed function); ``replace=True``
        redefines one registered before under the same name."""
        if not isinstance(tool, Tool):
            tool = Tool.from_function(tool)
        if not (replace and tool.name in self.tools):
            self._check_tool_name(tool.name)
        self.tools[tool.name] = tool
        return tool

    def add_skill(self, skill: Skill, *, replace: bool = False) -> Skill:
        """Register a skill; unknown connector ids or tool names are refused now."""
        return self.skills.register(
            skill, known_connectors=self.connectors, known_tools=self.tools, replace=replace
        )

    def taken_tool_names(self, *, except_connectors: Collection[str] = ()) -> set[str]:
        """Every tool name in use, leaving out those of the connectors ``except_connectors``
        names (about to be replaced, so their names are free)."""
        taken = {
            tool.name
            for cid in self.connectors
            if cid not in except_connectors
            for tool in self.connectors.tools(cid)
        }
        return taken | set(self.tools) | {CHART_TOOL}

    def _check_tool_name(self, name: str, *, ignore: Connector | None = None) -> None:
        excluded = () if ignore is None else (ignore.id,)
        if name in self.taken_tool_names(except_connectors=excluded):
            raise ConfigurationError(f"a tool named {name!r} is already registered")

    # -- asking --------------------------------------------------------------------------------

    async def ask_async(
        self,
        question: str,
        call: Mapping[str, Any] | None = None,
        *,
        on_event: EventSink | None = None,
        abort: AbortSignal | None = None,
        approver: Approver | None = None,
        clarifier: Clarifier | None = None,
    ) -> TurnResult:
        """Answer ``question`` in the context of this conversation; extends the history.

        ``call`` is the question's own settings layer (``{"max_steps": 4, "model": …}``);
        ``approver`` replaces the session's for this question; ``clarifier`` (who can answer
        a question back) gives the model the ``clarify`` tool.
        """
        planned = self._planned(question, call)  # fails before the lock
        async with self._turn_lock():
            result = await self._turn(
                question,
                planned,
                history=list(self.history.messages),
                on_event=on_event,
                abort=abort,
                approver=approver,
                clarifier=clarifier,
            )
            self._remember(result)
            await self._compact_if_needed()
            return result

    async def ask_beside(
        self,
        question: str,
        call: Mapping[str, Any] | None = None,
        *,
        on_event: EventSink | None = None,
        abort: AbortSignal | None = None,
        approver: Approver | None = None,
    ) -> TurnResult:
        """A question beside the conversation (a background run): it reads the history as
        it stands when it starts and does not extend it, so questions asked meanwhile go on
        undisturbed and never wait for it; its turn is kept in :attr:`turns` when it ends.
        It cannot ask the user back (no ``clarify``)."""
        planned = self._planned(question, call)
        result = await self._turn(
            question,
            planned,
            history=list(self.history.messages),
            on_event=on_event,
            abort=abort,
            approver=approver,
        )
        self._keep(result)
        return result

    def _planned(
        self, question: str, call: Mapping[str, Any] | None
    ) -> tuple[TurnSettings, list[Skill], list[str]]:
        """A question's plan; an empty question, a bad option or an unknown skill fails here,
        before the turn starts."""
        if not isinstance(question, str) or not question.strip():
            raise ConfigurationError("ask needs a non-empty question")
        return self.plan(call)

    async def stream(
        self,
        question: str,
        call: Mapping[str, Any] | None = None,
        *,
        abort: AbortSignal | None = None,
        approver: Approver | None = None,
        clarifier: Clarifier | None = None,
    ) -> AsyncIterator[Event]:
        """Events of one :meth:`ask_async` as an async iterator; ends after ``done``.

        The finished ``TurnResult`` is ``session.turns[-1]``. Closing the iterator early
        (``async with contextlib.aclosing(session.stream(q)) as events``, then ``break``)
        cancels the turn, its running statements too, and leaves the history consistent.
        """
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        abort = abort or AbortSignal()
        task = asyncio.ensure_future(
            self.ask_async(
                question,
                call,
                on_event=queue.put_nowait,
                abort=abort,
                approver=approver,
                clarifier=clarifier,
            )
        )
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            await task  # surfaces a configuration error raised before any event
        finally:
            if not task.done():
                abort.abort("stream closed")
                with contextlib.suppress(Exception):
                    await task

    async def first_request(
        self, question: str, call: Mapping[str, Any] | None = None, scope: str | None = None
    ) -> InvocationRequest:
        """The first model request a question asked with ``call`` (on the connector
        ``scope``) would send — prompt, context, tools — built without calling the model:
        what a cost estimate multiplies."""
        planned = self._scoped(self.plan(call), [scope], 1)[0]
        settings, active, connector_ids = planned
        return await first_request(
            question,
            self._services(planned),
            settings,
            system_prompt=base_prompt(active),
            connector_ids=connector_ids,
        )

    # -- state ---------------------------------------------------------------------------------

    @property
    def results(self) -> dict[str, ToolOutcome]:
        """Large tool results kept whole by reference (``r1``, ``r2`` …)."""
        return self.history.results

    def reset(self) -> None:
        """Forget the conversation (history, memory, results); usage totals stay."""
        self.history.clear()
        self.turns.clear()

    def usage_report(self, by: Sequence[str] = ("day", "model", "notebook")) -> pd.DataFrame:
        """Calls, tokens and cost from the ledger, grouped by day/model/notebook."""
        if self.accountant.ledger is None:
            raise ConfigurationError("this session keeps no ledger (ledger=False)")
        return self.accountant.ledger.report(by)

    async def aclose(self) -> None:
        """Close connectors, runtimes and the ledger."""
        await self.resolver.aclose()
        self.connectors.close()
        for runtime in [r for router in self._routers.values() for r in router.runtimes()]:
            closer = getattr(runtime, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()
        self.accountant.close()

    # -- internals -----------------------------------------------------------------------------

    def _tools_for(
        self, settings: TurnSettings, active: Sequence[Skill], connector_ids: Sequence[str]
    ) -> list[Tool]:
        """The connectors' tools (one per kind and verb when theirs would outgrow the
        window's system allotment: tool_groups.py), the skills' or session's own, the chart
        tool."""
        names = (
            list(dict.fromkeys(n for s in active for n in s.tools)) if active else list(self.tools)
        )
        extra = [self.tools[name] for name in names]
        if self._chart_tool is not None and connector_ids:
            extra.append(self._chart_tool)
        offered: dict[str, Tool] = {}
        for cid in connector_ids:
            for tool in self.connectors.tools(cid):
                if tool.name in offered or tool.name in self.tools:
                    # only a listing that changed after connecting gets here (connecting
                    # refuses a clash): the turn goes on without the newcomer
                    logger.warning("tool %r of %r clashes with another; left out", tool.name, cid)
                    continue
                offered[tool.name] = tool
        tools = self._tool_groups.select(
            list(offered.values()),
            allotment=allocate_budget(settings.context_window).system,
            taken={tool.name for tool in extra},
        )
        return [*tools, *extra]

    def _memory(self) -> str | None:
        return None if INDEPENDENT.get() else self.history.memory

    def _turn_lock(self) -> asyncio.Lock:
        """One question at a time on this loop; a new loop (each sync ``ask``) gets a new
        lock, since an asyncio lock belongs to the loop it first waited on."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    def _sink(self, on_event: EventSink | None) -> EventSink:
        """Every event of a turn: result artifacts into the chart tool's store, then the
        caller's sink."""

        def sink(event: Event) -> None:
            if event.type == "tool_result" and event.artifact is not None:
                self._results[event.tool_call_id] = event.artifact
            if on_event is not None:
                on_event(event)

        return sink

    async def _turn(
        self,
        question: str,
        planned: tuple[TurnSettings, list[Skill], list[str]],
        *,
        history: list[Message],
        on_event: EventSink | None = None,
        abort: AbortSignal | None = None,
        approver: Approver | None = None,
        clarifier: Clarifier | None = None,
        runtime: ModelRuntime | None = None,
        limits: Sequence[UsageLimit] = (),
    ) -> TurnResult:
        settings, active, connector_ids = planned
        await self.connectors.arefresh_stale(connector_ids)  # expired schemas renewed
        services = self._services(
            planned,
            on_event=on_event,
            approver=approver,
            clarifier=clarifier,
            runtime=runtime,
            limits=limits,
        )
        result = await run_turn(
            question,
            services,
            settings,
            history=history,
            system_prompt=base_prompt(active),
            connector_ids=connector_ids,
            abort=abort,
        )
        for source in self.resolver.sources:  # e.g. "follows the verified query …"
            notes_for = getattr(source, "notes_for", None)
            if notes_for is not None:
                try:
                    result.notes.extend(notes_for(result))
                except Exception as exc:  # a note is never worth the answer
                    logger.warning("notes of source %s failed: %r", source.name, exc)
        return result

    def _services(
        self,
        planned: tuple[TurnSettings, list[Skill], list[str]],
        *,
        on_event: EventSink | None = None,
        approver: Approver | None = None,
        clarifier: Clarifier | None = None,
        runtime: ModelRuntime | None = None,
        limits: Sequence[UsageLimit] = (),
    ) -> TurnServices:
        """The services one planned turn works with (its tools, the clarify tool when
        someone can answer it, the runtime its settings choose)."""
        settings, active, connector_ids = planned
        tools = self._tools_for(settings, active, connector_ids)
        if clarifier is not None and all(tool.name != CLARIFY_TOOL for tool in tools):
            tools = [*tools, clarify_tool(clarifier)]
        return TurnServices(
            runtime=runtime or self.runtime_for(settings),
            tools=tools,
            resolver=self.resolver,
            accountant=self.accountant,
            approver=approver or self.approver,
            on_event=self._sink(on_event),
            limits=limits,
        )

    def _remember(self, result: TurnResult) -> None:
        self.history.add_turn(result.messages, result.tool_results)
        self._keep(result)

    def _keep(self, result: TurnResult) -> None:
        self.turns.append(result)
        if len(self.turns) > self.keep_turns:  # old results and frames go; history stays
            del self.turns[: len(self.turns) - self.keep_turns]

    async def _compact_if_needed(self) -> None:
        """Fold the oldest turns into the memory once the history outgrows its budget.

        Runs after a turn's ``done``, so its model call (if any) is not part of that turn:
        its usage goes to the session total, :attr:`compaction_usage` and the ledger.
        """
        settings = self.settings
        model = settings.model
        used = await compact_history(
            self.history,
            self.accountant,
            budget=allocate_budget(settings.context_window).history,
            summarizer=(
                (lambda: self._router(model).runtime_for("fast"))
                if self.compact_with_model
                else None
            ),
        )
        if used is not None:
            self.compaction_usage = self.compaction_usage + used
