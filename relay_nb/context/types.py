"""What crosses the context layer: the request, the items sources return, the result.

A source answers "what should the model know for this question?" with items; the resolver
decides which of them fit. Keeping these as plain pydantic models lets the agent loop log,
test and replay a resolution without knowing any source.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.runtime.types import estimate_tokens

__all__ = [
    "ContextItem",
    "ContextKind",
    "ContextRequest",
    "ContextSource",
    "DroppedItem",
    "ResolvedContext",
    "SourceStats",
    "estimate_tokens",
]


class ContextRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    session_id: str = ""
    turn_id: str = ""
    connector_ids: tuple[str, ...] = ()
    budget: int | None = Field(default=None, ge=0)
    """Tokens the context may use; sources may use it to size what they return."""
    schema_share: int | None = Field(default=None, ge=0)
    """Tokens one connector's schema may use, wrapper included: the resolver splits the
    budget among the schema sources a question reads (``None``: all of ``budget``)."""
    related_terms: tuple[str, ...] = ()
    """Names the question means in the data though it does not say them ("nations" →
    ``country``), from sources' ``related_terms(request)`` (a knowledge file's synonyms);
    the resolver fills it in before any source fetches, and sources that rank by the
    question's words rank by these too."""


ContextKind = Literal[
    "schema", "documents", "notes", "frames", "turns", "memory", "guardrails", "knowledge", "other"
]
"""What an item is, for whoever assembles the prompt: connector schemas go under
``# Connectors``, everything else under ``# Context``. Set by the source that makes the item,
so nothing downstream parses source names."""


class ContextItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    content: str
    priority: int
    kind: ContextKind = "other"
    connector_id: str | None = None
    """The connector the item describes (a schema, a connector's documents), if any."""
    token_estimate: int = Field(default=-1)
    """Negative means "not given": filled with chars/4 when the item is created."""
    title: str | None = None
    estimated: bool = True
    """False when the count came from a provider's tokenizer."""

    def model_post_init(self, _context: object) -> None:
        if self.token_estimate < 0:
            self.token_estimate = estimate_tokens(self.content)


@runtime_checkable
class ContextSource(Protocol):
    """Anything with a name, a priority and an async ``fetch``.

    Optional attributes the resolver honours: ``timeout_s`` (float, default 2 s),
    ``async prewarm(request)`` (start slow work early, e.g. schema introspection),
    ``related_terms(request)`` (cheap and synchronous: names the question means, passed to
    every source as ``request.related_terms``), ``connector_id`` (the connector the
    source speaks for: removing the connector removes the source), and for a schema source
    (``kind = "schema"``) ``async terms()`` and ``known_terms`` (the words its connector
    holds, by which a question chooses among too many connectors: context/schemas.py).
    """

    name: str
    priority: int

    async def fetch(self, request: ContextRequest) -> list[ContextItem]: ...


class DroppedItem(BaseModel):
    item: ContextItem
    reason: Literal["over_budget"] = "over_budget"


class SourceStats(BaseModel):
    source: str
    status: Literal["ok", "failed", "timeout", "cancelled"]
    items: int = 0
    tokens: int = 0
    ms: float = 0.0
    error: str | None = None
    """The exception's type name only: source errors can quote data."""


class ResolvedContext(BaseModel):
    kept: list[ContextItem] = Field(default_factory=list)
    dropped: list[DroppedItem] = Field(default_factory=list)
    stats: list[SourceStats] = Field(default_factory=list)
    budget: int | None = None
    """The token budget packed against; None means unlimited (nothing was dropped)."""

    @property
    def token_estimate(self) -> int:
        return sum(item.token_estimate for item in self.kept)

    @property
    def sources(self) -> list[str]:
        """Names of sources that contributed at least one kept item, in order."""
        return list(dict.fromkeys(item.source for item in self.kept))
