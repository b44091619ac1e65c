"""The Messages API's wire format, shared by :mod:`~relay_nb.runtime.anthropic` (one request)
and :mod:`~relay_nb.runtime.anthropic_batch` (one Message Batch, whose items carry the same
parameters): portable messages, tools and tool choice as request parameters, a response's
usage as :class:`Usage`, and the API's error types as the HTTP status each stands for.

Pure mapping: the SDK is imported here only for type checking.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from relay_nb.errors import InvocationError
from relay_nb.runtime.failures import classify_status
from relay_nb.runtime.types import (
    InvocationRequest,
    Message,
    TextPart,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    Usage,
    reported_count,
)

if TYPE_CHECKING:
    from anthropic.types import Message as ApiMessage

__all__ = [
    "ERROR_TYPE_STATUS",
    "api_messages",
    "mid_stream_error",
    "system_param",
    "tool_choice_param",
    "tools_param",
    "usage_from",
]

_EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

# Error types the API can send as an SSE ``error`` event after a 200 response has started, or
# as an ``errored`` Message Batch item. Neither comes with an HTTP status of its own (the SDK
# raises a mid-stream error with the stream's 200), so each is mapped to the status the API
# uses for the same error on a plain request, and classified from that.
ERROR_TYPE_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "billing_error": 402,
    "not_found_error": 404,
    "conflict_error": 409,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def mid_stream_error(exc: Exception) -> InvocationError | None:
    """Classify an SSE ``error`` event, which the SDK raises with the stream's HTTP 200.

    The status table would call that an unexpected failure, so the event's error type is
    mapped to the status the API uses for the same error before a stream starts. Only a type
    from the fixed table is named in the message. ``None``: not a mid-stream error.
    """
    status = getattr(exc, "status_code", None)
    error_type = getattr(exc, "type", None)
    if not isinstance(status, int) or status >= 400 or not isinstance(error_type, str):
        return None
    mapped = ERROR_TYPE_STATUS.get(error_type)
    if mapped is None:
        return None
    code, retryable = classify_status(mapped)
    hint = "try again shortly" if retryable else "the message was not completed"
    return InvocationError(code, f"anthropic reported {error_type} mid-stream; {hint}", retryable)


def api_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Non-system messages as API turns: tool results ride in user turns, same roles merge."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = [block for part in message.parts() if (block := _block(part)) is not None]
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        turn["content"] = _tool_results_first(turn["content"])
    return turns


def _block(part: TextPart | ToolCallPart | ToolResultPart) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        # The API rejects empty text blocks; an empty part carries nothing anyway.
        return {"type": "text", "text": part.text} if part.text else None
    if isinstance(part, ToolCallPart):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.input}
    return {
        "type": "tool_result",
        "tool_use_id": part.tool_call_id,
        "content": part.content,
        "is_error": part.is_error,
    }


def _tool_results_first(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API wants a user turn's tool results before its text; merging can break that."""
    results = [b for b in blocks if b["type"] == "tool_result"]
    return results + [b for b in blocks if b["type"] != "tool_result"]


def _cache_control(ttl: str) -> dict[str, str]:
    """The cache marker: 5 minutes is the API's default, an hour must be asked for."""
    return dict(_EPHEMERAL) if ttl == "5m" else {**_EPHEMERAL, "ttl": ttl}


def system_param(system: str, *, ttl: str | None) -> str | list[dict[str, Any]]:
    if ttl is None:
        return system
    return [{"type": "text", "text": system, "cache_control": _cache_control(ttl)}]


def tools_param(request: InvocationRequest, *, ttl: str | None) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for spec in request.tools:
        tool: dict[str, Any] = {"name": spec.name, "input_schema": spec.input_schema}
        if spec.description:
            tool["description"] = spec.description
        tools.append(tool)
    if ttl is not None:
        # Tools precede the system prompt in the cached prefix, so marking the last tool
        # caches all of them; the system block's marker extends the prefix past the prompt.
        tools[-1]["cache_control"] = _cache_control(ttl)
    return tools


def tool_choice_param(choice: ToolChoice) -> dict[str, str]:
    if choice.type == "required":
        return {"type": "any"}
    if choice.type == "tool":
        return {"type": "tool", "name": choice.name or ""}
    return {"type": "auto"}


def usage_from(message: ApiMessage, *, ttl: str | None = None) -> Usage:
    """Provider counts as reported; cost stays unknown here (pricing is the agent's job).

    Cache writes are split by lifetime when the API says (``cache_creation``'s
    ``ephemeral_1h_input_tokens``); when it does not, they have the lifetime this runtime
    asked for (``ttl``).
    """
    usage = getattr(message, "usage", None)
    if usage is None:
        return Usage()
    writes = getattr(usage, "cache_creation_input_tokens", None)
    split = getattr(usage, "cache_creation", None)
    long_writes = reported_count(getattr(split, "ephemeral_1h_input_tokens", None))
    if long_writes is None and writes and ttl == "1h":
        long_writes = writes
    return Usage(
        input_tokens=getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "output_tokens", None),
        cache_read_tokens=getattr(usage, "cache_read_input_tokens", None),
        cache_write_tokens=writes,
        cache_write_1h_tokens=long_writes,
    )
