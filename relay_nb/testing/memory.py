"""How much memory one piece of work cost this process: its peak resident size above where it
started, for the tests that show a result bound holds (and that the raw driver breaks it).

A peak is a high-water mark: in a process that has run other tests it only says the largest
thing that ever happened there. So every measurement runs in a fresh process (the probes the
tests start), and the peak is *reset* just before the work: Linux resets ``VmHWM`` when ``5`` is
written to ``/proc/self/clear_refs``. The peak read is ``VmHWM`` from ``/proc/self/status``, not
``getrusage``'s ``ru_maxrss``, which Linux carries over ``exec`` from the forked parent (a probe
started by a 170 MB pytest would report 170 MB before doing anything). Without ``/proc``, the
baseline is the peak so far, so growth can only read low, never high.

    with PeakGrowth() as growth:
        run_the_query()
    growth.mib  # the peak during the block above the resident size before it
"""

from __future__ import annotations

import resource
from pathlib import Path
from types import TracebackType

__all__ = ["PeakGrowth"]

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


class PeakGrowth:
    """A context manager measuring the peak resident memory of its block, in bytes/MiB."""

    def __init__(self) -> None:
        self.baseline = 0
        self.bytes = 0

    def __enter__(self) -> PeakGrowth:
        self.baseline = _reset_peak()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.bytes = max(0, _peak() - self.baseline)

    @property
    def mib(self) -> float:
        return round(self.bytes / (1 << 20), 1)


def _status_bytes(field: str) -> int | None:
    try:
        lines = _STATUS.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024  # kB
    return None


def _peak() -> int:
    peak = _status_bytes("VmHWM")
    if peak is not None:
        return peak
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _reset_peak() -> int:
    """The baseline: the resident size now once the peak is reset, else the peak so far."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return _peak()
    return _status_bytes("VmRSS") or _peak()
