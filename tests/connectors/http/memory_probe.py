"""One call in a fresh process, and what it cost the process: run by ``test_http_bounds.py``.

A process's peak RSS only grows, so a test process that has run other tests cannot tell what
one call cost; a fresh one can. The peak is reset (``/proc/self/clear_refs``) after a warm-up
call has loaded pandas and httpx, so the growth measured is the call's alone. The peak read is
``VmHWM`` (``/proc/self/status``), not ``getrusage``'s ``ru_maxrss``: Linux carries the
latter over ``exec`` from the forked child, whose resident set was the parent's — a probe
started by a test process of 170 MB would report 170 MB before doing anything. Without
``/proc`` it falls back to ``ru_maxrss`` and the warm-up's peak as the baseline (growth can
then only read low, which the harmful ``httpx`` measurement shows it does not for a bomb).

``python memory_probe.py BASE_URL MODE PATH [MAX_RESPONSE_BYTES]`` prints one JSON object:

* ``httpx`` — plain ``httpx.stream(...).iter_bytes()``: ``total`` decoded bytes and the
  ``biggest_chunk`` one decode call produced (nothing is kept);
* ``connector`` — ``HTTPConnector.call``: ``error`` or ``rows``/``columns``/``notes``, then
  ``next_rows``, the row count of a second, ordinary call on the same connector.

Both report ``growth_mib``: the peak RSS during the call above the RSS before it.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit


def _status_kib(field: str) -> int | None:
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return None


def _peak_kib() -> int:
    peak = _status_kib("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _reset_peak() -> int:
    """The baseline: the RSS now once the peak is reset, else the peak so far."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return _peak_kib()
    return _status_kib("VmRSS") or _peak_kib()


def _growth_mib(baseline: int) -> float:
    return round((_peak_kib() - baseline) / 1024, 1)


def _plain_httpx(url: str) -> dict[str, Any]:
    import httpx

    httpx.get(url.rsplit("/", 1)[0] + "/orders").raise_for_status()  # warm up
    baseline = _reset_peak()
    total = biggest = 0
    with httpx.stream("GET", url, timeout=60) as response:
        for chunk in response.iter_bytes():  # each chunk is freed at once
            total += len(chunk)
            biggest = max(biggest, len(chunk))
    return {"total": total, "biggest_chunk": biggest, "growth_mib": _growth_mib(baseline)}


def _connector(base: str, target: str, max_response_bytes: int) -> dict[str, Any]:
    from relay_nb.connectors.http import HTTPConnector
    from relay_nb.errors import RelayError

    shop = HTTPConnector("probe", base, timeout_s=60, max_response_bytes=max_response_bytes)
    shop.call("GET", "/orders")  # warm up: pandas and httpx loaded
    parts = urlsplit(target)
    baseline = _reset_peak()
    out: dict[str, Any] = {}
    try:
        result = shop.call("GET", parts.path, dict(parse_qsl(parts.query)) or None)
        out.update(rows=result.row_count, columns=result.df.shape[1], notes=list(result.notes))
    except RelayError as exc:
        out["error"] = str(exc)
    out["growth_mib"] = _growth_mib(baseline)
    out["next_rows"] = shop.call("GET", "/orders").row_count
    return out


def main(argv: list[str]) -> None:
    base, mode, target = argv[:3]
    plain = mode == "httpx"
    print(
        json.dumps(_plain_httpx(base + target) if plain else _connector(base, target, int(argv[3])))
    )


if __name__ == "__main__":
    main(sys.argv[1:])
