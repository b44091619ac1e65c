"""One call in a fresh process, and what it cost the process: run by ``test_http_bounds.py``.

The cost is the call's peak resident memory above where it started
(:class:`relay_nb.testing.memory.PeakGrowth`, reset after a warm-up call has loaded pandas
and httpx, so the growth is the call's alone).

``python memory_probe.py BASE_URL MODE PATH [MAX_RESPONSE_BYTES]`` prints one JSON object:

* ``httpx`` — plain ``httpx.stream(...).iter_bytes()``: ``total`` decoded bytes and the
  ``biggest_chunk`` one decode call produced (nothing is kept);
* ``connector`` — ``HTTPConnector.call``: ``error`` or ``rows``/``columns``/``notes``, then
  ``next_rows``, the row count of a second, ordinary call on the same connector.

Both report ``growth_mib``: the peak RSS during the call above the RSS before it.
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from relay_nb.testing.memory import PeakGrowth


def _plain_httpx(url: str) -> dict[str, Any]:
    import httpx

    httpx.get(url.rsplit("/", 1)[0] + "/orders").raise_for_status()  # warm up
    total = biggest = 0
    with PeakGrowth() as growth, httpx.stream("GET", url, timeout=60) as response:
        for chunk in response.iter_bytes():  # each chunk is freed at once
            total += len(chunk)
            biggest = max(biggest, len(chunk))
    return {"total": total, "biggest_chunk": biggest, "growth_mib": growth.mib}


def _connector(base: str, target: str, max_response_bytes: int) -> dict[str, Any]:
    from relay_nb.connectors.http import HTTPConnector
    from relay_nb.errors import RelayError

    shop = HTTPConnector("probe", base, timeout_s=60, max_response_bytes=max_response_bytes)
    shop.call("GET", "/orders")  # warm up: pandas and httpx loaded
    parts = urlsplit(target)
    out: dict[str, Any] = {}
    try:
        with PeakGrowth() as growth:
            result = shop.call("GET", parts.path, dict(parse_qsl(parts.query)) or None)
        out.update(rows=result.row_count, columns=result.df.shape[1], notes=list(result.notes))
    except RelayError as exc:
        out["error"] = str(exc)
    out["growth_mib"] = growth.mib
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
