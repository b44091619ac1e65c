"""Tool approval: a tool marked ``requires_approval`` runs only after someone says yes.

The loop asks an *approver* — any callable taking an :class:`ApprovalRequest` and returning a
bool (or an awaitable of one). Without an approver the answer is no: a script or a CI run has
nobody to ask, and running a tool its author flagged as needing a human is the wrong default.
The notebook layer supplies an approver that shows Approve / Deny buttons.

A denial is not an error of the turn: it goes back to the model as a tool error saying the
user declined, so the model can answer with what it has or ask for something else.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ApprovalRequest", "Approver", "approve_all", "ask_approver", "deny_all"]

logger = logging.getLogger("relay_nb.agent")


class ApprovalRequest(BaseModel):
    """What an approver is shown: the call exactly as the model made it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_call_id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    description: str = ""
    reason: str = ""
    """Why this call needs a yes now (a cost estimate over the connector's threshold), for a
    tool that asked while running; empty for a tool that always needs approval."""


Approver = Callable[[ApprovalRequest], "bool | Awaitable[bool]"]


def deny_all(request: ApprovalRequest) -> bool:
    """The non-interactive default: nobody is there to approve."""
    return False


def approve_all(request: ApprovalRequest) -> bool:
    """For tests and trusted automation only; say so explicitly by passing it."""
    return True


async def ask_approver(approver: Approver | None, request: ApprovalRequest) -> tuple[bool, str]:
    """``(approved, reason)``; a failing approver counts as a denial, never as a yes."""
    if approver is None:
        return False, (
            f"the user did not approve {request.name}: it requires approval and this run has "
            "no approver (pass approver= to allow it)"
        )
    try:
        verdict = approver(request)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception as exc:
        logger.warning("approver failed for %s: %r", request.name, exc)
        return False, f"approval of {request.name} failed ({type(exc).__name__}); not run"
    if verdict is True:
        return True, ""
    return False, (
        f"the user denied this call to {request.name}; do not call it again for this "
        "question — answer with what you have, or say what you would need"
    )
