"""Many independent questions at once: ``Session.ask_many`` (a mixin of the session).

Each question is its own turn with an empty history (and no memory of the conversation),
run at most ``concurrency`` at a time, or all through the runtime's physical batch; caps may
be shared across them (an evaluation run's), a callback sees each as it finishes, and each
may be scoped to one connector. Its own module so the session's file stays about one
conversation.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from relay_nb.agent.batching import BatchGate
from relay_nb.agent.caps import UsageCaps, UsageLimit
from relay_nb.agent.skills import Skill
from relay_nb.agent.turn_result import TurnResult
from relay_nb.errors import ConfigurationError

if TYPE_CHECKING:
    from relay_nb.agent.settings import TurnSettings
    from relay_nb.connectors.registry import ConnectorRegistry

__all__ = ["INDEPENDENT", "AsksMany", "Planned"]

INDEPENDENT: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "relay_nb_independent_question", default=False
)
"""Set inside ask_many's turns: they must not see the conversation's memory either."""

Planned = tuple["TurnSettings", list[Skill], list[str]]


class AsksMany:
    """``ask_many`` for :class:`~relay_nb.agent.session.Session` (which provides ``plan``,
    ``runtime_for``, ``connectors`` and ``_turn``)."""

    if TYPE_CHECKING:
        connectors: ConnectorRegistry

        def plan(self, call: Mapping[str, Any] | None = None) -> Planned: ...
        def runtime_for(self, settings: TurnSettings) -> Any: ...
        async def _turn(self, question: str, planned: Planned, **options: Any) -> TurnResult: ...

    async def ask_many(
        self,
        questions: Sequence[str],
        call: Mapping[str, Any] | None = None,
        *,
        concurrency: int = 4,
        batch: bool = False,
        batch_timeout_s: float | None = None,
        run_caps: UsageCaps | None = None,
        on_result: Callable[[int, TurnResult], None] | None = None,
        scopes: Sequence[str | None] | None = None,
    ) -> list[TurnResult]:
        """Answer independent questions concurrently; results in question order.

        ``batch=True`` sends the model calls through the runtime's physical batch (the
        Message Batches API on Anthropic: half price, minutes to hours of latency) — for
        offline evaluation runs. The history is neither read nor extended; every call goes
        through the session's accountant (total, caps, ledger) like any other.
        ``run_caps`` caps all of these turns together (one meter they share, as the
        session's); a turn that would pass it stops with ``finish_reason="usage_cap"``.
        ``on_result(index, turn)`` is called as each turn finishes (a progress bar).
        ``scopes[i]`` names the one connector question ``i`` may use (its tools, its schema
        in the prompt; an evaluation bank says which database each question asks).
        """
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigurationError(f"concurrency must be at least 1, got {concurrency!r}")
        if isinstance(questions, str):
            raise ConfigurationError("ask_many takes a list of questions; use ask() for one")
        questions = list(questions)
        blank = [i for i, q in enumerate(questions) if not isinstance(q, str) or not q.strip()]
        if blank:
            raise ConfigurationError(f"questions at positions {blank} are empty or not text")
        planned = self.plan({**(call or {}), "batch": batch or None})
        scoped = self._scoped(planned, scopes, len(questions))
        gate = None
        if batch and questions:
            runtime = self.runtime_for(planned[0])
            gate = BatchGate(runtime, active=len(questions), timeout=batch_timeout_s)
        limit = asyncio.Semaphore(len(questions) if gate is not None else concurrency)
        shared = (UsageLimit(scope="run", caps=run_caps),) if run_caps is not None else ()

        async def one(index: int, question: str) -> TurnResult:
            INDEPENDENT.set(True)  # this task only: the memory source reads it
            async with limit:
                try:
                    result = await self._turn(
                        question, scoped[index], history=[], runtime=gate, limits=shared
                    )
                finally:
                    if gate is not None:
                        gate.leave()
            if on_result is not None:
                on_result(index, result)
            return result

        tasks = [asyncio.ensure_future(one(i, q)) for i, q in enumerate(questions)]
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

    def _scoped(
        self,
        planned: Planned,
        scopes: Sequence[str | None] | None,
        count: int,
    ) -> list[Planned]:
        """Each question's plan: ``planned``, or narrowed to its scope's one connector."""
        if scopes is None:
            return [planned] * count
        if len(scopes) != count:
            raise ConfigurationError(f"{len(scopes)} scopes for {count} questions")
        unknown = sorted({s for s in scopes if s is not None} - set(self.connectors))
        if unknown:
            raise ConfigurationError(f"no connector {', '.join(unknown)} to scope questions to")
        settings, active, _ids = planned
        return [planned if s is None else (settings, active, [s]) for s in scopes]
