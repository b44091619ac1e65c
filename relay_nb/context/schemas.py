"""How the context budget is shared among the connectors' schemas, and which connectors a
question shows when there are too many to show them all.

Each connector schema the question reads gets an even share of the budget (less the
sections' headings), and sizes itself to it: two 10,000-table connectors both appear, each
with the tables the question ranks first.

Past :data:`SCHEMA_FLOOR` tokens a share, a schema would be its heading and a few names, and
every turn would render every connector. So with that many connectors the question chooses:
each schema source that can say which words it holds (``terms()``: its connector's id, name,
description and object names) is scored by the question's words it holds, each weighted by
how few connectors hold it (``customers`` in every connector says nothing; ``db0007`` or
``invoices`` in one says much). The best :func:`shown_count` are fetched with a full share;
the others are not fetched at all, and one directory item names them, so the model can still
reach any connector through its describe tool.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from relay_nb.context.render import SECTIONS_TOKENS, framed_tokens
from relay_nb.context.sources import SCHEMA_TOKENS, question_terms
from relay_nb.context.types import ContextItem, ContextRequest, ContextSource, DroppedItem

__all__ = [
    "DIRECTORY_PRIORITY",
    "SCHEMA_FLOOR",
    "SchemaPlan",
    "plan_schemas",
    "shown_count",
    "squeezed_out_schemas",
]

SCHEMA_FLOOR = 1_000
"""The least share of the budget a connector's schema gets before the question chooses which
connectors are shown (72 connectors on a 200k-token window)."""

DIRECTORY_SHARE = 4
"""The directory of the connectors not shown takes at most 1/4 of the budget."""

DIRECTORY_PRIORITY = 71
"""Just above the schemas (70): the list of the connectors not shown outlives any one
schema, since it is the only way the model learns they exist."""

_TERMS_TIMEOUT_S = 10.0


@dataclass
class SchemaPlan:
    """The request with its schema share; the schema sources left unfetched and the item
    that names their connectors."""

    request: ContextRequest
    skipped: set[str] = field(default_factory=set)
    directory: ContextItem | None = None


def schema_sources(
    request: ContextRequest, sources: Sequence[ContextSource]
) -> list[ContextSource]:
    """The connector schemas this question reads."""
    scope = set(request.connector_ids)
    return [
        source
        for source in sources
        if getattr(source, "kind", None) == "schema"
        and (not scope or getattr(source, "connector_id", None) in scope)
    ]


def shown_count(budget: int) -> int:
    """How many connectors' schemas a question shows when it must choose: as many as
    the budget holds at a schema's default cap."""
    return max(1, budget // SCHEMA_TOKENS)


async def plan_schemas(
    request: ContextRequest, sources: Sequence[ContextSource], budget: int | None
) -> SchemaPlan:
    """The schema share of each connector this question reads; with too many connectors
    for :data:`SCHEMA_FLOOR`, only those the question is about, and a directory of the rest."""
    if budget is None:
        return SchemaPlan(request)
    schemas = schema_sources(request, sources)
    room = max(0, budget - SECTIONS_TOKENS)
    share = room // max(1, len(schemas))
    choosing = [s for s in schemas if callable(getattr(s, "terms", None))]
    if share >= SCHEMA_FLOOR or len(choosing) <= shown_count(budget):
        return SchemaPlan(request.model_copy(update={"schema_share": share}))
    ranked = await _ranked(request, choosing)
    shown = ranked[: shown_count(budget)]
    hidden = [s for s in choosing if s not in shown]
    directory = _directory(hidden, max_chars=room * 4 // DIRECTORY_SHARE)
    left = room - framed_tokens(directory)
    share = max(0, left) // max(1, len(schemas) - len(hidden))
    return SchemaPlan(
        request.model_copy(update={"schema_share": share}),
        skipped={s.name for s in hidden},
        directory=directory,
    )


async def _ranked(request: ContextRequest, sources: list[ContextSource]) -> list[ContextSource]:
    """``sources`` best first for the question; ties (and every source when the question
    names nothing any of them holds) in registration order."""
    asked = set(question_terms(" ".join((request.question, *request.related_terms))))

    async def terms_of(source: ContextSource) -> frozenset[str]:
        try:
            async with asyncio.timeout(_TERMS_TIMEOUT_S):
                return await source.terms()  # type: ignore[attr-defined]
        except (Exception, TimeoutError):  # an unreadable connector is listed, not ranked
            return frozenset()

    # a warm turn reads every connector's kept words without a task each
    vocabularies: list[frozenset[str] | None] = [
        getattr(source, "known_terms", None) for source in sources
    ]
    missing = [i for i, words in enumerate(vocabularies) if words is None]
    read = await asyncio.gather(*(terms_of(sources[i]) for i in missing))
    for i, words in zip(missing, read, strict=True):
        vocabularies[i] = words
    matched = [asked & words if words else set() for words in vocabularies]
    held = Counter(t for words in matched for t in words)
    scores = [sum(1.0 / held[t] for t in words) for words in matched]
    order = sorted(range(len(sources)), key=lambda i: (-scores[i], i))
    return [sources[i] for i in order]


def _directory(hidden: list[ContextSource], max_chars: int) -> ContextItem:
    """One line naming the connectors whose schemas the question does not show, within
    ``max_chars`` (the ones past it counted, not named)."""
    entries: list[str] = []
    used = 0
    for source in hidden:
        connector = getattr(source, "connector", None)
        cid = str(getattr(source, "connector_id", None) or source.name)
        name = getattr(connector, "name", None)
        entry = cid if not name or name == cid else f"{cid} ({name})"
        used += len(entry) + 2
        if used > max_chars:
            entries.append(f"and {len(hidden) - len(entries)} more")
            break
        entries.append(entry)
    text = (
        f"{len(hidden)} more connectors, their schemas not shown for this question (call a "
        "connector's describe tool with search words to look inside one): " + ", ".join(entries)
    )
    return ContextItem(
        source="connectors",
        title="Other connectors",
        content=text,
        priority=DIRECTORY_PRIORITY,
        kind="schema",
    )


def squeezed_out_schemas(
    sources: Sequence[ContextSource], kept: list[ContextItem], dropped: list[DroppedItem]
) -> list[ContextSource]:
    """Schema sources none of whose items made it into the prompt, though some were offered."""
    shown = {item.source for item in kept}
    offered = {entry.item.source for entry in dropped} - shown
    return [
        source
        for source in sources
        if getattr(source, "kind", None) == "schema" and source.name in offered
    ]
