"""Folding the oldest turns of a long conversation into a short memory.

Once the history outgrows its share of the context window, the oldest turns are replaced by
notes: the model's own summary (fast tier) when the session allows it, else — or when that
call cannot be made or fails — a deterministic digest (:func:`relay_nb.agent.history.digest`).
The summary is a model call like any other: the session cap holds (planned by the
accountant), and it is billed and recorded like a turn's call.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.history import History, digest
from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime.base import ModelRuntime
from relay_nb.runtime.types import Message, Usage

__all__ = ["compact_history"]

logger = logging.getLogger("relay_nb.agent")
_MEMORY_WORDS = 250


async def compact_history(
    history: History,
    accountant: Accountant,
    *,
    budget: int,
    summarizer: Callable[[], ModelRuntime] | None,
) -> Usage | None:
    """Fold ``history``'s oldest turns into its memory if it is over ``budget`` tokens;
    returns the summary call's priced usage (None when no model was called).
    ``summarizer`` gives the runtime that writes the summary (None: the digest only)."""
    if history.tokens() <= budget:
        return None
    older, _newer = history.split_for_compaction(budget)
    if not older:
        return None
    memory_tokens = max(64, budget // 4)
    memory, used = None, None
    if summarizer is not None:
        memory, used = await _model_summary(history, older, accountant, summarizer)
    if memory is None or len(memory) // 4 > memory_tokens:
        memory = digest(older, history.memory, memory_tokens)
    history.apply_compaction(older, memory)
    return used


async def _model_summary(
    history: History,
    older: Sequence[Message],
    accountant: Accountant,
    summarizer: Callable[[], ModelRuntime],
) -> tuple[str | None, Usage | None]:
    """The model's notes on ``older``, or None (then the digest is used)."""
    request = history.compaction_request(older, _MEMORY_WORDS)
    limits = accountant.limits()
    try:
        runtime = summarizer()
        plan = accountant.plan(limits, request, runtime=runtime)
        if plan.stop_reason is not None:
            logger.info("history compaction used the digest: %s", plan.stop_reason)
            return None, None
        if plan.max_output_tokens != request.max_output_tokens:
            request = request.model_copy(update={"max_output_tokens": plan.max_output_tokens})
        result = await runtime.invoke(request)
    except (InvocationError, ConfigurationError) as exc:
        logger.info("history compaction fell back to the digest: %s", exc)
        return None, None
    priced, _warnings = accountant.charge(result, request, limits=limits)
    turn_id = f"compaction-{uuid.uuid4().hex[:12]}"
    await accountant.record(result, priced, turn_id=turn_id, step=0)
    return result.output_text.strip() or None, priced
