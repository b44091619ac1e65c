"""``%relay --background`` in a real ipykernel (issue 37, item 16), driven over its channels as
a frontend would: the cell returns while the question's query runs; interrupting the kernel
during a later cell stops that cell only — the background run goes on and ends with its
answer; its static trace replaces its live view (an ``update_display_data`` for the view's
display id, sent after its own cell ended)."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kernel_client import Kernel, of, running, texts

pytestmark = pytest.mark.timeout(180)

SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000000) "
    "SELECT max(x) AS counted FROM c"
)
SETUP = f"""
import tempfile
import relay_nb
from relay_nb import Relay, ScriptedRuntime
from relay_nb.facade import default as facade
from relay_nb.testing.seed import seed_database

url = f"sqlite:///{{tempfile.mkdtemp()}}/shop.sqlite"
seed_database(url)
relay = Relay(
    ScriptedRuntime(
        by_question={{
            "count slowly": [
                {{"tool_calls": [{{"name": "query_shop", "input": {{"sql": {SLOW!r}}}}}]}},
                {{"text": "Counted."}},
            ]
        }},
        model="claude-haiku-4-5",
    ),
    ledger=False,
)
relay.connect("shop", url)
facade._default = relay
%load_ext relay_nb
"""


@pytest.fixture
def kernel() -> Iterator[Kernel]:
    with running(SETUP) as kernel:
        yield kernel


def test_the_kernel_interrupt_stops_the_cell_not_the_background_run(kernel: Kernel) -> None:
    started = time.monotonic()
    submit = kernel.execute("h = %relay --background count slowly")
    seen = kernel.until_idle(submit)
    assert time.monotonic() - started < 5  # returned while its query runs
    assert "running in the background" in texts(seen, submit)
    assert not of(seen, submit, "error")

    sleeping = kernel.execute("import time; time.sleep(30)")
    time.sleep(1.0)
    kernel.manager.interrupt_kernel()
    seen += kernel.until_idle(sleeping)
    assert [e["ename"] for e in of(seen, sleeping, "error")] == ["KeyboardInterrupt"]

    check = kernel.execute("print(h.status); print(h.result(timeout=60).answer, h.status)")
    seen += kernel.until_idle(check)
    printed = texts(seen, check)
    assert "Counted. done" in printed, printed
    # the live view (shown by the submitting cell) gave way to the static trace
    # ... sent by the run's end callback, which may come just after result() returned
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not _trace_shown(seen):
        try:
            seen.append(kernel.client.get_iopub_msg(timeout=0.5))
        except queue.Empty:
            continue
    assert _trace_shown(seen)


def _trace_shown(seen: list[dict[str, Any]]) -> bool:
    updates = [m for m in seen if m["msg_type"] == "update_display_data"]
    return any("Counted." in m["content"]["data"].get("text/plain", "") for m in updates)
