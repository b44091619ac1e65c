"""A session's conversation: what the model sees of earlier turns, and what it no longer does.

Two mechanisms keep long sessions inside the history budget (DESIGN.md's 50% of the window):

- **Large results by reference.** A tool result longer than ``inline_chars`` is kept whole in
  :attr:`History.results` (with its artifact, e.g. the DataFrame) and replaced *in the
  history* by its head and a reference. The turn that fetched it saw it in full; later turns
  see enough to know it exists and what it held.
- **Compaction.** When the history still exceeds its budget, the oldest turns are folded into
  a short memory — written by the model when one is available, otherwise a deterministic
  digest of questions, queries and answers — and dropped from the message list. The memory
  reaches the prompt through the context resolver (``RecentTurnsSource``'s memory slot).

Turn boundaries are the user messages, so a tool call is never separated from its result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from relay_nb.agent.tool_calls import ToolOutcome
from relay_nb.runtime.types import (
    InvocationRequest,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    estimate_tokens,
)

__all__ = ["COMPACTION_PROMPT", "History", "digest", "transcript"]

COMPACTION_PROMPT = """\
You compact the earlier part of a conversation between a data analyst and a data assistant \
into notes the assistant will rely on later. Keep: each question and its answer with the key \
numbers; the tables, columns, filters and SQL that worked; definitions and corrections the \
analyst gave. Drop greetings, failed attempts and anything repeated. Write at most {words} \
words as terse bullet points. Output only the notes."""

_DIGEST_ANSWER_CHARS = 300
_DIGEST_SQL_CHARS = 200
_TRANSCRIPT_RESULT_CHARS = 800


class _Stored(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    ref: str
    outcome: ToolOutcome


class History:
    """Messages of earlier turns, a compacted memory, and large results kept by reference."""

    def __init__(self, *, inline_chars: int = 2000) -> None:
        self.inline_chars = inline_chars
        self.messages: list[Message] = []
        self._tokens: list[int] = []
        """chars/4 of each message, counted once when it is added (parallel to messages)."""
        self.memory: str | None = None
        self.results: dict[str, ToolOutcome] = {}
        self.compactions = 0

    def __len__(self) -> int:
        return len(self.messages)

    def tokens(self) -> int:
        """chars/4 over the messages and the memory: what the history costs each turn."""
        return sum(self._tokens) + estimate_tokens(self.memory or "")

    def clear(self) -> None:
        self.messages.clear()
        self._tokens.clear()
        self.memory = None
        self.results.clear()

    def add_turn(self, new_messages: Sequence[Message], outcomes: Sequence[ToolOutcome]) -> None:
        """Append one turn's messages, moving large tool results out to :attr:`results`."""
        by_id = {o.tool_call_id: o for o in outcomes}
        for message in new_messages:
            kept = self._by_reference(message, by_id)
            self.messages.append(kept)
            self._tokens.append(estimate_tokens(_message_text(kept)))

    def _by_reference(self, message: Message, outcomes: dict[str, ToolOutcome]) -> Message:
        parts = message.parts()
        if not any(
            isinstance(p, ToolResultPart) and len(p.content) > self.inline_chars for p in parts
        ):
            return message
        rebuilt = []
        for part in parts:
            if isinstance(part, ToolResultPart) and len(part.content) > self.inline_chars:
                ref = f"r{len(self.results) + 1}"
                outcome = outcomes.get(part.tool_call_id) or ToolOutcome(
                    tool_call_id=part.tool_call_id, name="", content=part.content
                )
                self.results[ref] = outcome
                head = part.content[: self.inline_chars // 2].rstrip()
                summary = (
                    f"{head}\n… [{len(part.content):,} characters in all; shortened in the "
                    f"history, kept whole as result {ref}]"
                )
                part = part.model_copy(update={"content": summary})
            rebuilt.append(part)
        return message.model_copy(update={"content": rebuilt})

    # -- compaction ----------------------------------------------------------------------------

    def split_for_compaction(self, budget_tokens: int) -> tuple[list[Message], list[Message]]:
        """``(older, newer)``: the newest whole turns fitting half the budget stay.

        Half, so that the next few turns fit before compacting again; the newest turn always
        stays, however big, because the follow-up question is most likely about it.
        """
        starts = [i for i, m in enumerate(self.messages) if _starts_turn(m)]
        if len(starts) < 2:
            return [], list(self.messages)
        keep_from = starts[-1]
        for start in reversed(starts[:-1]):
            if sum(self._tokens[start:]) > budget_tokens // 2:
                break
            keep_from = start
        return self.messages[:keep_from], self.messages[keep_from:]

    def compaction_request(self, older: Sequence[Message], words: int) -> InvocationRequest:
        """The request asking a model to fold ``older`` (and the memory so far) into notes."""
        body = transcript(older)
        if self.memory:
            body = f"Notes so far:\n{self.memory}\n\nConversation since:\n{body}"
        return InvocationRequest(
            messages=[
                Message.system(COMPACTION_PROMPT.format(words=words)),
                Message.user(body),
            ],
            max_output_tokens=max(256, words * 2),
        )

    def apply_compaction(self, older: Sequence[Message], memory: str) -> None:
        """Drop ``older`` (a prefix of :attr:`messages`) and keep ``memory`` in its place."""
        self.messages = self.messages[len(older) :]
        self._tokens = self._tokens[len(older) :]
        self.memory = memory.strip()
        self.compactions += 1


def digest(older: Sequence[Message], memory: str | None, max_tokens: int) -> str:
    """The deterministic memory: one line per question, its queries and its answer.

    Used when no model summary is available; newest lines are kept when it must be cut.
    """
    lines = memory.splitlines() if memory else []
    for message in older:
        for part in message.parts():
            if isinstance(part, TextPart) and part.text.strip():
                prefix = "- Q: " if message.role == "user" else "  A: "
                lines.append(prefix + _clip(part.text, _DIGEST_ANSWER_CHARS))
            elif isinstance(part, ToolCallPart):
                sql = part.input.get("sql") if isinstance(part.input, dict) else None
                shown = sql if isinstance(sql, str) else json.dumps(part.input, sort_keys=True)
                lines.append(f"  ran {part.name}: {_clip(shown, _DIGEST_SQL_CHARS)}")
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = estimate_tokens(line) + 1
        if used + cost > max_tokens:
            break
        kept.append(line)
        used += cost
    return "\n".join(reversed(kept))


def transcript(messages: Sequence[Message]) -> str:
    """A readable text form of messages (tool results shortened) for the compaction model."""
    blocks = []
    for message in messages:
        for part in message.parts():
            if isinstance(part, TextPart) and part.text.strip():
                blocks.append(f"{message.role.capitalize()}: {part.text.strip()}")
            elif isinstance(part, ToolCallPart):
                arguments = json.dumps(part.input, ensure_ascii=False, sort_keys=True)
                blocks.append(f"Assistant called {part.name} with {arguments}")
            elif isinstance(part, ToolResultPart):
                kind = "Error" if part.is_error else "Result"
                blocks.append(f"{kind}: {_clip(part.content, _TRANSCRIPT_RESULT_CHARS)}")
    return "\n\n".join(blocks)


def _starts_turn(message: Message) -> bool:
    return message.role == "user" and any(isinstance(p, TextPart) for p in message.parts())


def _message_text(message: Message) -> str:
    return json.dumps(message.model_dump(mode="json"), ensure_ascii=False)


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
