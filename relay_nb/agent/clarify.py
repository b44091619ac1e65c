"""Asking back: the built-in ``clarify`` tool, for a question that can mean two things.

"Revenue last quarter" — calendar or fiscal? gross or net? A model that guesses writes
confident SQL for the wrong question. With a *clarifier* (someone who can answer: the
notebook's buttons, a terminal prompt), the turn offers the model one more tool: ``clarify``
asks one short question with two to four options, waits for the answer and hands it back as
the tool's result, so the turn goes on with it. The question and the choice are a step of
the trace like any other call.

Without a clarifier (a script, a CI run, nbclient) the tool is not offered at all: a
question nobody can answer would only cost a step. A clarifier that gives no answer (time
up, dismissed) tells the model to choose the likeliest meaning and say which it chose.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.agent.tool_calls import current_tool_call_id
from relay_nb.tools import Tool, ToolResult

__all__ = ["CLARIFY_TOOL", "ClarifyAnswer", "ClarifyRequest", "Clarifier", "clarify_tool"]

logger = logging.getLogger("relay_nb.agent")

CLARIFY_TOOL = "clarify"
_NO_ANSWER = (
    "No answer from the user. Choose the most likely meaning, say in your answer which one "
    "you chose, and go on."
)


class ClarifyRequest(BaseModel):
    """What a clarifier is shown."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_call_id: str
    """The call's id, so a view can show the options under its entry."""
    question: str
    options: tuple[str, ...]


class ClarifyAnswer(BaseModel):
    """The question and what was chosen (None: no answer): the call's artifact."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str
    options: tuple[str, ...]
    choice: str | None


Clarifier = Callable[[ClarifyRequest], "str | Awaitable[str | None] | None"]
"""Shows the question and returns the option chosen (or the user's own words), or None."""


class _ClarifyInput(BaseModel):
    question: str = Field(
        min_length=1, max_length=300, description="One short question for the user."
    )
    options: list[str] = Field(
        min_length=2,
        max_length=4,
        description="2 to 4 short answers the user can pick, most likely first.",
    )


_DESCRIPTION = (
    "Ask the user one short question when the request can be read in ways that give "
    "different answers (which metric, which period, which of two tables), with 2 to 4 "
    "options. Do not ask when one reading is clearly most likely: use it and say so."
)


def clarify_tool(clarifier: Clarifier) -> Tool:
    """The ``clarify`` tool, answered by ``clarifier``."""

    async def ask(arguments: _ClarifyInput) -> ToolResult:
        options = tuple(dict.fromkeys(" ".join(o.split())[:80] for o in arguments.options))
        options = tuple(option for option in options if option)
        if len(options) < 2:  # nothing to choose between: the model's mistake, said to it
            return ToolResult(
                content="clarify needs 2 to 4 different, non-empty options", is_error=True
            )
        request = ClarifyRequest(
            tool_call_id=current_tool_call_id() or "",
            question=" ".join(arguments.question.split()),
            options=options,
        )
        choice = await _asked(clarifier, request)
        answer = ClarifyAnswer(question=request.question, options=options, choice=choice)
        content = _NO_ANSWER if choice is None else f"The user chose: {choice}"
        return ToolResult(content=content, artifact=answer)

    return Tool(
        name=CLARIFY_TOOL,
        description=_DESCRIPTION,
        input_model=_ClarifyInput,
        handler=ask,
        timeout_s=None,  # a person answers; the clarifier bounds its own wait
        metadata={"builtin": True},
    )


async def _asked(clarifier: Clarifier, request: ClarifyRequest) -> str | None:
    """The clarifier's answer; a failing clarifier counts as no answer, never as one."""
    try:
        answer: Any = clarifier(request)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        logger.warning("clarifier failed: %r", exc)
        return None
    if answer is None or not str(answer).strip():
        return None
    return " ".join(str(answer).split())[:200]
