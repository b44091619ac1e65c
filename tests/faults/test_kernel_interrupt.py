"""A kernel interrupt during a long query: a real ipykernel runs ``%relay`` with a scripted
model whose tool runs an endless recursive CTE on the suite's private PostgreSQL cluster, and
the test interrupts the kernel (SIGINT, what JupyterLab's stop button sends) mid-query.

The cell must raise a KeyboardInterrupt shown as one line, the statement must be gone from
``pg_stat_activity`` by the time it does (cancelled, not left running until its timeout), the
interrupted turn's model call must be in the ledger, and the next ``%relay`` question in the
same kernel must work. The kernel driver is tests/notebook's (reused, not copied).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from relay_nb.agent.tool_calls import CANCELLED_RESULT
from relay_nb.testing.seed import expected_rows

pytestmark = pytest.mark.timeout(120)

ENDLESS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) AS n FROM c"
)
NOTEBOOK = "faults-kernel.ipynb"
PRODUCTS = len(expected_rows("products"))


def _kernel_helpers() -> ModuleType:
    """tests/notebook/kernel_client.py: the kernel driver and message helpers."""
    name = "relay_faults_kernel_helpers"
    if name not in sys.modules:
        path = Path(__file__).parent.parent / "notebook" / "kernel_client.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


helpers = _kernel_helpers()


def setup_code(pg_url: str, ledger: Path) -> str:
    return f"""
from relay_nb import Relay, ScriptedRuntime
from relay_nb.facade import default as facade

runtime = ScriptedRuntime(model="claude-haiku-4-5")
relay = Relay(runtime, ledger={str(ledger)!r}, notebook={NOTEBOOK!r})
relay.connect("shop", {pg_url!r}, statement_timeout_s=60)
facade._default = relay
%load_ext relay_nb
%config RelayMagics.widgets = False
"""


@pytest.fixture
def kernel(pg, tmp_path: Path) -> Iterator[object]:
    kernel = helpers.Kernel()
    try:
        setup = kernel.execute(setup_code(pg.url, tmp_path / "usage.sqlite"))
        seen = kernel.until_idle(setup)
        assert not helpers.of(seen, setup, "error"), helpers.of(seen, setup, "error")
        yield kernel
    finally:
        kernel.close()


def run(kernel, code: str) -> tuple[list[dict], str]:
    msg_id = kernel.execute(code)
    return kernel.until_idle(msg_id), msg_id


def script(kernel, *steps: dict) -> None:
    """Append steps to the kernel's scripted model (what it answers next)."""
    seen, cell = run(kernel, f"runtime.add(*{list(steps)!r})")
    assert not helpers.of(seen, cell, "error"), helpers.of(seen, cell, "error")


def query(sql: str) -> dict:
    return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]}


def test_interrupt_mid_query_cancels_it_records_the_call_and_the_kernel_goes_on(
    pg, kernel, ledger_file
) -> None:
    script(kernel, query(ENDLESS))

    cell = kernel.execute("%relay count to infinity")
    pg.wait_for_query("RECURSIVE")  # the statement is running on the server
    kernel.manager.interrupt_kernel()
    seen = kernel.until_idle(cell)

    (error,) = helpers.of(seen, cell, "error")
    # a KeyboardInterrupt (Run All stops), shown as one line, not a trace through internals
    assert error["ename"] == "Cancelled" and len(error["traceback"]) == 1
    assert error["traceback"][0].startswith("cancelled: the question was stopped")
    assert pg.active_queries("RECURSIVE") == []  # cancelled on the server, not left running

    seen, check = run(
        kernel,
        "t = relay.turns[-1]\n"
        "print('turn:', t.finish_reason, '|', t.tool_results[0].content, '|', len(relay.turns))",
    )
    assert f"turn: cancelled | {CANCELLED_RESULT} | 1" in helpers.texts(seen, check)
    rows = ledger_file.rows()
    assert [(r["notebook"], r["step"], r["finish_reason"]) for r in rows] == [
        (NOTEBOOK, 1, "tool_use")
    ]

    script(
        kernel,
        query("SELECT COUNT(*) AS n FROM products"),
        {"text": f"There are {PRODUCTS} products."},
    )
    seen, cell = run(kernel, "%relay --out counted how many products are there?")
    assert not helpers.of(seen, cell, "error"), helpers.of(seen, cell, "error")
    assert f"There are {PRODUCTS} products." in helpers.texts(seen, cell)
    seen, check = run(kernel, "print('counted:', int(counted.iloc[0]['n']), len(relay.turns))")
    assert f"counted: {PRODUCTS} 2" in helpers.texts(seen, check)

    rows = ledger_file.rows()
    assert [(r["step"], r["finish_reason"]) for r in rows] == [
        (1, "tool_use"),
        (1, "tool_use"),
        (2, "end_turn"),
    ]
    assert len({r["turn_id"] for r in rows}) == 2
