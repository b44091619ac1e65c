"""Split a model's context window between response, system prompt, context and history.

The split is fixed so behaviour is predictable across models (``../shared/DESIGN.md`` §5):
first the response headroom, ``max(2000, 10%)`` of the window — a model that has no room to
answer is useless however good its context — then of the rest: system 10%, context 40%,
history 50%. Integer maths, with rounding leftovers going to history, so the parts always sum
to the window exactly and nothing is silently lost or over-committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from relay_nb.context.types import estimate_tokens
from relay_nb.errors import ConfigurationError

__all__ = ["MIN_RESPONSE_HEADROOM", "Budget", "allocate_budget", "count_tokens"]

MIN_RESPONSE_HEADROOM = 2000
_SYSTEM_PCT = 10
_CONTEXT_PCT = 40

_logger = logging.getLogger("relay_nb.context")


class Budget(BaseModel):
    """Token allotments for one model; ``response_headroom + system + context + history``
    equals ``context_window``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    context_window: int
    response_headroom: int
    system: int
    context: int
    history: int


def allocate_budget(context_window: int) -> Budget:
    """Allocate ``context_window`` tokens; a window too small for the headroom is an error.

    Returning zero or negative allotments would let a turn run with no room to answer and
    fail later, far from the cause; refusing here names the fix (a bigger model window).
    """
    if isinstance(context_window, bool) or not isinstance(context_window, int):
        raise ConfigurationError(
            f"context_window must be an int token count, got {type(context_window).__name__}"
        )
    if context_window < 0:
        raise ConfigurationError(f"context_window must be non-negative, got {context_window}")
    headroom = max(MIN_RESPONSE_HEADROOM, -(-context_window // 10))  # ceil(10%)
    if context_window <= headroom:
        raise ConfigurationError(
            f"context window of {context_window} tokens is too small: it must exceed the "
            f"{MIN_RESPONSE_HEADROOM}-token response headroom, i.e. be at least "
            f"{MIN_RESPONSE_HEADROOM + 1} tokens"
        )
    rest = context_window - headroom
    system = rest * _SYSTEM_PCT // 100
    context = rest * _CONTEXT_PCT // 100
    return Budget(
        context_window=context_window,
        response_headroom=headroom,
        system=system,
        context=context,
        history=rest - system - context,
    )


def count_tokens(text: str, *, counter: Callable[[str], int] | None = None) -> tuple[int, bool]:
    """Return ``(tokens, estimated)``: the provider's count when a counter is given, else chars/4.

    Provider counting costs a call, so it is opt-in. If the counter fails or returns nonsense
    the chars/4 estimate is used and flagged ``estimated=True``, so a budget decision is never
    blocked by a tokenizer outage, and the flag tells the truth about what was measured.
    """
    if counter is not None:
        try:
            count = counter(text)
        except Exception as exc:  # a tokenizer outage must not break the turn
            _logger.warning(
                "token_count_failed error=%s",
                type(exc).__name__,
                extra={"event": "token_count_failed", "error": type(exc).__name__},
            )
        else:
            if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
                return count, False
            _logger.warning(
                "token_count_failed error=invalid_count",
                extra={"event": "token_count_failed", "error": "invalid_count"},
            )
    return estimate_tokens(text), True


async def count_tokens_with(runtime: object, text: str) -> tuple[int, bool]:
    """Like :func:`count_tokens`, asking ``runtime``'s provider when it declares it can.

    The caller opts in by passing a runtime (a provider count costs a request); a runtime
    without ``token_counting``, or a failed count, falls back to the chars/4 estimate.
    """
    capabilities = getattr(runtime, "capabilities", None)
    if capabilities is None or not capabilities().token_counting:
        return estimate_tokens(text), True
    from relay_nb.runtime.types import InvocationRequest, Message

    try:
        count = await runtime.count_tokens(  # type: ignore[attr-defined]
            InvocationRequest(messages=[Message.user(text or " ")])
        )
    except Exception as exc:  # an outage of the tokenizer must not break the turn
        _logger.warning(
            "token_count_failed error=%s",
            type(exc).__name__,
            extra={"event": "token_count_failed", "error": type(exc).__name__},
        )
        return estimate_tokens(text), True
    return int(count), False
