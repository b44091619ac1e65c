"""What a turn returns: the answer, how it ended, every event, call, result and message.

Kept apart from :mod:`relay_nb.agent.loop` (which builds it) because every layer above reads
it — the facade, the transcript, the notebook views — and none of them needs the loop.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.agent.events import Event
from relay_nb.agent.settings import TurnSettings
from relay_nb.agent.tool_calls import ToolOutcome
from relay_nb.runtime.types import Message, Simulated, ToolCall, Usage

__all__ = ["FinishReason", "TurnResult"]

FinishReason = Literal["stop", "max_steps", "error", "cancelled", "usage_cap"]


class TurnResult(BaseModel):
    """Everything a turn produced; ``usage`` is the priced sum over all model calls."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    answer: str
    finish_reason: FinishReason
    question: str = ""
    turn_id: str = ""
    events: list[Event] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[ToolOutcome] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    steps: int = 0
    model: str = ""
    simulated: Simulated | None = None
    """Set when no model answered (see ``InvocationResult.simulated``): the views label the
    turn so, and its cost is an estimate at ``model``'s prices, not money spent."""
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    """What the context's sources say about the finished turn, e.g. that its SQL follows a
    verified query (a source's ``notes_for(turn)``; see the agent's session)."""
    messages: list[Message] = Field(default_factory=list)
    """This turn's messages — the question, the model's calls and replies, the tool results —
    in order, each call followed by its result; append them to the history for the next
    turn. (Not the whole conversation: a long session would keep one copy per turn.)"""
    settings: TurnSettings = Field(default_factory=TurnSettings)
    """What the turn was allowed to do, merged from its layers (``settings.origin(name)``
    says which layer set a value)."""
    elapsed_ms: float = 0.0
    """Wall time from the question to the answer (context, model calls, tools)."""

    def __repr__(self) -> str:
        """One line, so ``relay.ask(...)`` as a cell's last line does not print every event
        and message (they are attributes: ``.events``, ``.messages``, ``.df``)."""
        answer = " ".join(self.answer.split())
        shown = answer if len(answer) <= 80 else answer[:79] + "…"
        cost = f"${self.usage.cost_usd:.4f}" if self.usage.cost_usd is not None else "cost unknown"
        if self.simulated:
            cost += f" ({self.simulated}, not spent)"
        parts = [
            f"question={self.question!r}",
            f"answer={shown!r}",
            f"finish_reason={self.finish_reason!r}",
            f"steps={self.steps}",
            f"queries={len(self.queries)}",
            cost,
        ]
        return f"{type(self).__name__}({', '.join(parts)})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's pretty printer: the same line (pydantic's would list every field)."""
        printer.text(repr(self))

    @property
    def artifacts(self) -> list[Any]:
        """The non-empty tool artifacts, in call order (e.g. QueryResults)."""
        return [r.artifact for r in self.tool_results if r.artifact is not None]

    @property
    def frames(self) -> list[Any]:
        """Every result DataFrame the turn's tools produced, in call order."""
        return [a.df for a in self.artifacts if getattr(a, "df", None) is not None]

    @property
    def df(self) -> Any:
        """The last result DataFrame (usually the one the answer is about), or None."""
        frames = self.frames
        return frames[-1] if frames else None

    @property
    def charts(self) -> list[Any]:
        """The charts the ``chart`` tool drew in this turn (each has ``.png``)."""
        return [a for a in self.artifacts if getattr(a, "png", None) is not None]

    @property
    def sql_outcomes(self) -> list[ToolOutcome]:
        """The tool calls that ran SQL on a connector and succeeded, in call order (their
        artifact is a ``QueryResult`` naming its connector and dialect): what ``--sql`` puts
        in a cell, ``relay.verify`` saves and a knowledge file's verified queries match."""
        return [
            outcome
            for outcome in self.tool_results
            if not outcome.is_error
            and getattr(outcome.artifact, "connector_id", "")
            and getattr(outcome.artifact, "dialect", "")
        ]

    @property
    def queries(self) -> list[str]:
        """The SQL (or query) each successful data tool call actually executed."""
        return [a.executed_sql for a in self.artifacts if getattr(a, "executed_sql", None)]
