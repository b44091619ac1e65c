"""The agent loop layer: loop, the engine behind ``Relay``, settings, the accountant.

``run_turn(question, services, settings)`` is one question's loop (context, model calls,
concurrent tool calls with approval and cancellation, events, retries, usage caps, the
``next_step`` adapter for single-tool runtimes). :class:`TurnSettings` is what a turn may do
(merged from layers: defaults < config < session < skill < call), :class:`TurnServices` what
it works with, and the :class:`Accountant` what every call costs (prices, caps' worst case,
meters, the ledger). ``Session`` is the engine ``Relay`` owns: skills, tier routing, history
(results by reference, compaction) and ``ask_many``. SQLAlchemy and pandas load only when the
ledger is first used.
"""

from __future__ import annotations

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.approval import ApprovalRequest, Approver, approve_all, deny_all
from relay_nb.agent.caps import UsageCaps, UsageLimit
from relay_nb.agent.clarify import Clarifier, ClarifyRequest
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
    ToolStatusEvent,
    UsageEvent,
)
from relay_nb.agent.history import History
from relay_nb.agent.ledger import LedgerRow, UsageLedger, default_ledger_path
from relay_nb.agent.loop import FinishReason, TurnResult, run_turn
from relay_nb.agent.pricing import ModelPrice, PriceTable, price_usage
from relay_nb.agent.routing import ModelRouter, resolve_default_model
from relay_nb.agent.services import EventSink, TurnServices
from relay_nb.agent.session import Session
from relay_nb.agent.settings import LAYERS, Approval, TurnSettings, merge_settings, settings_layer
from relay_nb.agent.skills import TIER_MODELS, TIERS, Skill, SkillRegistry, Tier, route
from relay_nb.agent.tool_calls import ToolOutcome

__all__ = [
    "LAYERS",
    "Accountant",
    "Approval",
    "EventSink",
    "TurnServices",
    "TurnSettings",
    "merge_settings",
    "settings_layer",
    "ApprovalRequest",
    "Approver",
    "Clarifier",
    "ClarifyRequest",
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
    "ToolStatusEvent",
    "TurnResult",
    "UsageEvent",
    "UsageLedger",
    "default_ledger_path",
    "price_usage",
    "route",
    "run_turn",
]
