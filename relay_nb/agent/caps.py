"""Usage caps: stop a turn *before* a model call could take it over a token or dollar limit.

A cap checked after the call has already spent the money. So before every call the loop asks
:func:`plan_call` what the call could cost at most — the estimated prompt (chars/4) plus the
output tokens it is allowed — and either shrinks the call's ``max_output_tokens`` to what the
remaining budget can pay for, or stops the turn with ``finish_reason="usage_cap"``. A call is
never started with less than :data:`MIN_USEFUL_OUTPUT` tokens of room: an answer cut off after
a few words costs money and helps nobody.

The same check serves the per-turn and the per-session caps: a :class:`UsageLimit` carries what
was spent before the turn began (zero for the turn's own cap), so a session cap simply starts
from the session's running total.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.agent.pricing import ModelPrice
from relay_nb.runtime.types import Usage

__all__ = ["MIN_USEFUL_OUTPUT", "CallPlan", "UsageCaps", "UsageLimit", "plan_call"]

MIN_USEFUL_OUTPUT = 256
"""Fewer output tokens than this and a call is not worth making."""


class UsageCaps(BaseModel):
    """What a user allows: at most this many dollars and/or tokens (None: no cap)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)

    @property
    def active(self) -> bool:
        return self.max_cost_usd is not None or self.max_tokens is not None


class UsageLimit(BaseModel):
    """A cap plus what was spent against it before this turn (``scope`` names it in messages)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scope: str
    caps: UsageCaps
    spent_cost_usd: float = 0.0
    spent_tokens: int = 0


class CallPlan(BaseModel):
    """The verdict for the next call: how much output it may produce, or why it must not run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_output_tokens: int = 0
    stop_reason: str | None = None
    """Set when the call must not be made; a sentence for the user."""


def plan_call(
    limits: Sequence[UsageLimit],
    turn_usage: Usage | None,
    *,
    prompt_tokens: int,
    max_output_tokens: int,
    price: ModelPrice | None,
) -> CallPlan:
    """How many output tokens the next call may use under every limit, or why none.

    ``prompt_tokens`` is the estimate of the request about to be sent. Input is priced at the
    plain input rate; prompt-cache writes cost more, which is why the estimate errs high
    (chars/4 over-counts typical English and SQL) rather than being trimmed.
    """
    allowed = max_output_tokens
    turn_tokens = (turn_usage.total_tokens or 0) if turn_usage is not None else 0
    turn_cost = turn_usage.cost_usd if turn_usage is not None else 0.0
    for limit in limits:
        caps = limit.caps
        if caps.max_tokens is not None:
            spent = limit.spent_tokens + turn_tokens
            room = caps.max_tokens - spent - prompt_tokens
            if room < min(MIN_USEFUL_OUTPUT, max_output_tokens):
                return CallPlan(
                    stop_reason=f"the next model call needs about {prompt_tokens:,} prompt "
                    f"tokens plus room to answer, and the {limit.scope} cap of "
                    f"{caps.max_tokens:,} tokens has {max(caps.max_tokens - spent, 0):,} left"
                )
            allowed = min(allowed, room)
        if caps.max_cost_usd is not None:
            if turn_cost is None:
                return CallPlan(
                    stop_reason=f"the cost of this turn so far is unknown (no price for the "
                    f"model), so the {limit.scope} cap of ${caps.max_cost_usd:g} cannot be "
                    "enforced; add the model's price to the price table"
                )
            spent_usd = limit.spent_cost_usd + turn_cost
            left = Decimal(str(caps.max_cost_usd)) - Decimal(str(spent_usd))
            if price is None:
                if left <= 0:
                    return CallPlan(stop_reason=_cost_message(limit, spent_usd))
                continue  # cannot project; the cost is checked again after the call
            left -= Decimal(prompt_tokens) * price.input / Decimal(1_000_000)
            if price.output > 0:
                room = math.floor(left * Decimal(1_000_000) / price.output) if left > 0 else 0
                if room < min(MIN_USEFUL_OUTPUT, max_output_tokens):
                    return CallPlan(stop_reason=_cost_message(limit, spent_usd))
                allowed = min(allowed, room)
            elif left < 0:
                return CallPlan(stop_reason=_cost_message(limit, spent_usd))
    return CallPlan(max_output_tokens=allowed)


def _cost_message(limit: UsageLimit, spent_usd: float) -> str:
    cap = limit.caps.max_cost_usd
    return (
        f"the next model call could take the {limit.scope} past its cap of ${cap:g} "
        f"(${spent_usd:.4f} spent); raise max_cost_usd to continue"
    )
