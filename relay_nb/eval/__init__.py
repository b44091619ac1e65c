"""Measuring answers on the analyst's own questions: a question bank
(:mod:`~relay_nb.eval.bank`), result-set comparison (:mod:`~relay_nb.eval.compare`), runs
through the agent (:mod:`~relay_nb.eval.run`) that record an attempt per question
(:mod:`~relay_nb.eval.attempts`), and reports with a regression diff
(:mod:`~relay_nb.eval.report`). ``relay.evaluate(bank)``, ``%relay --eval BANK`` and
``relay-nb eval BANK`` are the ways in."""

from __future__ import annotations

from relay_nb.eval.attempts import Attempt, EvalEstimate, Reason, eval_dir
from relay_nb.eval.bank import BankQuestion, QuestionBank, load_bank
from relay_nb.eval.compare import ColumnPolicy, Comparison, MissReason, Table, compare_results
from relay_nb.eval.oracle import oracle_script
from relay_nb.eval.report import EvalDiff, EvalReport
from relay_nb.eval.run import EvalProgress, estimate_eval, run_eval

__all__ = [
    "Attempt",
    "BankQuestion",
    "ColumnPolicy",
    "Comparison",
    "EvalDiff",
    "EvalEstimate",
    "EvalProgress",
    "EvalReport",
    "MissReason",
    "QuestionBank",
    "Reason",
    "Table",
    "compare_results",
    "estimate_eval",
    "eval_dir",
    "load_bank",
    "oracle_script",
    "run_eval",
]
