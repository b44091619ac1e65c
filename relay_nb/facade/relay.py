"""``Relay``: the analyst's one conversation object (DESIGN.md §2).

Everything a notebook, a script or the ``%relay`` magic does goes through its public methods:
``connect`` takes a URL, an engine or a DataFrame; ``skill`` and ``tool`` register from
keyword arguments (and redefine on a re-run cell instead of failing); ``ask`` is synchronous
— it works in a script and inside Jupyter's running loop alike (see
:mod:`relay_nb.facade.loop_thread`), with Ctrl-C cancelling the turn cleanly — and takes every
per-question option as a named, typed keyword (declared once, as
:class:`~relay_nb.agent.settings.AskOptions`; ``help(relay.ask)`` lists them). Behind it is
the agent layer's engine (:class:`relay_nb.agent.session.Session`), which nothing above the
facade touches.

``relay_nb.default_relay()`` (:mod:`relay_nb.facade.default`) is the kernel's default
instance, the one the magics use.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from pydantic import ValidationError

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.approval import Approver
from relay_nb.agent.caps import UsageCaps
from relay_nb.agent.clarify import Clarifier
from relay_nb.agent.events import Event
from relay_nb.agent.pricing import PriceTable
from relay_nb.agent.routing import ModelSetting
from relay_nb.agent.services import EventSink
from relay_nb.agent.session import Session
from relay_nb.agent.settings import (
    Approval,
    AskOptions,
    CallOptions,
    SessionOptions,
    TurnSettings,
)
from relay_nb.agent.skills import Skill, Tier
from relay_nb.agent.turn_result import TurnResult
from relay_nb.connectors.base import Connector
from relay_nb.connectors.registry import DEFAULT_SCHEMA_TTL_S
from relay_nb.context import ContextSource
from relay_nb.errors import ConfigurationError
from relay_nb.facade.background import BackgroundRun, Submits
from relay_nb.facade.call_options import (
    LedgerSetting,
    call_layer,
    first_problem,
    ledger_from,
    takes_options,
)
from relay_nb.facade.config import apply_config, build_skill, load_config
from relay_nb.facade.connecting import Connects
from relay_nb.facade.knowledge import KnowledgeInput, attach, save_verified
from relay_nb.facade.loop_thread import run_sync
from relay_nb.knowledge import Knowledge
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.types import Message, Usage
from relay_nb.tools import Tool

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LedgerSetting", "Relay", "Turn"]

Turn = TurnResult
"""DESIGN.md's name for what a question returns: answer, df, frames, queries, usage, events."""

open_relays: weakref.WeakSet[Relay] = weakref.WeakSet()
"""Every live Relay, so kernel shutdown closes their connectors (no leaked connections)."""


class Relay(Connects, Submits):
    """Connect data, ask questions, see what each answer cost (and, with :meth:`evaluate`,
    how often the answers are right).

    ``model``: a profile (``"anthropic:claude-sonnet-4-6"``), a kind routed by tier
    (``"anthropic"``, ``"claude-code"``), a runtime object, or None for the first of
    ``RELAY_MODEL`` / ``ANTHROPIC_API_KEY`` / a ``claude`` CLI on PATH.

    The turn settings (``max_steps``, ``max_cost_usd`` and ``max_tokens`` per turn,
    ``max_output_tokens`` per call, ``approval``, ``tier``, ``context_window``,
    ``max_retries``, ``retry_base_s``) are this session's defaults: a skill's own values and
    a question's keywords win over them (see :mod:`relay_nb.agent.settings`);
    :meth:`configure` changes them later. ``session_max_cost_usd`` / ``session_max_tokens``
    cap the running total. ``ledger``: None records every model call to the default file,
    a path or URL there, False nowhere; ``prices`` replaces the packaged price table;
    ``notebook`` and ``session_id`` label the ledger rows. ``config`` loads a
    ``relay.config.json`` (or a mapping) at once.
    """

    def __init__(
        self,
        model: ModelSetting = None,
        *,
        max_steps: int | None = None,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        max_output_tokens: int | None = None,
        approval: Approval | None = None,
        tier: Tier | None = None,
        context_window: int | None = None,
        max_retries: int | None = None,
        retry_base_s: float | None = None,
        session_max_cost_usd: float | None = None,
        session_max_tokens: int | None = None,
        approver: Approver | None = None,
        ledger: LedgerSetting = None,
        prices: PriceTable | None = None,
        routes: Mapping[str, str] | None = None,
        notebook: str | None = None,
        session_id: str | None = None,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        schema_ttl_s: float | None = DEFAULT_SCHEMA_TTL_S,
        inline_result_chars: int = 2000,
        compact_with_model: bool = True,
        keep_turns: int = 100,
        charts: bool = True,
    ) -> None:
        self._background: list[BackgroundRun[Any]] = []
        loaded = load_config(config) if config is not None else None
        if loaded is not None and loaded.schema_ttl_s is not None:
            schema_ttl_s = loaded.schema_ttl_s
        try:
            caps = UsageCaps(max_cost_usd=session_max_cost_usd, max_tokens=session_max_tokens)
        except ValidationError as exc:
            raise ConfigurationError(f"session caps: {first_problem(exc)}") from None
        accountant = Accountant(
            prices=prices,
            ledger=ledger_from(ledger),
            caps=caps,
            session_id=session_id,
            notebook=notebook,
        )
        try:
            self._engine = Session(
                model,
                settings={
                    "max_steps": max_steps,
                    "max_cost_usd": max_cost_usd,
                    "max_tokens": max_tokens,
                    "max_output_tokens": max_output_tokens,
                    "approval": approval,
                    "tier": tier,
                    "context_window": context_window,
                    "max_retries": max_retries,
                    "retry_base_s": retry_base_s,
                },
                accountant=accountant,
                approver=approver,
                routes=routes,
                inline_result_chars=inline_result_chars,
                compact_with_model=compact_with_model,
                keep_turns=keep_turns,
                charts=charts,
                schema_ttl_s=schema_ttl_s,
            )
        except BaseException:
            accountant.close()
            raise
        open_relays.add(self)
        if loaded is not None:
            try:
                apply_config(self._engine, loaded)
            except BaseException:
                self.close()  # the ledger and any runtime it opened
                raise

    def __repr__(self) -> str:
        s = self._engine
        cost = "unknown" if s.usage.cost_usd is None else f"${s.usage.cost_usd:.4f}"
        return (
            f"<Relay connectors={list(s.connectors)} skills={list(s.skills.names())} "
            f"turns={len(s.turns)} spent={cost}>"
        )

    @property
    def id(self) -> str:
        """This conversation's id (its ledger rows carry it)."""
        return self._engine.id

    # -- data -----------------------------------------------------------------------------------

    def disconnect(self, connector_id: str) -> None:
        """Close and forget a connector (skills that use it, and its knowledge, too)."""
        self._engine.remove_connector(connector_id)
        if self.has_source(f"knowledge:{connector_id}"):
            self.remove_source(f"knowledge:{connector_id}")

    def knowledge(self, connector_id: str, source: KnowledgeInput) -> Knowledge:
        """Attach a knowledge file (a path, a mapping, a ``Knowledge``); a re-run replaces it."""
        attached = attach(self._engine.connectors, connector_id, source)
        self.add_source(attached, replace=True)
        return attached.knowledge

    def verify(self, turn: TurnResult | None = None, *, by: str | None = None) -> Path:
        """Save ``turn``'s (default: the last) question and SQL as a verified query in its
        connector's knowledge file (``<id>.knowledge.yaml`` if none is attached), which
        the next similar question starts from; returns the file."""
        last = turn or (self.turns[-1] if self.turns else None)
        source, path = save_verified(self._engine.resolver.sources, last, by)
        self.add_source(source, replace=True)
        return path

    @property
    def connectors(self) -> dict[str, Connector]:
        return dict(self._engine.connectors)

    def connector_status(self) -> pd.DataFrame:
        """One row per connector: id, type, target (passwords masked), what it holds
        (tables, collections, endpoints) and whether its schema could be read."""
        return self._engine.connectors.status_frame()

    @property
    def schema_ttl_s(self) -> float | None:
        """Seconds after which a connector's schema is re-read before the next question
        (None: only on :meth:`refresh`)."""
        return self._engine.connectors.schema_ttl_s

    @schema_ttl_s.setter
    def schema_ttl_s(self, seconds: float | None) -> None:
        self._engine.connectors.schema_ttl_s = seconds

    def refresh(self, connector_id: str | None = None) -> dict[str, str]:
        """Renew one connector's schema (or every one's) now: ``{id: "ok" | "error: …"}``.
        A SQL database's is read again only if it changed (one statement says whether).
        Naming one raises its error; refreshing all goes on past a failing system."""
        return self._engine.connectors.refresh(connector_id)

    def load_config(self, config: str | os.PathLike[str] | Mapping[str, Any]) -> list[str]:
        """Register the connectors and skills of a ``relay.config.json`` (or a mapping);
        returns the connector ids. All or nothing: on any error, nothing is registered."""
        return apply_config(self._engine, load_config(config))

    # -- skills, tools and context -------------------------------------------------------------

    def skill(
        self,
        name: str,
        *,
        prompt: str,
        connectors: Sequence[str] = (),
        tools: Sequence[str] = (),
        tier: Tier | None = None,
        description: str | None = None,
        max_steps: int | None = None,
        examples: Sequence[str] = (),
    ) -> Skill:
        """Register (or, from a re-run cell, redefine) a skill; unknown names are an error.

        ``tier`` and ``max_steps`` left out: the session's apply when the skill is active.
        """
        skill = build_skill(
            name,
            prompt=prompt,
            connectors=connectors,
            tools=tools,
            tier=tier,
            description=description,
            max_steps=max_steps,
            examples=examples,
        )
        return self._engine.add_skill(skill, replace=True)

    @property
    def skills(self) -> dict[str, Skill]:
        """The registered skills by name."""
        registry = self._engine.skills
        return {name: registry.get(name) for name in registry.names()}

    def tool(self, function: Callable[..., Any] | Tool | None = None, **options: Any) -> Any:
        """Register a tool; also a decorator: ``@relay.tool`` or
        ``@relay.tool(requires_approval=True)`` (``options`` are ``Tool.from_function``'s:
        ``name``, ``description``, ``requires_approval``, ``timeout_s``). A re-run cell
        redefines it."""

        def register(target: Callable[..., Any] | Tool) -> Callable[..., Any] | Tool:
            tool = target if isinstance(target, Tool) else Tool.from_function(target, **options)
            self._engine.add_tool(tool, replace=True)
            return target

        return register if function is None else register(function)

    @property
    def tools(self) -> dict[str, Tool]:
        """The tools registered with :meth:`tool` (connectors' own tools are theirs)."""
        return dict(self._engine.tools)

    def add_source(self, source: ContextSource, *, replace: bool = False) -> None:
        """Add a context source (a glossary, a notebook's DataFrames …) that every question's
        prompt draws from; ``replace=True`` swaps one registered under the same name (a
        re-run cell)."""
        self._engine.resolver.add(source, replace=replace)

    def has_source(self, name: str) -> bool:
        """Whether a context source called ``name`` is registered."""
        return any(source.name == name for source in self._engine.resolver.sources)

    def remove_source(self, name: str) -> None:
        """Forget the context source called ``name``."""
        self._engine.resolver.remove(name)

    # -- settings -------------------------------------------------------------------------------

    @property
    def settings(self) -> TurnSettings:
        """What a question asked with no options gets (``settings.origin("max_steps")``
        says which layer set a value)."""
        return self._engine.settings

    @takes_options(SessionOptions)
    def configure(self, **settings: Unpack[SessionOptions]) -> TurnSettings:
        """Change this session's defaults (the ``session`` layer): :meth:`ask`'s options, and
        ``tier``, ``context_window``, ``max_retries``, ``retry_base_s`` (declared as
        :class:`~relay_nb.agent.settings.SessionOptions`); an option left out (None) keeps
        its value. Returns the settings a question now gets."""
        layer = call_layer(settings, accepted=SessionOptions, method="Relay.configure")
        return self._engine.configure(**layer)

    # -- asking ---------------------------------------------------------------------------------

    @takes_options(AskOptions)
    def ask(
        self,
        question: str,
        *,
        approver: Approver | None = None,
        clarifier: Clarifier | None = None,
        on_event: EventSink | None = None,
        abort: AbortSignal | None = None,
        **options: Unpack[AskOptions],
    ) -> TurnResult:
        """Answer ``question`` (blocking). Works in scripts and in a running notebook loop;
        Ctrl-C / interrupting the kernel cancels the turn, its running query included.

        For this question only: ``model`` (a profile, kind or runtime), ``skill`` (a skill's
        name or several; None: every registered one), ``max_steps``, ``max_cost_usd`` and
        ``max_tokens`` (this turn's caps), ``max_output_tokens`` (per model call),
        ``approval`` ("ask", "allow", "deny") and ``approver`` (who is asked), ``clarifier``
        (who answers the model's ``clarify`` questions; None: it cannot ask). ``on_event``
        sees every event as it happens; ``abort`` stops the turn from another thread. The
        options are declared as :class:`~relay_nb.agent.settings.AskOptions`.
        """
        call = call_layer(options, accepted=AskOptions, method="Relay.ask")
        abort = abort or AbortSignal()
        coroutine = self._engine.ask_async(
            question,
            call,
            on_event=on_event,
            abort=abort,
            approver=approver,
            clarifier=clarifier,
        )
        return run_sync(coroutine, on_interrupt=lambda: abort.abort("interrupted"))

    @takes_options(AskOptions)
    async def ask_async(
        self,
        question: str,
        *,
        approver: Approver | None = None,
        clarifier: Clarifier | None = None,
        on_event: EventSink | None = None,
        abort: AbortSignal | None = None,
        **options: Unpack[AskOptions],
    ) -> TurnResult:
        """``await relay.ask_async(...)``: the same turn as :meth:`ask`, on the caller's loop."""
        call = call_layer(options, accepted=AskOptions, method="Relay.ask_async")
        return await self._engine.ask_async(
            question,
            call,
            on_event=on_event,
            abort=abort,
            approver=approver,
            clarifier=clarifier,
        )

    @takes_options(AskOptions)
    def stream(
        self,
        question: str,
        *,
        approver: Approver | None = None,
        clarifier: Clarifier | None = None,
        abort: AbortSignal | None = None,
        **options: Unpack[AskOptions],
    ) -> AsyncIterator[Event]:
        """``async for event in relay.stream(q)``: the turn's events as they happen (options
        as for :meth:`ask`); the finished turn is ``relay.turns[-1]``. Leaving the loop early
        cancels the turn."""
        call = call_layer(options, accepted=AskOptions, method="Relay.stream")
        return self._engine.stream(
            question, call, abort=abort, approver=approver, clarifier=clarifier
        )

    @takes_options(CallOptions)
    def ask_many(
        self,
        questions: Sequence[str],
        *,
        concurrency: int = 4,
        batch: bool = False,
        batch_timeout_s: float | None = None,
        **options: Unpack[CallOptions],
    ) -> list[TurnResult]:
        """Independent questions, answered concurrently (at most ``concurrency`` at once),
        results in question order; neither reads nor extends the conversation.
        ``batch=True`` sends the calls through the runtime's physical batch at the batch
        price (minutes to hours; ``batch_timeout_s`` bounds the wait). Caps apply per turn;
        the session's cap holds across all of them. The options are :meth:`ask`'s but
        ``approval`` (:class:`~relay_nb.agent.settings.CallOptions`)."""
        call = call_layer(options, accepted=CallOptions, method="Relay.ask_many")
        return run_sync(
            self._engine.ask_many(
                questions,
                call,
                concurrency=concurrency,
                batch=batch,
                batch_timeout_s=batch_timeout_s,
            )
        )

    @takes_options(CallOptions)
    async def ask_many_async(
        self,
        questions: Sequence[str],
        *,
        concurrency: int = 4,
        batch: bool = False,
        batch_timeout_s: float | None = None,
        **options: Unpack[CallOptions],
    ) -> list[TurnResult]:
        """``await relay.ask_many_async(...)``: :meth:`ask_many` on the caller's loop."""
        call = call_layer(options, accepted=CallOptions, method="Relay.ask_many_async")
        return await self._engine.ask_many(
            questions, call, concurrency=concurrency, batch=batch, batch_timeout_s=batch_timeout_s
        )

    # -- state ----------------------------------------------------------------------------------

    @property
    def usage(self) -> Usage:
        """Session totals: tokens and dollars over every turn and compaction."""
        return self._engine.usage

    @property
    def history(self) -> list[Message]:
        """The conversation the next question builds on (large results by reference)."""
        return list(self._engine.history.messages)

    @property
    def turns(self) -> list[TurnResult]:
        return list(self._engine.turns)

    def reset(self) -> None:
        """Forget the conversation; connectors, skills and usage totals stay."""
        self._engine.reset()

    def usage_report(self, by: Sequence[str] = ("day", "model", "notebook")) -> pd.DataFrame:
        """Calls, tokens and cost from the ledger, grouped by ``by`` (day, model, notebook,
        provider, session_id, turn_id, finish_reason)."""
        return self._engine.usage_report(by)

    def close(self) -> None:
        """Stop its background runs, then close connectors, model clients and the ledger."""
        open_relays.discard(self)
        self.stop_background()
        run_sync(self._engine.aclose())

    async def aclose(self) -> None:
        """``await relay.aclose()``: :meth:`close` on the caller's loop."""
        open_relays.discard(self)
        await self._engine.aclose()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran (its connectors, model clients and ledger are gone)."""
        return self not in open_relays
