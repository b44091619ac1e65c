"""Context items say what they are (``kind``) and which connector they describe, so nothing
downstream parses a source's name to place or remove them."""

from __future__ import annotations

import pandas as pd

from relay_nb.agent.prompt import CONNECTORS_HEADING, assemble_system_prompt
from relay_nb.connectors.dataframe import DataFrameConnector
from relay_nb.context import (
    ConnectorSchemaSource,
    ContextItem,
    ContextRequest,
    ContextResolver,
    DataFrameNamespaceSource,
    NotesSource,
    RecentTurnsSource,
    SkillGuardrailsSource,
)

REQUEST = ContextRequest(question="what is churn in the sales table?")


async def test_every_built_in_source_labels_its_items() -> None:
    sales = DataFrameConnector("sales", pd.DataFrame({"region": ["north"], "amount": [1.0]}))
    sources = [
        ConnectorSchemaSource(sales),
        DataFrameNamespaceSource({"sales_df": pd.DataFrame({"a": [1]})}),
        RecentTurnsSource([("q", "a")], memory="earlier notes"),
        NotesSource({"glossary": "churn means a cancelled subscription"}),
        SkillGuardrailsSource({"privacy": "never show e-mail addresses"}),
    ]
    kinds = set()
    for source in sources:
        for item in await source.fetch(REQUEST):
            kinds.add((item.kind, item.connector_id))
    assert kinds == {
        ("schema", "sales"),
        ("frames", None),
        ("turns", None),
        ("memory", None),
        ("notes", None),
        ("guardrails", None),
    }
    sales.close()


def test_the_prompt_places_items_by_kind_not_by_source_name() -> None:
    kept = [
        ContextItem(source="warehouse-tables", content="orders(id, total)", priority=70,
                    kind="schema"),
        ContextItem(source="schema:lookalike", content="a note", priority=30, kind="notes"),
    ]  # fmt: skip
    prompt = assemble_system_prompt("rules", kept)
    connectors, context = prompt.split("# Context")
    assert CONNECTORS_HEADING in connectors and "orders(id, total)" in connectors
    assert "a note" in context and "a note" not in connectors


async def test_removing_a_connector_removes_the_sources_that_speak_for_it() -> None:
    sales = DataFrameConnector("sales", pd.DataFrame({"a": [1]}))
    other = DataFrameConnector("other", pd.DataFrame({"b": [2]}))
    resolver = ContextResolver(
        [ConnectorSchemaSource(sales), ConnectorSchemaSource(other), NotesSource({"n": "x"})]
    )
    resolver.remove_connector("sales")
    assert [s.name for s in resolver.sources] == ["schema:other", "notes"]
    resolver.remove_connector("never-registered")  # nothing to do is no error
    assert len(resolver.sources) == 2
    sales.close()
    other.close()
