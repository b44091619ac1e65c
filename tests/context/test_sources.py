"""The built-in context sources, on real connectors and real DataFrames."""

from __future__ import annotations

import sqlite3
import threading

import pandas as pd
import pytest

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.context.sources import (
    ConnectorSchemaSource,
    DataFrameNamespaceSource,
    NotesSource,
    RecentTurnsSource,
    SkillGuardrailsSource,
)
from relay_nb.context.types import ContextRequest
from relay_nb.testing.seed import seed_database


def ask(question: str, **fields) -> ContextRequest:
    return ContextRequest(question=question, **fields)


async def test_guardrails_are_top_priority_items():
    source = SkillGuardrailsSource({"privacy": "Never show e-mail addresses.", "empty": " "})
    items = await source.fetch(ask("anything"))
    assert [(i.title, i.priority) for i in items] == [("privacy", 100)]


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    path = tmp_path_factory.mktemp("ctx") / "shop.sqlite"
    seed_database(f"sqlite:///{path}")
    connector = SQLConnector(
        "shop", f"sqlite:///{path}", tables=["customers", "orders", "products"]
    )
    yield connector
    connector.close()


async def test_schema_source_renders_the_connector_and_respects_connector_ids(shop):
    source = ConnectorSchemaSource(shop)
    (item,) = await source.fetch(ask("revenue by status"))
    assert item.source == "schema:shop" and item.priority == 70
    assert "orders(" in item.content and "query_shop" in item.content
    assert await source.fetch(ask("x", connector_ids=("other",))) == []


@pytest.fixture(scope="module")
def wide_catalog(tmp_path_factory):
    """1,000 dull tables plus one that answers the question."""
    path = tmp_path_factory.mktemp("wide") / "wide.sqlite"
    db = sqlite3.connect(path)
    for n in range(1000):
        cols = ", ".join(f"attr_{c} TEXT" for c in range(8))
        db.execute(f"CREATE TABLE sensor_{n:04d} (id INTEGER PRIMARY KEY, {cols})")
    db.execute(
        "CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer TEXT, due_date DATE, "
        "amount REAL, paid_at DATE)"
    )
    db.commit()
    db.close()
    connector = SQLConnector("wide", f"sqlite:///{path}")
    yield connector
    connector.close()


async def test_schema_ranking_picks_the_relevant_table_of_a_wide_schema(wide_catalog):
    source = ConnectorSchemaSource(wide_catalog)
    (item,) = await source.fetch(ask("Which invoices are overdue and by how much?", budget=400))
    assert "invoices(" in item.content
    assert item.token_estimate <= 420
    assert item.content.count("sensor_") < 1000  # the rest were summarised, not listed


async def test_prewarm_reads_the_catalog_before_the_first_question(wide_catalog):
    source = ConnectorSchemaSource(wide_catalog)
    wide_catalog._catalog = None
    await source.prewarm(ask(""))
    assert wide_catalog._catalog is not None


async def test_prewarm_reads_the_catalog_off_the_event_loop():
    # checking for the catalog property evaluates it: that read used to block the loop
    loop_thread = threading.get_ident()

    class Slow:
        id = "slow"

        def __init__(self) -> None:
            self.read_on_loop: list[bool] = []

        @property
        def catalog(self) -> str:
            self.read_on_loop.append(threading.get_ident() == loop_thread)
            return "catalog"

    class NoCatalog:
        id = "plain"

        def __init__(self) -> None:
            self.rendered_on_loop: list[bool] = []

        def prompt_context(self) -> str:
            self.rendered_on_loop.append(threading.get_ident() == loop_thread)
            return "context"

    slow, plain = Slow(), NoCatalog()
    await ConnectorSchemaSource(slow).prewarm(ask(""))
    await ConnectorSchemaSource(plain).prewarm(ask(""))
    assert slow.read_on_loop == [False]
    assert plain.rendered_on_loop == [False]


async def test_dataframe_summaries_are_bounded_and_mentioned_frames_rank_higher():
    sales = pd.DataFrame(
        {"region": ["north", "south"], "amount": [1.5, 2.0], "note": ["x" * 500, "y"]}
    )
    namespace = {"sales": sales, "costs": sales.head(1), "_hidden": sales, "n": 3}
    source = DataFrameNamespaceSource(namespace)
    items = {i.title: i for i in await source.fetch(ask("total sales per region"))}
    assert set(items) == {"sales", "costs"}
    assert items["sales"].priority == 65 and items["costs"].priority == 55
    assert "2 rows x 3 columns" in items["sales"].content
    assert "region object" in items["sales"].content or "region str" in items["sales"].content
    assert "x" * 100 not in items["sales"].content  # cells are clipped
    namespace["later"] = sales  # frames created after construction are seen
    assert "later" in {i.title for i in await source.fetch(ask("?"))}


async def test_recent_turns_newest_first_and_memory_last():
    turns = [("q1", "a1"), ("q2", "a2"), ("q3", "a3")]
    source = RecentTurnsSource(
        lambda: turns, memory="Earlier: the analyst studies churn.", max_turns=2
    )
    items = await source.fetch(ask("next"))
    assert [i.content.splitlines()[0] for i in items[:2]] == ["Q: q3", "Q: q2"]
    assert [i.priority for i in items] == [60, 58, 40]
    assert items[-1].title == "memory"


async def test_notes_are_retrieved_lexically():
    docs = {
        "glossary": (
            "Churn: a customer with no order in the last 90 days.\n\nARPU: revenue per user."
        ),
        "style": "Round money to two decimals.",
    }
    source = NotesSource(docs, top_k=2, chunk_chars=60)
    items = await source.fetch(ask("Which customers churned last quarter?"))
    assert items and items[0].title == "glossary" and "Churn" in items[0].content
    assert all(10 <= i.priority <= 49 for i in items)
    assert await source.fetch(ask("zebra")) == []
