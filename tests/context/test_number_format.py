"""Floats reach the model (and the context) as people write them: ``116444.03``, not the
binary rounding ``116444.02999999998`` a SUM leaves (issue 18, item 10)."""

from __future__ import annotations

import asyncio
import math

import pandas as pd

from relay_nb.context import DataFrameNamespaceSource
from relay_nb.context.types import ContextRequest
from relay_nb.tools import short_float

SUMMED = sum([116444.0, 0.01, 0.01, 0.01])  # 116444.03000000001 in binary


def test_short_float_keeps_every_meaningful_digit() -> None:
    assert repr(SUMMED) != "116444.03" and short_float(SUMMED) == "116444.03"
    assert short_float(116444.02999999998) == "116444.03"
    assert short_float(1350.0) == "1350.0" and short_float(0.1 + 0.2) == "0.3"
    assert short_float(1e20) == "1e+20" and short_float(-2.5e-7) == "-2.5e-07"
    assert short_float(math.inf) == "inf" and short_float(1 / 3) == repr(1 / 3)
    # digits that mean something are kept exactly: an id that became a float, a fraction
    assert short_float(1234567890123456.0) == "1234567890123456.0"
    for value in (123456789.125, 2.0**52 + 1, 1e-300, 1 / 3, 2 / 7):
        assert float(short_float(value)) == value
    import numpy as np

    assert short_float(np.float32(0.1)) == "0.1" and short_float(np.float64(0.1 + 0.2)) == "0.3"
    for value in (2385.0, 1 / 3, float("inf"), 1e300):  # numpy's own repr never leaks
        assert short_float(np.float64(value)) == short_float(value)


def test_the_notebook_frames_source_uses_it() -> None:
    frame = pd.DataFrame({"country": ["NL"], "revenue": [116444.02999999998]})
    source = DataFrameNamespaceSource(lambda: {"top": frame})
    items = asyncio.run(source.fetch(ContextRequest(question="revenue?")))
    text = "\n".join(item.content for item in items)
    assert "116444.03" in text and "116444.029" not in text


def test_the_query_preview_the_model_reads(tmp_path) -> None:
    import sqlite3

    from relay_nb import Relay, ScriptedRuntime

    path = tmp_path / "sums.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE sales (amount REAL)")
        conn.executemany("INSERT INTO sales VALUES (?)", [(116444.0,), (0.01,), (0.01,), (0.01,)])
    sql = "SELECT SUM(amount) AS total, MAX(amount) AS top FROM sales"
    model = ScriptedRuntime(
        [{"tool_calls": [{"name": "query_db", "input": {"sql": sql}}]}, {"text": "done"}]
    )
    relay = Relay(model, ledger=False)
    relay.connect("db", f"sqlite:///{path}")
    try:
        turn = relay.ask("total?")
    finally:
        relay.close()
    assert turn.df.iloc[0]["total"] == SUMMED  # the DataFrame keeps the exact value
    assert "116444.03" in turn.tool_results[0].content
    assert repr(SUMMED) not in turn.tool_results[0].content
    # whole-number floats as well (a numpy float64's repr is "np.float64(2385.0)")
    assert "np." not in turn.tool_results[0].content
