"""ContextResolver: concurrency, timeouts, failures, cancellation, packing and pre-warm."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

import pytest

from relay_nb.context import ContextItem, ContextRequest, ContextResolver
from relay_nb.context.render import SECTIONS_TOKENS, framed_tokens
from relay_nb.context.resolver import pack_items
from relay_nb.errors import ConfigurationError

REQUEST = ContextRequest(question="revenue by region?", session_id="s1", turn_id="t-42")


@dataclass
class FakeSource:
    """A source returning fixed items after ``delay`` seconds, or raising ``error``."""

    name: str
    priority: int = 50
    items: list[ContextItem] = field(default_factory=list)
    delay: float = 0.0
    error: Exception | None = None
    timeout_s: float | None = None
    calls: int = 0

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return list(self.items)


def item(source: str, tokens: int, priority: int = 50, content: str = "") -> ContextItem:
    return ContextItem(
        source=source, content=content or f"{source}-{tokens}", priority=priority,
        token_estimate=tokens,
    )  # fmt: skip


def contents(items: list[ContextItem]) -> list[str]:
    return [i.content for i in items]


# -- ordering and packing --------------------------------------------------------------------


async def test_priority_desc_and_stable_by_source_then_item_order() -> None:
    a = FakeSource(
        "a", items=[item("a", 1, 50, "a1"), item("a", 1, 90, "a2"), item("a", 1, 50, "a3")]
    )
    b = FakeSource("b", items=[item("b", 1, 90, "b1"), item("b", 1, 50, "b2")])
    resolved = await ContextResolver([a, b]).resolve(REQUEST)
    assert contents(resolved.kept) == ["a2", "b1", "a1", "a3", "b2"]
    assert resolved.dropped == []


async def test_registration_order_breaks_ties_even_if_b_finishes_first() -> None:
    slow = FakeSource("slow", delay=0.02, items=[item("slow", 1, 10, "slow")])
    fast = FakeSource("fast", items=[item("fast", 1, 10, "fast")])
    resolved = await ContextResolver([slow, fast]).resolve(REQUEST)
    assert contents(resolved.kept) == ["slow", "fast"]


async def test_greedy_skips_a_big_item_and_keeps_a_later_small_one() -> None:
    src = FakeSource(
        "s",
        items=[item("s", 60, 90, "first"), item("s", 50, 80, "big"), item("s", 30, 70, "small")],
    )
    budget = SECTIONS_TOKENS + framed_tokens(item("s", 60)) + framed_tokens(item("s", 40)) - 1
    resolved = await ContextResolver([src]).resolve(REQUEST, budget=budget)
    assert contents(resolved.kept) == ["first", "small"]
    assert [(d.item.content, d.reason) for d in resolved.dropped] == [("big", "over_budget")]
    assert resolved.token_estimate == 90 and resolved.budget == budget


def test_budget_zero_keeps_nothing_even_zero_token_items() -> None:
    kept, dropped = pack_items([item("s", 0), item("s", 5)], 0)
    assert kept == [] and len(dropped) == 2


def test_exact_fit_is_kept_and_one_more_token_is_not() -> None:
    """The budget covers what the prompt holds: each item's block and the headings."""
    budget = SECTIONS_TOKENS + framed_tokens(item("s", 40)) + framed_tokens(item("s", 60))
    kept, dropped = pack_items([item("s", 40), item("s", 60)], budget)
    assert len(kept) == 2 and dropped == []
    kept, dropped = pack_items([item("s", 40), item("s", 61)], budget)
    assert contents(kept) == ["s-40"] and contents([d.item for d in dropped]) == ["s-61"]


async def test_budget_none_is_unlimited_and_defaults_to_request_budget() -> None:
    src = FakeSource("s", items=[item("s", 1000), item("s", 2000)])
    resolver = ContextResolver([src])
    unlimited = await resolver.resolve(REQUEST)
    assert len(unlimited.kept) == 2 and unlimited.budget is None
    from_request = await resolver.resolve(REQUEST.model_copy(update={"budget": 2500}))
    assert contents(from_request.kept) == ["s-1000"] and from_request.budget == 2500
    explicit = await resolver.resolve(REQUEST.model_copy(update={"budget": 2500}), budget=5000)
    assert len(explicit.kept) == 2


async def test_negative_budget_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="budget"):
        await ContextResolver().resolve(REQUEST, budget=-1)


# -- failures and timeouts -------------------------------------------------------------------


async def test_raising_source_is_failed_with_type_only_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "ssn 123-45-6789"
    bad = FakeSource("bad", error=ValueError(f"row was {secret}"))
    good = FakeSource("good", items=[item("good", 3)])
    with caplog.at_level(logging.INFO, logger="relay_nb.context"):
        resolved = await ContextResolver([bad, good]).resolve(REQUEST)

    assert contents(resolved.kept) == ["good-3"]
    stats = {s.source: s for s in resolved.stats}
    assert stats["bad"].status == "failed" and stats["bad"].error == "ValueError"
    assert stats["bad"].items == 0
    assert (stats["good"].status, stats["good"].items, stats["good"].tokens) == ("ok", 1, 3)

    failed = [r for r in caplog.records if r.getMessage().startswith("context_source_failed")]
    assert len(failed) == 1
    rec = failed[0]
    assert rec.name == "relay_nb.context" and rec.levelno == logging.WARNING
    assert (rec.source, rec.items, rec.turn_id, rec.status) == ("bad", 0, "t-42", "failed")
    assert isinstance(rec.ms, float)
    ok = [r for r in caplog.records if r.getMessage().startswith("context_source_ok")]
    assert [(r.source, r.items, r.status) for r in ok] == [("good", 1, "ok")]
    assert secret not in caplog.text and secret not in resolved.model_dump_json()


async def test_wrong_return_type_counts_as_failed() -> None:
    class Sloppy(FakeSource):
        async def fetch(self, request: ContextRequest) -> list[ContextItem]:
            return ["not an item"]  # type: ignore[list-item]

    resolved = await ContextResolver([Sloppy("sloppy")]).resolve(REQUEST)
    assert resolved.stats[0].status == "failed" and resolved.stats[0].error == "TypeError"


async def test_source_raising_its_own_timeouterror_is_failed_not_timeout() -> None:
    src = FakeSource("s", error=TimeoutError("db timeout"))
    resolved = await ContextResolver([src]).resolve(REQUEST)
    assert resolved.stats[0].status == "failed"


async def test_hanging_source_is_cut_at_its_timeout_while_others_return(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hung = FakeSource("hung", delay=30, timeout_s=0.1, items=[item("hung", 1)])
    quick = FakeSource("quick", delay=0.01, items=[item("quick", 1)])
    with caplog.at_level(logging.INFO, logger="relay_nb.context"):
        started = time.perf_counter()
        resolved = await ContextResolver([hung, quick]).resolve(REQUEST)
        wall = time.perf_counter() - started
    assert 0.09 <= wall < 0.3
    assert contents(resolved.kept) == ["quick-1"]
    stats = {s.source: s for s in resolved.stats}
    assert stats["hung"].status == "timeout" and 90 <= stats["hung"].ms < 300
    timeouts = [r for r in caplog.records if getattr(r, "status", None) == "timeout"]
    assert [r.source for r in timeouts] == ["hung"]
    assert timeouts[0].getMessage().startswith("context_source_failed")


async def test_default_timeout_applies_without_timeout_s() -> None:
    hung = FakeSource("hung", delay=30)
    started = time.perf_counter()
    resolved = await ContextResolver([hung], default_timeout_s=0.05).resolve(REQUEST)
    assert time.perf_counter() - started < 0.3
    assert resolved.stats[0].status == "timeout"


async def test_sources_run_concurrently() -> None:
    sources = [FakeSource(f"s{i}", delay=0.1, items=[item(f"s{i}", 1)]) for i in range(5)]
    started = time.perf_counter()
    resolved = await ContextResolver(sources).resolve(REQUEST)
    assert time.perf_counter() - started < 0.3  # sequential would be 0.5 s
    assert len(resolved.kept) == 5


async def test_cancelling_resolve_leaves_no_task_behind() -> None:
    cancelled: list[str] = []

    @dataclass
    class Hang(FakeSource):
        cleanup_s: float = 0.0

        async def fetch(self, request: ContextRequest) -> list[ContextItem]:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                await asyncio.sleep(self.cleanup_s)  # e.g. closing a cursor
                cancelled.append(self.name)
                raise
            return []

    before = asyncio.all_tasks()
    resolver = ContextResolver([Hang("h1"), Hang("h2", cleanup_s=0.02)], default_timeout_s=60)
    task = asyncio.create_task(resolver.resolve(REQUEST))
    await asyncio.sleep(0.02)
    assert len(asyncio.all_tasks() - before) == 3  # resolve + two fetches
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert asyncio.all_tasks() == before  # awaited, not merely cancelled
    assert sorted(cancelled) == ["h1", "h2"]


# -- registry --------------------------------------------------------------------------------


def test_add_remove_and_duplicate_names() -> None:
    resolver = ContextResolver([FakeSource("a")])
    resolver.add(FakeSource("b"))
    assert [s.name for s in resolver.sources] == ["a", "b"]
    with pytest.raises(ConfigurationError, match="already registered"):
        resolver.add(FakeSource("a"))
    resolver.remove("a")
    assert [s.name for s in resolver.sources] == ["b"]
    with pytest.raises(ConfigurationError, match="no context source named 'a'"):
        resolver.remove("a")


def test_invalid_sources_and_timeouts_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="async `fetch"):
        ContextResolver([object()])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="timeout_s"):
        ContextResolver([FakeSource("a", timeout_s=0)])
    with pytest.raises(ConfigurationError, match="default_timeout_s"):
        ContextResolver(default_timeout_s=-1)


# -- pre-warm --------------------------------------------------------------------------------


@dataclass
class WarmSource(FakeSource):
    warm_delay: float = 0.0
    warm_error: Exception | None = None
    warmed: int = 0

    async def prewarm(self, request: ContextRequest) -> None:
        self.warmed += 1
        await asyncio.sleep(self.warm_delay)
        if self.warm_error is not None:
            raise self.warm_error


async def test_prewarm_runs_in_background_once(caplog: pytest.LogCaptureFixture) -> None:
    src = WarmSource("schema", warm_delay=0.05)
    plain = FakeSource("plain")  # no prewarm: skipped
    resolver = ContextResolver([src, plain])
    with caplog.at_level(logging.INFO, logger="relay_nb.context"):
        started = time.perf_counter()
        await resolver.prewarm(REQUEST)
        await resolver.prewarm(REQUEST)  # still running: not started twice
        assert time.perf_counter() - started < 0.04  # returned without waiting
        assert resolver.prewarming == ("schema",)
        await asyncio.sleep(0.1)
    assert src.warmed == 1 and resolver.prewarming == ()
    assert [
        r.source for r in caplog.records if r.getMessage().startswith("context_prewarm_ok")
    ] == ["schema"]
    await resolver.aclose()


async def test_prewarm_errors_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    src = WarmSource("schema", warm_error=RuntimeError("password=hunter2"))
    resolver = ContextResolver([src])
    with caplog.at_level(logging.INFO, logger="relay_nb.context"):
        await resolver.prewarm(REQUEST)
        await asyncio.sleep(0.01)
    failed = [r for r in caplog.records if r.getMessage().startswith("context_prewarm_failed")]
    assert [(r.source, r.error, r.levelno) for r in failed] == [
        ("schema", "RuntimeError", logging.WARNING)
    ]
    assert "hunter2" not in caplog.text
    await resolver.aclose()


async def test_aclose_cancels_and_awaits_prewarm_tasks() -> None:
    before = asyncio.all_tasks()
    src = WarmSource("schema", warm_delay=30)
    resolver = ContextResolver([src])
    await resolver.prewarm(REQUEST)
    assert len(asyncio.all_tasks() - before) == 1
    await resolver.aclose()
    assert asyncio.all_tasks() == before and resolver.prewarming == ()
