"""Context resolver: parallel fetch overhead, a hung source's cost, packing 1,000 items.

(a) five sources sleeping 50-200 ms: wall / slowest source should be <= 1.05 (+ a few ms),
    i.e. the resolver costs max(latency), not the sum. (b) the same plus a hung source with a
    0.3 s timeout: the turn costs the timeout, not the hang. (c) 1,000 candidate items from
    10 instant sources resolved into a budget: the resolver's own CPU cost, target < 20 ms.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
from dataclasses import dataclass

from relay_nb.context import ContextItem, ContextRequest, ContextResolver

REPEAT = 7
LATENCIES_S = (0.05, 0.10, 0.12, 0.15, 0.20)
HUNG_TIMEOUT_S = 0.3
REQUEST = ContextRequest(question="benchmark", turn_id="bench")


@dataclass
class _Source:
    name: str
    priority: int
    delay: float
    items: list[ContextItem]
    timeout_s: float | None = None

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.items


def _items(source: str, count: int) -> list[ContextItem]:
    return [
        ContextItem(source=source, content=f"{source} item {i} " * 8, priority=(i * 37) % 100)
        for i in range(count)
    ]


async def _median_ms(resolver: ContextResolver, budget: int | None = None) -> float:
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        await resolver.resolve(REQUEST, budget)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def _measure() -> dict[str, float]:
    sources = [_Source(f"s{i}", 50, d, _items(f"s{i}", 3)) for i, d in enumerate(LATENCIES_S)]
    slowest_ms = max(LATENCIES_S) * 1000
    parallel_ms = await _median_ms(ContextResolver(sources))
    hung = _Source("hung", 50, 3600, [], timeout_s=HUNG_TIMEOUT_S)
    hung_ms = await _median_ms(ContextResolver([*sources, hung]))
    many = [_Source(f"m{i}", 50, 0, _items(f"m{i}", 100)) for i in range(10)]
    pack_ms = await _median_ms(ContextResolver(many), budget=8_000)
    return {
        "parallel_wall_ms": parallel_ms,
        "slowest_source_ms": slowest_ms,
        "parallel_ratio": parallel_ms / slowest_ms,
        "hung_wall_ms": hung_ms,
        "hung_timeout_ms": HUNG_TIMEOUT_S * 1000,
        "hung_ratio": hung_ms / (HUNG_TIMEOUT_S * 1000),
        "resolve_1000_items_ms": pack_ms,
    }


def run() -> dict[str, float]:
    """Run the three measurements; per-source logs are silenced so they do not skew timing."""
    logger = logging.getLogger("relay_nb.context")
    previous = logger.disabled
    logger.disabled = True
    try:
        results = asyncio.run(_measure())
    finally:
        logger.disabled = previous
    rows = [
        ("5 sources 50-200 ms: wall / slowest", results["parallel_ratio"], "<= 1.05"),
        ("+ hung source (0.3 s): wall ms", results["hung_wall_ms"], "~ 300"),
        ("1,000 items from 10 sources: ms", results["resolve_1000_items_ms"], "< 20"),
    ]
    for label, value, target in rows:
        print(f"{label:<40} {value:>10.3f}   target {target}")
    return results


if __name__ == "__main__":
    run()
