"""The Chat Completions wire format: portable request -> ``create()`` params, reply -> result.

Pure mapping, no SDK import: :mod:`relay_nb.runtime.openai_compat` owns the client and the
I/O and hands this module the SDK's response objects (read with ``getattr``, so a server that
leaves a field out, as local servers often do, maps to "unknown" rather than a crash).

Two tool modes:

- **native** (``tools=True``): tools go out as function tools, calls come back in
  ``tool_calls`` with JSON-string arguments.
- **prompted** (``tools=False``, for a model or server without function calling): like the
  ``claude`` CLI harness, a request with tools must force exactly one of them. The tool's
  description and JSON schema are put in the system message, the reply is a JSON object
  (asked for with ``response_format`` unless ``structured_output="prompt"``), and earlier
  tool calls and results are replayed as plain assistant/user text, since such a server
  would reject or silently drop ``tool_calls`` and ``role: tool`` messages.

Error messages are fixed phrases plus names from the request (tool names, which the caller
declared); not one character of a reply's text is copied into them.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from relay_nb.errors import InvocationError
from relay_nb.runtime.base import single_forced_tool
from relay_nb.runtime.prompted import json_object, prompted_instructions
from relay_nb.runtime.types import (
    InvocationRequest,
    InvocationResult,
    Message,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
    Usage,
    reported_count,
)

__all__ = [
    "MaxTokensParam",
    "RawCall",
    "RawReply",
    "StreamAccumulator",
    "StructuredOutput",
    "build_params",
    "forced_tool",
    "native_messages",
    "prompted_messages",
    "reply_from_completion",
    "to_result",
    "usage_from",
]

StructuredOutput = Literal["json_object", "json_schema", "prompt"]
"""How a forced tool is answered in prompted mode: JSON mode, a server-enforced JSON schema,
or the prompt alone."""
MaxTokensParam = Literal["max_tokens", "max_completion_tokens"]

_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
"""finish_reason -> the portable stop reasons (the Messages API's words, which the agent
loop reads: ``max_tokens`` there means "the answer may be cut off")."""
_PLAIN_REASON = re.compile(r"^[a-z_]{1,32}$")
_MODEL_NAME = re.compile(r"^[^\s\x00-\x1f]{1,256}$")

# ------------------------------------------------------------------------------- requests


def forced_tool(request: InvocationRequest, *, label: str) -> ToolSpec | None:
    """Prompted mode: the one tool the model must fill, or None for a text request; see
    :func:`~relay_nb.runtime.base.single_forced_tool`."""
    return single_forced_tool(
        request, label=label, reason=" runs without native tools (tools=False)"
    )


def build_params(
    request: InvocationRequest,
    *,
    model: str,
    native_tools: bool,
    structured_output: StructuredOutput,
    max_tokens_param: MaxTokensParam,
    default_max_output_tokens: int,
    label: str,
) -> tuple[dict[str, Any], ToolSpec | None]:
    """``chat.completions.create`` keyword arguments, and the prompted-mode forced tool.

    ``request.metadata`` is deliberately absent: it is the caller's correlation data, not
    something to hand to a provider.
    """
    params: dict[str, Any] = {
        "model": model,
        max_tokens_param: request.max_output_tokens or default_max_output_tokens,
    }
    if native_tools:
        params["messages"] = native_messages(request)
        if request.tools:
            params["tools"] = [_function_tool(spec) for spec in request.tools]
        if request.tool_choice is not None and request.tools:
            params["tool_choice"] = _tool_choice_param(request.tool_choice)
        return params, None
    tool = forced_tool(request, label=label)
    params["messages"] = prompted_messages(request, tool)
    if tool is not None and structured_output == "json_object":
        params["response_format"] = {"type": "json_object"}
    elif tool is not None and structured_output == "json_schema":
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": tool.name, "schema": tool.input_schema},
        }
    return params, tool


def _function_tool(spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": spec.name, "parameters": spec.input_schema}
    if spec.description:
        function["description"] = spec.description
    return {"type": "function", "function": function}


def _tool_choice_param(choice: ToolChoice) -> str | dict[str, Any]:
    if choice.type == "required":
        return "required"
    if choice.type == "tool":
        return {"type": "function", "function": {"name": choice.name or ""}}
    return "auto"


def _joined_text(parts: Sequence[Any]) -> str:
    return "\n\n".join(p.text for p in parts if isinstance(p, TextPart) and p.text)


def _tool_message(part: ToolResultPart) -> dict[str, Any]:
    """Chat Completions has no error flag on a tool message, so the content says it."""
    content = f"Error: {part.content}" if part.is_error else part.content
    return {"role": "tool", "tool_call_id": part.tool_call_id, "content": content}


def native_messages(request: InvocationRequest) -> list[dict[str, Any]]:
    """One system message, then the turns, each tool result right after its call.

    The API rejects a conversation in which anything but the tool messages answering an
    assistant's ``tool_calls`` comes between them, so a result that arrives after a user's
    interjection is moved up next to its call (the user text keeps its place after it).
    """
    out: list[dict[str, Any]] = []
    system = request.system_text()
    if system:
        out.append({"role": "system", "content": system})
    awaiting: set[str] = set()  # call ids of the latest assistant message without results yet
    anchor = 0  # where the next result for one of them goes
    for message in request.messages:
        if message.role == "system":
            continue
        parts = message.parts()
        for part in parts:
            if isinstance(part, ToolResultPart):
                if part.tool_call_id in awaiting:
                    out.insert(anchor, _tool_message(part))
                    anchor += 1
                    awaiting.discard(part.tool_call_id)
                else:
                    out.append(_tool_message(part))
        text = _joined_text(parts)
        if message.role == "assistant":
            calls = [p for p in parts if isinstance(p, ToolCallPart)]
            if not text and not calls:
                continue  # an empty turn carries nothing; some servers reject it
            entry: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.input)},
                    }
                    for call in calls
                ]
            out.append(entry)
            awaiting, anchor = {call.id for call in calls}, len(out)
        elif message.role == "user" and text:
            out.append({"role": "user", "content": text})
    return out


def prompted_messages(request: InvocationRequest, tool: ToolSpec | None) -> list[dict[str, Any]]:
    """The conversation as plain text turns, for a server without function calling.

    The forced tool's own earlier calls are replayed as the bare JSON the model wrote, so
    the transcript shows it the very format it is asked for; consecutive turns of one role
    are merged, since many local chat templates insist on alternating roles.
    """
    system = request.system_text()
    if tool is not None:
        instructions = prompted_instructions(tool)
        system = f"{system}\n\n{instructions}" if system else instructions
    turns: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in request.messages:
        if message.role == "system":
            continue
        for role, text in _prompted_blocks(message, tool):
            if turns and turns[-1]["role"] == role and role != "system":
                turns[-1]["content"] += "\n\n" + text
            else:
                turns.append({"role": role, "content": text})
    return turns


def _prompted_blocks(message: Message, tool: ToolSpec | None) -> list[tuple[str, str]]:
    blocks: list[tuple[str, str]] = []
    for part in message.parts():
        if isinstance(part, TextPart):
            if part.text:
                blocks.append(("assistant" if message.role == "assistant" else "user", part.text))
        elif isinstance(part, ToolCallPart):
            arguments = json.dumps(part.input, ensure_ascii=False)
            if tool is not None and part.name == tool.name:
                blocks.append(("assistant", arguments))
            else:
                blocks.append(("assistant", f"Called tool {part.name} with input: {arguments}"))
        elif isinstance(part, ToolResultPart):
            kind = "Tool error" if part.is_error else "Tool result"
            blocks.append(("user", f"{kind}:\n{part.content}"))
    return blocks


# -------------------------------------------------------------------------------- replies


@dataclass
class RawCall:
    """A tool call as the server sent it; ``arguments`` is its JSON text (or an object)."""

    id: str = ""
    name: str = ""
    arguments: Any = ""


@dataclass
class RawReply:
    """One reply, whether it came as a ``ChatCompletion`` or was assembled from a stream."""

    model: str | None = None
    content: str = ""
    refusal: str | None = None
    calls: list[RawCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Any = None


def reply_from_completion(completion: Any, *, provider: str) -> RawReply:
    choices = getattr(completion, "choices", None) or []
    if not choices:
        raise InvocationError(
            "RUNTIME_FAILURE", f"{provider} returned a completion without choices", False
        )
    message = getattr(choices[0], "message", None)
    reply = RawReply(
        model=getattr(completion, "model", None),
        finish_reason=getattr(choices[0], "finish_reason", None),
        usage=getattr(completion, "usage", None),
    )
    content = getattr(message, "content", None)
    reply.content = content if isinstance(content, str) else ""
    refusal = getattr(message, "refusal", None)
    reply.refusal = refusal if isinstance(refusal, str) and refusal else None
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if function is None:  # a non-function ("custom") tool call: never declared by us
            continue
        reply.calls.append(
            RawCall(
                id=getattr(call, "id", None) or "",
                name=getattr(function, "name", None) or "",
                arguments=getattr(function, "arguments", None) or "",
            )
        )
    legacy = getattr(message, "function_call", None)  # pre-tools servers
    if not reply.calls and legacy is not None:
        reply.calls.append(
            RawCall(name=getattr(legacy, "name", "") or "", arguments=legacy.arguments or "")
        )
    return reply


class StreamAccumulator:
    """Builds a :class:`RawReply` from ``chat.completion.chunk`` objects, in arrival order.

    Text deltas of choice 0 go to ``on_text`` as they come; tool-call deltas are joined by
    their ``index`` (a server that sends none gets one call per new id).
    """

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.reply = RawReply()
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, RawCall] = {}
        self.finished = False

    def feed(self, chunk: Any) -> None:
        model = getattr(chunk, "model", None)
        if model and not self.reply.model:
            self.reply.model = model
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.reply.usage = usage  # the last one wins (some servers send running totals)
        for choice in getattr(chunk, "choices", None) or []:
            if (getattr(choice, "index", 0) or 0) != 0:
                continue
            delta = getattr(choice, "delta", None)
            if delta is not None:
                self._delta(delta)
            finish = getattr(choice, "finish_reason", None)
            if finish:
                self.reply.finish_reason = finish
                self.finished = True

    def _delta(self, delta: Any) -> None:
        text = getattr(delta, "content", None)
        if isinstance(text, str) and text:
            self._text.append(text)
            if self.on_text is not None:
                self.on_text(text)
        refusal = getattr(delta, "refusal", None)
        if isinstance(refusal, str) and refusal:
            self._refusal.append(refusal)
        for call in getattr(delta, "tool_calls", None) or []:
            self._call_delta(call)

    def _call_delta(self, delta: Any) -> None:
        index = getattr(delta, "index", None)
        call_id = getattr(delta, "id", None) or ""
        if not isinstance(index, int):
            last = max(self._calls) if self._calls else -1
            fresh = last < 0 or (call_id and call_id != self._calls[last].id)
            index = last + 1 if fresh else last
        slot = self._calls.setdefault(index, RawCall())
        if call_id:
            slot.id = call_id
        function = getattr(delta, "function", None)
        if function is None:
            return
        name = getattr(function, "name", None)
        if name and name != slot.name:  # sent once by most servers, repeated by some
            slot.name += name
        arguments = getattr(function, "arguments", None)
        if isinstance(arguments, str):
            slot.arguments = (slot.arguments if isinstance(slot.arguments, str) else "") + arguments
        elif isinstance(arguments, dict):
            slot.arguments = arguments

    def result(self) -> RawReply:
        self.reply.content = "".join(self._text)
        self.reply.refusal = "".join(self._refusal) or None
        self.reply.calls = [self._calls[i] for i in sorted(self._calls)]
        return self.reply


def to_result(
    reply: RawReply,
    *,
    provider: str,
    configured_model: str,
    forced: ToolSpec | None,
    declared: Collection[str],
    latency_ms: float,
) -> InvocationResult:
    """The portable result. ``forced`` is the prompted-mode tool whose input the text is;
    ``declared`` are the request's tool names, the only ones an error message may repeat."""
    served = (
        reply.model if isinstance(reply.model, str) and _MODEL_NAME.match(reply.model) else None
    )
    truncated = reply.finish_reason == "length"
    if forced is not None:
        arguments = _prompted_object(reply.content, forced.name, provider, truncated)
        calls = [ToolCall(id=_new_call_id(), name=forced.name, input=arguments)]
        text = ""
    else:
        calls = [
            ToolCall(
                id=raw.id or _new_call_id(),
                name=raw.name,
                input=_arguments(raw, provider, truncated, declared),
            )
            for raw in reply.calls
        ]
        text = reply.content or reply.refusal or ""
    return InvocationResult(
        provider=provider,
        model=served or configured_model,
        model_source="provider-reported" if served else "configured",
        output_text=text,
        tool_calls=calls,
        usage=usage_from(reply.usage),
        latency_ms=latency_ms,
        stop_reason=_stop_reason(reply, has_calls=bool(calls)),
    )


def _new_call_id() -> str:
    """For servers that send calls without ids (and prompted calls): results need one."""
    return f"call_relay_{uuid.uuid4().hex[:24]}"


def _stop_reason(reply: RawReply, *, has_calls: bool) -> str | None:
    finish = reply.finish_reason
    if finish == "length":
        return "max_tokens"
    if has_calls:
        return "tool_use"  # also when a server says "stop" after calling tools (Ollama does)
    if reply.refusal and not reply.content:
        return "refusal"
    if finish is None:
        return None
    if finish in _STOP_REASONS:
        return _STOP_REASONS[finish]
    return finish if _PLAIN_REASON.match(finish) else None


def _arguments(
    raw: RawCall, provider: str, truncated: bool, declared: Collection[str]
) -> dict[str, Any]:
    """A native call's arguments as an object. Malformed JSON is a failed invocation: the
    loop cannot hand a tool half an input, and the server is the one that broke the format."""
    if isinstance(raw.arguments, dict):
        return raw.arguments
    text = raw.arguments.strip() if isinstance(raw.arguments, str) else ""
    if not text:
        return {}  # servers send "" for a call without arguments
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    # the name came from the server: repeated only when it is one the caller declared
    tool = repr(raw.name) if raw.name in declared else "an undeclared tool"
    raise _unusable_output(provider, f"arguments of its call to {tool}", truncated)


def _prompted_object(text: str, tool: str, provider: str, truncated: bool) -> dict[str, Any]:
    """The JSON object a prompted reply holds (see :func:`json_object`); the fidelity says
    "prompted", so it is not checked against the schema here."""
    value = json_object(text)
    if value is None:
        raise _unusable_output(provider, f"JSON object for tool {tool!r}", truncated)
    return value


def _unusable_output(provider: str, what: str, truncated: bool) -> InvocationError:
    if truncated:
        return InvocationError(
            "RUNTIME_FAILURE",
            f"the reply from {provider} was cut off at the output limit before the {what} "
            "was complete; raise max_output_tokens",
            False,
        )
    return InvocationError(
        "RUNTIME_FAILURE",
        f"the model behind {provider} returned no valid {what} (not a JSON object); use a "
        "model that supports tool calling, or tools=False with structured_output='json_schema'",
        False,
    )


# ---------------------------------------------------------------------------------- usage


def usage_from(raw: Any) -> Usage:
    """Provider counts as reported. ``prompt_tokens`` includes cached tokens in this API;
    relay_nb's ``input_tokens`` excludes them (they are ``cache_read_tokens``), as in the
    Messages API, so the same prompt reads the same on both runtimes."""
    if raw is None:
        return Usage()
    prompt = reported_count(getattr(raw, "prompt_tokens", None))
    output = reported_count(getattr(raw, "completion_tokens", None))
    details = getattr(raw, "prompt_tokens_details", None)
    cached = (
        reported_count(getattr(details, "cached_tokens", None)) if details is not None else None
    )
    if prompt is not None and cached is not None and cached > prompt:
        cached = None  # inconsistent counts: keep the prompt total, drop the split
    return Usage(
        input_tokens=prompt - (cached or 0) if prompt is not None else None,
        output_tokens=output,
        total_tokens=reported_count(getattr(raw, "total_tokens", None)),
        cache_read_tokens=cached,
    )
