"""The context resolver: what the model sees before each turn, within a token budget.

May read ``relay_nb.connectors`` (the schema source); never the agent loop or notebooks.
"""

from relay_nb.context.budget import Budget, allocate_budget, count_tokens, count_tokens_with
from relay_nb.context.connector_documents import ConnectorDocumentsSource
from relay_nb.context.render import render_context
from relay_nb.context.resolver import ContextResolver
from relay_nb.context.sources import (
    ConnectorSchemaSource,
    DataFrameNamespaceSource,
    NotesSource,
    RecentTurnsSource,
    SkillGuardrailsSource,
)
from relay_nb.context.types import (
    ContextItem,
    ContextKind,
    ContextRequest,
    ContextSource,
    DroppedItem,
    ResolvedContext,
    SourceStats,
    estimate_tokens,
)

__all__ = [
    "Budget",
    "ConnectorDocumentsSource",
    "ConnectorSchemaSource",
    "DataFrameNamespaceSource",
    "NotesSource",
    "RecentTurnsSource",
    "SkillGuardrailsSource",
    "ContextItem",
    "ContextKind",
    "ContextRequest",
    "ContextResolver",
    "ContextSource",
    "DroppedItem",
    "ResolvedContext",
    "SourceStats",
    "allocate_budget",
    "count_tokens",
    "count_tokens_with",
    "estimate_tokens",
    "render_context",
]
