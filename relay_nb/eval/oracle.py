"""A scripted model that answers a bank with its own gold SQL: the oracle.

``oracle_script(bank)`` gives, for each question with gold SQL, the steps a perfect analyst
would take — query the question's connector with the gold SQL, then answer — in the form
:class:`~relay_nb.runtime.scripted.ScriptedRuntime` takes as ``by_question``. On the
questions with gold SQL an oracle run must score 100%: anything less is a harness bug (or
gold SQL that is not deterministic), which is why the tests run it. A question whose
expected result is written as rows has no SQL to replay: the oracle has no answer for it.
``relay-nb eval BANK --oracle FILE`` writes the script to a file, to start a scripted model
from (edit a step to make a known mistake).
"""

from __future__ import annotations

from typing import Any

from relay_nb.errors import ConfigurationError
from relay_nb.eval.bank import BankQuestion, QuestionBank, load_bank

__all__ = ["oracle_script"]

ORACLE_ANSWER = "Here is the result of the query."


def oracle_script(bank: QuestionBank | str, *, model: str | None = None) -> dict[str, Any]:
    """``{"by_question": {question: [query step, answer step]}}`` for every question with
    gold SQL (``model``: the model name the steps report, e.g. to price them)."""
    bank = load_bank(bank)
    scripts: dict[str, list[dict[str, Any]]] = {}
    owners: dict[str, BankQuestion] = {}
    for question in bank.questions:
        if not question.sql:
            continue
        first = owners.setdefault(question.question, question)
        if first is not question:
            if (first.sql, first.connector) != (question.sql, question.connector):
                raise ConfigurationError(
                    f"questions {first.id!r} and {question.id!r} ask the same text with other "
                    "gold SQL: a scripted model answers by the text, so it cannot tell them "
                    "apart; reword one of them"
                )
            continue
        query: dict[str, Any] = {
            "tool_calls": [{"name": f"query_{question.connector}", "input": {"sql": question.sql}}]
        }
        answer: dict[str, Any] = {"text": ORACLE_ANSWER}
        if model is not None:
            query["model"] = answer["model"] = model
        scripts[question.question] = [query, answer]
    return {"by_question": scripts}
