"""Evaluation runs on the real demo shop (SQLite): the oracle scores 100%, known mistakes
score exactly what they should with the right reasons, and the run's options (repeat, cost
cap, batch, concurrency, record and replay) change what they say and nothing else."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import relay_nb
from relay_nb.demo.data import build_shop_database
from relay_nb.errors import ConfigurationError
from relay_nb.eval import EvalReport, load_bank, oracle_script
from relay_nb.runtime.replay import RecordingRuntime, ReplayRuntime
from relay_nb.runtime.scripted import ScriptedRuntime

EXAMPLES = Path(__file__).parents[2] / "examples"
BANK = load_bank(EXAMPLES / "shop_questions.yaml")
WITH_SQL = BANK.model_copy(update={"questions": tuple(q for q in BANK.questions if q.sql)})
"""The questions the oracle (which replays gold SQL) can answer."""
ANSWERS = json.loads((EXAMPLES / "shop_answers.json").read_text(encoding="utf-8"))

# what examples/shop_answers.json gets wrong, and why (every other question is right)
KNOWN_MISTAKES = {
    "revenue-total": "wrong values",  # a missing filter
    "avg-order-value": "wrong values",  # a missing filter
    "german-cities": "extra rows",  # a missing filter
    "expensive-products": "extra rows",  # the wrong threshold
    "dutch-revenue": "wrong values",  # a wrong join
    "top-products-units": "missing rows",  # top 3 for top 5
    "orders-per-month-last-year": "wrong order",  # newest first
    "largest-order": "column mismatch",  # the total without the id
    "cancelled-share": "wrong values",  # a percentage for a fraction
    "cheapest-tea": "refused",  # a DELETE
    "customers-count": "no query",  # answered from thin air
    "signups-last-year": "error",  # a column that does not exist
}


@pytest.fixture(scope="module")
def shop_url(tmp_path_factory) -> str:
    return build_shop_database(tmp_path_factory.mktemp("shop") / "shop.sqlite").url


@contextlib.contextmanager
def relay_with(runtime, shop_url: str, **connect_options) -> Iterator[relay_nb.Relay]:
    relay = relay_nb.Relay(runtime, ledger=False)
    try:
        relay.connect("shop", shop_url, **connect_options)
        yield relay
    finally:
        relay.close()


def verdicts(report: EvalReport) -> dict[str, str | None]:
    return {a.question_id: a.reason for a in report.attempts}


def test_the_oracle_scores_every_gold_sql_question_of_the_shipped_bank(shop_url) -> None:
    runtime = ScriptedRuntime(by_question=oracle_script(BANK)["by_question"])
    with relay_with(runtime, shop_url) as relay:
        report = relay.evaluate(WITH_SQL, concurrency=8, save=False)
    assert report.accuracy == 1.0, report.summary()
    assert len(report.attempts) == len(WITH_SQL.questions) >= 30
    assert report.reasons() == {}


def test_a_question_the_model_cannot_answer_is_an_error_with_the_models_message(
    shop_url,
) -> None:
    """The oracle has no SQL for a question with inline rows: the scripted model says so."""
    runtime = ScriptedRuntime(by_question=oracle_script(BANK)["by_question"])
    rows_only = BANK.model_copy(
        update={"questions": tuple(q for q in BANK.questions if q.id == "order-statuses")}
    )
    with relay_with(runtime, shop_url) as relay:
        report = relay.evaluate(rows_only, save=False)
    (attempt,) = report.attempts
    assert attempt.reason == "error"
    assert "has no script for 'Which order statuses exist?'" in attempt.detail


def test_known_mistakes_score_exactly_what_they_should_with_their_reasons(shop_url) -> None:
    runtime = ScriptedRuntime(by_question=ANSWERS["by_question"], model=ANSWERS["model"])
    with relay_with(runtime, shop_url) as relay:
        report = relay.evaluate(BANK, save=False)
    wrong = {qid: reason for qid, reason in verdicts(report).items() if reason is not None}
    assert wrong == KNOWN_MISTAKES
    right = len(BANK.questions) - len(KNOWN_MISTAKES)
    assert report.correct == right and report.accuracy == pytest.approx(right / len(BANK.questions))
    # a different but equivalent query, and swapped columns plus an id, are right
    assert verdicts(report)["paid-orders"] is None and verdicts(report)["top-customers"] is None
    # the row has what the report needs: the SQL that ran, tokens, an estimated cost
    row = next(a for a in report.attempts if a.question_id == "dutch-revenue")
    assert "c.id = o.id" in row.sql and row.input_tokens > 0 and row.cost_usd > 0
    assert report.simulated == "scripted" and report.model == "claude-sonnet-4-6"
    frame = report.df
    assert len(frame) == len(BANK.questions)
    assert set(frame.columns) >= {"question", "sql", "reason", "cost_usd", "latency_ms"}
    by_tag = report.by_tag().set_index("tag")
    assert by_tag.loc["ambiguous", "accuracy"] == 1.0
    assert by_tag.loc["filter", "correct"] < by_tag.loc["filter", "attempts"]


def test_repeats_measure_consistency(shop_url) -> None:
    bank = load_bank(EXAMPLES / "shop_questions.yaml")
    gold = {q.question: q.sql for q in bank.questions if q.sql}
    asked: dict[str, int] = {}

    def flaky(request):  # right on the first asking of a question, then wrong
        question = request.messages[-1].content
        asked[question] = asked.get(question, 0) + 1
        sql = gold[question] if asked[question] == 1 else "SELECT 42"
        return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]}

    by_question = {q: [flaky, {"text": "done"}] for q in list(gold)[:4]}
    questions = [q for q in bank.questions if q.question in by_question]
    small = bank.model_copy(update={"questions": tuple(questions)})
    with relay_with(ScriptedRuntime(by_question=by_question), shop_url) as relay:
        report = relay.evaluate(small, repeat=3, concurrency=1, save=False)
    assert len(report.attempts) == 12
    assert [a.attempt for a in report.attempts if a.question_id == questions[0].id] == [1, 2, 3]
    assert report.accuracy == pytest.approx(4 / 12)
    assert report.consistency() == 0.0  # every question was right once, wrong twice
    assert report.verdicts() == dict.fromkeys((q.id for q in questions), False)


def test_the_cost_cap_holds_for_the_whole_run(shop_url) -> None:
    runtime = ScriptedRuntime(
        by_question=oracle_script(BANK, model="claude-sonnet-4-6")["by_question"]
    )
    with relay_with(runtime, shop_url) as relay:
        report = relay.evaluate(WITH_SQL, concurrency=1, max_cost_usd=0.05, save=False)
        spent = relay.usage.cost_usd
    reasons = set(verdicts(report).values())
    assert reasons == {None, "over the cost cap"}
    assert 0 < report.correct < len(WITH_SQL.questions)
    assert spent <= 0.05 + 0.01  # a scripted model cannot be held to its output room
    capped = [a for a in report.attempts if a.reason == "over the cost cap"]
    assert all("the run past its cap of $0.05" in a.detail for a in capped)
    assert capped[-1].cost_usd == 0  # once the cap is reached, nothing more is spent


def test_a_gold_query_that_fails_is_a_bank_problem_not_a_miss(shop_url, tmp_path) -> None:
    bank = tmp_path / "b.yaml"
    bank.write_text(
        "connector: shop\nquestions:\n"
        "  - {id: broken, question: 'How many refunds?', sql: SELECT COUNT(*) FROM refunds}\n"
        "  - {id: fine, question: 'How many customers?', sql: SELECT COUNT(*) FROM customers}\n"
        "  - {id: write, question: 'Delete them?', sql: DELETE FROM customers}\n"
    )
    runtime = ScriptedRuntime(by_question=oracle_script(bank)["by_question"])
    with relay_with(runtime, shop_url) as relay:
        report = relay.evaluate(bank, save=False)
    assert verdicts(report) == {"broken": "gold failed", "write": "gold failed", "fine": None}
    assert report.accuracy == 1.0 and len(report.scored) == 1
    broken = next(a for a in report.attempts if a.question_id == "broken")
    assert "refunds" in broken.detail
    assert len(runtime.requests) == 2  # the broken questions were not asked


def test_a_query_past_its_time_bound_is_a_timeout(shop_url, tmp_path) -> None:
    bank = tmp_path / "b.yaml"
    bank.write_text("connector: shop\nquestions:\n  - {question: 'Count forever?', rows: [[1]]}\n")
    endless = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n"
    )
    steps = [{"tool_calls": [{"name": "query_shop", "input": {"sql": endless}}]}, {"text": "?"}]
    runtime = ScriptedRuntime(by_question={"Count forever?": steps})
    with relay_with(runtime, shop_url, statement_timeout_s=0.5) as relay:
        report = relay.evaluate(bank, save=False)
    assert verdicts(report) == {"Count forever?": "timeout"}


def test_a_bank_asking_an_unconnected_connector_says_which_and_how(shop_url, tmp_path) -> None:
    bank = tmp_path / "b.yaml"
    bank.write_text("questions:\n  - {question: q, connector: crm, sql: SELECT 1}\n")
    with (
        relay_with(ScriptedRuntime(), shop_url) as relay,
        pytest.raises(
            ConfigurationError, match=r"crm, which are not connected \(connected: shop\)"
        ),
    ):
        relay.evaluate(bank, save=False)


def test_batch_and_concurrency_change_nothing_but_speed(shop_url) -> None:
    def run(**options) -> dict[str, str | None]:
        runtime = ScriptedRuntime(by_question=ANSWERS["by_question"])
        with relay_with(runtime, shop_url) as relay:
            return verdicts(relay.evaluate(BANK, save=False, **options))

    sequential = run(concurrency=1)
    assert run(concurrency=16) == sequential
    assert run(batch=True) == sequential


def test_a_recorded_run_replays_offline_to_the_same_report(shop_url, tmp_path) -> None:
    recording = tmp_path / "run.jsonl"
    live = RecordingRuntime(ScriptedRuntime(by_question=ANSWERS["by_question"]), recording)
    with relay_with(live, shop_url) as relay:
        first = relay.evaluate(BANK, concurrency=4, save=False)
    with relay_with(ReplayRuntime.from_file(recording), shop_url) as relay:
        replayed = relay.evaluate(BANK, concurrency=4, save=False)
    assert verdicts(replayed) == verdicts(first)
    assert replayed.simulated == "replayed" and replayed.accuracy == first.accuracy


def test_reports_are_saved_compared_and_diffed(shop_url, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RELAY_DATA_DIR", str(tmp_path))
    fixed = json.loads(json.dumps(ANSWERS["by_question"]))
    fixed["What is our total revenue?"][0]["tool_calls"][0]["input"]["sql"] = (
        "SELECT SUM(total) FROM orders WHERE status = 'paid'"
    )
    fixed["How many orders were paid?"][0]["tool_calls"][0]["input"]["sql"] = (
        "SELECT COUNT(*) FROM orders"
    )
    with relay_with(ScriptedRuntime(by_question=ANSWERS["by_question"]), shop_url) as relay:
        before = relay.evaluate(BANK)
    with relay_with(ScriptedRuntime(by_question=fixed), shop_url) as relay:
        after = relay.evaluate(BANK)
    assert Path(before.path).parent == tmp_path / "evals"
    assert EvalReport.load(before.path).attempts == before.attempts
    assert after.previous().path == before.path
    diff = after.compare()
    assert (diff.fixed, diff.broken, diff.reasons) == (
        ["revenue-total"],
        ["paid-orders"],
        {"paid-orders": "wrong values"},
    )
    assert diff.same_bank and diff.accuracy_delta == 0
    assert "now wrong: paid-orders (wrong values)" in diff.summary()
    assert "now right: revenue-total" in diff._repr_html_()
    with pytest.raises(ConfigurationError, match="no earlier saved run"):
        before.compare()


def test_the_estimate_prices_the_prompts_the_questions_would_send(shop_url) -> None:
    runtime = ScriptedRuntime(model="claude-sonnet-4-6")
    with relay_with(runtime, shop_url) as relay:
        one = relay.estimate(BANK)
        three = relay.estimate(BANK, repeat=3)
        cheap = relay.estimate(BANK, batch=True)
    schema_tokens = 300  # the shop's schema alone is more than this in every prompt
    assert one.input_tokens > len(BANK.questions) * 3 * schema_tokens
    assert three.input_tokens == 3 * one.input_tokens and three.attempts == 3 * one.attempts
    assert one.cost_usd > cheap.cost_usd > 0
    assert runtime.requests == []  # nothing was asked


def test_the_report_shows_itself_as_text_and_static_html(shop_url) -> None:
    by_question = {
        "What is our cheapest tea?": [
            {"tool_calls": [{"name": "query_shop", "input": {"sql": "SELECT '<b>' AS name"}}]},
            {"text": "<script>x</script>"},
        ]
    }
    small = BANK.model_copy(
        update={"questions": tuple(q for q in BANK.questions if q.id == "cheapest-tea")}
    )
    with relay_with(ScriptedRuntime(by_question=by_question), shop_url) as relay:
        report = relay.evaluate(small, save=False)
    html = report._repr_html_()
    assert "&lt;b&gt;" in html and "<b>'" not in html and "<script>" not in html
    assert "✗ cheapest-tea: wrong values" in report.summary()
    assert report.summary().startswith("shop: accuracy 0.0% (0/1)")


def test_each_question_sees_only_the_connector_it_asks(shop_url, tmp_path) -> None:
    """A bank over two databases: each turn gets its own connector's tools and schema."""
    other = build_shop_database(tmp_path / "other.sqlite").url
    bank = tmp_path / "b.yaml"
    bank.write_text(
        "questions:\n"
        "  - {question: 'Customers in shop?', connector: shop, sql: SELECT COUNT(*) FROM customers}\n"  # noqa: E501
        "  - {question: 'Orders in archive?', connector: archive, sql: SELECT COUNT(*) FROM orders}\n"  # noqa: E501
    )
    runtime = ScriptedRuntime(by_question=oracle_script(bank)["by_question"])
    with relay_with(runtime, shop_url) as relay:
        relay.connect("archive", other)
        report = relay.evaluate(bank, concurrency=1, save=False)
    assert report.accuracy == 1.0
    for request in runtime.requests:
        question = request.messages[1].content
        tools = {tool.name for tool in request.tools}
        asked, unasked = ("shop", "archive") if "shop" in question else ("archive", "shop")
        assert f"query_{asked}" in tools and f"query_{unasked}" not in tools
        assert f"describe_{unasked}" not in tools


# -- scoring one turn -----------------------------------------------------------------------


def scored_turn(finish: str, outcomes: list, warnings: list[str] | None = None, answer: str = ""):
    from relay_nb.agent.turn_result import TurnResult

    return TurnResult(
        answer=answer,
        finish_reason=finish,
        tool_results=outcomes,
        warnings=warnings or [],
    )


def result_outcome(values: list, connector: str = "shop"):
    import pandas as pd

    from relay_nb.agent.tool_calls import ToolOutcome
    from relay_nb.connectors.results import QueryResult

    frame = pd.DataFrame({"n": values})
    result = QueryResult(
        df=frame,
        executed_sql="SELECT n",
        row_count=len(frame),
        truncated=False,
        elapsed_ms=1.0,
        connector_id=connector,
        dialect="sqlite",
    )
    return ToolOutcome(
        tool_call_id="c1", name=f"query_{connector}", content="n\n1", artifact=result
    )


def failed_outcome(name: str, content: str, failure: str):
    from relay_nb.agent.tool_calls import ToolOutcome

    return ToolOutcome(
        tool_call_id="c2", name=name, content=content, is_error=True, failure=failure
    )


def judge(turn, gold=((2924,),)):
    from relay_nb.eval.compare import Table
    from relay_nb.eval.run import _Expected, score

    question = BANK.questions[1]  # paid-orders
    expected = _Expected(table=Table.of((["n"], gold)))
    return score(question, expected, turn, 1)


RUN_STOP = "stopped: the next model call could take the run past its cap of $1 ($0.99 spent)"
TURN_STOP = "stopped: the next model call could take the turn past its cap of $0.01"


def test_a_result_read_before_a_cap_stopped_the_turn_is_judged() -> None:
    right = judge(scored_turn("usage_cap", [result_outcome([2924])], [RUN_STOP]))
    assert right.correct and right.ran
    wrong = judge(scored_turn("max_steps", [result_outcome([1])]))
    assert wrong.reason == "wrong values"


def test_the_runs_cap_leaves_an_attempt_unscored_a_turns_cap_does_not() -> None:
    not_run = judge(scored_turn("usage_cap", [], [RUN_STOP]))
    assert (not_run.reason, not_run.ran, not_run.scored) == ("over the cost cap", False, False)
    capped = judge(scored_turn("usage_cap", [], [TURN_STOP]))
    assert (capped.reason, capped.ran, capped.scored) == ("over the cost cap", True, True)


def test_the_last_failed_tool_call_names_the_miss() -> None:
    unknown = failed_outcome("query_library", "unknown tool 'query_library'", "error")
    assert judge(scored_turn("stop", [unknown])).reason == "error"
    refused = failed_outcome("query_shop", "forbidden_statement: DELETE", "refused")
    attempt = judge(scored_turn("stop", [refused]))
    assert (attempt.reason, attempt.detail) == ("refused", "forbidden_statement: DELETE")
    other = judge(scored_turn("stop", [result_outcome([2924], connector="archive")]))
    assert (other.reason, other.detail) == ("no query", "it read archive, not shop")


def test_secrets_are_redacted_before_anything_is_cut(monkeypatch) -> None:
    secret = "s3cr3t-Pa55word-XYZ-0123456789"
    monkeypatch.setenv("SHOP_DB_PASSWORD", secret)
    answer = "x" * 485 + " " + secret + " and more"
    attempt = judge(scored_turn("stop", [result_outcome([2924])], answer=answer))
    assert "s3cr3t" not in attempt.answer and "s3cr3t" not in attempt.model_dump_json()


def test_a_model_that_refuses_its_credentials_is_a_setup_error_not_a_score(shop_url) -> None:
    refusal = {"error": {"code": "AUTHENTICATION_FAILED", "message": "invalid x-api-key"}}
    runtime = ScriptedRuntime(by_question={q.question: [refusal] for q in WITH_SQL.questions})
    with (
        relay_with(runtime, shop_url) as relay,
        pytest.raises(ConfigurationError, match="the model could not be used"),
    ):
        relay.evaluate(WITH_SQL, save=False)
