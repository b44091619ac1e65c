"""The shared threads of ``relay_nb.connectors.background``: one watchdog fires every
deadline, and reused workers run blocking calls the waiting thread can interrupt."""

from __future__ import annotations

import _thread
import threading
import time

import pytest

from relay_nb.connectors import background


def test_a_deadline_fires_once_on_its_own_thread() -> None:
    fired: list[str] = []
    done = threading.Event()

    def call() -> None:
        fired.append(threading.current_thread().name)
        done.set()

    started = time.monotonic()
    background.after(0.05, call)
    assert done.wait(2)
    assert time.monotonic() - started >= 0.05
    assert fired == ["relay-deadline"]


def test_a_cancelled_deadline_never_fires_and_earlier_ones_are_not_held_up() -> None:
    fired: list[str] = []
    late = background.after(0.2, lambda: fired.append("late"))
    early = threading.Event()
    background.after(0.02, lambda: (fired.append("early"), early.set()))
    late.cancel()
    assert early.wait(2)
    time.sleep(0.3)
    assert fired == ["early"]


def test_many_cancelled_deadlines_are_compacted_away() -> None:
    deadlines = [background.after(3600, lambda: None) for _ in range(3000)]
    for deadline in deadlines:
        deadline.cancel()
    assert len(background._watchdog._heap) < 1500  # not all 3,000 kept for an hour


def test_workers_are_reused_and_hand_back_results_and_errors() -> None:
    names = {background.run_interruptibly(lambda: threading.current_thread().name,
                                          on_interrupt=lambda: None, grace_s=1)
             for _ in range(50)}  # fmt: skip
    assert names == {"relay-worker"}
    before = threading.active_count()
    for _ in range(50):
        background.run_interruptibly(lambda: None, on_interrupt=lambda: None, grace_s=1)
    assert threading.active_count() <= before  # no thread per call

    def fail() -> None:
        raise ValueError("the driver said no")

    with pytest.raises(ValueError, match="the driver said no"):
        background.run_interruptibly(fail, on_interrupt=lambda: None, grace_s=1)


def test_concurrent_calls_each_get_a_worker() -> None:
    """Two blocking calls at once run side by side, never one after the other."""
    gate = threading.Barrier(3, timeout=5)
    results: list[int] = []

    def call(n: int) -> None:
        results.append(
            background.run_interruptibly(lambda: (gate.wait(), n)[1], lambda: None, grace_s=1)
        )

    callers = [threading.Thread(target=call, args=(n,)) for n in (1, 2)]
    for caller in callers:
        caller.start()
    gate.wait()  # both workers are inside their call at the same time
    for caller in callers:
        caller.join(5)
    assert sorted(results) == [1, 2]


def test_ctrl_c_stops_the_work_and_reaches_the_caller() -> None:
    stop = threading.Event()
    interrupted: list[bool] = []

    def work() -> str:
        stop.wait(10)
        return "stopped" if stop.is_set() else "ran out"

    def on_interrupt() -> None:
        interrupted.append(True)
        stop.set()

    threading.Timer(0.2, _thread.interrupt_main).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        background.run_interruptibly(work, on_interrupt=on_interrupt, grace_s=5)
    assert interrupted == [True]
    assert time.monotonic() - started < 2
