"""``%relay --background`` in the IPython test shell (issue 37, item 16): the cell returns at
once with the run's handle, the live view stays in that cell with a Stop button and gives way
to the static trace when the turn ends, ``--out`` is set then, and the next cells run
meanwhile. The real-kernel half (the kernel's interrupt leaves the run going) is in
test_background_kernel.py."""

from __future__ import annotations

import time

import pytest
from IPython.core.error import UsageError

from relay_nb import Relay, ScriptedRuntime
from relay_nb.facade.background import BackgroundRun
from relay_nb.notebook.magics import RelayCellError
from relay_nb.testing.shell import TestingShell

SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
    "SELECT max(x) AS counted FROM c"
)


def query(sql: str) -> dict:
    return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]}


def test_the_cell_returns_its_handle_and_the_trace_and_out_arrive_later(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    # each question its own steps: the two turns run at the same time
    model.by_question["count to three million"] = [query(SLOW), {"text": "Counted."}]
    model.by_question["anything else?"] = [{"text": "Meanwhile."}]
    started = time.monotonic()
    run = shell.run("h = %relay --background --out counted count to three million")
    handle = shell.user_ns["h"]
    assert isinstance(handle, BackgroundRun) and time.monotonic() - started < 2
    assert "running in the background; counted is set when it ends" in run.stdout
    assert "counted" not in shell.user_ns
    widgets = [d for d in run.outputs if "application/vnd.jupyter.widget-view+json" in d]
    assert len(widgets) == 1  # the live view, in this cell
    # the next cell runs while the question is still going
    assert shell.run("%relay anything else?").result.answer == "Meanwhile."
    turn = handle.result(timeout=60)
    assert turn.answer == "Counted." and handle.status == "done"
    # set by the run's end, which result() waits for
    assert int(shell.user_ns["counted"].iloc[0]["counted"]) == 3_000_000


def test_background_refuses_sql_and_needs_a_question(shell: TestingShell, relay: Relay) -> None:
    with pytest.raises(RelayCellError, match="--sql waits for the answer"):
        shell.run("%relay --background --sql top customers")
    with pytest.raises(UsageError, match="--background goes with a question"):
        shell.run("%relay --background")
