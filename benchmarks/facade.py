"""The synchronous facade (issue 16): what ``relay.ask`` and a ``%relay`` cell add to a turn.

One ``Relay`` with a scripted model that answers at once and a small DataFrame connected (so
each turn resolves its context as a real one does), three ways of asking, interleaved sample by
sample so drift hits all three alike:

- ``await relay.ask_async(q)`` on the caller's loop: the baseline;
- ``relay.ask(q)``: the same turn through relay_nb's loop thread (what a script or a notebook
  cell calls). It used to wait in 100 ms slices, so every sync turn cost at least 100 ms;
- ``%relay q`` in a real IPython shell (``TestingShell``, outputs captured outside the
  timing), live widgets off and on: parsing, the turn through ``relay.ask``, and the saved
  trace rendered (HTML and text) and displayed.

Reported: the median of each, and each minus the baseline. Target: ``relay.ask`` ≤ 2 ms
more than ``ask_async``; ``%relay`` ≤ 2 ms more than ``relay.ask`` plus its own rendering.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

_QUESTION = "how many rows are there?"


def _relay(turns: int) -> Any:
    import pandas as pd

    from relay_nb.facade.relay import Relay
    from relay_nb.runtime.scripted import ScriptedRuntime

    runtime = ScriptedRuntime([{"text": "There are 3 rows."}] * turns, model="claude-haiku-4-5")
    relay = Relay(runtime, ledger=False)
    relay.connect("sales", pd.DataFrame({"region": ["north", "south", "east"], "n": [1, 2, 3]}))
    return relay, runtime


def run(samples: int = 60) -> dict[str, float]:
    from IPython.utils.capture import capture_output

    from relay_nb.facade import default as facade
    from relay_nb.testing.shell import TestingShell

    shell = TestingShell()
    relay, runtime = _relay(samples * 5 + 20)
    facade._default = relay  # the kernel's default Relay is the one the magic asks
    loop = asyncio.new_event_loop()
    timings: dict[str, list[float]] = {"async": [], "sync": [], "magic": [], "magic_widgets": []}

    def timed(work: Any) -> float:
        started = time.perf_counter()
        work()
        return (time.perf_counter() - started) * 1000

    magics = shell.ip.magics_manager.registry["RelayMagics"]

    def magic(widgets: bool) -> float:
        magics.widgets = widgets  # as %config sets it, outside the timing
        with capture_output():
            return timed(lambda: shell.ip.run_line_magic("relay", _QUESTION))

    try:
        for index in range(samples + 3):  # three warm-up rounds
            results = {
                "async": timed(lambda: loop.run_until_complete(relay.ask_async(_QUESTION))),
                "sync": timed(lambda: relay.ask(_QUESTION)),
                "magic": magic(False),
                "magic_widgets": magic(True),
            }
            runtime.requests.clear()
            relay.reset()  # every turn starts from the same (empty) history
            if index >= 3:
                for key, value in results.items():
                    timings[key].append(value)
    finally:
        loop.close()
        facade._default = None
        relay.close()
    median = {key: statistics.median(values) for key, values in timings.items()}
    print(f"{'one scripted turn (median ms)':<36} {'ms':>8} {'vs ask_async':>13}")
    labels = (
        ("async", "await relay.ask_async(q)"),
        ("sync", "relay.ask(q)"),
        ("magic", "%relay q (widgets off)"),
        ("magic_widgets", "%relay q (live widgets)"),
    )
    for key, label in labels:
        extra = median[key] - median["async"]
        print(f"{label:<36} {median[key]:>8.2f} {extra:>+13.2f}")
    print("  target: relay.ask adds <= 2 ms to ask_async")
    return {
        "ask_async_ms": round(median["async"], 3),
        "ask_sync_ms": round(median["sync"], 3),
        "magic_ms": round(median["magic"], 3),
        "magic_widgets_ms": round(median["magic_widgets"], 3),
        "sync_minus_async_ms": round(median["sync"] - median["async"], 3),
        "magic_minus_sync_ms": round(median["magic"] - median["sync"], 3),
    }


if __name__ == "__main__":
    run()
