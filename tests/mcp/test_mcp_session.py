"""An MCP server in a real session: its resources reach the prompt through the documents
context source, its tools run in turns (approval honoured), and a Relay turn end to end —
scripted model, real server over stdio and HTTP."""

from __future__ import annotations

import pytest
from mcp_support import SERVER, stdio_connector

from relay_nb import Relay, ScriptedRuntime
from relay_nb.agent.approval import approve_all
from relay_nb.agent.session import Session
from relay_nb.connectors.base import Connector, ConnectorDocument
from relay_nb.connectors.mcp import MCP
from relay_nb.context import ContextRequest
from relay_nb.context.connector_documents import ConnectorDocumentsSource, has_documents
from relay_nb.runtime.types import InvocationRequest, ToolResultPart
from relay_nb.tools import Tool


def system_text(request: InvocationRequest) -> str:
    return request.messages[0].text()


def tool_results(request: InvocationRequest) -> list[ToolResultPart]:
    return [p for m in request.messages for p in m.parts() if isinstance(p, ToolResultPart)]


def call(name: str, arguments: dict, call_id: str = "c1") -> dict:
    return {"tool_calls": [{"name": name, "input": arguments, "id": call_id}]}


async def test_resources_matching_the_question_reach_the_prompt(connector) -> None:
    runtime = ScriptedRuntime([{"text": "churn is cancellations"}])
    session = Session(runtime, connectors=[connector])
    names = [source.name for source in session.resolver.sources]
    assert f"documents:{connector.id}" in names and f"schema:{connector.id}" in names
    turn = await session.ask_async("what does churn mean in the sales figures?")
    system = system_text(runtime.requests[0])
    assert f'<context source="documents:{connector.id}" title="glossary">' in system
    assert "Churn: an account that cancelled its subscription" in system
    assert f'<context source="schema:{connector.id}">' in system
    assert "PNG" not in system and "iVBOR" not in system  # the binary logo is never read
    (resolved,) = [e for e in turn.events if e.type == "context_resolved"]
    assert f"documents:{connector.id}" in resolved.sources
    assert "Not read: logo (image/png): binary, not read" in connector.prompt_context()
    session.remove_connector(connector.id, close=False)
    assert [s.name for s in session.resolver.sources] == ["memory"]


async def test_the_documents_source_ranks_caps_and_skips() -> None:
    class Wiki(Connector):
        id, kind, name = "wiki", "test", "wiki"

        def __init__(self) -> None:
            self.reads = 0

        def tools(self) -> list[Tool]:
            return []

        def prompt_context(self, *, max_tokens=None, question=None) -> str:
            return "wiki"

        def documents(self) -> list[ConnectorDocument]:
            self.reads += 1
            return DOCS

    DOCS = [
        ConnectorDocument("refunds", "Refunds are paid within 14 days of a return.", "wiki://r"),
        ConnectorDocument("shipping", "Shipping is free above 50 euros.", "wiki://s"),
    ]
    wiki = Wiki()
    assert has_documents(wiki) and not has_documents(stdio_placeholder())
    source = ConnectorDocumentsSource(wiki)
    items = await source.fetch(ContextRequest(question="how long do refunds take?"))
    assert [(i.title, i.priority, i.source) for i in items] == [("refunds", 45, "documents:wiki")]
    assert await source.fetch(ContextRequest(question="weather tomorrow")) == []
    other = ContextRequest(question="refunds", connector_ids=("shop",))
    assert await source.fetch(other) == []  # a skill without this connector sees nothing


def stdio_placeholder() -> Connector:
    """A connector class without documents (the base default)."""

    class Plain(Connector):
        id, kind, name = "plain", "test", "plain"

        def tools(self) -> list[Tool]:
            return []

        def prompt_context(self, *, max_tokens=None, question=None) -> str:
            return ""

    return Plain()


async def test_a_large_resource_is_cut_to_its_cap() -> None:
    capped = stdio_connector("capped", max_resource_chars=500)
    try:
        documents = {d.title: d for d in capped.documents()}
        assert set(documents) == {"glossary", "readme", "handbook"}
        handbook = documents["handbook"].text
        assert handbook.endswith("[cut at 500 characters]") and len(handbook) < 600
        assert documents["glossary"].uri == "docs://glossary"
    finally:
        capped.close()


async def test_tools_that_may_change_data_need_approval_in_a_turn(stdio_files) -> None:
    note = {"path": "notes/todo.txt", "text": "call the south region"}
    denied_model = ScriptedRuntime([call("files_write_note", note), {"text": "not saved"}])
    session = Session(denied_model, connectors=[stdio_files])
    denied = await session.ask_async("save a todo note")
    (result,) = tool_results(denied_model.requests[1])
    assert result.is_error and "requires approval" in result.content
    assert "notes/todo.txt" not in stdio_files.call_tool("list_files").content
    session.remove_connector("files", close=False)

    approved_model = ScriptedRuntime([call("files_write_note", note), {"text": "saved"}])
    session = Session(approved_model, connectors=[stdio_files], approver=approve_all)
    approved = await session.ask_async("save a todo note")
    (result,) = tool_results(approved_model.requests[1])
    assert not result.is_error and result.content == "saved notes/todo.txt (21 characters)"
    assert "notes/todo.txt" in stdio_files.call_tool("list_files").content
    assert denied.answer == "not saved" and approved.answer == "saved"
    session.remove_connector("files", close=False)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_relay_turn_calls_an_mcp_tool_end_to_end(transport: str, http_url: str) -> None:
    script = [call("drive_sales_by_region", {"region": "south"})]
    if transport == "stdio":  # then the server crashes mid-turn
        script.append(call("drive_crash", {}, "c2"))
    model = ScriptedRuntime([*script, {"text": "South made 1560.25 over two months."}])
    relay = Relay(model, ledger=False)
    spec = MCP(command=SERVER) if transport == "stdio" else MCP(url=http_url)
    relay.connect("drive", spec)  # a descriptor: relay.connect calls its build_connector
    try:
        turn = relay.ask("how much revenue did the south region make?")
        assert turn.answer == "South made 1560.25 over two months."
        assert turn.df is not None and list(turn.df["revenue"]) == [800.25, 760.0]
        assert turn.queries == ['{"tool": "sales_by_region", "arguments": {"region": "south"}}']
        assert turn.tool_calls[0].name == "drive_sales_by_region"
        first = tool_results(model.requests[1])[0]
        assert first.content.startswith("2 rows\ncolumns: region")
        if transport == "stdio":  # the server crashed mid-turn: a tool error, the turn went on
            crashed = tool_results(model.requests[2])[-1]
            assert crashed.is_error and "exited or crashed" in crashed.content
            again = relay.connectors["drive"].call_tool("list_files")  # and it reconnects
            assert "readme.md" in again.content
        tools = [spec["name"] for spec in (t.model_dump() for t in model.requests[0].tools)]
        assert "drive_list_files" in tools and "drive_files_search" in tools
    finally:
        relay.disconnect("drive")
