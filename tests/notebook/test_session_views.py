"""Looking back on a session from a cell (issue 37, items 6, 8 and 13): ``--history`` shows
questions, SQL, rows and answers; ``--usage`` a row per turn; ``--describe TABLE`` a table's
columns without a model call; ``--sql`` alone takes the last turn's query, and a re-run cell
does not insert the same query twice."""

from __future__ import annotations

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.notebook.magics import RelayCellError
from relay_nb.testing.shell import TestingShell
from relay_nb.views.session import plain_answer

BY_COUNTRY = "SELECT country, COUNT(*) AS n FROM customers GROUP BY country ORDER BY n DESC"


def query(sql: str) -> dict:
    return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]}


def test_history_shows_each_question_its_sql_rows_and_a_plain_answer(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    long_answer = (
        "## Countries\n\n" + "- **Germany** leads with [many](https://x.test) buyers. " * 12
    )
    model.add(query(BY_COUNTRY), {"text": long_answer})
    model.add({"text": "Hello."})
    shell.run("%relay customers by country?")
    shell.run("%relay and say hello")
    lines = shell.run("%relay --history").stdout.splitlines()
    assert lines[0] == "[1] Q: customers by country?"
    assert (
        lines[1].startswith("    query_shop · ") and " rows: SELECT country, COUNT(*)" in lines[1]
    )
    answer = lines[2]
    assert answer.startswith("    A: Countries · Germany leads with many buyers.")
    assert "**" not in answer and "](" not in answer and "#" not in answer
    assert answer.endswith("…") and len(answer) <= len("    A: ") + 300
    assert lines[3:] == ["[2] Q: and say hello", "    A: Hello."]


def test_history_after_reset_says_the_conversation_is_empty(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add({"text": "one"})
    shell.run("%relay first")
    shell.run("%relay --reset")
    assert "no questions in this conversation yet" in shell.run("%relay --history").stdout


@pytest.mark.parametrize(
    ("markdown", "plain"),
    [
        ("Revenue was **$1,200** in *Q3*.", "Revenue was $1,200 in Q3."),
        ("| a | b |\n|---|---|\n| 1 | 2 |", "a | b; 1 | 2"),
        ("1. first\n2. second", "· first · second"),
        ("use `SUM(total)`", "use SUM(total)"),
        ("2 * 3 * 4 = 24", "2 * 3 * 4 = 24"),  # arithmetic is not emphasis
    ],
)
def test_plain_answer_drops_markdown_not_content(markdown: str, plain: str) -> None:
    assert plain_answer(markdown) == plain


def test_usage_is_a_row_per_turn_under_the_session_total(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add(query(BY_COUNTRY), {"text": "Germany."})
    model.add({"text": "Hello."})
    shell.run("%relay customers by country?")
    shell.run("%relay say hello")
    run = shell.run("%relay --usage")
    assert run.stdout.startswith("session: 2 turns · scripted model, priced as claude-haiku-4-5")
    (html,) = run.htmls
    for header in ("question", "model", "calls", "tokens_in", "tokens_out", "cost_usd", "time"):
        assert f"<th>{header}</th>" in html
    assert "customers by country?" in html and "say hello" in html
    assert html.count(" ms</td>") == 2
    frame_cost = [t.usage.cost_usd for t in relay.turns]
    assert all(cost is not None for cost in frame_cost)  # priced, yet not spent: 0.0 shown
    assert "<td>0.0</td>" in html


def test_usage_before_any_question_is_one_line(shell: TestingShell, relay: Relay) -> None:
    run = shell.run("%relay --usage")
    assert run.stdout.startswith("session: 0 turns") and run.htmls == []


def test_describe_shows_columns_types_keys_and_values_without_a_model_call(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    run = shell.run("%relay --describe orders")
    assert (
        run.stdout.strip() == "shop.orders (table, 5 columns) · referenced by order_items(order_id)"
    )
    (html,) = run.htmls
    assert "<th>column</th>" in html and "<th>type</th>" in html and "<th>key</th>" in html
    assert "primary key" in html and "→ customers.id" in html
    assert "delivered, paid, shipped, pending, cancelled, refunded" in html  # the profile's
    customers = shell.run("%relay --describe CUSTOMERS").stdout
    assert (
        customers.startswith("shop.customers (table, ")
        and "referenced by orders(customer_id)" in customers
    )
    assert model.requests == []  # no model call
    assert "shop.orders" in shell.run("%relay --describe shop.orders").stdout


def test_describe_a_typo_suggests_the_table(shell: TestingShell, relay: Relay) -> None:
    with pytest.raises(RelayCellError, match=r"no table named 'order'; did you mean orders\?"):
        shell.run("%relay --describe order")


def test_describe_names_the_connectors_when_two_hold_the_table(
    shell: TestingShell, relay: Relay, shop_url: str
) -> None:
    relay.connect("copy", shop_url)
    with pytest.raises(RelayCellError, match=r"shop\.orders, copy\.orders"):
        shell.run("%relay --describe orders")
    assert shell.run("%relay --describe copy.orders").stdout.startswith("copy.orders")


def test_sql_alone_takes_the_last_turn_that_ran_sql(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    with pytest.raises(RelayCellError, match="no question has run a SQL query yet"):
        shell.run("%relay --sql")
    model.add(query(BY_COUNTRY), {"text": "Germany."})
    model.add({"text": "Hello."})
    shell.run("%relay customers by country?")
    shell.run("%relay say hello")  # ran no SQL: the turn before is the one taken
    shell.ip.rl_next_input = None
    shell.run("%relay --sql")
    assert shell.ip.rl_next_input.startswith("%%relay_sql shop\nSELECT country, COUNT(*)")
    assert len(model.requests) == 3  # no model call for --sql


def test_a_rerun_cell_does_not_insert_the_same_query_again(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    model.add(query(BY_COUNTRY), {"text": "Germany."})
    shell.run("%relay customers by country?")
    shell.ip.rl_next_input = None
    shell.run("%relay --sql", cell_id="cell-sql-rerun")
    inserted = shell.ip.rl_next_input
    assert inserted and inserted.startswith("%%relay_sql shop")
    shell.ip.rl_next_input = None
    again = shell.run("%relay --sql", cell_id="cell-sql-rerun")
    assert shell.ip.rl_next_input is None
    assert "not inserted again" in again.stdout
    shell.run("%relay --sql", cell_id="another-cell")  # another cell: inserted there
    assert shell.ip.rl_next_input == inserted


def test_a_refusal_reads_as_words_and_keeps_its_rule_on_the_result(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    """Item 9: no rule codes in what the analyst reads; the model and the tests keep them."""
    model.add(query("SELECT * FROM tracks"), {"text": "No such table."})
    run = shell.run("%relay list the tracks")
    (outcome,) = relay.turns[-1].tool_results
    assert outcome.rule == "table_not_allowed"
    assert outcome.content.startswith("table_not_allowed: tracks is not a table you may read")
    assert "tracks is not a table you may read" in run.texts[0]
    assert "table_not_allowed" not in run.texts[0] and "table_not_allowed" not in run.htmls[0]
    with pytest.raises(RelayCellError) as refused:
        shell.run("%relay_sql shop DELETE FROM orders")
    assert "table_not_allowed" not in str(refused.value)
    assert "not_a_query" not in str(refused.value) and "only SELECT" in str(refused.value)
