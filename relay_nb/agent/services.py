"""What a turn works *with*: the runtime, its tools, the context resolver, the accountant, the
approver and the event sink — objects with behaviour, kept apart from the turn's settings
(values, :mod:`~relay_nb.agent.settings`) and from its state (the loop's ``_Turn``).

A session builds one bundle per question; ``run_turn`` can be given one directly, with only
a runtime required.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.approval import Approver, approve_all
from relay_nb.agent.caps import UsageLimit
from relay_nb.agent.events import Event
from relay_nb.agent.settings import Approval
from relay_nb.context import ContextResolver
from relay_nb.runtime.base import ModelRuntime
from relay_nb.tools import Tool

__all__ = ["EventSink", "TurnServices"]

EventSink = Callable[[Event], None]
"""Called with every event as it happens (a live view, a stream's queue, a log)."""


@dataclass(frozen=True)
class TurnServices:
    """The services one turn uses; only ``runtime`` is required."""

    runtime: ModelRuntime
    tools: Sequence[Tool] = ()
    resolver: ContextResolver | None = None
    """None: no context is resolved (the system prompt is used as given)."""
    accountant: Accountant = field(default_factory=Accountant)
    """Prices, caps, meters, ledger; a fresh one prices with the packaged table, records
    nothing and has no session cap."""
    approver: Approver | None = None
    """Asked about tools that need approval when the settings say ``approval="ask"``."""
    on_event: EventSink | None = None
    limits: Sequence[UsageLimit] = ()
    """Caps shared beyond the turn and the session, e.g. an evaluation run's total (one
    meter that every turn of the run feeds and plans against)."""

    def approver_for(self, approval: Approval) -> Approver | None:
        """Who decides under ``approval``: the approver; everyone (``allow``); nobody
        (``deny`` — the model hears the call was not approved)."""
        if approval == "allow":
            return approve_all
        if approval == "deny":
            return None
        return self.approver
