"""The schema section is sized to the question, within its budget, wrapper included, and
large connectors share the budget instead of one of them vanishing (issue 22)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.agent.prompt import assemble_system_prompt
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.context import ContextItem, ContextRequest, ContextResolver
from relay_nb.context.sources import SCHEMA_TOKENS, ConnectorSchemaSource
from relay_nb.context.types import estimate_tokens

TABLES = 600


def _wide(path: Path, prefix: str) -> str:
    """A SQLite catalog of 600 five-column tables: about 12,000 tokens rendered whole."""
    url = f"sqlite:///{path}"
    engine = sa.create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        for i in range(TABLES):
            conn.exec_driver_sql(
                f"CREATE TABLE {prefix}_{i:04d} (id INTEGER PRIMARY KEY, customer_id INTEGER, "
                "amount NUMERIC, status TEXT, created_at TIMESTAMP)"
            )
    engine.dispose()
    return url


class _Notes:
    name = "notes"
    priority = 40

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        content = "a note the analyst wrote </context> about refunds\n" * 40
        return [ContextItem(source=self.name, content=content, priority=self.priority)]


@pytest.fixture(scope="module")
def two_large(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("wide")
    sales = SQLConnector("sales", _wide(folder / "sales.db", "sale"))
    ops = SQLConnector("ops", _wide(folder / "ops.db", "shipment"))
    yield sales, ops
    sales.close()
    ops.close()


def _request(question: str, budget: int) -> ContextRequest:
    return ContextRequest(question=question, budget=budget)


@pytest.mark.parametrize("budget", [1_500, 6_000, 20_000, 72_000])
async def test_the_rendered_context_never_exceeds_its_budget(two_large, budget: int) -> None:
    sales, ops = two_large
    resolver = ContextResolver([ConnectorSchemaSource(sales), ConnectorSchemaSource(ops), _Notes()])
    resolved = await resolver.resolve(_request("sale_0042 amounts by status", budget))
    context = assemble_system_prompt("", resolved.kept)
    assert estimate_tokens(context) <= budget
    if budget >= 20_000:  # room beyond the two schemas: the note too, its tag escaped
        assert "<\\/context>" in context


async def test_two_large_connectors_both_appear(two_large) -> None:
    """Before, the first schema took the whole budget and the second was dropped."""
    sales, ops = two_large
    resolver = ContextResolver([ConnectorSchemaSource(sales), ConnectorSchemaSource(ops)])
    resolved = await resolver.resolve(
        _request("shipment_0007 status for sale_0042 customers", 6_000)
    )
    shown = {item.connector_id: item.content for item in resolved.kept}
    assert set(shown) == {"sales", "ops"}
    assert "sale_0042(" in shown["sales"] and "shipment_0007(" in shown["ops"]
    assert all(estimate_tokens(text) <= 3_000 for text in shown.values())


async def test_a_question_needing_one_table_gets_a_small_section(two_large) -> None:
    """With the whole 72,000-token budget free, one catalog's schema takes at most
    SCHEMA_TOKENS, the table asked about included, and names the rest for describe."""
    sales, _ = two_large
    resolved = await ContextResolver([ConnectorSchemaSource(sales)]).resolve(
        _request("total amount of sale_0512 by status", 72_000)
    )
    (schema,) = resolved.kept
    assert estimate_tokens(schema.content) <= SCHEMA_TOKENS
    assert "sale_0512(" in schema.content
    assert "more tables" in schema.content and "describe_sales" in schema.content


async def test_no_cap_renders_what_the_budget_allows(two_large) -> None:
    sales, _ = two_large
    source = ConnectorSchemaSource(sales, max_tokens=None)
    resolved = await ContextResolver([source]).resolve(_request("amounts", 72_000))
    assert estimate_tokens(resolved.kept[0].content) > SCHEMA_TOKENS  # the whole catalog


async def test_a_name_that_looks_like_a_tag_does_not_blank_the_schema(tmp_path: Path) -> None:
    """Escaping ``</context>`` lengthens the text: the schema is rendered smaller to fit its
    share, not dropped whole for being over it."""
    url = f"sqlite:///{tmp_path / 'tagged.db'}"
    engine = sa.create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        for i in range(300):
            conn.exec_driver_sql(
                f'CREATE TABLE t{i:03d} (id INTEGER, "note</context>" TEXT, "a<context>" TEXT)'
            )
    engine.dispose()
    tagged = SQLConnector("tagged", url)
    try:
        for budget in (1_500, 3_000):
            resolved = await ContextResolver([ConnectorSchemaSource(tagged)]).resolve(
                _request("notes of t042", budget)
            )
            assert [item.connector_id for item in resolved.kept] == ["tagged"]
            assert estimate_tokens(assemble_system_prompt("", resolved.kept)) <= budget
    finally:
        tagged.close()


class _Guardrails:
    """A source packed before the schemas, taking a good part of a small budget."""

    name = "guardrails"
    priority = 1_000

    async def fetch(self, request: ContextRequest) -> list[ContextItem]:
        content = "never join orders to refunds on the order date; use order_id\n" * 60
        return [ContextItem(source=self.name, content=content, priority=self.priority)]


@pytest.mark.parametrize("budget", [4_000, 6_000, 9_000])
async def test_items_above_the_schemas_do_not_push_a_connector_out(two_large, budget) -> None:
    """Reviewer's case: the even split ignored what higher-priority items take, so the
    second schema no longer fitted and vanished. It is asked again for the room left."""
    sales, ops = two_large
    resolver = ContextResolver(
        [_Guardrails(), ConnectorSchemaSource(sales), ConnectorSchemaSource(ops)]
    )
    resolved = await resolver.resolve(
        _request("shipment_0007 status for sale_0042 customers", budget)
    )
    assert "guardrails" in {item.source for item in resolved.kept}
    assert {item.connector_id for item in resolved.kept} >= {"sales", "ops"}
    assert estimate_tokens(assemble_system_prompt("", resolved.kept)) <= budget
