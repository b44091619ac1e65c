"""End to end through the agent loop: a scripted model queries notebook DataFrames through
``Session``; answers, result frames and what the model was shown are checked against pandas
on the same frames, before and after the frames change in the notebook."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from df_connector_helpers import table_line

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.pricing import PriceTable
from relay_nb.agent.session import Session
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import InvocationRequest, ToolResultPart

PRICES = PriceTable.load().with_prices({"scripted": {"input": 3, "output": 15}})


def call(tool: str, sql: str, call_id: str) -> dict:
    return {"tool_calls": [{"name": tool, "input": {"sql": sql}, "id": call_id}]}


def last_tool_result(request: InvocationRequest) -> str:
    """The tool result the model was shown last in ``request``."""
    parts = [p for m in request.messages for p in m.parts() if isinstance(p, ToolResultPart)]
    return parts[-1].content


def session(runtime: ScriptedRuntime, *connectors) -> Session:
    return Session(runtime, connectors=list(connectors), accountant=Accountant(prices=PRICES))


async def test_group_by_then_the_notebook_changes_the_frame(connect, sales) -> None:
    namespace = {"sales": sales}  # what `%relay --connect sales sales` looks up by name
    connector = connect("sales", lambda: namespace["sales"])
    runtime = ScriptedRuntime(
        [
            call(
                "query_sales",
                "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region",
                "c1",
            ),
            {"text": "north sells most"},
            call(
                "query_sales",
                "SELECT region, SUM(margin) AS margin FROM sales GROUP BY region ORDER BY region",
                "c2",
            ),
            {"text": "margins by region"},
        ]
    )
    s = session(runtime, connector)

    first = await s.ask_async("total sales by region?")
    assert first.answer == "north sells most"
    expected = sales.groupby("region")["amount"].sum().sort_index()
    assert first.df["region"].tolist() == expected.index.tolist()
    np.testing.assert_allclose(first.df["total"], expected.to_numpy())
    (outcome,) = first.tool_results
    assert not outcome.is_error and "4 rows" in outcome.content
    system = runtime.requests[0].system_text()
    line = table_line(system, "sales")
    for column in ("store_id bigint", "region varchar?", "amount double?", "channel enum?"):
        assert column in line
    assert "margin" not in system
    # the model read the result it was given
    assert last_tool_result(runtime.requests[1]).startswith("4 rows")
    assert f"{expected.index[0]}," in last_tool_result(runtime.requests[1])

    # the analyst adds a column and rebinds the variable to a filtered frame
    changed = sales[sales["store_id"] != 1].copy()
    changed["margin"] = changed["amount"].fillna(0) * 0.25
    namespace["sales"] = changed

    second = await s.ask_async("and the margin?")
    assert second.answer == "margins by region"
    assert "margin double?" in table_line(runtime.requests[2].system_text(), "sales")
    assert f'"DataFrame, {len(changed)} rows"' in runtime.requests[2].system_text()
    expected_margin = changed.groupby("region")["margin"].sum().sort_index()
    assert second.df["region"].tolist() == expected_margin.index.tolist()
    np.testing.assert_allclose(second.df["margin"], expected_margin.to_numpy())


async def test_a_frame_mutated_in_place_is_seen_on_the_next_turn(connect, sales) -> None:
    connector = connect("sales", sales)
    sql = "SELECT COUNT(*) AS n, SUM(qty) AS qty FROM sales"
    runtime = ScriptedRuntime(
        [
            call("query_sales", sql, "c1"),
            {"text": "a"},
            call("query_sales", sql, "c2"),
            {"text": "b"},
        ]
    )
    s = session(runtime, connector)
    first = await s.ask_async("how many?")
    assert first.df.iloc[0].tolist() == [len(sales), sales["qty"].sum()]

    sales["qty"] = sales["qty"].fillna(0) * 2  # same schema, new values
    second = await s.ask_async("and now?")
    assert second.df.iloc[0].tolist() == [len(sales), sales["qty"].sum()]


async def test_several_frames_joined_through_the_loop(connect, shop) -> None:
    connector = connect("shop", shop, description="Orders export and reference data")
    sql = (
        "SELECT c.plan, SUM(o.quantity * p.price) AS revenue, COUNT(DISTINCT o.customer_id) "
        "AS buyers FROM orders AS o JOIN customers AS c USING (customer_id) "
        "JOIN products AS p USING (product_id) GROUP BY c.plan ORDER BY c.plan"
    )
    runtime = ScriptedRuntime([call("query_shop", sql, "c1"), {"text": "pro earns more"}])
    turn = await session(runtime, connector).ask_async("revenue by plan?")

    merged = (
        shop["orders"]
        .merge(shop["customers"], on="customer_id")
        .merge(shop["products"], on="product_id")
    )
    merged["revenue"] = merged["quantity"] * merged["price"]
    expected = merged.groupby("plan", observed=True).agg(
        revenue=("revenue", "sum"), buyers=("customer_id", "nunique")
    )
    assert turn.df["plan"].tolist() == [str(p) for p in expected.index]
    np.testing.assert_allclose(turn.df["revenue"], expected["revenue"].to_numpy())
    assert turn.df["buyers"].tolist() == expected["buyers"].tolist()
    assert turn.queries == [sql.replace("ORDER BY c.plan", "ORDER BY c.plan LIMIT 201")]

    system = runtime.requests[0].system_text()
    assert "Orders export and reference data" in system
    for table in ("orders", "customers", "products"):
        assert table_line(system, table)
    assert {t.name for t in runtime.requests[0].tools} >= {"query_shop", "describe_shop"}


async def test_a_refused_query_reaches_the_model_which_corrects_it(connect, sales) -> None:
    snapshot = sales.copy(deep=True)
    connector = connect("sales", sales)
    runtime = ScriptedRuntime(
        [
            call("query_sales", "COPY sales TO '/tmp/relay_df_session_leak.csv'", "c1"),
            call("query_sales", "SELECT COUNT(*) AS n FROM sales", "c2"),
            {"text": "500 rows"},
        ]
    )
    turn = await session(runtime, connector).ask_async("export the sales, then count them")
    refused, counted = turn.tool_results
    assert refused.is_error and refused.content.startswith("forbidden_command:")
    assert not counted.is_error and turn.df["n"].iloc[0] == len(sales)
    # the refusal is what the model saw before its second call
    assert last_tool_result(runtime.requests[1]).startswith("forbidden_command:")
    pd.testing.assert_frame_equal(sales, snapshot)


async def test_a_variable_gone_missing_is_a_tool_error_not_a_crash(connect, sales) -> None:
    namespace = {"sales": sales}
    connector = connect("sales", lambda: namespace["sales"])
    runtime = ScriptedRuntime(
        [call("query_sales", "SELECT COUNT(*) AS n FROM sales", "c1"), {"text": "it is gone"}]
    )
    s = session(runtime, connector)
    del namespace["sales"]
    turn = await s.ask_async("how many sales?")
    (outcome,) = turn.tool_results
    assert outcome.is_error and "reading its DataFrame failed (KeyError" in outcome.content
    assert "unavailable: reading it failed (KeyError)" in runtime.requests[0].system_text()
    assert turn.answer == "it is gone" and turn.df is None


@pytest.fixture(autouse=True)
def _no_leak_file():
    """The refused COPY must never have written its file."""
    from pathlib import Path

    leak = Path("/tmp/relay_df_session_leak.csv")
    leak.unlink(missing_ok=True)
    yield
    assert not leak.exists()
