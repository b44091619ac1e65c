"""The catalog as compact prompt context, within a token budget.

A model writes better SQL from a terse, complete schema than from ``CREATE TABLE`` dumps or
sample rows, and tokens spent on the schema are tokens not spent on the conversation: one
line per table (:mod:`~relay_nb.sql.prompt.lines` writes them).

Under ``max_tokens`` the rendering degrades in steps, cheapest loss first: column comments go,
then table comments, then the profiles, and only then whole tables: a
:class:`~relay_nb.sql.prompt.ranking.SchemaRanker` orders them by the question, the best
that fit are kept (with their profiles when the question gave them any score), and one
closing line names the rest and points the model at the describe tool
(:mod:`~relay_nb.sql.prompt.describe`).

On a large catalog the ranked render reads the ranking only as far as it packs and names, and
builds only the lines it shows: a warm question on 10,000 tables costs what its few dozen
shown tables cost, not a pass over all of them (issue 22).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from relay_nb.runtime.types import estimate_tokens
from relay_nb.sql.catalog.model import Catalog, TableInfo
from relay_nb.sql.prompt.lines import LEGEND, PROFILED, CatalogLines
from relay_nb.sql.prompt.ranking import Ranking, SchemaRanker, per_catalog, ranked

__all__ = ["LEGEND", "RenderCache", "RenderedSchema", "estimate_tokens", "render_catalog"]


@dataclass(frozen=True)
class RenderedSchema:
    """The rendered text and what it covers, so callers can report omissions honestly.

    A plain frozen dataclass, not a model: it is built at every render and never crosses a
    layer as data (the connectors keep only ``text``), and the omitted names are listed only
    when asked (:attr:`omitted`). Equality and pickling use the values, the list included.
    """

    text: str
    shown: tuple[str, ...]
    """Qualified names of the tables rendered, in catalog order."""
    omitted_count: int
    """How many tables were left out for the budget."""
    token_estimate: int
    """``ceil(len(text) / 4)``: an estimate, not a provider count."""
    _omitted: _Omitted | tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def omitted(self) -> tuple[str, ...]:
        """Qualified names of the tables left out for the budget, most relevant first.

        Listed when asked, from the ranking the render read (the ranker is not asked again):
        on 10,000 tables the list is the one part of a render that costs a pass over the
        catalog, and the prompt names only the first few.
        """
        omitted = self._omitted
        return omitted.all() if isinstance(omitted, _Omitted) else omitted

    def __reduce__(self) -> tuple[Any, ...]:
        fields = (self.text, self.shown, self.omitted_count, self.token_estimate, self.omitted)
        return (RenderedSchema, fields)


class _Omitted:
    """The tables a ranked render left out, in rank order: those packing passed over, then
    the rest of the ranking, read only as far as asked. The omission line reads the first
    few (:meth:`names`); :attr:`RenderedSchema.omitted` reads the rest, once."""

    def __init__(
        self,
        passed: list[TableInfo],
        rest: Iterator[tuple[TableInfo, float]],
        shown: Mapping[str, str],
    ) -> None:
        self._pending: Iterator[TableInfo] = itertools.chain(passed, (t for t, _ in rest))
        self._shown = shown
        self._read: list[str] = []
        self._all: tuple[str, ...] | None = None

    def names(self, lines: CatalogLines) -> Iterator[str]:
        """The omitted tables' names as the omission line writes them."""
        for table in self._pending:
            if (key := table.qualified_name) not in self._shown:
                self._read.append(key)
                yield lines.name(table, key)

    def all(self) -> tuple[str, ...]:
        if self._all is None:
            shown = self._shown
            self._read += [t.qualified_name for t in self._pending if t.qualified_name not in shown]
            self._all = tuple(self._read)
        return self._all


_LINES: dict[Any, tuple[Any, Any]] = {}


def render_catalog(
    catalog: Catalog,
    *,
    max_tokens: int | None = None,
    question: str | None = None,
    sample_values: Mapping[str, Sequence[str]] | None = None,
    sample_value_chars: int = 40,
    describe_tool: str | None = None,
    ranker: SchemaRanker | None = None,
) -> RenderedSchema:
    """Render ``catalog`` in at most ``max_tokens`` (estimated) when given.

    ``sample_values`` maps ``table.column`` (or ``schema.table.column``) to example values; each
    column's examples are capped at ``sample_value_chars`` characters in total (they are opt-in,
    so they survive the degradation steps). ``describe_tool`` is the tool name the omission line
    tells the model to call (the connector's ``describe_<id>``); ``ranker`` orders the tables
    when not all fit (default: :class:`~relay_nb.sql.prompt.ranking.LexicalRanker`).
    """
    if sample_values:
        lines = CatalogLines(catalog, sample_values, sample_value_chars)
    else:  # the common case: per catalog, built as renders need them
        lines = per_catalog(catalog, _LINES, lambda: CatalogLines(catalog, {}, 0))
    if max_tokens is None:
        return _result(lines.whole(0), lines.qualified_names)
    if _fits(lines.floor, max_tokens):  # else not even the bare lines fit: rank at once
        for step, chars in enumerate(lines.step_chars):
            if _fits(chars, max_tokens):
                return _result(lines.whole(step), lines.qualified_names)
    return _render_ranked(catalog, lines, max_tokens, question or "", describe_tool, ranker)


def _fits(chars: int, max_tokens: int) -> bool:
    return math.ceil(chars / 4) <= max_tokens


class RenderCache:
    """The last texts rendered from one catalog (and its value samples), by what they were
    rendered for.

    Every model step of a turn builds its prompt again with the same question and budget,
    and an analyst re-runs a question's cell: on a 10,000-table catalog each render is
    milliseconds of ranking and packing. Another catalog or samples object (a refresh that
    found a change) empties it; the ones it holds are kept alive, so identity cannot be
    reused. Thread-safe: ``ask_many``'s turns render on worker threads.
    """

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._texts: OrderedDict[Hashable, str] = OrderedDict()
        self._sources: tuple[object, ...] = ()
        self._lock = threading.Lock()

    def get(self, sources: tuple[object, ...], key: Hashable, render: Callable[[], str]) -> str:
        """The text kept for ``key`` if it was rendered from these very ``sources``."""
        with self._lock:
            if self._same(sources) and (text := self._texts.get(key)) is not None:
                self._texts.move_to_end(key)
                return text
        text = render()
        with self._lock:
            if not self._same(sources):
                self._texts.clear()
                self._sources = sources
            self._texts[key] = text
            while len(self._texts) > self._size:
                self._texts.popitem(last=False)
        return text

    def _same(self, sources: tuple[object, ...]) -> bool:
        return len(sources) == len(self._sources) and all(
            a is b for a, b in zip(sources, self._sources, strict=True)
        )


def _render_ranked(
    catalog: Catalog,
    lines: CatalogLines,
    max_tokens: int,
    question: str,
    describe_tool: str | None,
    ranker: SchemaRanker | None,
) -> RenderedSchema:
    """The most relevant tables that fit, then one line naming the rest.

    A table the question scored keeps its profile (the values it may have been found by);
    the others are bare, so more of them fit.
    """
    budget_chars = max_tokens * 4
    ranking = ranked(catalog, question, ranker)
    if not isinstance(ranking, Sequence):  # a ranker that yields its ranking
        ranking = list(ranking)
    reserve = budget_chars // 4  # at most; a line naming every table is at least that long
    if lines.names_floor < budget_chars and lines.names_chars < budget_chars:
        tables = catalog.tables  # the names could fit: reserve what they take
        every = lines.every_omitted(
            describe_tool,
            lambda: _omitted_line([lines.name(t) for t in tables], len(tables), describe_tool),
        )
        reserve = min(len(every), reserve)
    rest = iter(ranking)
    shown, passed = _pack(rest, lines, budget_chars - len(LEGEND) - 1 - reserve)
    names = sorted(shown, key=lines.positions.__getitem__)  # catalog order
    body = [LEGEND, *(shown[name] for name in names)]
    room = budget_chars - len("\n".join(body)) - 1
    if isinstance(ranking, Ranking):  # every table once: what is not shown is left out
        count = len(ranking) - len(shown)
    else:  # a plugged-in ranker's list may name a table twice
        count = sum(1 for table, _ in ranking if table.qualified_name not in shown)
    omitted = _Omitted(passed, rest, shown)
    body.append(_omitted_line(omitted.names(lines), count, describe_tool, room))
    return _result("\n".join(body), tuple(names), count, omitted)


def _result(
    text: str, shown: tuple[str, ...], count: int = 0, omitted: _Omitted | None = None
) -> RenderedSchema:
    return RenderedSchema(text, shown, count, estimate_tokens(text), omitted or ())


def _pack(
    ranking: Iterator[tuple[TableInfo, float]], lines: CatalogLines, room: int
) -> tuple[dict[str, str], list[TableInfo]]:
    """Greedy by rank: each table's line (with its profile when the question scored it),
    else its bare line, else (too large for what is left) passed over, as smaller ones may
    still fit — until not even the shortest line would. Returns the lines shown by name and
    the tables passed over, in rank order; the rest of ``ranking`` is left unread."""
    shown: dict[str, str] = {}
    passed: list[TableInfo] = []
    shortest, bare_lines = lines.shortest, lines.bare
    for table, score in ranking:
        if room < shortest + 1:
            passed.append(table)
            break
        name = table.qualified_name
        bare = bare_lines[name]
        line = lines.line(table).text(**PROFILED) if score > 0 else bare
        for candidate in (line, bare) if line != bare else (bare,):
            if len(candidate) + 1 <= room:
                shown[name] = candidate
                room -= len(candidate) + 1
                break
        else:
            passed.append(table)
    return shown, passed


def _omitted_line(
    names: Iterable[str], count: int, describe_tool: str | None, room: int | None = None
) -> str:
    """Name as many of the ``count`` omitted tables (most relevant first) as fit in ``room``
    characters, reading ``names`` only that far.

    Without ``room``, every name: that length is what packing reserves (at most a quarter of
    the budget), so small schemas get all their omissions named.
    """
    tail = f" (call {describe_tool or 'the describe tool'} for their columns)"
    head = f"-- {count} more tables"
    if room is None:
        names = list(names)
        room = sum(len(n) + 2 for n in names) + len(head) + len(tail)
    listed: list[str] = []
    length = len(head) + 2 + len(tail)
    widest = 9 + len(str(count))  # len(f", … {rest} more") for any rest
    for index, name in enumerate(names):
        if length + len(name) + widest > room:  # near the end: what the rest takes exactly
            rest = count - index - 1
            if length + len(name) + (9 + len(str(rest)) if rest else 0) > room:
                break
        length += len(name) + 2
        listed.append(name)
    if not listed:
        return head + tail
    unnamed = count - len(listed)
    return f"{head}: {', '.join(listed)}{f', … {unnamed} more' if unnamed else ''}{tail}"
