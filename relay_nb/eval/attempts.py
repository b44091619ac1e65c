"""What one evaluation run records: an :class:`Attempt` per question asked, the
:class:`EvalEstimate` shown before a run starts, why an attempt missed (:data:`Reason`), and
where runs are saved (:func:`eval_dir`). :mod:`~relay_nb.eval.report` gathers them into a
report."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from relay_nb.agent.ledger import default_ledger_path
from relay_nb.redaction import redact

__all__ = ["Attempt", "EvalEstimate", "Reason", "eval_dir"]

Reason = Literal[
    "refused",
    "error",
    "no query",
    "timeout",
    "missing rows",
    "extra rows",
    "wrong values",
    "wrong order",
    "column mismatch",
    "over the cost cap",
    "gold failed",
]
"""Why an attempt is not right. ``gold failed``: the bank's own expected result could not
be computed (its SQL failed or was cut at the row limit) — a bank problem, left out of the
accuracy."""


_LIMITS = {"detail": 300, "sql": 20_000, "answer": 500}
"""How much of each text an attempt keeps (after redaction)."""


def eval_dir() -> Path:
    """Where runs are saved: ``evals/`` beside the usage ledger (``$RELAY_DATA_DIR``, else
    the XDG data folder)."""
    return default_ledger_path().parent / "evals"


class Attempt(BaseModel):
    """One question asked once, and how its answer scored."""

    model_config = ConfigDict(frozen=True)

    question_id: str
    question: str
    tags: tuple[str, ...] = ()
    attempt: int = 1
    correct: bool
    reason: Reason | None = None
    detail: str = ""
    sql: str = ""
    """The SQL the answer's result came from (or the last one tried)."""
    answer: str = ""
    ran: bool = True
    """False when the run's cost cap stopped it before it could answer: not scored."""
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    latency_ms: float = 0.0
    model: str = ""

    @field_validator("detail", "sql", "answer")
    @classmethod
    def _scrubbed(cls, value: str, info: ValidationInfo) -> str:
        """Secrets out first, then cut (cutting first could keep a secret's first half)."""
        value = redact(value)
        limit = _LIMITS[info.field_name or ""]
        return value if len(value) <= limit else value[: limit - 1] + "…"

    @field_validator("cost_usd")
    @classmethod
    def _micro_dollars(cls, value: float | None) -> float | None:
        return None if value is None else round(value, 6)

    @field_validator("latency_ms")
    @classmethod
    def _tenth_ms(cls, value: float) -> float:
        return round(value, 1)

    @property
    def scored(self) -> bool:
        """Counted in the accuracy: not a bank problem, and not stopped by the run's cap."""
        return self.reason != "gold failed" and self.ran


class EvalEstimate(BaseModel):
    """What a run should cost, shown before it starts."""

    model_config = ConfigDict(frozen=True)

    questions: int
    attempts: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    model: str
    basis: str = ""

    def line(self) -> str:
        cost = "cost unknown" if self.cost_usd is None else f"≈ ${self.cost_usd:.4f}"
        return (
            f"estimate: {self.attempts} attempt(s) of {self.questions} question(s) with "
            f"{self.model or 'the model'}: ≈ {self.input_tokens:,} in / "
            f"{self.output_tokens:,} out tokens, {cost} ({self.basis})"
        )
