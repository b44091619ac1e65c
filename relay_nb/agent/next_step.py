"""Driving a runtime that can only fill one forced tool (the ``claude`` CLI harness).

Such a runtime cannot be offered a menu of tools with ``tool_choice=auto``. Instead every step
forces one tool, ``next_step``, whose input is either ``{"tool": NAME, "input": {...}}`` (run a
tool) or ``{"answer": "..."}`` (finish). The real tools, with their input schemas, are
described in ``next_step``'s description, since the model sees no other declaration of them.

The conversation keeps the model's own ``next_step`` call (and its id) followed by the chosen
tool's result, so the transcript stays a valid call/result sequence for any runtime and the
``tool_call`` event carries the model's call id, as with native tools. A final answer is
stored as plain assistant text, never as a dangling call without a result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from relay_nb.runtime.types import ToolCall, ToolSpec

__all__ = ["NEXT_STEP", "NextStep", "decode_next_step", "next_step_spec"]

NEXT_STEP = "next_step"
_MAX_SCHEMA_CHARS = 4000


class NextStep(BaseModel):
    """A decoded ``next_step`` call: an answer, a tool call, or a problem to report back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answer: str | None = None
    call: ToolCall | None = None
    problem: str | None = None


def next_step_spec(tools: Sequence[ToolSpec]) -> ToolSpec:
    """The one tool the model fills; lists the real tools and their input schemas."""
    lines = [
        "Decide the next step. Either call one tool by setting `tool` (one of the names "
        "below) and `input` (an object matching that tool's input schema), or finish by "
        "setting `answer` to the final answer for the user. Never set both.",
        "",
        "Tools:",
    ]
    for tool in tools:
        schema = json.dumps(tool.input_schema, separators=(",", ":"), sort_keys=True)
        if len(schema) > _MAX_SCHEMA_CHARS:
            schema = schema[:_MAX_SCHEMA_CHARS] + "…"
        lines.append(f"- {tool.name}: {tool.description.strip()}\n  input schema: {schema}")
    return ToolSpec(
        name=NEXT_STEP,
        description="\n".join(lines),
        input_schema={
            "type": "object",
            "properties": {
                "tool": {
                    "type": "string",
                    "enum": [tool.name for tool in tools],
                    "description": "the tool to call now",
                },
                "input": {"type": "object", "description": "the input for that tool"},
                "answer": {
                    "type": "string",
                    "description": "the final answer, when no further tool call is needed",
                },
            },
            "additionalProperties": False,
        },
    )


def decode_next_step(call: ToolCall, tool_names: Sequence[str]) -> NextStep:
    """Read the model's ``next_step`` input; anything malformed becomes a ``problem``.

    A problem goes back to the model as a tool error on this call's id so it can retry.
    """
    data: dict[str, Any] = call.input
    # forced-tool output often carries the unused fields empty ("", null): read those as absent
    answer = data.get("answer") if isinstance(data.get("answer"), str) else None
    answer = answer if answer and answer.strip() else None
    tool = data.get("tool") or None
    if answer is not None and tool is not None:
        return NextStep(problem="set either `answer` or `tool`, not both")
    if answer is not None:
        return NextStep(answer=answer)
    if tool is None:
        return NextStep(problem="set `tool` and `input` to call a tool, or `answer` to finish")
    if tool not in tool_names:
        known = ", ".join(list(tool_names)[:40]) or "none"
        more = len(tool_names) - 40
        known += f" … and {more} more" if more > 0 else ""
        return NextStep(problem=f"unknown tool {str(tool)[:80]!r}; available tools: {known}")
    arguments = data.get("input") or {}
    if not isinstance(arguments, dict):
        return NextStep(problem="`input` must be a JSON object")
    return NextStep(call=ToolCall(id=call.id, name=tool, input=arguments))
