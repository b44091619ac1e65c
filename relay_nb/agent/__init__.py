"""The agent loop layer: loop, sessions, skills, pricing, usage ledger.

What exists: ``run_turn`` (the loop: context, model calls, concurrent tool calls, events,
retries with backoff, priced usage, ledger rows), skills and tier routing, a dated price
table with ``price_usage``, and the append-only usage ledger. Sessions, approval, usage caps,
history compaction and ``ask_many`` are still to come. SQLAlchemy and pandas load only when
the ledger is first used.
"""

from __future__ import annotations

from relay_nb.agent.events import (
    ContextResolvedEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    EventAdapter,
    TextDeltaEvent,
    ThinkingEvent,
    ToolAwaitingApprovalEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from relay_nb.agent.ledger import LedgerRow, UsageLedger, default_ledger_path
from relay_nb.agent.loop import FinishReason, ToolOutcome, TurnResult, run_turn
from relay_nb.agent.pricing import ModelPrice, PriceTable, price_usage
from relay_nb.agent.skills import TIER_MODELS, TIERS, Skill, SkillRegistry, Tier, route

__all__ = [
    "ContextResolvedEvent",
    "DoneEvent",
    "ErrorEvent",
    "Event",
    "EventAdapter",
    "FinishReason",
    "LedgerRow",
    "ModelPrice",
    "PriceTable",
    "Skill",
    "SkillRegistry",
    "TIERS",
    "TIER_MODELS",
    "Tier",
    "TextDeltaEvent",
    "ThinkingEvent",
    "ToolAwaitingApprovalEvent",
    "ToolCallEvent",
    "ToolOutcome",
    "ToolResultEvent",
    "TurnResult",
    "UsageEvent",
    "UsageLedger",
    "default_ledger_path",
    "price_usage",
    "route",
    "run_turn",
]
