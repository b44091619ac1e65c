"""``Session``: a conversation with connectors, skills, caps, history and a usage ledger.

``run_turn`` answers one question; a session decides everything around it. Per question:
which skills apply (tier → model through the router, their connectors → tools, their prompts
→ the system prompt), what the conversation so far is (history with large results by
reference, older turns compacted into a memory), what the session may still spend (per-turn
and per-session caps), and where every model call is recorded (the ledger). The notebook
facade (``Relay``, the ``%relay`` magic) is a thin layer over this class.

Concurrency: questions asked through :meth:`ask_async` on one session run one at a time (a
lock), since each builds on the previous one's history. :meth:`ask_many` runs *independent*
questions concurrently; they neither read nor extend the history.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from relay_nb.agent.approval import Approver
from relay_nb.agent.batching import BatchGate
from relay_nb.agent.caps import SpendMeter, UsageCaps, UsageLimit, plan_call
from relay_nb.agent.charts import CHART_TOOL, ResultStore, chart_tool
from relay_nb.agent.events import Event
from relay_nb.agent.history import History, digest
from relay_nb.agent.ledger import LedgerRow, UsageLedger
from relay_nb.agent.loop import TurnResult, run_turn
from relay_nb.agent.pricing import PriceTable, price_usage, usage_with_estimates
from relay_nb.agent.prompt import base_prompt
from relay_nb.agent.routing import ModelRouter, ModelSetting
from relay_nb.agent.skills import TIERS, Skill, SkillRegistry
from relay_nb.agent.tool_calls import ToolOutcome
from relay_nb.connectors.base import Connector
from relay_nb.connectors.registry import DEFAULT_SCHEMA_TTL_S, ConnectorRegistry
from relay_nb.context import (
    ConnectorDocumentsSource,
    ConnectorSchemaSource,
    ContextResolver,
    ContextSource,
    RecentTurnsSource,
    allocate_budget,
)
from relay_nb.context.connector_documents import has_documents
from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.base import ModelRuntime
from relay_nb.runtime.types import Message, Usage, estimate_request_tokens
from relay_nb.tools import Tool

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Session"]

logger = logging.getLogger("relay_nb.agent")

LedgerSetting = UsageLedger | str | Path | Literal[False] | None
_MEMORY_WORDS = 250
_INDEPENDENT: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "relay_nb_independent_question", default=False
)
"""Set inside ask_many's turns: they must not see the conversation's memory either."""
_NO_USAGE = Usage(input_tokens=0, output_tokens=0, cost_usd=0.0)
"""Zero, known: adding a turn with an unknown cost then makes the total unknown, as it is."""


class Session:
    """One analyst's conversation; see the module docstring.

    ``ledger=None`` records to the default SQLite file (``default_ledger_path()``), a path
    or URL records there, ``False`` records nothing. ``caps`` applies to every turn,
    ``session_caps`` to the session's running total. A connector's schema is re-read at the
    start of the first turn after it is ``schema_ttl_s`` old (None: only on ``refresh``).
    A model call failing with a retryable error (rate limit, overload, timeout, dropped
    connection) is tried up to ``max_retries`` more times, waiting ``retry_base_s`` doubled
    per attempt (or the provider's own retry-after hint) in between.
    """

    def __init__(
        self,
        model: ModelSetting = None,
        *,
        connectors: Iterable[Connector] = (),
        tools: Iterable[Tool] = (),
        skills: Iterable[Skill] = (),
        sources: Iterable[ContextSource] = (),
        routes: Mapping[str, str] | None = None,
        caps: UsageCaps | None = None,
        session_caps: UsageCaps | None = None,
        approver: Approver | None = None,
        ledger: LedgerSetting = None,
        prices: PriceTable | None = None,
        context_window: int = 200_000,
        max_steps: int = 8,
        max_output_tokens: int = 4096,
        max_retries: int = 3,
        retry_base_s: float = 0.5,
        default_tier: str = "balanced",
        inline_result_chars: int = 2000,
        compact_with_model: bool = True,
        keep_turns: int = 100,
        charts: bool = True,
        notebook: str | None = None,
        session_id: str | None = None,
        schema_ttl_s: float | None = DEFAULT_SCHEMA_TTL_S,
    ) -> None:
        if default_tier not in TIERS:
            raise ConfigurationError(f"default_tier must be one of {TIERS}, got {default_tier!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigurationError(f"max_retries must be 0 or more, got {max_retries!r}")
        if isinstance(retry_base_s, bool) or not isinstance(retry_base_s, int | float):
            raise ConfigurationError(f"retry_base_s must be seconds, got {retry_base_s!r}")
        if not 0 <= retry_base_s <= 60:
            raise ConfigurationError(f"retry_base_s must be 0 to 60 seconds, got {retry_base_s!r}")
        self.id = session_id or uuid.uuid4().hex
        self.router = ModelRouter(model, routes=routes)
        self.caps = caps or UsageCaps()
        self.session_caps = session_caps or UsageCaps()
        self.approver = approver
        self.ledger = _ledger(ledger)
        self.prices = prices
        self.budget = allocate_budget(context_window)
        self.max_steps = max_steps
        self.max_output_tokens = max_output_tokens
        self.max_retries = max_retries
        self.retry_base_s = float(retry_base_s)
        self.default_tier = default_tier
        self.notebook = notebook
        self.connectors = ConnectorRegistry(schema_ttl_s=schema_ttl_s)
        """Registered connectors by id (a read-only mapping; change it with add/remove)."""
        self.tools: dict[str, Tool] = {}
        self.skills = SkillRegistry()
        self.history = History(inline_chars=inline_result_chars)
        self.turns: list[TurnResult] = []
        """The last ``keep_turns`` results, with their DataFrames and events."""
        self.keep_turns = keep_turns
        self.usage = _NO_USAGE
        """Everything the session spent: its turns, ask_many runs and compactions."""
        self.compaction_usage = _NO_USAGE
        self.compact_with_model = compact_with_model
        self.resolver = ContextResolver(
            [RecentTurnsSource((), memory=self._memory, max_turns=0, name="memory")]
        )
        self.artifacts = ResultStore()
        """Recent tool artifacts by call id (what the ``chart`` tool draws from)."""
        self._chart_tool = chart_tool(self.artifacts) if charts else None
        self._routers: dict[object, ModelRouter] = {}
        self._meter = SpendMeter()
        """Live spending for the session cap, fed by every call as it is priced."""
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
            self._remove_sources(connector.id)
        self.connectors.add(connector, replace=True)  # closes the one it replaces
        self.resolver.add(ConnectorSchemaSource(connector))
        if has_documents(connector):  # e.g. an MCP server's resources
            self.resolver.add(ConnectorDocumentsSource(connector))
        return connector

    def remove_connector(self, connector_id: str, *, close: bool = True) -> None:
        """Unregister (and by default close) a connector; skills that use it go too."""
        self.connectors.remove(connector_id, close=close)
        self._remove_sources(connector_id)
        for name in [
            n for n in self.skills.names() if connector_id in self.skills.get(n).connectors
        ]:
            self.skills.remove(name)

    def _remove_sources(self, connector_id: str) -> None:
        """Drop the context sources registered for a connector (its schema, its documents)."""
        registered = {source.name for source in self.resolver.sources}
        for name in (f"schema:{connector_id}", f"documents:{connector_id}"):
            if name in registered:
                self.resolver.remove(name)

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

    def ask(self, question: str, **options: Any) -> TurnResult:
        """Synchronous :meth:`ask_async` for scripts (no event loop running in this thread)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ask_async(question, **options))
        raise ConfigurationError(
            "Session.ask cannot block inside a running event loop; use "
            "`await session.ask_async(...)` (in a notebook, the %relay magic handles this)"
        )

    async def ask_async(
        self,
        question: str,
        *,
        skills: str | Sequence[str] | None = None,
        on_event: Callable[[Event], None] | None = None,
        abort: AbortSignal | None = None,
        caps: UsageCaps | None = None,
        approver: Approver | None = None,
        model: ModelSetting = None,
        max_steps: int | None = None,
    ) -> TurnResult:
        """Answer ``question`` in the context of this conversation; extends the history.

        ``model`` (a profile, kind or runtime) and ``max_steps`` override the session's for
        this question only.
        """
        if not isinstance(question, str) or not question.strip():
            raise ConfigurationError("ask needs a non-empty question")
        runtime = None
        if model is not None:
            runtime = self._override_router(model).runtime_for(self._plan(skills)[2])
        async with self._turn_lock():
            result = await self._turn(
                question,
                skills=skills,
                history=list(self.history.messages),
                on_event=on_event,
                abort=abort,
                caps=caps,
                approver=approver,
                runtime=runtime,
                max_steps=max_steps,
            )
            self._remember(result)
            await self._compact_if_needed()
            return result

    async def stream(self, question: str, **options: Any) -> AsyncIterator[Event]:
        """Events of one :meth:`ask_async` as an async iterator; ends after ``done``.

        The finished ``TurnResult`` is ``session.turns[-1]``. Closing the iterator early
        (``async with contextlib.aclosing(session.stream(q)) as events``, then ``break``)
        cancels the turn, its running statements too, and leaves the history consistent.
        """
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        abort = options.pop("abort", None) or AbortSignal()
        task = asyncio.ensure_future(
            self.ask_async(question, on_event=queue.put_nowait, abort=abort, **options)
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

    async def ask_many(
        self,
        questions: Sequence[str],
        *,
        concurrency: int = 4,
        batch: bool = False,
        skills: str | Sequence[str] | None = None,
        caps: UsageCaps | None = None,
        batch_timeout_s: float | None = None,
    ) -> list[TurnResult]:
        """Answer independent questions concurrently; results in question order.

        ``batch=True`` sends the model calls through the runtime's physical batch (the
        Message Batches API on Anthropic: half price, minutes to hours of latency) — for
        offline evaluation runs. The history is neither read nor extended; usage is added
        to the session total and the ledger.
        """
        if concurrency < 1:
            raise ConfigurationError(f"concurrency must be at least 1, got {concurrency}")
        if isinstance(questions, str):
            raise ConfigurationError("ask_many takes a list of questions; use ask() for one")
        questions = list(questions)
        blank = [i for i, q in enumerate(questions) if not isinstance(q, str) or not q.strip()]
        if blank:
            raise ConfigurationError(f"questions at positions {blank} are empty or not text")
        gate = None
        if batch and questions:
            runtime = self.router.runtime_for(self._plan(skills)[2])
            gate = BatchGate(runtime, active=len(questions), timeout=batch_timeout_s)
        limit = asyncio.Semaphore(len(questions) if gate is not None else concurrency)

        async def one(question: str) -> TurnResult:
            _INDEPENDENT.set(True)  # this task only: the memory source reads it
            async with limit:
                try:
                    result = await self._turn(
                        question,
                        skills=skills,
                        history=[],
                        caps=caps,
                        runtime=gate,
                        batch=gate is not None,
                    )
                finally:
                    if gate is not None:
                        gate.leave()
                self.usage = self.usage + result.usage
                return result

        tasks = [asyncio.ensure_future(one(q)) for q in questions]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            # one failed or we were cancelled: stop the others (their statements too), and
            # do not leave a submitted batch running and billing
            for task in tasks:
                task.cancel()
            await asyncio.shield(asyncio.wait(tasks))
            if gate is not None:
                await asyncio.shield(gate.cancel())
            raise

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
        if self.ledger is None:
            raise ConfigurationError("this session keeps no ledger (ledger=False)")
        return self.ledger.report(by)

    async def aclose(self) -> None:
        """Close connectors, runtimes and the ledger."""
        await self.resolver.aclose()
        self.connectors.close()
        routers = [self.router, *self._routers.values()]
        for runtime in [r for router in routers for r in router.runtimes()]:
            closer = getattr(runtime, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()
        if self.ledger is not None:
            self.ledger.close()

    # -- internals -----------------------------------------------------------------------------

    def _plan(self, skills: str | Sequence[str] | None) -> tuple[list[Skill], list[str], str, int]:
        """``(active skills, connector ids, tier, max_steps)`` for one question.

        No skills named: every registered skill is active (none registered: every
        connector). Tier and max_steps are the most demanding among the active skills.
        """
        names = [skills] if isinstance(skills, str) else list(skills or self.skills.names())
        active = [self.skills.get(name) for name in names]
        if not active:
            return [], list(self.connectors), self.default_tier, self.max_steps
        connector_ids = list(dict.fromkeys(c for s in active for c in s.connectors))
        tier = max((s.tier for s in active), key=TIERS.index)
        return active, connector_ids, tier, max(s.max_steps for s in active)

    def _tools_for(self, active: Sequence[Skill], connector_ids: Sequence[str]) -> list[Tool]:
        tools = [t for cid in connector_ids for t in self.connectors.tools(cid)]
        extra = (
            list(dict.fromkeys(n for s in active for n in s.tools)) if active else list(self.tools)
        )
        tools += [self.tools[name] for name in extra]
        if self._chart_tool is not None and connector_ids:
            tools.append(self._chart_tool)
        return tools

    def _limits(self) -> list[UsageLimit]:
        """The session cap on the live session meter (fed even while no cap is set)."""
        return [UsageLimit(scope="session", caps=self.session_caps, meter=self._meter)]

    def _override_router(self, model: ModelSetting) -> ModelRouter:
        """A router for a per-question model, kept so its runtimes (clients) are reused."""
        key = model if isinstance(model, str) else id(model)
        if key not in self._routers:
            self._routers[key] = ModelRouter(model, routes=self.router.routes)
        return self._routers[key]

    def _memory(self) -> str | None:
        return None if _INDEPENDENT.get() else self.history.memory

    def _turn_lock(self) -> asyncio.Lock:
        """One question at a time on this loop; a new loop (each sync ``ask``) gets a new
        lock, since an asyncio lock belongs to the loop it first waited on."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    async def _turn(
        self,
        question: str,
        *,
        skills: str | Sequence[str] | None,
        history: list[Message],
        on_event: Callable[[Event], None] | None = None,
        abort: AbortSignal | None = None,
        caps: UsageCaps | None = None,
        approver: Approver | None = None,
        runtime: ModelRuntime | None = None,
        batch: bool = False,
        max_steps: int | None = None,
    ) -> TurnResult:
        active, connector_ids, tier, planned_steps = self._plan(skills)
        self.connectors.refresh_stale(connector_ids)  # drops expired schemas; reads nothing
        return await run_turn(
            question,
            runtime=runtime or self.router.runtime_for(tier),
            tools=self._tools_for(active, connector_ids),
            system_prompt=base_prompt(active),
            history=history,
            resolver=self.resolver,
            connector_ids=connector_ids,
            context_window=self.budget.context_window,
            max_steps=max_steps or planned_steps,
            prices=self.prices,
            ledger=self.ledger,
            session_id=self.id,
            notebook=self.notebook,
            on_event=on_event,
            max_output_tokens=self.max_output_tokens,
            max_retries=self.max_retries,
            retry_base_s=self.retry_base_s,
            abort=abort,
            approver=approver or self.approver,
            caps=caps or self.caps,
            limits=self._limits(),
            batch=batch,
            results=self.artifacts,
        )

    def _remember(self, result: TurnResult) -> None:
        self.history.add_turn(result.messages, result.tool_results)
        self.turns.append(result)
        if len(self.turns) > self.keep_turns:  # old results and frames go; history stays
            del self.turns[: len(self.turns) - self.keep_turns]
        self.usage = self.usage + result.usage

    async def _compact_if_needed(self) -> None:
        """Fold the oldest turns into the memory once the history outgrows its budget.

        Runs after a turn's ``done``, so its model call (if any) is not part of that turn:
        its usage goes to the session total, :attr:`compaction_usage` and the ledger.
        """
        budget = self.budget.history
        if self.history.tokens() <= budget:
            return
        older, _newer = self.history.split_for_compaction(budget)
        if not older:
            return
        memory_tokens = max(64, budget // 4)
        memory = await self._model_summary(older) if self.compact_with_model else None
        if memory is None or len(memory) // 4 > memory_tokens:
            memory = digest(older, self.history.memory, memory_tokens)
        self.history.apply_compaction(older, memory)

    async def _model_summary(self, older: Sequence[Message]) -> str | None:
        """The model's notes on ``older`` (fast tier), or None (then the digest is used)."""
        request = self.history.compaction_request(older, _MEMORY_WORDS)
        turn_id = f"compaction-{uuid.uuid4().hex[:12]}"
        prices = self.prices or PriceTable.load()
        try:
            runtime = self.router.runtime_for("fast")
            limits = [limit for limit in self._limits() if limit.caps.active]
            if limits:  # the summary is a model call like any other: the session cap holds
                model = getattr(runtime, "model", "") or ""
                plan = plan_call(
                    limits,
                    prompt_tokens=estimate_request_tokens(request),
                    max_output_tokens=request.max_output_tokens or _MEMORY_WORDS * 2,
                    price=prices.price_for(model) if model else None,
                )
                if plan.stop_reason is not None:
                    logger.info("history compaction used the digest: %s", plan.stop_reason)
                    return None
                request = request.model_copy(update={"max_output_tokens": plan.max_output_tokens})
            result = await runtime.invoke(request)
        except (InvocationError, ConfigurationError) as exc:
            logger.info("history compaction fell back to the digest: %s", exc)
            return None
        priced, _warnings = price_usage(usage_with_estimates(result, request), result.model, prices)
        self._meter.add(priced)
        self.usage = self.usage + priced
        self.compaction_usage = self.compaction_usage + priced
        if self.ledger is not None:
            with contextlib.suppress(Exception):
                self.ledger.append(
                    LedgerRow.from_result(
                        result,
                        session_id=self.id,
                        turn_id=turn_id,
                        step=0,
                        notebook=self.notebook,
                        usage=priced,
                    )
                )
        text = result.output_text.strip()
        return text or None


def _ledger(setting: LedgerSetting) -> UsageLedger | None:
    if setting is False:
        return None
    if isinstance(setting, UsageLedger):
        return setting
    return UsageLedger(setting)
