"""Fetch every context source at once, survive the slow and the broken, pack into a budget.

The resolver runs before each turn, so its latency is the user's latency: sources are fetched
concurrently (the turn costs ``max(latency)``, not the sum) and each one runs under its own
timeout, so a stuck connector cannot pin the turn. A source that raises or times out is logged
and contributes nothing; the rest of the turn goes on. Only the exception's *type* is recorded,
never its text: database errors routinely quote the rows or SQL that caused them.
Timeouts work by cancellation, so a source that swallows ``CancelledError`` cannot be cut off;
sources must let cancellation propagate (cleaning up first is fine).

Packing is greedy by priority (DESIGN.md §5): items are sorted by priority,
highest first, stable in source order then item order, and each is kept if it still fits.
An item that does not fit is skipped, not a stop sign: a smaller, lower-priority item after it
may still fit, which uses the budget better than cutting at the first miss.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any, Literal, TypeVar

from relay_nb.context.render import SECTIONS_TOKENS, framed_tokens
from relay_nb.context.schemas import plan_schemas, squeezed_out_schemas
from relay_nb.context.types import (
    ContextItem,
    ContextRequest,
    ContextSource,
    DroppedItem,
    ResolvedContext,
    SourceStats,
)
from relay_nb.errors import ConfigurationError
from relay_nb.redaction import secret_patterns

__all__ = ["ContextResolver", "pack_items"]

LOGGER_NAME = "relay_nb.context"
DEFAULT_TIMEOUT_S = 2.0

_Status = Literal["ok", "failed", "timeout"]
_T = TypeVar("_T")


def pack_items(
    candidates: Iterable[ContextItem], budget: int | None
) -> tuple[list[ContextItem], list[DroppedItem]]:
    """Greedy priority packing: highest priority first, skip what does not fit, keep going.

    ``candidates`` must already be in source order then item order: Python's sort is stable,
    so equal priorities keep that order and a resolution is reproducible. ``budget=None``
    keeps everything; ``budget=0`` keeps nothing (even zero-token items: "no context" must
    mean none). What counts is what the prompt will hold: each item in its ``<context>``
    block, escaped, and the sections' headings, so the rendered context never exceeds the
    budget (:func:`~relay_nb.context.render.framed_tokens`).
    """
    ordered = sorted(candidates, key=lambda item: -item.priority)
    if budget is None:
        return ordered, []
    kept: list[ContextItem] = []
    dropped: list[DroppedItem] = []
    used = SECTIONS_TOKENS
    for item in ordered:
        cost = framed_tokens(item)
        if budget > 0 and used + cost <= budget:
            used += cost
            kept.append(item)
        else:
            dropped.append(DroppedItem(item=item, reason="over_budget"))
    return kept, dropped


class ContextResolver:
    """Holds the context sources of a session and resolves them for each turn.

    Sources follow :class:`~relay_nb.context.types.ContextSource`; the optional attributes
    ``timeout_s`` and ``async prewarm(request)`` are honoured. Names must be unique, because
    stats, logs and ``remove`` address a source by name.
    """

    def __init__(
        self,
        sources: Sequence[ContextSource] = (),
        *,
        default_timeout_s: float = DEFAULT_TIMEOUT_S,
        logger: logging.Logger | None = None,
    ) -> None:
        self._default_timeout_s = _check_timeout(default_timeout_s, "default_timeout_s")
        self._logger = logger or logging.getLogger(LOGGER_NAME)
        self._sources: list[ContextSource] = []
        self._prewarm_tasks: dict[str, asyncio.Task[None]] = {}
        for source in sources:
            self.add(source)

    # -- registry ---------------------------------------------------------------------------

    @property
    def sources(self) -> tuple[ContextSource, ...]:
        """The registered sources, in registration order (the tie-break order for packing)."""
        return tuple(self._sources)

    def add(self, source: ContextSource, *, replace: bool = False) -> None:
        """Register a source; a duplicate name is refused so stats stay unambiguous, unless
        ``replace``, which swaps the source registered under that name (a re-run cell)."""
        if not isinstance(source, ContextSource):
            raise ConfigurationError(
                "a context source needs a `name`, a `priority` and an async `fetch(request)`"
            )
        timeout = getattr(source, "timeout_s", None)
        if timeout is not None:
            _check_timeout(timeout, f"{source.name}.timeout_s")
        if any(existing.name == source.name for existing in self._sources):
            if not replace:
                raise ConfigurationError(
                    f"a context source named {source.name!r} is already registered; "
                    "remove it first or choose another name"
                )
            self.remove(source.name)
        self._sources.append(source)

    def remove(self, name: str) -> None:
        """Unregister the source called ``name``; an unknown name is a caller error."""
        for index, source in enumerate(self._sources):
            if source.name == name:
                del self._sources[index]
                return
        known = ", ".join(repr(s.name) for s in self._sources) or "none"
        raise ConfigurationError(f"no context source named {name!r} (registered: {known})")

    def remove_connector(self, connector_id: str) -> None:
        """Unregister every source that speaks for ``connector_id`` (its schema, its
        documents); none is no error."""
        self._sources = [
            source
            for source in self._sources
            if getattr(source, "connector_id", None) != connector_id
        ]

    # -- resolution -------------------------------------------------------------------------

    async def resolve(self, request: ContextRequest, budget: int | None = None) -> ResolvedContext:
        """Fetch all sources concurrently and pack their items into ``budget`` tokens.

        ``budget`` defaults to ``request.budget``; when both are ``None`` nothing is dropped
        and ``ResolvedContext.budget`` is ``None``.
        Cancelling this coroutine cancels every source fetch and waits for them to finish, so
        no task outlives the turn.
        """
        limit = request.budget if budget is None else budget
        if limit is not None and (isinstance(limit, bool) or limit < 0):
            raise ConfigurationError(f"budget must be a non-negative token count, got {limit!r}")
        sources = list(self._sources)
        request = _with_related_terms(request, sources, self._logger)
        plan = await plan_schemas(request, sources, limit)
        request, directory = plan.request, [] if plan.directory is None else [plan.directory]
        sources = [source for source in sources if source.name not in plan.skipped]
        results = await _gather_all(
            [self._fetch_one(source, request) for source in sources],
        )
        candidates = _redacted([item for _stats, items in results for item in items] + directory)
        kept, dropped = pack_items(candidates, limit)
        squeezed = squeezed_out_schemas(sources, kept, dropped)
        room = 0 if limit is None else limit - SECTIONS_TOKENS - sum(map(framed_tokens, kept))
        if squeezed and room // len(squeezed) > 0:
            # higher-priority items (guardrails, knowledge) took part of a schema's share:
            # ask those schemas again for what is left, rather than leave a connector out
            share = request.model_copy(update={"schema_share": room // len(squeezed)})
            again = dict(
                zip(
                    [source.name for source in squeezed],
                    await _gather_all([self._fetch_one(source, share) for source in squeezed]),
                    strict=True,
                )
            )
            results = [again.get(stats.source, (stats, items)) for stats, items in results]
            candidates = _redacted(
                [item for _stats, items in results for item in items] + directory
            )
            kept, dropped = pack_items(candidates, limit)
        return ResolvedContext(
            kept=kept,
            dropped=dropped,
            stats=[stats for stats, _items in results],
            budget=limit,
        )

    async def _fetch_one(
        self, source: ContextSource, request: ContextRequest
    ) -> tuple[SourceStats, list[ContextItem]]:
        """One source under its timeout; never raises except for cancellation."""
        timeout = self._timeout_for(source)
        started = time.perf_counter()
        status: _Status = "ok"
        error: str | None = None
        items: list[ContextItem] = []
        scope = asyncio.timeout(timeout)
        try:
            async with scope:
                items = _check_items(await source.fetch(request))
        except TimeoutError as exc:
            # asyncio.timeout raises TimeoutError on expiry; a source may raise its own
            if scope.expired():
                status, error = "timeout", "TimeoutError"
            else:
                status, error = "failed", type(exc).__name__
        except Exception as exc:  # a broken source must never break the turn
            status, error = "failed", type(exc).__name__
        stats = SourceStats(
            source=source.name,
            status=status,
            items=len(items),
            tokens=sum(item.token_estimate for item in items),
            ms=round((time.perf_counter() - started) * 1000, 3),
            error=error,
        )
        self._log_fetch(stats, request)
        return stats, items

    def _timeout_for(self, source: ContextSource) -> float:
        timeout = getattr(source, "timeout_s", None)
        return self._default_timeout_s if timeout is None else float(timeout)

    def _log_fetch(self, stats: SourceStats, request: ContextRequest) -> None:
        """One structured record per source, the fields an operator filters on."""
        event = "context_source_ok" if stats.status == "ok" else "context_source_failed"
        level = logging.INFO if stats.status == "ok" else logging.WARNING
        self._logger.log(
            level,
            "%s source=%s status=%s items=%d ms=%.1f",
            event,
            stats.source,
            stats.status,
            stats.items,
            stats.ms,
            extra={
                "event": event,
                "source": stats.source,
                "status": stats.status,
                "items": stats.items,
                "tokens": stats.tokens,
                "ms": stats.ms,
                "error": stats.error,
                "turn_id": request.turn_id,
                "session_id": request.session_id,
            },
        )

    # -- pre-warm ---------------------------------------------------------------------------

    async def prewarm(self, request: ContextRequest) -> None:
        """Start each source's async ``prewarm(request)`` in the background and return.

        Slow first work (schema introspection) then overlaps with the user typing instead of
        delaying the first answer. A source already pre-warming is not started twice. Errors
        are logged, never raised: pre-warm is an optimisation, ``resolve`` still works without.
        """
        for source in self._sources:
            hook = getattr(source, "prewarm", None)
            if hook is None or not inspect.iscoroutinefunction(hook):
                continue
            running = self._prewarm_tasks.get(source.name)
            if running is not None and not running.done():
                continue
            task = asyncio.create_task(
                self._run_prewarm(source.name, hook, request),
                name=f"relay_nb.context.prewarm:{source.name}",
            )
            self._prewarm_tasks[source.name] = task
            task.add_done_callback(self._forget_prewarm(source.name))

    def _forget_prewarm(self, name: str) -> Callable[[asyncio.Task[None]], None]:
        def forget(task: asyncio.Task[None]) -> None:
            if self._prewarm_tasks.get(name) is task:
                del self._prewarm_tasks[name]

        return forget

    async def _run_prewarm(
        self,
        name: str,
        hook: Callable[[ContextRequest], Awaitable[object]],
        request: ContextRequest,
    ) -> None:
        started = time.perf_counter()
        try:
            await hook(request)
        except Exception as exc:  # logged, never raised: nobody awaits a background task
            self._log_prewarm("context_prewarm_failed", name, started, request, exc)
        else:
            self._log_prewarm("context_prewarm_ok", name, started, request, None)

    def _log_prewarm(
        self,
        event: str,
        name: str,
        started: float,
        request: ContextRequest,
        exc: Exception | None,
    ) -> None:
        ms = round((time.perf_counter() - started) * 1000, 3)
        error = None if exc is None else type(exc).__name__
        self._logger.log(
            logging.INFO if exc is None else logging.WARNING,
            "%s source=%s ms=%.1f",
            event,
            name,
            ms,
            extra={
                "event": event,
                "source": name,
                "status": "ok" if exc is None else "failed",
                "ms": ms,
                "error": error,
                "turn_id": request.turn_id,
                "session_id": request.session_id,
            },
        )

    @property
    def prewarming(self) -> tuple[str, ...]:
        """Names of sources whose pre-warm is still running."""
        return tuple(name for name, task in self._prewarm_tasks.items() if not task.done())

    async def aclose(self) -> None:
        """Cancel and await outstanding pre-warm tasks, so closing a session leaks nothing."""
        tasks = list(self._prewarm_tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._prewarm_tasks.clear()


async def _gather_all(coros: Sequence[Coroutine[Any, Any, _T]]) -> list[_T]:
    """Run ``coros`` as tasks; if the caller is cancelled, cancel them all and wait for them.

    ``asyncio.gather`` alone does cancel its children when cancelled, but it completes as soon
    as the *first* child is cancelled: a source that cleans up on cancellation (closing a
    cursor) would still be running after ``resolve`` raised. Awaiting them all here means
    nothing outlives the turn.
    """
    tasks = [asyncio.create_task(coro) for coro in coros]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            # a second cancel() would interrupt a source's own cleanup, so only cancel once
            if not task.done() and not task.cancelling():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _redacted(items: list[ContextItem]) -> list[ContextItem]:
    """Every item with the known secrets replaced: a schema's column names and comments, a
    column's sample values, a server's documents are data someone else wrote, and reach the
    prompt only through here."""
    patterns = secret_patterns()
    if patterns is None:
        return items
    out = []
    for item in items:
        content = patterns.redact(item.content)
        out.append(
            item if content is item.content else item.model_copy(update={"content": content})
        )
    return out


def _check_items(result: object) -> list[ContextItem]:
    """A source must return a list of ContextItem; anything else counts as a failure."""
    if not isinstance(result, list) or not all(isinstance(i, ContextItem) for i in result):
        raise TypeError("fetch must return list[ContextItem]")
    return result


def _check_timeout(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigurationError(f"{what} must be a positive number of seconds, got {value!r}")
    if not math.isfinite(value):
        raise ConfigurationError(f"{what} must be finite, got {value!r}")
    return float(value)


def _with_related_terms(
    request: ContextRequest, sources: list[ContextSource], logger: logging.Logger
) -> ContextRequest:
    """``request`` with the names every source's ``related_terms`` gives for it (a source
    that fails to say is skipped: the question's own words still rank)."""
    terms: list[str] = list(request.related_terms)
    for source in sources:
        related = getattr(source, "related_terms", None)
        if related is None:
            continue
        try:
            terms += [t for t in related(request) if isinstance(t, str) and t not in terms]
        except Exception as exc:
            logger.warning("related_terms of source %s failed: %r", source.name, exc)
    if tuple(terms) == request.related_terms:
        return request
    return request.model_copy(update={"related_terms": tuple(terms)})
