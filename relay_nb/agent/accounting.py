"""The accountant: what every model call costs, against which caps, and where it is recorded.

One object per session (``run_turn`` alone gets a fresh one) holds everything about money
and tokens that used to be spread over the loop, the session's compaction and ``ask_many``:

- the **price table**, loaded once (the packaged one unless given);
- the **bill** of a call (:meth:`Accountant.charge`): provider counts, or chars/4 marked
  ``estimated``, priced with cache TTLs and the batch discount (:func:`price_usage`), added
  to every meter and to the session total;
- the **worst case** a cap plans against before a call (:meth:`Accountant.plan`), from the
  same table and the same rates (:func:`worst_case_rates`): a prompt that may be written to
  a 1-hour cache is planned at the cache-write price, a batched call at the batch price;
- the **limits**: a turn's caps on a fresh meter, the session's caps on the session meter
  that every call feeds (a cap set later sees what was spent before);
- the **ledger**: one row per call made, answered or failed, committed before the turn goes
  on (inline when that is a ~20 µs write to a SQLite log, else on a worker thread) and never
  a reason for a turn to fail.

The loop, compaction, batching and ``ask_many`` all go through it, so "change how cost is
priced" is a change here (and in :mod:`~relay_nb.agent.pricing`'s arithmetic), nowhere else.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence

from relay_nb.agent.caps import CallPlan, SpendMeter, UsageCaps, UsageLimit, exceeded, plan_call
from relay_nb.agent.ledger import LedgerRow, UsageLedger
from relay_nb.agent.pricing import (
    PriceTable,
    price_usage,
    usage_with_estimates,
    worst_case_rates,
)
from relay_nb.runtime.base import ModelRuntime
from relay_nb.runtime.types import (
    InvocationRequest,
    InvocationResult,
    Simulated,
    Usage,
    estimate_request_tokens,
)

__all__ = ["NO_USAGE", "Accountant", "runtime_model", "runtime_provider", "runtime_simulated"]

logger = logging.getLogger("relay_nb.agent")

NO_USAGE = Usage(input_tokens=0, output_tokens=0, cost_usd=0.0)
"""Zero, known: adding a call of unknown cost then makes a total unknown, as it is."""


class Accountant:
    """Prices, caps, meters and the ledger of one session (see the module docstring).

    ``prices`` None: the packaged table (read once per process). ``ledger`` None: nothing is
    recorded. ``caps`` are the session's caps; a turn's come with each turn. ``session_id``
    and ``notebook`` label the ledger rows (a fresh id when none is given).
    """

    def __init__(
        self,
        *,
        prices: PriceTable | None = None,
        ledger: UsageLedger | None = None,
        caps: UsageCaps | None = None,
        session_id: str | None = None,
        notebook: str | None = None,
    ) -> None:
        self._prices = prices
        self.ledger = ledger
        self.caps = caps or UsageCaps()
        self.session_id = session_id or uuid.uuid4().hex
        self.notebook = notebook
        self.meter = SpendMeter()
        """The session's live spending, fed by every call as it is priced."""
        self.total = NO_USAGE
        """Everything spent through this accountant: turns, ``ask_many`` runs, compactions."""

    def __repr__(self) -> str:
        cost = "unknown" if self.total.cost_usd is None else f"${self.total.cost_usd:.4f}"
        return f"<Accountant session={self.session_id[:8]} spent={cost}>"

    @property
    def prices(self) -> PriceTable:
        """The price table every call is billed and planned with."""
        if self._prices is None:
            self._prices = PriceTable.load()
        return self._prices

    # -- caps ------------------------------------------------------------------------------

    def limits(self, turn_caps: UsageCaps | None = None) -> list[UsageLimit]:
        """A turn's limits: its own caps on a fresh meter, then the session's on the session
        meter. Every limit's meter is fed, active or not."""
        limits = [UsageLimit(scope="session", caps=self.caps, meter=self.meter)]
        if turn_caps is not None:
            limits.insert(0, UsageLimit(scope="turn", caps=turn_caps))
        return limits

    def plan(
        self,
        limits: Sequence[UsageLimit],
        request: InvocationRequest,
        *,
        runtime: ModelRuntime,
        model: str = "",
        batch: bool = False,
    ) -> CallPlan:
        """The output room the next call may use under the active ``limits``, or why it
        must not be made; ``model`` is the one that answered last (else the runtime's). The
        request states its ``max_output_tokens``: that is the room a cap may shrink."""
        requested = request.max_output_tokens or 0
        active = [limit for limit in limits if limit.caps.active]
        if not active:
            return CallPlan(max_output_tokens=requested)
        model = model or runtime_model(runtime)
        price = self.prices.price_for(model) if model else None
        rates = None
        if price is not None:
            ttl = runtime.capabilities().prompt_cache_ttl
            rates = worst_case_rates(price, self.prices, batch=batch, cache_ttl=ttl)
        return plan_call(
            active,
            prompt_tokens=estimate_request_tokens(request),
            max_output_tokens=requested,
            rates=rates,
        )

    # -- the bill --------------------------------------------------------------------------

    def charge(
        self,
        result: InvocationResult,
        request: InvocationRequest,
        *,
        limits: Sequence[UsageLimit] = (),
        batch: bool = False,
    ) -> tuple[Usage, list[str]]:
        """The call's priced usage and the warnings to show; added to every limit's meter
        and the session total. ``limits`` without the session's: the session meter is fed
        anyway, so spending outside a turn (a compaction) counts against the session cap."""
        usage = usage_with_estimates(result, request)
        priced, warnings = price_usage(usage, result.model, self.prices, batch=batch)
        meters = {id(limit.meter): limit.meter for limit in limits}
        meters.setdefault(id(self.meter), self.meter)
        for meter in meters.values():
            meter.add(priced)
        self.total = self.total + priced
        warnings += exceeded([limit for limit in limits if limit.caps.active])
        return priced, warnings

    # -- the ledger ------------------------------------------------------------------------

    async def record(
        self, result: InvocationResult, priced: Usage, *, turn_id: str, step: int
    ) -> None:
        """Append the call's row; accounting problems never cost the user their answer.

        An open SQLite ledger appends inline (a write to its log, ~20 µs). A first append, a
        server's, or one that would wait for another process's write goes to a worker
        thread, so the event loop (and ``ask_many``'s concurrent turns) go on."""
        if self.ledger is None:
            return
        try:
            row = LedgerRow.from_result(
                result,
                session_id=self.session_id,
                turn_id=turn_id,
                step=step,
                notebook=self.notebook,
                usage=priced,
            )
            # inline when that needs no wait: a thread hop costs ten times the append
            if not self.ledger.append_without_waiting(row):
                await asyncio.to_thread(self.ledger.append, row)
        except Exception as exc:
            logger.warning("could not record turn %s step %d: %r", turn_id, step, exc)

    def record_failure(
        self,
        runtime: ModelRuntime,
        *,
        model: str,
        turn_id: str,
        step: int,
        latency_ms: float,
        code: str | None,
        aborted: bool,
    ) -> None:
        """A row for a model call that failed: no answer, nothing reported.

        A call the provider refused or never answered reports no usage and is not billed,
        so its tokens and cost are a known zero — as in the turn's own total. A call cut off
        by the user's abort may have been partly billed (a stream already under way), so its
        counts stay unknown. ``finish_reason`` says what happened: ``error:<CODE>`` or
        ``cancelled``.
        """
        if self.ledger is None:
            return
        zero = None if aborted else 0
        try:
            row = LedgerRow(
                session_id=self.session_id,
                turn_id=turn_id,
                step=step,
                notebook=self.notebook,
                model=model or runtime_model(runtime) or runtime.id,
                provider=runtime_simulated(runtime) or runtime_provider(runtime),
                input_tokens=zero,
                output_tokens=zero,
                cost_usd=None if aborted else 0.0,
                latency_ms=latency_ms,
                finish_reason="cancelled" if aborted or code is None else f"error:{code}",
            )
            self.ledger.append(row)
        except Exception as exc:
            logger.warning("could not record turn %s step %d: %r", turn_id, step, exc)

    def close(self) -> None:
        if self.ledger is not None:
            self.ledger.close()


def runtime_model(runtime: ModelRuntime) -> str:
    """The model a runtime is configured for (``""`` for one that does not say)."""
    model = getattr(runtime, "model", "")
    return model if isinstance(model, str) else ""


def runtime_simulated(runtime: ModelRuntime) -> Simulated | None:
    """``scripted`` or ``replayed`` for a runtime that stands in for a model, else None."""
    simulated = getattr(runtime, "simulated", None)
    return simulated if simulated in ("scripted", "replayed") else None


def runtime_provider(runtime: ModelRuntime) -> str:
    """The runtime's provider name; a protocol-only runtime's id prefix (``anthropic:…``)."""
    provider = getattr(runtime, "provider", None)
    if isinstance(provider, str) and provider:
        return provider
    return runtime.id.split(":", 1)[0] or "unknown"
