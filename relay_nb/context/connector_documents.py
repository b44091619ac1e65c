"""Reference texts a connector's system publishes (an MCP server's resources), ranked by the
question into the prompt.

A connector offers them through :meth:`Connector.documents` as neutral
:class:`~relay_nb.connectors.base.ConnectorDocument` records; this source chunks them and
retrieves the chunks the question is about with the same lexical TF-IDF as
:class:`~relay_nb.context.sources.NotesSource` (no embeddings: nothing to download,
deterministic).

Priorities 45, 44, 43 for the three best chunks (see the table in
:mod:`relay_nb.context.sources`): the system's own documentation outranks the analyst's
general notes (30) and the compacted memory of older turns (40); the conversation's recent
turns (60 for the newest, 2 less per turn back, never below 41) stay ahead of it, and
schemas (70) far ahead.

Reading the documents can be a round trip per resource, so :meth:`~ConnectorDocumentsSource.fetch`
runs the connector's (caching) ``documents()`` in a worker thread under this source's
timeout; the first turn pays for the read, later turns reuse it. :meth:`prewarm` starts that
read early for a host that calls :meth:`ContextResolver.prewarm
<relay_nb.context.resolver.ContextResolver.prewarm>` — the session and the agent loop do not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from relay_nb.connectors.base import Connector, ConnectorDocument
from relay_nb.context.sources import NotesSource
from relay_nb.context.types import ContextItem, ContextRequest

__all__ = ["CONNECTOR_DOCUMENTS_PRIORITY", "ConnectorDocumentsSource", "has_documents"]

CONNECTOR_DOCUMENTS_PRIORITY = 45


def has_documents(connector: Connector) -> bool:
    """Whether the connector's class offers documents at all (overrides the empty default),
    so sessions register this source only where it can contribute."""
    return type(connector).documents is not Connector.documents


class ConnectorDocumentsSource:
    """The connector's documents, the chunks matching the question first.

    At most ``top_k`` chunks of at most ``chunk_chars`` characters each, with priorities
    ``priority``, ``priority - 1``… (never below 10); the resolver then packs them into the
    turn's budget like any other item. A question that matches nothing adds nothing.
    """

    timeout_s = 10.0

    def __init__(
        self,
        connector: Connector,
        *,
        priority: int = CONNECTOR_DOCUMENTS_PRIORITY,
        top_k: int = 3,
        chunk_chars: int = 800,
    ) -> None:
        self.connector = connector
        self.connector_id = connector.id
        self.priority = priority
        self.top_k = top_k
        self.chunk_chars = chunk_chars
        self.name = f"documents:{connector.id}"
        self._index: tuple[Sequence[ConnectorDocument], NotesSource] | None = None

    async def prewarm(self, request: ContextRequest) -> None:
        """Read (and cache) the documents ahead of a question; only a host calling
        ``ContextResolver.prewarm`` runs this."""
        await asyncio.to_thread(self.connector.documents)

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        if request.connector_ids and self.connector.id not in request.connector_ids:
            return []
        documents = await asyncio.to_thread(self.connector.documents)
        if not documents:
            return []
        items = await self._retriever(documents).fetch(request)
        update = {"source": self.name, "kind": "documents", "connector_id": self.connector.id}
        return [item.model_copy(update=update) for item in items]

    def _retriever(self, documents: Sequence[ConnectorDocument]) -> NotesSource:
        """The chunk index, rebuilt only when the connector hands back a new list (it caches
        its documents until refreshed, so most turns reuse the index)."""
        if self._index is None or self._index[0] is not documents:
            titles: dict[str, str] = {}
            for document in documents:
                title = document.title or document.uri or "document"
                if title in titles:  # two resources with one name: tell them apart
                    title = f"{title} ({document.uri})" if document.uri else f"{title} #2"
                titles[title] = document.text
            notes = NotesSource(
                titles,
                priority=self.priority,
                top_k=self.top_k,
                chunk_chars=self.chunk_chars,
                name=self.name,
            )
            self._index = (documents, notes)
        return self._index[1]
