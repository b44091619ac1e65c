"""``Relay``: the analyst's one object (DESIGN.md §2), a thin facade over ``Session``.

What it adds to a session is convenience for notebook cells: ``connect`` takes a URL or an
engine, ``skill`` and ``tool`` register from keyword arguments (and redefine on a re-run cell
instead of failing), and ``ask`` is synchronous — it works in a script and inside Jupyter's
running loop alike (see :mod:`relay_nb.facade.loop_thread`), with Ctrl-C cancelling the turn
cleanly. ``relay_nb.session()`` is the kernel's default instance, the one the magics use.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from relay_nb.agent.approval import Approver
from relay_nb.agent.caps import UsageCaps
from relay_nb.agent.events import Event
from relay_nb.agent.routing import ModelSetting
from relay_nb.agent.session import LedgerSetting, Session
from relay_nb.agent.skills import Skill, Tier
from relay_nb.agent.turn_result import TurnResult
from relay_nb.connectors.base import Connector
from relay_nb.errors import ConfigurationError
from relay_nb.facade.config import RelayConfig, build_connectors, load_config
from relay_nb.facade.loop_thread import run_sync
from relay_nb.facade.targets import connector_for
from relay_nb.runtime.abort import AbortSignal
from relay_nb.runtime.types import Message, Usage
from relay_nb.tools import Tool

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Relay", "Turn", "session"]

Turn = TurnResult
"""DESIGN.md's name for what a question returns: answer, df, frames, queries, usage, events."""

_open: weakref.WeakSet[Relay] = weakref.WeakSet()
"""Every live Relay, so kernel shutdown closes their connectors (no leaked connections)."""


class Relay:
    """Connect data, ask questions, see what each answer cost.

    ``model``: a profile (``"anthropic:claude-sonnet-4-6"``), a kind routed by tier
    (``"anthropic"``, ``"claude-code"``), a runtime object, or None for the first of
    ``RELAY_MODEL`` / ``ANTHROPIC_API_KEY`` / a ``claude`` CLI on PATH.
    ``max_cost_usd`` / ``max_tokens`` cap each turn; ``session_max_cost_usd`` /
    ``session_max_tokens`` cap the running total. Other keywords go to :class:`Session`.
    """

    def __init__(
        self,
        model: ModelSetting = None,
        *,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        session_max_cost_usd: float | None = None,
        session_max_tokens: int | None = None,
        approver: Approver | None = None,
        ledger: LedgerSetting = None,
        routes: Mapping[str, str] | None = None,
        notebook: str | None = None,
        config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        loaded = load_config(config) if config is not None else None
        if loaded is not None and loaded.schema_ttl_s is not None:
            options.setdefault("schema_ttl_s", loaded.schema_ttl_s)
        self.session = Session(
            model,
            caps=UsageCaps(max_cost_usd=max_cost_usd, max_tokens=max_tokens),
            session_caps=UsageCaps(
                max_cost_usd=session_max_cost_usd, max_tokens=session_max_tokens
            ),
            approver=approver,
            ledger=ledger,
            routes=routes,
            notebook=notebook,
            **options,
        )
        _open.add(self)
        if loaded is not None:
            try:
                self._apply_config(loaded)
            except BaseException:
                self.close()  # the ledger and any runtime it opened
                raise

    def __repr__(self) -> str:
        s = self.session
        cost = "unknown" if s.usage.cost_usd is None else f"${s.usage.cost_usd:.4f}"
        return (
            f"<Relay connectors={list(s.connectors)} skills={list(s.skills.names())} "
            f"turns={len(s.turns)} spent={cost}>"
        )

    # -- data -----------------------------------------------------------------------------------

    def connect(self, connector_id: str, target: Any, **options: Any) -> Connector:
        """Register a data source under ``connector_id`` (reconnecting replaces it).

        ``target`` picks the kind (see :mod:`relay_nb.facade.targets`):

        - a DataFrame, ``{"table": df, …}``, or a function returning a DataFrame: SQL over
          in-notebook frames through DuckDB (``row_limit``, ``statement_timeout_s``);
        - a SQLAlchemy URL or engine (``postgresql+psycopg://ro@127.0.0.1/shop``,
          ``sqlite:///shop.db``): ``tables``, ``schemas``, ``row_limit``,
          ``statement_timeout_s``, ``sample_values``;
        - ``mongodb://host/db``: ``collections``, ``sample_size``, ``max_depth``,
          ``row_limit``, ``timeout_s``;
        - ``https://api.example.com/v1``: ``auth={"type": "bearer", "token_env": "VAR"}``,
          ``headers``, ``openapi`` (a file or URL), ``methods``, ``timeout_s``;
        - ``"tavily"`` / ``"brave"`` / ``"serper"``: web search (``api_key_env``,
          ``max_results``);
        - a ``Connector`` object, or an object with a ``build_connector(connector_id,
          **options)`` method (``relay_nb.MCP(...)``);
        - a connector plugin's URL (``"csvdir:///data"``) or type name (``"csvdir"``), for
          types installed as plugins or registered with ``relay_nb.register_connector_type``
          (``relay_nb.connector_types()`` lists them and their options).

        Every kind also takes ``name`` and ``description``. Nothing is registered when the
        connector cannot be built: a bad URL or option leaves the session as it was.
        """
        connector = connector_for(connector_id, target, options)
        try:
            return self.session.add_connector(connector, replace=True)
        except BaseException:
            built_here = connector is not target
            if built_here and connector is not self.session.connectors.get(connector_id):
                connector.close()
            raise

    def disconnect(self, connector_id: str) -> None:
        """Close and forget a connector (skills that use it are removed too)."""
        self.session.remove_connector(connector_id)

    @property
    def connectors(self) -> dict[str, Connector]:
        return dict(self.session.connectors)

    def connector_status(self) -> pd.DataFrame:
        """One row per connector: id, type, target (passwords masked), what it holds
        (tables, collections, endpoints) and whether its schema could be read."""
        import pandas as pd

        rows = [
            {
                "id": s.id,
                "type": s.type,
                "target": s.target,
                "objects": ", ".join(s.objects),
                "status": s.status,
            }
            for s in self.session.connectors.statuses()
        ]
        return pd.DataFrame(rows, columns=["id", "type", "target", "objects", "status"])

    def refresh(self, connector_id: str | None = None) -> dict[str, str]:
        """Re-read one connector's schema (or every one's) now: ``{id: "ok" | "error: …"}``.
        Naming one raises its error; refreshing all goes on past a failing system."""
        return self.session.connectors.refresh(connector_id)

    def load_config(self, config: str | os.PathLike[str] | Mapping[str, Any]) -> list[str]:
        """Register the connectors and skills of a ``relay.config.json`` (or a mapping);
        returns the connector ids. All or nothing: on any error, nothing is registered."""
        return self._apply_config(load_config(config))

    def _apply_config(self, config: RelayConfig) -> list[str]:
        """Everything that can fail is checked before the session changes: the skills, the
        connectors (built, closed again on any failure) and their tool names."""
        skills = [_build_skill(**spec.model_dump()) for spec in config.skills]
        known = set(self.session.connectors) | {spec.id for spec in config.connectors}
        for skill in skills:
            missing = [c for c in skill.connectors if c not in known]
            if missing:
                raise ConfigurationError(
                    f"skill {skill.name!r} names connector(s) {missing} that neither the config "
                    'nor the session has; add them under "connectors" or fix the ids'
                )
            unknown = [t for t in skill.tools if t not in self.session.tools]
            if unknown:
                raise ConfigurationError(
                    f"skill {skill.name!r} names tool(s) {unknown} that are not registered; "
                    "register them with relay.tool(...) before loading the config"
                )
        connectors = build_connectors(config)
        try:
            self._check_new_tool_names(connectors)
            for connector in connectors:
                self.session.add_connector(connector, replace=True)
        except BaseException:
            for connector in connectors:
                if self.session.connectors.get(connector.id) is not connector:
                    connector.close()
            raise
        for skill in skills:
            self.session.add_skill(skill, replace=True)
        if "schema_ttl_s" in config.model_fields_set:
            self.session.connectors.schema_ttl_s = config.schema_ttl_s
        return [c.id for c in connectors]

    def _check_new_tool_names(self, connectors: Sequence[Connector]) -> None:
        """Tool names of ``connectors`` clash neither among themselves nor with what stays
        registered (the connectors they replace go, so their names are free)."""
        taken = self.session.taken_tool_names(except_connectors={c.id for c in connectors})
        for connector in connectors:
            for tool in connector.tools():
                if tool.name in taken:
                    raise ConfigurationError(
                        f"connector {connector.id!r}: a tool named {tool.name!r} is already "
                        "registered (two web-search connectors, or an id clash?)"
                    )
                taken.add(tool.name)

    # -- skills and tools -----------------------------------------------------------------------

    def skill(
        self,
        name: str,
        *,
        prompt: str,
        connectors: Sequence[str] = (),
        tools: Sequence[str] = (),
        tier: Tier = "balanced",
        description: str | None = None,
        max_steps: int = 8,
        examples: Sequence[str] = (),
    ) -> Skill:
        """Register (or, from a re-run cell, redefine) a skill; unknown names are an error."""
        skill = _build_skill(
            name,
            prompt=prompt,
            connectors=connectors,
            tools=tools,
            tier=tier,
            description=description,
            max_steps=max_steps,
            examples=examples,
        )
        return self.session.add_skill(skill, replace=True)

    def tool(self, function: Callable[..., Any] | Tool | None = None, **options: Any) -> Any:
        """Register a tool; also a decorator: ``@relay.tool`` or
        ``@relay.tool(requires_approval=True)``. A re-run cell redefines it."""

        def register(target: Callable[..., Any] | Tool) -> Callable[..., Any] | Tool:
            tool = target if isinstance(target, Tool) else Tool.from_function(target, **options)
            self.session.add_tool(tool, replace=True)
            return target

        return register if function is None else register(function)

    # -- asking ---------------------------------------------------------------------------------

    def ask(self, question: str, **options: Any) -> TurnResult:
        """Answer ``question`` (blocking). Works in scripts and in a running notebook loop;
        Ctrl-C / interrupting the kernel cancels the turn, its running query included."""
        abort = options.pop("abort", None) or AbortSignal()
        return run_sync(
            self.session.ask_async(question, abort=abort, **options),
            on_interrupt=lambda: abort.abort("interrupted"),
        )

    async def ask_async(self, question: str, **options: Any) -> TurnResult:
        """``await relay.ask_async(...)``: the same turn, on the caller's loop."""
        return await self.session.ask_async(question, **options)

    def ask_many(self, questions: Sequence[str], **options: Any) -> list[TurnResult]:
        """Independent questions, answered concurrently (see ``Session.ask_many``)."""
        return run_sync(self.session.ask_many(questions, **options))

    async def ask_many_async(self, questions: Sequence[str], **options: Any) -> list[TurnResult]:
        return await self.session.ask_many(questions, **options)

    def stream(self, question: str, **options: Any) -> AsyncIterator[Event]:
        """``async for event in relay.stream(q)``: the turn's events as they happen."""
        return self.session.stream(question, **options)

    # -- state ----------------------------------------------------------------------------------

    @property
    def usage(self) -> Usage:
        """Session totals: tokens and dollars over every turn and compaction."""
        return self.session.usage

    @property
    def history(self) -> list[Message]:
        """The conversation the next question builds on (large results by reference)."""
        return list(self.session.history.messages)

    @property
    def turns(self) -> list[TurnResult]:
        return list(self.session.turns)

    def reset(self) -> None:
        """Forget the conversation; connectors, skills and usage totals stay."""
        self.session.reset()

    def usage_report(self, by: Sequence[str] = ("day", "model", "notebook")) -> pd.DataFrame:
        return self.session.usage_report(by)

    def close(self) -> None:
        """Close connectors, model clients and the ledger."""
        run_sync(self.session.aclose())


def _build_skill(
    name: str,
    *,
    prompt: str,
    connectors: Sequence[str] = (),
    tools: Sequence[str] = (),
    tier: Tier = "balanced",
    description: str | None = None,
    max_steps: int = 8,
    examples: Sequence[str] = (),
) -> Skill:
    """A checked ``Skill``; a bad field is a one-line ConfigurationError, not a traceback."""
    first_line = prompt.strip().splitlines()[0][:200] if prompt.strip() else ""
    try:
        return Skill(
            name=name,
            description=description or first_line or name,
            prompt=prompt,
            connectors=tuple(connectors),
            tools=tuple(tools),
            tier=tier,
            max_steps=max_steps,
            examples=tuple(examples),
        )
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'skill'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigurationError(f"skill {name!r}: {problems}") from None


@atexit.register
def _close_all_at_exit() -> None:
    """Kernel shutdown: close every live session's connectors (pools, clients, sockets)."""
    for relay in list(_open):
        with contextlib.suppress(Exception):
            relay.session.connectors.close()


_default: Relay | None = None
_default_guard = threading.Lock()


def session(**options: Any) -> Relay:
    """The kernel's default ``Relay`` (the one ``%relay`` uses), created on first call.

    Options apply when it is created; to change them later, build a ``Relay`` yourself.
    """
    global _default
    with _default_guard:
        if _default is None:
            _default = Relay(**options)
        elif options:
            raise ConfigurationError(
                "the default session already exists; options apply only when it is created "
                "(build your own Relay(...) for different ones)"
            )
        return _default
