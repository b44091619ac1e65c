"""What a team knows about its data: the knowledge file's models and its loader.

Data and loaders only (see ``relay_nb.context.knowledge_source`` for how it reaches the
prompt); it imports nothing of relay_nb above ``errors``.
"""

from __future__ import annotations

from relay_nb.knowledge.cortex import knowledge_from_cortex
from relay_nb.knowledge.dbt import knowledge_from_dbt
from relay_nb.knowledge.load import KNOWLEDGE_FILENAME, load_knowledge, parse_knowledge
from relay_nb.knowledge.model import (
    ColumnKnowledge,
    JoinPath,
    Knowledge,
    Metric,
    TableKnowledge,
    VerifiedQuery,
)

__all__ = [
    "KNOWLEDGE_FILENAME",
    "ColumnKnowledge",
    "JoinPath",
    "Knowledge",
    "Metric",
    "TableKnowledge",
    "VerifiedQuery",
    "knowledge_from_cortex",
    "knowledge_from_dbt",
    "load_knowledge",
    "parse_knowledge",
]
