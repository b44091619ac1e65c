"""The events a turn emits: DESIGN.md §6's list, and ``tool_status`` (a running tool's line).

Each event is a small pydantic model with a ``type`` literal, so a stream of them can be
serialised (SSE, a notebook's saved output) and parsed back through the ``Event`` union
without guessing which kind a dict is.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from relay_nb.runtime.types import Simulated, Usage

__all__ = [
    "ContextResolvedEvent",
    "DoneEvent",
    "ErrorEvent",
    "Event",
    "EventAdapter",
    "TextDeltaEvent",
    "ThinkingEvent",
    "ToolAwaitingApprovalEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "ToolStatusEvent",
    "UsageEvent",
]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ThinkingEvent(_Event):
    """A phase change: ``resolving_context``, ``calling_model``, ``retrying`` (after a
    failed model call: text streamed by that attempt is void, so a view showing the answer
    as it streams starts it again), ``usage_cap`` (the turn stops before the next call)."""

    type: Literal["thinking"] = "thinking"
    step: str
    detail: str | None = None


class ContextResolvedEvent(_Event):
    type: Literal["context_resolved"] = "context_resolved"
    sources: list[str] = Field(default_factory=list)
    token_estimate: int = 0


class ToolCallEvent(_Event):
    """The model asked for a tool; ``tool_call_id`` is the model's own call id."""

    type: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolAwaitingApprovalEvent(_Event):
    type: Literal["tool_awaiting_approval"] = "tool_awaiting_approval"
    tool_call_id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""
    """Why it needs approval now (e.g. its cost estimate); empty when the tool always does."""


class ToolStatusEvent(_Event):
    """A running call's one line for the trace, sent by the tool itself before its result
    (:func:`relay_nb.tools.report_status`): a query's cost before it runs — the model's
    spend so far and the engine's estimate. A later one for the same call replaces it; the
    views keep the last one under the call after it ends."""

    type: Literal["tool_status"] = "tool_status"
    tool_call_id: str
    name: str
    status: str


class ToolResultEvent(_Event):
    """What went back to the model for a call, and what stays local.

    ``artifact`` is the tool's local result by reference (a ``QueryResult`` with the whole
    DataFrame, a chart's PNG), for whoever watches the turn live; it is never serialised
    (a saved or streamed event is what the model saw) and never sent to the model.
    """

    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    output: str
    is_error: bool = False
    artifact: Any = Field(default=None, exclude=True, repr=False)


class TextDeltaEvent(_Event):
    type: Literal["text_delta"] = "text_delta"
    delta: str


class UsageEvent(_Event):
    """One model call's priced usage."""

    type: Literal["usage"] = "usage"
    usage: Usage
    model: str
    simulated: Simulated | None = None
    """See ``InvocationResult.simulated``."""


class DoneEvent(_Event):
    """The turn finished; ``usage`` is the whole turn's priced total."""

    type: Literal["done"] = "done"
    usage: Usage
    finish_reason: str


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    message: str
    code: str | None = None


Event = Annotated[
    ThinkingEvent
    | ContextResolvedEvent
    | ToolCallEvent
    | ToolAwaitingApprovalEvent
    | ToolStatusEvent
    | ToolResultEvent
    | TextDeltaEvent
    | UsageEvent
    | DoneEvent
    | ErrorEvent,
    Field(discriminator="type"),
]

EventAdapter: TypeAdapter[Event] = TypeAdapter(Event)
"""Parses a dict (e.g. a saved event) back into the right event model."""
