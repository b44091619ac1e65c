"""The cost preflight on a real ClickHouse, end to end: ``relay.connect("ch", "chdb:///…")``
with a price, a scripted model's turn, and the line with both costs shown before each query
runs (``EXPLAIN ESTIMATE`` over 2M rows: the ORDER BY key prunes granules, another filter
cannot); above the threshold the query waits for approval, and denied it never runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.agent.approval import ApprovalRequest

ROWS = 2_000_000


@pytest.fixture(scope="module")
def database(chdb_database) -> Path:
    return chdb_database(
        [
            "CREATE DATABASE shop",
            "CREATE TABLE shop.events (id UInt64, kind String, amount Float64) "
            "ENGINE = MergeTree ORDER BY id",
            f"INSERT INTO shop.events SELECT number, toString(number % 7), number / 3 "
            f"FROM numbers({ROWS})",
        ]
    )


WHOLE = "SELECT kind, sum(amount) AS total FROM shop.events GROUP BY kind"
KEYED = "SELECT count() AS n FROM shop.events WHERE id < 50000 AND amount > 1"


def test_the_line_with_both_costs_comes_before_each_query_on_chdb(database: Path) -> None:
    asked: list[ApprovalRequest] = []

    def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    runtime = ScriptedRuntime(
        [
            {"tool_calls": [{"name": "query_ch", "input": {"sql": WHOLE}}]},
            {"tool_calls": [{"name": "query_ch", "input": {"sql": KEYED}}]},
            {"text": "done"},
        ]
    )
    relay = Relay(runtime, ledger=False, approver=deny)
    try:
        relay.connect(
            "ch", f"chdb:///{database}", schemas=["shop"], approve_above_rows=1_000_000,
            price_per_tb=5.0,
            profile=False,
        )  # fmt: skip
        turn = relay.ask("what is in events?")
        steps = [e for e in turn.events if e.type in ("tool_status", "tool_result")]
        assert [e.type for e in steps] == ["tool_status", "tool_result"] * 2
        whole, keyed = (e.status for e in steps if e.type == "tool_status")
        assert whole.endswith(" at your price)") and "· ≈ 2M rows" in whole, whole
        assert whole.split(" · ")[0] == "model cost unknown"  # a scripted model has no price
        assert "· ≈ 57.3k rows, " in keyed, keyed  # whole granules of 8192 rows
        (request,) = asked  # only the whole scan passes the threshold
        assert request.reason.startswith(whole)
        denied, ran = turn.tool_results
        assert denied.failure == "denied" and not ran.is_error
        assert ran.artifact.df["n"].iloc[0] == 49_996  # ids 4 to 49,999: amount = id / 3 > 1
    finally:
        relay.close()
