"""The facade's small translations: a question's keyword options into its settings layer, the
``ledger=`` setting into a ledger, a validation error into its first problem's line."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from relay_nb.agent.ledger import UsageLedger
from relay_nb.agent.routing import ModelSetting
from relay_nb.agent.settings import Approval

__all__ = ["LedgerSetting", "call_layer", "first_problem", "ledger_from"]

LedgerSetting = UsageLedger | str | os.PathLike[str] | Literal[False] | None
"""None: the default file (``$RELAY_DATA_DIR/usage.sqlite``); a path or URL; False: none."""


def call_layer(
    model: ModelSetting,
    skill: str | Sequence[str] | None,
    max_steps: int | None,
    max_cost_usd: float | None,
    max_tokens: int | None,
    max_output_tokens: int | None,
    approval: Approval | None = None,
) -> dict[str, Any]:
    """One question's settings layer (None: not set; checked by the engine)."""
    return dict(
        approval=approval, model=model, skills=skill, max_steps=max_steps,
        max_cost_usd=max_cost_usd, max_tokens=max_tokens, max_output_tokens=max_output_tokens,
    )  # fmt: skip


def ledger_from(setting: LedgerSetting) -> UsageLedger | None:
    if setting is False:
        return None
    if isinstance(setting, UsageLedger):
        return setting
    return UsageLedger(setting if setting is None or isinstance(setting, str) else Path(setting))


def first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    return f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
