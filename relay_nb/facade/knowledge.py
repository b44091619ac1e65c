"""The facade's side of knowledge: attaching a knowledge file to a connector, and turning a
finished turn into a verified query (``relay.verify``, ``%relay --verify``).

Saving is never automatic: the analyst decides that an answer was right. What is saved is the
question and the SQL the model wrote for its last successful query (the guard adds its row
limit again when it runs), with who verified it and when.
"""

from __future__ import annotations

import datetime as dt
import getpass
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from relay_nb.agent.turn_result import TurnResult
from relay_nb.context.knowledge_source import KnowledgeSource
from relay_nb.errors import ConfigurationError
from relay_nb.knowledge import VerifiedQuery
from relay_nb.knowledge.load import KnowledgeSourceInput, load_knowledge_with_file
from relay_nb.knowledge.save import append_verified

__all__ = ["KnowledgeInput", "attach", "knowledge_file_for", "save_verified", "verified_query"]

KnowledgeInput = KnowledgeSourceInput | Sequence[KnowledgeSourceInput]


def attach(connectors: Iterable[str], connector_id: str, source: KnowledgeInput) -> KnowledgeSource:
    """The context source for ``source`` (a file path, a mapping, a ``Knowledge``, a dbt
    manifest, a Cortex semantic model, or a list of them)."""
    if connector_id not in set(connectors):
        raise ConfigurationError(f"no connector {connector_id!r}; connect it first")
    knowledge, path = load_knowledge_with_file(source)
    return KnowledgeSource(knowledge, connector_id, path=path)


def save_verified(
    sources: Iterable[Any], turn: TurnResult | None, by: str | None
) -> tuple[KnowledgeSource, Path]:
    """Append ``turn``'s query to its connector's knowledge file (None: no turn yet);
    returns the context source to replace the attached one — what was attached (a dbt
    manifest or a Cortex model too) plus the query — and the file written."""
    connector_id, query = verified_query(turn, by)
    attached = _attached(sources, connector_id)
    path = (
        attached.path
        if attached is not None and attached.path
        else knowledge_file_for(connector_id)
    )
    saved = append_verified(path, query)
    # what was attached (a dbt manifest, a Cortex model, merged with the file) stays
    knowledge = attached.knowledge.with_verified(query) if attached is not None else saved
    return KnowledgeSource(knowledge, connector_id, path=path), path


def _attached(sources: Iterable[Any], connector_id: str) -> KnowledgeSource | None:
    """The knowledge attached to ``connector_id``, if any."""
    for source in sources:
        if isinstance(source, KnowledgeSource) and source.knows == connector_id:
            return source
    return None


def knowledge_file_for(connector_id: str) -> Path:
    """Where a connector with no knowledge file of its own gets one: here."""
    return Path(f"{connector_id}.knowledge.yaml")


def verified_query(turn: TurnResult | None, by: str | None) -> tuple[str, VerifiedQuery]:
    """``(connector id, query)`` for the last successful SQL query of ``turn``."""
    if turn is None:
        raise ConfigurationError("no question has been asked yet, so there is nothing to verify")
    if not turn.sql_outcomes:
        raise ConfigurationError(
            f"the turn {turn.question!r} ran no SQL query, so there is nothing to verify"
        )
    artifact = turn.sql_outcomes[-1].artifact
    return artifact.connector_id, VerifiedQuery(
        question=turn.question,
        sql=artifact.submitted_sql or artifact.executed_sql,
        verified_by=by if by is not None else _user(),
        verified_at=dt.date.today(),
    )


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in the environment (a container)
        return ""
