"""Many connectors in one session (issue 35, goal 5): the tools become one per kind that takes
the connector's name, the question chooses which schemas it shows, and the request stays
within the window — real SQLite databases, scripted model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from relay_nb.agent.session import Session
from relay_nb.agent.tool_groups import ToolGrouper, declared_tokens
from relay_nb.connectors.guarded import QueryInput
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.context import allocate_budget
from relay_nb.context.schemas import SCHEMA_FLOOR, shown_count
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import ToolResultPart, estimate_request_tokens
from relay_nb.tools import Tool

COUNT = 120  # past both thresholds on a 200k window: 18,000 tokens of tools, 72 schemas


@pytest.fixture(scope="module")
def billing_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database none of the shops resembles: the one a question about invoices means."""
    path = tmp_path_factory.mktemp("billing") / "billing.sqlite"
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
        conn.exec_driver_sql("INSERT INTO invoices VALUES (1, 12.5), (2, 30.0)")
    engine.dispose()
    return path


@pytest.fixture
def many(shop_db: Path, billing_db: Path) -> Iterator[list[SQLConnector]]:
    connectors = [SQLConnector(f"db{i:03d}", f"sqlite:///{shop_db}") for i in range(COUNT)]
    connectors.insert(77, SQLConnector("billing", f"sqlite:///{billing_db}"))
    yield connectors
    for connector in connectors:
        connector.close()


def _system(request) -> str:
    return "\n".join(
        part.text
        for message in request.messages
        if message.role == "system"
        for part in message.parts()
        if hasattr(part, "text")
    )


async def test_the_first_request_stays_within_the_window(many: list[SQLConnector]) -> None:
    session = Session(ScriptedRuntime(), connectors=many)
    own = [t for c in many for t in session.connectors.tools(c.id)]
    budget = allocate_budget(session.settings.context_window)
    assert declared_tokens(own) > budget.system  # what this test is about
    request = await session.first_request("how many customers are there in db042?")
    names = [tool.name for tool in request.tools]
    assert "query_sql" in names and "describe_sql" in names
    assert not any(name.startswith("query_db") for name in names)
    assert estimate_request_tokens(request) < budget.system + budget.context
    system = _system(request)
    # the connector the question names is shown whole, and the others are named
    assert "SQL connector: db042" in system
    assert system.count("SQL connector: ") == shown_count(budget.context)
    assert "more connectors" in system and "db119" in system
    await session.aclose()


async def test_a_grouped_tool_runs_the_named_connectors_own_query(
    many: list[SQLConnector],
) -> None:
    runtime = ScriptedRuntime()
    runtime.add(
        {
            "tool_calls": [
                {
                    "name": "query_sql",
                    "input": {
                        "connector": "billing",
                        "sql": "SELECT sum(amount) AS s FROM invoices",
                    },
                    "id": "c1",
                },
                {
                    "name": "query_sql",
                    "input": {"connector": "biling", "sql": "SELECT 1"},
                    "id": "c2",
                },
                {
                    "name": "query_sql",
                    "input": {"connector": "db003", "sql": "DELETE FROM customers"},
                    "id": "c3",
                },
            ]
        }
    )
    runtime.add({"text": "42.5"})
    session = Session(runtime, connectors=many)
    result = await session.ask_async("what do the invoices add up to?")
    outcomes = {o.tool_call_id: o for o in result.tool_results}
    assert not outcomes["c1"].is_error
    assert outcomes["c1"].artifact is not None
    assert outcomes["c1"].artifact.df["s"].tolist() == [42.5]
    assert outcomes["c1"].artifact.connector_id == "billing"
    assert outcomes["c2"].is_error and "'biling'" in outcomes["c2"].content
    assert "did you mean billing?" in outcomes["c2"].content
    assert outcomes["c3"].is_error  # the connector's own guard refuses it
    sent = [
        p for m in runtime.requests[1].messages for p in m.parts() if isinstance(p, ToolResultPart)
    ]
    assert len(sent) == 3
    # the question about invoices showed the billing connector's schema
    assert "SQL connector: billing" in _system(runtime.requests[0])
    await session.aclose()


async def test_a_few_connectors_keep_their_own_tools(shop_db: Path) -> None:
    connectors = [SQLConnector(f"db{i}", f"sqlite:///{shop_db}") for i in range(3)]
    session = Session(ScriptedRuntime(), connectors=connectors)
    request = await session.first_request("how many customers?")
    names = {tool.name for tool in request.tools}
    assert {"query_db0", "describe_db2"} <= names and "query_sql" not in names
    assert "more connectors" not in _system(request)
    await session.aclose()
    for connector in connectors:
        connector.close()


def _tool(name: str, connector: str, **options) -> Tool:
    async def handler(arguments) -> str:
        return "ok"

    return Tool(
        name,
        "d",
        QueryInput,
        handler,
        metadata={"connector": connector, "kind": "sql"},
        **options,
    )


def test_grouped_names_never_shadow_another_tool() -> None:
    tools = [_tool(f"query_c{i}", f"c{i}") for i in range(50)] + [_tool("query_sql", "sql")]
    selected = ToolGrouper().select(tools, allotment=10, taken={"query_sql_2"})
    assert [tool.name for tool in selected] == ["query_sql_3"]


def test_tools_that_need_approval_or_fit_stay_as_they_are() -> None:
    tools = [_tool(f"query_c{i}", f"c{i}", requires_approval=True) for i in range(50)]
    assert ToolGrouper().select(tools, allotment=10, taken=set()) == tools
    plain = [_tool(f"query_c{i}", f"c{i}") for i in range(5)]
    assert ToolGrouper().select(plain, allotment=10**6, taken=set()) == plain


def test_the_floor_is_what_the_budget_gives_each_schema() -> None:
    # the many-connector fixture is over the floor's count on the default window
    assert allocate_budget(200_000).context // SCHEMA_FLOOR < COUNT + 1
