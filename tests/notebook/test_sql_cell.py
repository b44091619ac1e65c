"""``%%relay_sql``: the analyst's SQL through the connector's guard and read-only path, and
the cell ``%relay --sql`` inserts running as it stands (issue 18, item 7)."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest
from IPython.core.error import UsageError

from relay_nb import Relay, ScriptedRuntime
from relay_nb.notebook.magics import RelayCellError
from relay_nb.notebook.sql_cell import SQL_HELP, parse_sql_cell
from relay_nb.testing.shell import TestingShell

REVENUE = """\
SELECT c.country, COUNT(DISTINCT o.id) AS orders, SUM(o.total) AS revenue
FROM orders AS o JOIN customers AS c ON c.id = o.customer_id
GROUP BY c.country ORDER BY revenue DESC, c.country"""


def _raw(shop_url: str, sql: str) -> list[tuple]:
    with sqlite3.connect(shop_url.removeprefix("sqlite:///")) as conn:
        return conn.execute(sql).fetchall()


def test_a_cell_of_sql_returns_its_table_and_keeps_it_with_out(
    shell: TestingShell, relay: Relay, shop_url: str
) -> None:
    run = shell.run(f"%%relay_sql shop --out by_country\n{REVENUE}")
    frame = run.result
    assert isinstance(frame, pd.DataFrame) and shell.user_ns["by_country"] is frame
    assert [tuple(row) for row in frame.itertuples(index=False)] == _raw(shop_url, REVENUE)
    rows = len(frame)
    status = run.stdout.splitlines()[0]
    assert status.startswith(f"shop: {rows} row{'s' if rows != 1 else ''} · ")
    assert status.endswith(" ms")


def test_the_line_form_and_the_row_limit(shell: TestingShell, relay: Relay) -> None:
    run = shell.run("%relay_sql shop SELECT order_id FROM order_items ORDER BY order_id")
    limit = relay.connectors["shop"].row_limit
    assert len(run.result) == limit and f"{limit} of 907 rows" in run.stdout  # order_items


def test_what_the_guard_refuses_is_one_line_and_the_data_is_untouched(
    shell: TestingShell, relay: Relay, shop_url: str
) -> None:
    before = _raw(shop_url, "SELECT COUNT(*) FROM orders")
    for sql in ("DELETE FROM orders", "DROP TABLE orders", "SELECT 1; DELETE FROM orders"):
        with pytest.raises(RelayCellError) as refused:
            shell.run(f"%%relay_sql shop\n{sql}")
        assert "\n" not in str(refused.value) and str(refused.value)
    assert _raw(shop_url, "SELECT COUNT(*) FROM orders") == before
    relay.connect("narrow", shop_url, tables=["products"])
    with pytest.raises(RelayCellError, match="customers"):
        shell.run("%%relay_sql narrow\nSELECT * FROM customers")
    assert len(shell.run("%%relay_sql narrow\nSELECT * FROM products").result) > 0


def test_unknown_connector_and_usage_mistakes_say_the_fix(shell: TestingShell, relay: Relay):
    with pytest.raises(RelayCellError, match=r"no connector named 'shoop' \(connected: shop\)"):
        shell.run("%%relay_sql shoop\nSELECT 1")
    for line, cell, message in [
        ("", "SELECT 1", "name the connector first"),
        ("--out x", "SELECT 1", "name the connector first"),
        ("shop --rows 5", "SELECT 1", "unknown option --rows"),
        ("shop --out 1x", "SELECT 1", "--out takes a variable name"),
        ("shop", "   ", "no SQL to run"),
        ("shop SELECT 1", "SELECT 2", "put the SQL in the cell below"),
    ]:
        with pytest.raises(UsageError, match=message):
            parse_sql_cell(line, cell)
    assert "relay_sql shop --out monthly" in shell.run("%relay_sql --help").stdout
    assert shell.ip.magics_manager.magics["cell"]["relay_sql"].__doc__ == SQL_HELP


def test_a_dataframe_connector_takes_sql_too(shell: TestingShell, relay: Relay) -> None:
    shell.run(
        "import pandas as pd\n"
        "sales = pd.DataFrame({'region': ['EU', 'US', 'EU'], 'amount': [1, 2, 3]})"
    )
    shell.run("%relay --connect sales sales")
    run = shell.run(
        "%%relay_sql sales\n"
        "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region"
    )
    assert run.result.to_dict("list") == {"region": ["EU", "US"], "total": [4, 2]}


def test_the_cell_sql_inserts_runs_the_turns_query(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    """--sql inserts a %%relay_sql cell; run as it stands, it gives the turn's table."""
    model.add({"tool_calls": [{"name": "query_shop", "input": {"sql": REVENUE}}]}, {"text": "ok"})
    shell.run("%relay --sql revenue by country")
    inserted = shell.ip.rl_next_input
    assert inserted.startswith("%%relay_sql shop\nSELECT c.country")  # as the model wrote it
    again = shell.run(inserted)
    pd.testing.assert_frame_equal(again.result, relay.turns[-1].df)


def test_sql_with_a_turn_that_ran_no_query_says_so(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    shell.ip.rl_next_input = None
    model.add({"text": "hello"})
    run = shell.run("%relay --sql say hello")
    assert "this turn ran no SQL query; no cell was inserted" in run.stdout
    assert shell.ip.rl_next_input is None
