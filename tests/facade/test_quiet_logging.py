"""A failing context source is reported in the turn's warnings, and nothing raw reaches
stderr (issue 18, item 10): relay_nb's logger has a NullHandler, so Python's last-resort
handler does not print its records under a notebook cell."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
from relay_nb import Relay, ScriptedRuntime

class Broken:
    name = "broken_source"
    priority = 10
    async def fetch(self, request):
        raise RuntimeError("the wiki is down")

relay = Relay(ScriptedRuntime([{"text": "fine"}]), ledger=False)
relay.add_source(Broken())
turn = relay.ask("anything")
print("WARNINGS:", turn.warnings)
"""


def test_a_failing_source_is_a_warning_of_the_turn_not_a_log_line_on_stderr() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "broken_source" in done.stdout and "failed" in done.stdout
    assert done.stderr == ""
