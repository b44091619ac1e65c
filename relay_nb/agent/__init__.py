"""The agent loop layer: loop, sessions, skills, pricing, usage ledger.

``run_turn`` is one question's loop (context, model calls, concurrent tool calls with
approval and cancellation, events, retries, usage caps, priced usage, ledger rows, the
``next_step`` adapter for single-tool runtimes). ``Session`` wraps it with skills, tier
routing, history (results by reference, compaction), session caps and ``ask_many``.
SQLAlchemy and pandas load only when the ledger is first used.
"""

from __future__ import annotations

from relay_nb.agent.approval import ApprovalRequest, Approver, approve_all, deny_all
from relay_nb.agent.caps import UsageCaps, UsageLimit
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
from relay_nb.agent.history import History
from relay_nb.agent.ledger import LedgerRow, UsageLedger, default_ledger_path
from relay_nb.agent.loop import FinishReason, TurnResult, run_turn
from relay_nb.agent.pricing import ModelPrice, PriceTable, price_usage
from relay_nb.agent.routing import ModelRouter, resolve_default_model
from relay_nb.agent.session import Session
from relay_nb.agent.skills import TIER_MODELS, TIERS, Skill, SkillRegistry, Tier, route
from relay_nb.agent.tool_calls import ToolOutcome

__all__ = [
    "ApprovalRequest",
    "Approver",
    "History",
    "ModelRouter",
    "Session",
    "UsageCaps",
    "UsageLimit",
    "approve_all",
    "deny_all",
    "resolve_default_model",
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
