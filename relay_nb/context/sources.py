"""Built-in context sources, each with a documented priority band.

=====================  =========  ====================================================
source                 priority   what it contributes
=====================  =========  ====================================================
skill guardrails       100+       hard rules a skill states (never dropped first)
connector schemas      60-80      what is queryable, ranked by the question (70)
notebook DataFrames    50-70      name, shape, dtypes, a few values (mentioned: 65)
recent turns, memory   40-60      the last turns (newest 60) and compacted memory (40)
connector documents    43-45      a connector's published texts (an MCP server's
                                  resources), ranked by the question (45, 44, 43; see
                                  ``context/connector_documents.py``)
notes and documents    10-49      lexically retrieved chunks of user-supplied text (30)
=====================  =========  ====================================================

Higher priority survives the budget. Sources never raise for ordinary data problems: an
empty namespace or no matching note simply yields no items.
"""

from __future__ import annotations

import asyncio
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from relay_nb.connectors.base import Connector
from relay_nb.context.render import framed_tokens, wrapper_tokens
from relay_nb.context.types import ContextItem, ContextRequest
from relay_nb.tools import short_float

__all__ = [
    "ConnectorSchemaSource",
    "DataFrameNamespaceSource",
    "NotesSource",
    "RecentTurnsSource",
    "SkillGuardrailsSource",
    "question_terms",
]

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    _WORD.findall(
        "the a an and or of to in on for by with what which who how many much is are was were "
        "did do does from at per each last this that these those all any me my our show list "
        "give find get"
    )
)


def question_terms(text: str) -> list[str]:
    """Lowercased words without stopwords, plurals folded (orders -> order)."""
    words = [w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOPWORDS]
    return [w[:-1] if w.endswith("s") and not w.endswith("ss") else w for w in words]


class SkillGuardrailsSource:
    """Rules a skill insists on ("never show e-mail addresses"); priority 100+."""

    def __init__(
        self, rules: Mapping[str, str], *, priority: int = 100, name: str = "skill_guardrails"
    ) -> None:
        self.rules = dict(rules)
        self.priority = priority
        self.name = name

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        return [
            ContextItem(
                source=self.name,
                title=title,
                content=text,
                priority=self.priority,
                kind="guardrails",
            )
            for title, text in self.rules.items()
            if text.strip()
        ]


TERMS_TTL_S = 300.0
"""How long a connector's words (:meth:`ConnectorSchemaSource.terms`) are reused."""

SCHEMA_TOKENS = 4_000
"""The most a connector's schema takes in a question's prompt, by default: all of a catalog
that fits, else the tables the question ranks first and a line naming the rest, which the
model reads with the connector's describe tool. A question needs a few tables; a 10,000-table
catalog filling a 72,000-token budget cost about $0.20 of input on every call."""


class ConnectorSchemaSource:
    """A connector's prompt context, ranked by the question when it does not fit.

    It takes the smallest of ``max_tokens`` (default :data:`SCHEMA_TOKENS`; ``None`` for no
    cap of its own), its share of the budget (``request.schema_share``, split among the
    connectors the question reads) and the budget, less its ``<context>`` wrapper.

    Introspection can be slow on a large catalog, so the timeout is longer than the 2 s
    default, and :meth:`prewarm` can read the catalog ahead of the first question for a
    host that calls :meth:`ContextResolver.prewarm` (the session does not yet: its first
    turn reads the catalog under this timeout).
    """

    timeout_s = 10.0
    kind = "schema"

    def __init__(
        self,
        connector: Connector,
        *,
        priority: int = 70,
        max_tokens: int | None = SCHEMA_TOKENS,
    ) -> None:
        self.connector = connector
        self.connector_id = connector.id
        # a connector that needs longer to read what it holds (a SQL catalog with its value
        # profiles) says so
        self.timeout_s = max(self.timeout_s, float(getattr(connector, "catalog_timeout_s", 0) or 0))
        self.priority = priority
        self.max_tokens = max_tokens
        self.name = f"schema:{connector.id}"
        self._terms: tuple[float, frozenset[str]] | None = None

    async def prewarm(self, request: ContextRequest) -> None:
        connector = self.connector

        def warm() -> None:
            # hasattr reads a catalog property (the read to warm), so it runs here, off the
            # event loop; a connector without one renders its prompt context instead
            if not hasattr(connector, "catalog"):
                connector.prompt_context()

        await asyncio.to_thread(warm)

    @property
    def known_terms(self) -> frozenset[str] | None:
        """:meth:`terms` while they are kept; None when they must be read again."""
        kept = self._terms
        if kept is None or time.monotonic() - kept[0] >= TERMS_TTL_S:
            return None
        return kept[1]

    async def terms(self) -> frozenset[str]:
        """The words a question may name this connector's data by: its id, name and
        description and its objects' names (tables, collections), folded like the
        question's; read in a worker thread, kept for :data:`TERMS_TTL_S`."""
        known = self.known_terms
        if known is not None:
            return known
        connector = self.connector

        def read() -> frozenset[str]:
            words = [connector.id, connector.name, connector.description or ""]
            names = connector.object_names()
            return frozenset(question_terms(" ".join([*words, *names]).replace("_", " ")))

        words = await asyncio.to_thread(read)
        self._terms = (time.monotonic(), words)
        return words

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        if request.connector_ids and self.connector.id not in request.connector_ids:
            return []
        limits = [request.budget, request.schema_share, self.max_tokens]
        known = [limit for limit in limits if limit is not None]
        allowed = min(known) if known else None
        limit = None if allowed is None else max(0, allowed - wrapper_tokens(self.name))
        # the names the question means (a glossary's synonyms) rank like its own words
        question = " ".join((request.question, *request.related_terms))
        item = None
        for _ in range(3):  # escaping a name that looks like a tag can outgrow the share
            if self.connector.context_ready:  # cached and small: no thread hop
                text = self.connector.prompt_context(max_tokens=limit, question=question)
            else:
                text = await asyncio.to_thread(
                    self.connector.prompt_context, max_tokens=limit, question=question
                )
            item = ContextItem(
                source=self.name,
                content=text,
                priority=self.priority,
                kind="schema",
                connector_id=self.connector.id,
            )
            if allowed is None or limit is None:
                break
            over = framed_tokens(item) - allowed
            if over <= 0:
                break
            limit = max(0, limit - over)
        return [item] if item is not None else []


class DataFrameNamespaceSource:
    """Summaries of the DataFrames in a notebook namespace (IPython's ``user_ns``).

    The namespace is read at fetch time, so frames created or changed since the last turn
    are seen. Values are clipped: a summary shows the shape of the data, not the data.
    """

    def __init__(
        self,
        namespace: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
        *,
        priority: int = 55,
        mentioned_priority: int = 65,
        max_frames: int = 20,
        sample_rows: int = 3,
        cell_chars: int = 40,
        name: str = "notebook_dataframes",
    ) -> None:
        self._namespace = namespace
        self.priority = priority
        self.mentioned_priority = mentioned_priority
        self.max_frames = max_frames
        self.sample_rows = sample_rows
        self.cell_chars = cell_chars
        self.name = name

    def _frames(self) -> list[tuple[str, Any]]:
        pandas = sys.modules.get("pandas")  # no pandas imported means no DataFrames exist
        if pandas is None:
            return []
        namespace = self._namespace() if callable(self._namespace) else self._namespace
        return [
            (name, value)
            for name, value in list(namespace.items())
            if not name.startswith("_") and isinstance(value, pandas.DataFrame)
        ]

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        asked = set(question_terms(request.question)) | set(request.question.lower().split())
        items = []
        for name, frame in self._frames()[: self.max_frames]:
            mentioned = name.lower() in asked or bool(set(question_terms(name)) & asked)
            items.append(
                ContextItem(
                    source=self.name,
                    title=name,
                    content=self._summary(name, frame),
                    priority=self.mentioned_priority if mentioned else self.priority,
                    kind="frames",
                )
            )
        return items

    def _summary(self, name: str, frame: Any) -> str:
        rows, cols = frame.shape
        dtypes = ", ".join(f"{c} {t}" for c, t in list(frame.dtypes.items())[:40])
        more = f" (+{cols - 40} more)" if cols > 40 else ""
        head = frame.head(self.sample_rows).map(
            lambda v: short_float(v) if isinstance(v, float) else str(v)
        )
        clip = self.cell_chars
        sample = [
            ", ".join(v if len(v) <= clip else v[: clip - 1] + "…" for v in row)
            for row in head.itertuples(index=False, name=None)
        ]
        lines = [f"{name}: DataFrame, {rows} rows x {cols} columns", f"columns: {dtypes}{more}"]
        lines += [f"  {line}" for line in sample]
        return "\n".join(lines)


class RecentTurnsSource:
    """The last turns (newest first in priority) and a compacted memory of older ones."""

    def __init__(
        self,
        turns: Sequence[tuple[str, str]] | Callable[[], Sequence[tuple[str, str]]],
        *,
        memory: str | Callable[[], str | None] | None = None,
        max_turns: int = 5,
        newest_priority: int = 60,
        memory_priority: int = 40,
        name: str = "recent_turns",
    ) -> None:
        self._turns = turns
        self._memory = memory
        self.max_turns = max_turns
        self.priority = newest_priority
        self.memory_priority = memory_priority
        self.name = name

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        turns = list(self._turns() if callable(self._turns) else self._turns)
        recent = turns[-self.max_turns :] if self.max_turns else []
        items = []
        for age, (question, answer) in enumerate(reversed(recent)):
            priority = max(self.memory_priority + 1, self.priority - 2 * age)
            content = f"Q: {question}\nA: {answer}"
            items.append(
                ContextItem(source=self.name, content=content, priority=priority, kind="turns")
            )
        memory = self._memory() if callable(self._memory) else self._memory
        if memory:
            items.append(
                ContextItem(
                    source=self.name,
                    title="memory",
                    content=memory,
                    priority=self.memory_priority,
                    kind="memory",
                )
            )
        return items


class NotesSource:
    """User-supplied notes and documents, retrieved lexically (TF-IDF over chunks).

    No embeddings: nothing to download, deterministic, and good enough to surface the
    glossary entry that defines "churn" when the question says "churned".
    """

    def __init__(
        self,
        documents: Mapping[str, str],
        *,
        priority: int = 30,
        top_k: int = 3,
        chunk_chars: int = 800,
        name: str = "notes",
    ) -> None:
        self.priority = priority
        self.top_k = top_k
        self.name = name
        self._chunks = [
            (title, chunk)
            for title, text in documents.items()
            for chunk in _chunk(text, chunk_chars)
        ]
        self._chunk_terms = [Counter(question_terms(chunk)) for _, chunk in self._chunks]
        frequency = Counter(term for terms in self._chunk_terms for term in terms)
        total = max(1, len(self._chunks))
        self._idf = {term: math.log(1 + total / n) for term, n in frequency.items()}

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        wanted = set(question_terms(request.question))
        scored = []
        for index, terms in enumerate(self._chunk_terms):
            score = sum(self._idf[t] * (1 + math.log(terms[t])) for t in wanted if t in terms)
            if score > 0:
                scored.append((score, index))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        items = []
        for rank, (_score, index) in enumerate(scored[: self.top_k]):
            title, chunk = self._chunks[index]
            items.append(
                ContextItem(
                    source=self.name,
                    title=title,
                    content=chunk,
                    priority=max(10, min(49, self.priority - rank)),
                    kind="notes",
                )
            )
        return items


def _chunk(text: str, size: int) -> list[str]:
    """Paragraph-aligned chunks of at most ``size`` characters (long paragraphs are cut)."""
    chunks: list[str] = []
    current = ""
    for paragraph in (p.strip() for p in text.split("\n\n")):
        if not paragraph:
            continue
        while len(paragraph) > size:
            chunks.append(paragraph[:size])
            paragraph = paragraph[size:]
        if current and len(current) + len(paragraph) + 2 > size:
            chunks.append(current)
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
    if current:
        chunks.append(current)
    return chunks
