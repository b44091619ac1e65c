"""Running a question bank through the agent, and scoring each answer.

A run (:func:`run_eval`) does three things, in order:

1. **Expected results.** Each question's gold SQL runs once on its connector, through the
   same guard and bounds as any query (read-only, row and byte limits); inline rows and CSV
   files are read. A gold query that fails, or whose result is cut at the row limit, makes
   its question ``gold failed`` — a bank problem, reported, never asked, not scored.
2. **The questions**, ``repeat`` times each, through the session's ``ask_many``: independent
   turns (no conversation), each on its question's connector only (its tools and its schema:
   a bank over several databases says which one each question asks), at most
   ``concurrency`` at once, or the runtime's physical batch (``batch=True``).
   ``max_cost_usd`` caps the whole run on one shared meter: a turn that would pass it stops.
3. **Scoring.** An attempt's prediction is the last result its turn read from the question's
   connector (the result the answer is about), compared with
   :func:`~relay_nb.eval.compare.compare_results` — also when a cap or the step limit
   stopped the turn after it. Without one, the turn's own outcome names the miss:
   ``over the cost cap`` (stopped by a cap; by the *run's* cap, the attempt is not run:
   listed, not scored), ``error`` (a model call failed for good), else the last failed tool
   call — ``refused`` by the guard, ``timeout``, ``error`` — else ``no query``. A model that
   refuses its credentials stops the run as a configuration error.

:func:`estimate_eval` prices a run before it starts, from the first request each question
would send (its prompt with its resolved context and the tools) times the calls a turn
usually makes.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import sqlglot
from pydantic import BaseModel, ConfigDict
from sqlglot import exp
from sqlglot.errors import SqlglotError

from relay_nb.agent.accounting import runtime_model
from relay_nb.agent.caps import UsageCaps
from relay_nb.agent.pricing import price_usage
from relay_nb.agent.session import Session
from relay_nb.agent.turn_result import TurnResult
from relay_nb.errors import ConfigurationError, RelayError
from relay_nb.eval.attempts import Attempt, EvalEstimate, Reason
from relay_nb.eval.bank import BankQuestion, QuestionBank, load_bank, read_expected_csv
from relay_nb.eval.compare import Table, compare_results
from relay_nb.eval.report import EvalReport
from relay_nb.runtime.types import Usage, estimate_request_tokens

__all__ = ["EvalProgress", "estimate_eval", "run_eval"]

logger = logging.getLogger("relay_nb.eval")
RUN_CAP = "the run past its cap"
"""How a turn stopped by the run's shared cap says so (the cap's scope is ``run``)."""
CALLS_PER_TURN = 3
"""What an estimate assumes a turn makes: a query, a look at its result, the answer."""
RESULT_TOKENS = 500
"""What an estimate assumes each later call adds to the conversation (a result preview)."""
OUTPUT_TOKENS = 250
"""What an estimate assumes each call writes (a query, an answer)."""


class EvalProgress(BaseModel):
    """Where a run is: sent to ``on_progress`` as each attempt finishes."""

    model_config = ConfigDict(frozen=True)

    done: int
    total: int
    correct: int
    cost_usd: float | None
    last: Attempt | None = None


ProgressSink = Callable[[EvalProgress], None]


class _Expected(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    table: Table | None = None
    order_matters: bool = False
    problem: str = ""


async def estimate_eval(
    engine: Session,
    bank: QuestionBank | str,
    *,
    model: Any = None,
    repeat: int = 1,
    batch: bool = False,
) -> EvalEstimate:
    """What ``bank`` should cost with ``model`` (see the module docstring for the basis)."""
    bank = load_bank(bank)
    _check_repeat(repeat)
    _check_connectors(engine, bank)
    call = {"model": model} if model is not None else {}
    settings = engine.plan(call)[0]
    runtime = engine.runtime_for(settings)
    name = runtime_model(runtime) or getattr(runtime, "id", "")
    input_tokens = 0
    for question in bank.questions:
        request = await engine.first_request(question.question, call, question.connector)
        prompt = estimate_request_tokens(request)
        # each later call re-sends the prompt plus what the turn added so far
        grown = sum(step * (RESULT_TOKENS + OUTPUT_TOKENS) for step in range(CALLS_PER_TURN))
        input_tokens += CALLS_PER_TURN * prompt + grown
    input_tokens *= repeat
    output_tokens = CALLS_PER_TURN * OUTPUT_TOKENS * len(bank.questions) * repeat
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens, estimated=True)
    priced, _ = price_usage(usage, name, engine.accountant.prices, batch=batch)
    return EvalEstimate(
        questions=len(bank.questions),
        attempts=len(bank.questions) * repeat,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=priced.cost_usd,
        model=name,
        basis=f"{CALLS_PER_TURN} model calls per attempt",
    )


async def run_eval(
    engine: Session,
    bank: QuestionBank | str,
    *,
    model: Any = None,
    concurrency: int = 4,
    repeat: int = 1,
    max_cost_usd: float | None = None,
    batch: bool = False,
    batch_timeout_s: float | None = None,
    estimate: EvalEstimate | None = None,
    on_progress: ProgressSink | None = None,
) -> EvalReport:
    """Run ``bank`` (a loaded bank or its file) on ``engine``'s connectors and return the
    report (unsaved). Options as in the module docstring; ``estimate`` is kept in the report
    (the caller showed it before the run)."""
    bank = load_bank(bank)
    _check_repeat(repeat)
    caps = None
    if max_cost_usd is not None:
        if max_cost_usd <= 0:
            raise ConfigurationError(f"max_cost_usd must be greater than 0, got {max_cost_usd}")
        caps = UsageCaps(max_cost_usd=max_cost_usd)
    _check_connectors(engine, bank)
    started_at, started = dt.datetime.now(dt.UTC), time.perf_counter()
    expected = await _expected_results(engine, bank, concurrency)
    asked = [q for q in bank.questions if expected[q.id].table is not None]
    order = [q for _ in range(repeat) for q in asked]
    attempts: list[Attempt | None] = [None] * len(order)
    gold_failures = [_gold_failure(q, expected[q.id].problem) for q in bank.questions]
    progress = _Progress(len(order), on_progress)
    numbers = _attempt_numbers(order)

    def finished(index: int, turn: TurnResult) -> None:
        question = order[index]
        try:
            attempt = score(question, expected[question.id], turn, numbers[index])
        except Exception as exc:  # a scoring bug costs its attempt, never the run
            logger.warning("scoring %s failed: %r", question.id, exc)
            attempt = _unscored(question, turn, numbers[index], exc)
        attempts[index] = attempt
        progress.add(attempt)

    call = {"model": model} if model is not None else {}
    turns = await engine.ask_many(
        [q.question for q in order],
        call,
        concurrency=concurrency,
        batch=batch,
        batch_timeout_s=batch_timeout_s,
        run_caps=caps,
        on_result=finished,
        scopes=[q.connector for q in order],
    )
    _check_model_usable(turns)
    done = [a for a in attempts if a is not None]
    simulated = next((t.simulated for t in turns if t.simulated), None)
    models = list(dict.fromkeys(t.model for t in turns if t.model))
    return EvalReport(
        bank=bank.name,
        bank_digest=bank.digest,
        bank_path=bank.path,
        model=", ".join(models) or _model_name(engine, call),
        simulated=simulated,
        started_at=started_at,
        elapsed_s=round(time.perf_counter() - started, 3),
        concurrency=concurrency,
        repeat=repeat,
        batch=batch,
        max_cost_usd=max_cost_usd,
        estimate=estimate,
        attempts=[*[g for g in gold_failures if g is not None], *done],
    )


def score(question: BankQuestion, expected: _Expected, turn: TurnResult, number: int) -> Attempt:
    """One attempt's verdict (see the module docstring)."""
    reason: Reason | None = None
    detail, sql, ran = "", "", True
    prediction = _prediction(turn, question.connector)
    if prediction is not None:
        sql = prediction.submitted_sql or prediction.executed_sql
        if prediction.truncated:
            reason, detail = "extra rows", f"the result was cut at {prediction.row_count} rows"
        else:
            assert expected.table is not None
            comparison = compare_results(
                prediction.df,
                expected.table,
                order_matters=expected.order_matters,
                columns=question.column_policy,
                rel_tol=question.rel_tol,
                abs_tol=question.abs_tol,
            )
            reason, detail = comparison.reason, comparison.detail
    elif turn.finish_reason == "usage_cap":
        reason, detail = "over the cost cap", _last(turn.warnings)
        ran = not any(RUN_CAP in warning for warning in turn.warnings)
    elif turn.finish_reason in ("error", "cancelled"):
        errors = [e.message for e in turn.events if e.type == "error"]
        reason, detail = "error", _last(errors) or _last(turn.warnings) or turn.finish_reason
    else:
        reason, detail, sql = _no_result(turn, question.connector)
    usage = turn.usage
    return Attempt(
        question_id=question.id,
        question=question.question,
        tags=question.tags,
        attempt=number,
        correct=reason is None,
        reason=reason,
        detail=detail,
        sql=sql,
        answer=turn.answer,
        ran=ran,
        steps=turn.steps,
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cost_usd=usage.cost_usd,
        latency_ms=turn.elapsed_ms,
        model=turn.model,
    )


def _unscored(question: BankQuestion, turn: TurnResult, number: int, exc: Exception) -> Attempt:
    return Attempt(
        question_id=question.id,
        question=question.question,
        tags=question.tags,
        attempt=number,
        correct=False,
        reason="error",
        detail=f"the result could not be compared: {type(exc).__name__}: {exc}",
        steps=turn.steps,
        cost_usd=turn.usage.cost_usd,
        model=turn.model,
    )


def _prediction(turn: TurnResult, connector_id: str) -> Any:
    """The last successful result the turn read from ``connector_id``."""
    for outcome in reversed(turn.tool_results):
        artifact = outcome.artifact
        if outcome.is_error or artifact is None:
            continue
        if getattr(artifact, "connector_id", "") == connector_id and hasattr(artifact, "df"):
            return artifact
    return None


def _no_result(turn: TurnResult, connector_id: str) -> tuple[Reason, str, str]:
    """Why a turn has no result from the connector: its last failed tool call (a refused or
    failing query, a tool that does not exist), else that it read something else or nothing."""
    for outcome in reversed(turn.tool_results):
        if outcome.is_error:
            kind = outcome.failure or "error"
            reason = kind if kind in ("refused", "timeout") else "error"
            sql = str(outcome.input.get("sql") or outcome.input.get("query") or "")
            return reason, _first_line(outcome.content), sql
    others = sorted({getattr(a, "connector_id", "") for a in turn.artifacts} - {""})
    if others:
        return "no query", f"it read {', '.join(others)}, not {connector_id}", ""
    return "no query", "answered without reading the data", ""


def _gold_failure(question: BankQuestion, problem: str) -> Attempt | None:
    if not problem:
        return None
    return Attempt(
        question_id=question.id,
        question=question.question,
        tags=question.tags,
        correct=False,
        reason="gold failed",
        detail=problem,
        sql=question.sql or "",
    )


async def _expected_results(
    engine: Session, bank: QuestionBank, concurrency: int
) -> dict[str, _Expected]:
    limit = asyncio.Semaphore(max(1, concurrency))

    async def one(question: BankQuestion) -> _Expected:
        async with limit:
            try:
                return await _expected_for(engine, bank, question)
            except RelayError as exc:
                return _Expected(problem=_first_line(str(exc)))

    results = await asyncio.gather(*(one(q) for q in bank.questions))
    return {q.id: r for q, r in zip(bank.questions, results, strict=True)}


async def _expected_for(engine: Session, bank: QuestionBank, question: BankQuestion) -> _Expected:
    if question.rows is not None:
        width = len(question.rows[0]) if question.rows else len(question.columns or ())
        columns = question.columns or [f"column{i + 1}" for i in range(width)]
        return _Expected(
            table=Table.of((columns, question.rows)), order_matters=bool(question.order_matters)
        )
    if question.csv is not None:
        columns, rows = await asyncio.to_thread(read_expected_csv, bank.resolve_csv(question))
        return _Expected(
            table=Table.of((columns, rows)), order_matters=bool(question.order_matters)
        )
    connector = engine.connectors[question.connector]
    run = getattr(connector, "aquery", None)
    if run is None:
        raise ConfigurationError(
            f"connector {question.connector!r} cannot run gold SQL; give rows or csv instead"
        )
    result = await run(question.sql)
    if result.truncated:
        raise ConfigurationError(
            f"the gold result was cut at {result.row_count} rows (the connector's "
            f"{result.limit} limit); narrow the question or raise the limit"
        )
    ordered = question.order_matters
    if ordered is None:
        ordered = _orders_outermost(question.sql or "", getattr(connector, "dialect", None))
    return _Expected(table=Table.of(result.df), order_matters=ordered)


def _orders_outermost(sql: str, dialect: str | None) -> bool:
    """Whether the query's outermost SELECT (or set operation) has an ORDER BY."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect or None)
    except SqlglotError:
        return False
    return isinstance(tree, exp.Query) and tree.args.get("order") is not None


def _check_repeat(repeat: int) -> None:
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ConfigurationError(f"repeat must be a whole number of at least 1, got {repeat!r}")


def _check_model_usable(turns: Sequence[TurnResult]) -> None:
    """A model that refuses the credentials (or has none) fails every question the same
    way: that is a setup problem to fix, not an accuracy of 0% to save and compare."""
    for turn in turns:
        for event in turn.events:
            if event.type == "error" and event.code == "AUTHENTICATION_FAILED":
                raise ConfigurationError(
                    f"the model could not be used, so nothing was scored: {event.message}"
                )


def _check_connectors(engine: Session, bank: QuestionBank) -> None:
    missing = sorted({q.connector for q in bank.questions} - set(engine.connectors))
    if missing:
        have = ", ".join(sorted(engine.connectors)) or "none"
        raise ConfigurationError(
            f"the bank asks connector(s) {', '.join(missing)}, which are not connected "
            f"(connected: {have}); connect {missing[0]!r} first (relay.connect, "
            "%relay --connect, or relay-nb eval --connect ID=URL)"
        )


def _attempt_numbers(order: Sequence[BankQuestion]) -> list[int]:
    seen: dict[str, int] = {}
    numbers = []
    for question in order:
        seen[question.id] = seen.get(question.id, 0) + 1
        numbers.append(seen[question.id])
    return numbers


def _model_name(engine: Session, call: dict[str, Any]) -> str:
    try:
        runtime = engine.runtime_for(engine.plan(call)[0])
    except RelayError:
        return ""
    return runtime_model(runtime) or getattr(runtime, "id", "")


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:199] + "…"


def _last(items: Sequence[str]) -> str:
    return _first_line(items[-1]) if items else ""


class _Progress:
    def __init__(self, total: int, sink: ProgressSink | None) -> None:
        self.total, self.sink = total, sink
        self.done = self.correct = 0
        self.cost: float | None = 0.0

    def add(self, attempt: Attempt) -> None:
        self.done += 1
        self.correct += attempt.correct
        if self.cost is not None:
            self.cost = None if attempt.cost_usd is None else self.cost + attempt.cost_usd
        if self.sink is None:
            return
        progress = EvalProgress(
            done=self.done, total=self.total, correct=self.correct, cost_usd=self.cost, last=attempt
        )
        try:
            self.sink(progress)
        except Exception as exc:  # a progress bar is never worth the run
            logger.warning("eval progress sink failed: %r", exc)
