"""A knowledge file's synonyms reach the schema ranking: a question that names a table by
the team's own word ("punters", "turf": no built-in synonym knows them) gets that table into
a tight context, where the ranking alone lets decoys that share the question's words win."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from relay_nb import SQLConnector
from relay_nb.context import ConnectorSchemaSource, ContextResolver
from relay_nb.context.knowledge_source import KnowledgeSource
from relay_nb.context.types import ContextRequest
from relay_nb.knowledge import parse_knowledge

KNOWLEDGE = """\
tables:
  customers:
    synonyms: [punters]
    columns:
      country: {synonyms: [turf]}
"""
QUESTION = "How many punters per turf?"  # the team's own words: no built-in synonym knows them


@pytest.fixture
def warehouse(tmp_path: Path):
    path = tmp_path / "warehouse.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, country TEXT)")
        for i in range(40):  # decoys that share the question's own words
            conn.execute(f"CREATE TABLE punter_note_{i} (id INTEGER, note TEXT, author TEXT)")
            conn.execute(f"CREATE TABLE turf_flag_{i} (id INTEGER, flag TEXT, colour TEXT)")
    connector = SQLConnector("dw", f"sqlite:///{path}")
    yield connector
    connector.close()


def _schema(connector: SQLConnector, *sources) -> str:
    """The schema as rendered into 150 tokens (the context's budget leaves room for the
    other items: the point is which tables the schema's own budget keeps)."""
    schema = ConnectorSchemaSource(connector, max_tokens=150)
    resolver = ContextResolver([schema, *sources])
    request = ContextRequest(question=QUESTION, connector_ids=("dw",), budget=1000)
    resolved = asyncio.run(resolver.resolve(request))
    return "\n".join(item.content for item in resolved.kept if item.kind == "schema")


def test_synonyms_bring_the_table_the_question_means_into_a_tight_context(warehouse) -> None:
    without = _schema(warehouse)
    assert "customers" not in without  # the decoys named like the question's words win
    knowledge = KnowledgeSource(parse_knowledge(KNOWLEDGE), "dw")
    request = ContextRequest(question=QUESTION, connector_ids=("dw",))
    assert knowledge.related_terms(request) == ["customers", "country"]
    with_knowledge = _schema(warehouse, knowledge)
    assert "customers" in with_knowledge and "country" in with_knowledge


def test_a_source_that_fails_to_name_terms_does_not_stop_the_turn(warehouse) -> None:
    class Broken:
        name = "broken"
        priority = 10

        def related_terms(self, request):
            raise RuntimeError("no glossary today")

        async def fetch(self, request):
            return []

    assert "punter_note" in _schema(warehouse, Broken())
