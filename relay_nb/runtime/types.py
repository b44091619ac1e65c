"""The data that crosses the runtime boundary: request, result, usage, capabilities.

These models are the whole contract between the agent layer and any model runtime. They
are plain pydantic v2 models so a request can be digested, recorded and replayed, and so a
result from the Anthropic API, the ``claude`` CLI or a script looks the same to the caller.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from relay_nb.errors import InvocationErrorCode

__all__ = [
    "BatchFailure",
    "BatchOutcome",
    "Capabilities",
    "InvocationRequest",
    "InvocationResult",
    "Message",
    "Part",
    "Simulated",
    "TextPart",
    "ToolCall",
    "ToolCallPart",
    "ToolChoice",
    "ToolResultPart",
    "ToolSpec",
    "Usage",
    "estimate_output_tokens",
    "estimate_request_tokens",
    "estimate_tokens",
    "reported_count",
]

_TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"


def estimate_tokens(text: str) -> int:
    """chars/4 rounded up: the one estimate every relay_nb count falls back to when no
    provider count is at hand (scripted usage, schema rendering, context budgets)."""
    return -(-len(text) // 4)


def estimate_request_tokens(request: InvocationRequest) -> int:
    """chars/4 over what a request sends: its messages and tool declarations."""
    return estimate_tokens(request.model_dump_json(include={"messages", "tools"}))


def estimate_output_tokens(text: str, calls: Sequence[ToolCall]) -> int:
    """chars/4 over what a reply holds: its text and each tool call's input."""
    return estimate_tokens(text + "".join(json.dumps(call.input) for call in calls))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class TextPart(_Model):
    type: Literal["text"] = "text"
    text: str


class ToolCallPart(_Model):
    """The model asked for a tool; kept in history so the provider sees its own call."""

    type: Literal["tool-call"] = "tool-call"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultPart(_Model):
    """What a tool returned, tied to the model's call id."""

    type: Literal["tool-result"] = "tool-result"
    tool_call_id: str
    content: str
    is_error: bool = False


Part = Annotated[TextPart | ToolCallPart | ToolResultPart, Field(discriminator="type")]


class Message(_Model):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[Part]

    @model_validator(mode="after")
    def _parts_fit_role(self) -> Message:
        if isinstance(self.content, list):
            kinds = {part.type for part in self.content}
            allowed = {
                "system": {"text"},
                "user": {"text", "tool-result"},
                "assistant": {"text", "tool-call"},
                "tool": {"tool-result"},
            }[self.role]
            if not kinds <= allowed:
                bad = ", ".join(sorted(kinds - allowed))
                raise ValueError(f"a {self.role} message cannot hold {bad} parts")
        return self

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: list[ToolCall] | None = None) -> Message:
        parts: list[Part] = [TextPart(text=text)] if text else []
        parts += [ToolCallPart(id=c.id, name=c.name, input=c.input) for c in tool_calls or []]
        return cls(role="assistant", content=parts if tool_calls else text)

    @classmethod
    def tool_result(cls, tool_call_id: str, content: str, *, is_error: bool = False) -> Message:
        part = ToolResultPart(tool_call_id=tool_call_id, content=content, is_error=is_error)
        return cls(role="tool", content=[part])

    def parts(self) -> list[Part]:
        """The content as parts, whatever form it was given in."""
        if isinstance(self.content, str):
            return [TextPart(text=self.content)] if self.content else []
        return list(self.content)

    def text(self) -> str:
        """The concatenated text parts (tool calls and results left out)."""
        return "".join(p.text for p in self.parts() if isinstance(p, TextPart))


class ToolSpec(_Model):
    name: str = Field(pattern=_TOOL_NAME)
    description: str = ""
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    @model_validator(mode="after")
    def _schema_is_object(self) -> ToolSpec:
        if self.input_schema.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: input_schema must have type 'object'")
        return self


class ToolChoice(_Model):
    """How a tool is selected: ``auto``, ``required`` (any tool), or one named ``tool``."""

    type: Literal["auto", "required", "tool"] = "auto"
    name: str | None = None

    @model_validator(mode="after")
    def _name_iff_tool(self) -> ToolChoice:
        if (self.type == "tool") != (self.name is not None):
            raise ValueError("ToolChoice needs a name exactly when type is 'tool'")
        return self

    @classmethod
    def auto(cls) -> ToolChoice:
        return cls(type="auto")

    @classmethod
    def required(cls) -> ToolChoice:
        return cls(type="required")

    @classmethod
    def tool(cls, name: str) -> ToolChoice:
        return cls(type="tool", name=name)


class InvocationRequest(_Model):
    """One request/result exchange. ``metadata`` is secret-free correlation data only."""

    messages: list[Message] = Field(min_length=1)
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_choice: ToolChoice | None = None
    max_output_tokens: int | None = Field(default=None, gt=0)
    metadata: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _tools_consistent(self) -> InvocationRequest:
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise ValueError("tool names must be unique")
        choice = self.tool_choice
        if choice is not None and choice.type != "auto" and not self.tools:
            raise ValueError(f"tool_choice {choice.type!r} needs at least one tool")
        if choice is not None and choice.type == "tool" and choice.name not in names:
            raise ValueError(f"tool_choice names {choice.name!r}, which is not a declared tool")
        if all(m.role == "system" for m in self.messages):
            raise ValueError("a request needs at least one non-system message")
        return self

    def system_text(self) -> str:
        """All system messages joined, as providers with one system slot want it."""
        return "\n\n".join(m.text() for m in self.messages if m.role == "system" and m.text())


class ToolCall(_Model):
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


def reported_count(value: Any) -> int | None:
    """A token count as a provider or CLI reported it, or None: a malformed number (a bool,
    a negative, NaN, a fraction) must not fail the result it came with."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0 or value != int(value):
        return None
    return int(value)


class Usage(_Model):
    """A usage receipt. Provider numbers are kept as reported; a missing cost stays None.

    As in the Anthropic API, ``input_tokens`` excludes cache reads and writes, which are
    counted separately; ``total_tokens`` (when the provider sends none) is everything
    processed: input + output + cache reads + cache writes.
    """

    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)
    cache_read_tokens: int | None = Field(default=None, ge=0)
    cache_write_tokens: int | None = Field(default=None, ge=0)
    cache_write_1h_tokens: int | None = Field(default=None, ge=0)
    """Of ``cache_write_tokens``, those written with the 1-hour TTL (priced higher); the
    rest are 5-minute writes. None: the provider did not say (all count as 5-minute)."""
    cost_usd: float | None = Field(default=None, ge=0)
    estimated: bool = False

    @model_validator(mode="after")
    def _fill_total(self) -> Usage:
        known = self.input_tokens is not None and self.output_tokens is not None
        if self.total_tokens is None and known:
            cached = (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)
            self.total_tokens = self.input_tokens + self.output_tokens + cached  # type: ignore[operator]
        return self

    def __add__(self, other: Usage) -> Usage:
        """Sum two receipts; a field unknown on either side stays unknown for costs."""

        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        cost = None
        if self.cost_usd is not None and other.cost_usd is not None:
            cost = self.cost_usd + other.cost_usd
        return Usage(
            input_tokens=add(self.input_tokens, other.input_tokens),
            output_tokens=add(self.output_tokens, other.output_tokens),
            total_tokens=add(self.total_tokens, other.total_tokens),
            cache_read_tokens=add(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=add(self.cache_write_tokens, other.cache_write_tokens),
            cache_write_1h_tokens=add(self.cache_write_1h_tokens, other.cache_write_1h_tokens),
            cost_usd=cost,
            estimated=self.estimated or other.estimated,
        )


Simulated = Literal["scripted", "replayed"]
"""What stood in for a model: a scripted step, or a recorded answer replayed."""


class InvocationResult(_Model):
    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    model_source: Literal["provider-reported", "configured"]
    output_text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float = Field(default=0.0, ge=0)
    stop_reason: str | None = None
    warnings: list[str] = Field(default_factory=list)
    simulated: Simulated | None = None
    """Set when no model answered this call: a scripted step, or a recorded answer replayed.
    Every view labels such a turn, so a scripted answer never passes for a real model's and
    its cost (an estimate at ``model``'s prices, or the recording's) for money spent."""


class Capabilities(_Model):
    """What a runtime honestly provides; the agent loop adapts to this, not to runtime ids."""

    structured_tools: bool
    streaming: bool
    abort: bool
    usage: bool
    structured_tools_fidelity: Literal["native", "prompted", "unavailable"]
    output_token_limit_fidelity: Literal["native", "approximated", "unavailable"]
    physical_batch: bool = False
    max_batch_size: int | None = Field(default=None, ge=1)
    single_forced_tool_only: bool = False
    """True for harness CLIs: a request with tools must force exactly one of them."""
    token_counting: bool = False
    """True when the runtime has ``async count_tokens(request)`` (the provider's tokenizer)."""
    prompt_cache_ttl: Literal["5m", "1h"] | None = None
    """The lifetime of the prompt-cache entries this runtime writes (None: it writes none);
    a cache write costs more than input, so usage caps plan for it."""


class BatchFailure(_Model):
    """A content-free reason for one rejected batch item."""

    code: InvocationErrorCode
    message: str
    retryable: bool


class BatchOutcome(_Model):
    status: Literal["fulfilled", "rejected"]
    value: InvocationResult | None = None
    reason: BatchFailure | None = None

    @model_validator(mode="after")
    def _one_side(self) -> BatchOutcome:
        if (self.status == "fulfilled") != (self.value is not None and self.reason is None):
            raise ValueError("a fulfilled outcome has a value and no reason; rejected the reverse")
        return self
