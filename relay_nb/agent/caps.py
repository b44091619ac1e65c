"""Usage caps: stop a turn *before* a model call could take it over a token or dollar limit.

A cap checked after the call has already spent the money. So before every call the loop asks
:func:`plan_call` what the call could cost at most — the estimated prompt (chars/4) plus the
output tokens it is allowed — and either shrinks the call's ``max_output_tokens`` to what the
remaining budget can pay for, or stops the turn with ``finish_reason="usage_cap"``. A call is
never started with less than :data:`MIN_USEFUL_OUTPUT` tokens of room: an answer cut off after
a few words costs money and helps nobody.

Each cap is a :class:`UsageLimit`: the caps plus a live :class:`SpendMeter` that every model
call adds to as soon as it is priced. A turn's cap has its own meter; a session's cap shares
the session's meter across all its turns — including the concurrent turns of ``ask_many``,
which therefore see each other's spending instead of each seeing the whole budget.

The shrunk output room only binds a runtime that enforces ``max_output_tokens``
(``output_token_limit_fidelity == "native"``); for others the loop warns that the cap is
best effort and checks the meter again after each call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.agent.pricing import CallRates
from relay_nb.runtime.types import Usage

__all__ = [
    "MIN_USEFUL_OUTPUT",
    "CallPlan",
    "Reservation",
    "SpendMeter",
    "UsageCaps",
    "UsageLimit",
    "exceeded",
    "plan_call",
]

_MTOK = Decimal(1_000_000)
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


@dataclass
class SpendMeter:
    """Tokens and dollars spent so far; ``cost_usd`` None once any call's cost is unknown."""

    tokens: int = 0
    cost_usd: float | None = 0.0
    reserved_tokens: int = 0
    reserved_cost_usd: float = 0.0
    """What calls in flight may still spend at most: concurrent turns (``ask_many``) plan
    against spent + reserved, so four turns cannot each take the whole remaining budget."""

    def add(self, usage: Usage) -> None:
        self.tokens += usage.total_tokens or 0
        if self.cost_usd is not None:
            self.cost_usd = None if usage.cost_usd is None else self.cost_usd + usage.cost_usd


@dataclass
class UsageLimit:
    """A cap and the meter it is checked against (``scope`` names it in messages)."""

    scope: str
    caps: UsageCaps
    meter: SpendMeter = field(default_factory=SpendMeter)


@dataclass
class Reservation:
    """What one planned call holds on its limits' meters until it returns."""

    meters: list[SpendMeter]
    tokens: int
    cost_usd: float

    def release(self) -> None:
        for meter in self.meters:
            meter.reserved_tokens -= self.tokens
            meter.reserved_cost_usd -= self.cost_usd
        self.meters = []  # releasing twice must not give the budget back twice


class CallPlan(BaseModel):
    """The verdict for the next call: how much output it may produce, or why it must not run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_output_tokens: int = 0
    stop_reason: str | None = None
    """Set when the call must not be made; a sentence for the user."""
    worst_case_tokens: int = 0
    worst_case_cost_usd: float = 0.0
    """The most the call can spend (prompt estimate + allowed output), to reserve."""

    def reserve(self, limits: Sequence[UsageLimit]) -> Reservation:
        """Hold the worst case on every limit's meter until :meth:`Reservation.release`."""
        meters = [limit.meter for limit in limits]
        for meter in meters:
            meter.reserved_tokens += self.worst_case_tokens
            meter.reserved_cost_usd += self.worst_case_cost_usd
        return Reservation(meters, self.worst_case_tokens, self.worst_case_cost_usd)


def plan_call(
    limits: Sequence[UsageLimit],
    *,
    prompt_tokens: int,
    max_output_tokens: int,
    rates: CallRates | None,
) -> CallPlan:
    """How many output tokens the next call may use under every limit, or why none.

    ``prompt_tokens`` is the chars/4 estimate of the request about to be sent, priced at
    ``rates.prompt`` — the dearest way it can be billed (a prompt-cache write costs more than
    input; a batch costs less), which :func:`~relay_nb.agent.pricing.worst_case_rates` takes
    from the same price table the bill does. It is an estimate: providers count tool
    declarations with some overhead, so a cap is a limit on the estimate, checked again
    against the provider's counts after every call. ``rates`` None: the model has no price.
    """
    allowed = max_output_tokens
    for limit in limits:
        caps, meter = limit.caps, limit.meter
        if caps.max_tokens is not None:
            spent = meter.tokens + meter.reserved_tokens
            room = caps.max_tokens - spent - prompt_tokens
            if room < min(MIN_USEFUL_OUTPUT, max_output_tokens):
                left = max(caps.max_tokens - spent, 0)
                return CallPlan(
                    stop_reason=f"the next model call needs about {prompt_tokens:,} prompt "
                    f"tokens plus room to answer, and the {limit.scope} cap of "
                    f"{caps.max_tokens:,} tokens has {left:,} left"
                )
            allowed = min(allowed, room)
        if caps.max_cost_usd is not None:
            if meter.cost_usd is None:
                return CallPlan(
                    stop_reason=f"the cost spent so far is unknown (a model without a price), "
                    f"so the {limit.scope} cap of ${caps.max_cost_usd:g} cannot be enforced; "
                    "add the model's price to the price table"
                )
            spent_usd = meter.cost_usd + meter.reserved_cost_usd
            left = Decimal(str(caps.max_cost_usd)) - Decimal(str(spent_usd))
            if rates is None:
                if left <= 0:
                    return CallPlan(stop_reason=_cost_message(limit))
                continue  # cannot project; the meter is checked again after the call
            left -= Decimal(prompt_tokens) * rates.prompt / _MTOK
            if rates.output > 0:
                room = math.floor(left * _MTOK / rates.output) if left > 0 else 0
                if room < min(MIN_USEFUL_OUTPUT, max_output_tokens):
                    return CallPlan(stop_reason=_cost_message(limit))
                allowed = min(allowed, room)
            elif left < 0:
                return CallPlan(stop_reason=_cost_message(limit))
    cost = 0.0
    if rates is not None:
        cost = float((prompt_tokens * rates.prompt + allowed * rates.output) / _MTOK)
    return CallPlan(
        max_output_tokens=allowed,
        worst_case_tokens=prompt_tokens + allowed,
        worst_case_cost_usd=cost,
    )


def exceeded(limits: Sequence[UsageLimit]) -> list[str]:
    """Caps the meters are already past (a runtime that ignores output limits, estimates
    that were low): one sentence each, for the turn's warnings."""
    messages = []
    for limit in limits:
        caps, meter = limit.caps, limit.meter
        if caps.max_tokens is not None and meter.tokens > caps.max_tokens:
            messages.append(
                f"the {limit.scope} cap of {caps.max_tokens:,} tokens was exceeded "
                f"({meter.tokens:,} used)"
            )
        if (
            caps.max_cost_usd is not None
            and meter.cost_usd is not None
            and meter.cost_usd > caps.max_cost_usd
        ):
            messages.append(
                f"the {limit.scope} cap of ${caps.max_cost_usd:g} was exceeded "
                f"(${meter.cost_usd:.4f} spent)"
            )
    return messages


def _cost_message(limit: UsageLimit) -> str:
    cap, spent = limit.caps.max_cost_usd, limit.meter.cost_usd or 0.0
    if limit.meter.reserved_cost_usd > 0:
        return (
            f"the next model call could take the {limit.scope} past its cap of ${cap:g} "
            f"(${spent:.4f} spent, up to ${limit.meter.reserved_cost_usd:.4f} more in calls "
            "still running); raise max_cost_usd to continue"
        )
    return (
        f"the next model call could take the {limit.scope} past its cap of ${cap:g} "
        f"(${spent:.4f} spent); raise max_cost_usd to continue"
    )
