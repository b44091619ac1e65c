"""``relay.evaluate(bank)``: the facade's way into :mod:`relay_nb.eval`.

A mixin of :class:`~relay_nb.facade.relay.Relay` (its own module, so the conversation
object's file stays about conversation): the run uses the relay's connectors, model and
caps, asks the bank's questions as independent turns (the conversation is neither read nor
extended), and saves the report beside the usage ledger so the next run can be compared
with it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from relay_nb.facade.loop_thread import blocking, run_sync

if TYPE_CHECKING:
    from relay_nb.agent.routing import ModelSetting
    from relay_nb.agent.session import Session
    from relay_nb.eval.attempts import EvalEstimate
    from relay_nb.eval.bank import QuestionBank
    from relay_nb.eval.report import EvalReport
    from relay_nb.eval.run import EvalProgress

    BankInput = QuestionBank | str | Path

__all__ = ["Evaluates"]

# relay_nb.eval (and the sqlglot, YAML and comparison code it brings) loads on the first
# evaluation, not with the facade: most sessions never run one


class Evaluates:
    """``evaluate``, ``evaluate_async`` and ``estimate`` for :class:`Relay`."""

    _engine: Session

    async def evaluate_async(
        self,
        bank: BankInput,
        *,
        model: ModelSetting = None,
        concurrency: int = 4,
        repeat: int = 1,
        max_cost_usd: float | None = None,
        batch: bool = False,
        batch_timeout_s: float | None = None,
        save: bool | str | Path = True,
        estimate: EvalEstimate | None = None,
        on_estimate: Callable[[EvalEstimate], None] | None = None,
        on_progress: Callable[[EvalProgress], None] | None = None,
    ) -> EvalReport:
        """Ask every question of ``bank`` (a YAML/JSONL/CSV file or a ``QuestionBank``)
        ``repeat`` times, at most ``concurrency`` at once (``batch``: through the runtime's
        physical batch), and score each answer against the bank's expected result.
        ``relay.evaluate(bank)`` blocks; ``await relay.evaluate_async(bank)`` runs on the
        caller's loop.

        ``max_cost_usd`` caps the whole run; ``on_estimate`` sees what it should cost before
        it starts (``estimate``: one :meth:`estimate` made already, not made again),
        ``on_progress`` each finished attempt. ``save``: True writes the report under
        ``$RELAY_DATA_DIR/evals/`` (a folder: in it; a file: there; False: nowhere).
        ``report.compare()`` then diffs it against the previous run of the bank.
        """
        from relay_nb.eval.bank import load_bank
        from relay_nb.eval.run import estimate_eval, run_eval

        loaded = load_bank(bank)
        if estimate is None:
            estimate = await estimate_eval(
                self._engine, loaded, model=model, repeat=repeat, batch=batch
            )
        if on_estimate is not None:
            on_estimate(estimate)
        report = await run_eval(
            self._engine,
            loaded,
            model=model,
            concurrency=concurrency,
            repeat=repeat,
            max_cost_usd=max_cost_usd,
            batch=batch,
            batch_timeout_s=batch_timeout_s,
            estimate=estimate,
            on_progress=on_progress,
        )
        if save is not False:
            report.save(None if save is True else save)
        return report

    evaluate = blocking(evaluate_async)

    def estimate(
        self, bank: BankInput, *, model: ModelSetting = None, repeat: int = 1, batch: bool = False
    ) -> EvalEstimate:
        """What :meth:`evaluate` should cost on ``bank`` (nothing is asked; the estimate's
        ``basis`` says what it assumes)."""
        from relay_nb.eval.bank import load_bank
        from relay_nb.eval.run import estimate_eval

        return run_sync(
            estimate_eval(self._engine, load_bank(bank), model=model, repeat=repeat, batch=batch)
        )
