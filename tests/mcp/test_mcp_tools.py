"""MCP tools as agent tools, over stdio and over streamable HTTP against the real test server:
names, schemas, approval, result mapping, prompts, targets."""

from __future__ import annotations

import os
import sys

import pytest
from mcp_support import by_name, stdio_connector

from relay_nb.connectors.mcp import MCP
from relay_nb.connectors.mcp.connector import MCPConnector
from relay_nb.connectors.results import QueryResult
from relay_nb.testing.mcp_server import SALES, build_server

SERVER_TOOLS = {
    "list_files",
    "read_file",
    "sales_by_region",
    "write_note",
    "slow",
    "crash",
    "server_pid",
    "env_status",
    "header_status",
    "chart",
    "fail",
    "files.search",
    "slow_calls",
    "helper_pid",
    "endless_line",
    "big_records",
    "big_text",
}


def test_tools_are_prefixed_by_the_connector_id_and_sanitised(connector: MCPConnector) -> None:
    tools = connector.tools()
    names = {tool.name for tool in tools}
    assert names == {f"{connector.id}_{n.replace('.', '_')}" for n in SERVER_TOOLS}
    assert f"{connector.id}_files_search" in names  # "files.search": dots are not allowed
    assert {tool.metadata["mcp_tool"] for tool in tools} == SERVER_TOOLS
    assert all(tool.metadata["connector"] == connector.id for tool in tools)


async def test_descriptions_and_input_schemas_pass_through(connector: MCPConnector) -> None:
    published = {t.name: t for t in await build_server().list_tools()}
    for tool in connector.tools():
        server = published[tool.metadata["mcp_tool"]]
        spec = tool.spec()
        assert spec["description"].startswith(server.description)
        expected = {k: v for k, v in server.input_schema.items() if k != "title"}
        assert spec["input_schema"] == expected
    region = by_name(connector)[f"{connector.id}_sales_by_region"].spec()["input_schema"]
    assert region["properties"]["region"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert region["properties"]["min_orders"] == {
        "default": 0,
        "title": "Min Orders",
        "type": "integer",
    }


async def test_a_read_only_tool_runs_and_returns_its_text(connector: MCPConnector) -> None:
    tools = by_name(connector)
    listed = await tools[f"{connector.id}_list_files"].run({})
    assert not listed.is_error
    assert listed.content.splitlines() == ["notes/q3.txt", "notes/q4.txt", "readme.md"]
    read = await tools[f"{connector.id}_read_file"].run({"path": "notes/q3.txt"})
    assert read.content == "Q3: churn fell to 2.1%; the north region grew fastest."
    found = await tools[f"{connector.id}_files_search"].run({"term": "CHURN"})
    assert found.content.splitlines() == ["notes/q3.txt", "notes/q4.txt"]


def test_only_tools_the_server_marks_read_only_skip_approval(connector: MCPConnector) -> None:
    needs = {t.metadata["mcp_tool"] for t in connector.tools() if t.requires_approval}
    assert needs == {"write_note"}
    note = by_name(connector)[f"{connector.id}_write_note"]
    assert "approval" in note.description


def test_the_analyst_decides_which_tools_are_read_only() -> None:
    declared = stdio_connector(read_only_tools=["write_note"], trust_read_only_hints=False)
    try:
        needs = {t.metadata["mcp_tool"] for t in declared.tools() if t.requires_approval}
        assert needs == SERVER_TOOLS - {"write_note"}
        assert "files_write_note (read-only)" in declared.prompt_context()
        assert "files_list_files (needs approval)" in declared.prompt_context()
    finally:
        declared.close()


def test_tool_allowlist_and_unknown_names_are_checked() -> None:
    picked = stdio_connector(tools=["list_files", "sales_by_region"], read_only_tools=["nope"])
    try:
        with pytest.raises(Exception, match=r"no tool\(s\) 'nope' named in read_only_tools"):
            picked.tools()
    finally:
        picked.close()


async def test_structured_records_become_a_dataframe(connector: MCPConnector) -> None:
    tool = by_name(connector)[f"{connector.id}_sales_by_region"]
    result = await tool.run({"region": "north"})
    assert not result.is_error
    assert isinstance(result.artifact, QueryResult)
    frame = result.artifact.df
    assert list(frame.columns) == ["region", "month", "revenue", "orders"]
    assert frame.to_dict("records") == [row for row in SALES if row["region"] == "north"]
    assert result.artifact.language == "mcp"
    assert result.artifact.connector_id == connector.id
    assert '"tool": "sales_by_region"' in result.artifact.executed_sql
    lines = result.content.splitlines()
    assert lines[0] == "2 rows"
    assert lines[2:] == [
        "region,month,revenue,orders",
        "north,2026-01,1200.5,14",
        "north,2026-02,1350.0,16",
    ]


async def test_images_become_placeholders_and_errors_tool_errors(connector: MCPConnector) -> None:
    tools = by_name(connector)
    image = await tools[f"{connector.id}_chart"].run({})
    assert not image.is_error
    assert image.content == "[image (image/png, 68 bytes) returned; not shown to the model]"
    failed = await tools[f"{connector.id}_fail"].run({"reason": "the ledger is locked"})
    assert failed.is_error and "the ledger is locked" in failed.content
    bad = await tools[f"{connector.id}_read_file"].run({"path": 3})
    assert bad.is_error and "path" in bad.content  # the server validates against its schema


def test_prompts_are_listed_not_run(connector: MCPConnector) -> None:
    prompts = connector.prompts()
    assert [p.signature() for p in prompts] == ["summarise_file(path)", "weekly_report()"]
    context = connector.prompt_context()
    assert "summarise_file(path) — Summarise one file from the team drive." in context
    assert "not run" in context
    assert "Summarise the file" not in context  # the template's text was never fetched
    names = connector.object_names()
    assert {"prompt:summarise_file", "prompt:weekly_report", "resource:docs://glossary"} <= set(
        names
    )
    assert "sales_by_region" in names


def test_prompt_context_describes_the_server_and_fits_a_budget(connector: MCPConnector) -> None:
    full = connector.prompt_context()
    where = "a local server (stdio)" if connector.launch.transport == "stdio" else connector.target
    assert full.startswith(f"### MCP connector: {connector.id} — {where}\n")
    assert sys.executable not in full  # how this machine starts the server is not the model's
    assert "relay-test-drive 1.0 — A team drive with notes" in full
    assert f"- {connector.id}_sales_by_region (read-only): Monthly revenue" in full
    assert "Resources (4): glossary, readme, logo, handbook" in full
    small = connector.prompt_context(max_tokens=90, question="revenue by region")
    assert len(small) <= 90 * 4 + 120
    assert f"{connector.id}_sales_by_region" in small  # the tool the question is about stays
    assert "more tools not listed here" in small


def test_targets_show_the_command_or_masked_url(stdio_files, http_docs, http_url) -> None:
    program = os.path.basename(sys.executable)  # a name, not the machine's venv path
    assert stdio_files.target == f"stdio: {program} -m relay_nb.testing.mcp_server"
    assert stdio_files.kind == "mcp" and http_docs.kind == "mcp"
    assert repr(stdio_files) == f"<MCPConnector 'files' {stdio_files.target}>"
    assert http_docs.target == http_url and http_url.startswith("http://127.0.0.1:")
    assert repr(http_docs) == f"<MCPConnector 'docs' {http_url}>"
    with_password = MCP(url=http_url.replace("http://", "http://reader:pw-77d1c9e0aa@"))
    masked = with_password.build_connector("masked")
    try:
        assert masked.target == http_url.replace("http://", "http://reader:[REDACTED]@")
        assert "pw-77d1c9e0aa" not in repr(masked)
    finally:
        masked.close()


def test_the_test_server_starts_without_docstrings() -> None:
    # python -OO drops the module docstring its --help is taken from (it used to fail with
    # an AttributeError on None before parsing a single argument)
    import subprocess

    done = subprocess.run(
        [sys.executable, "-OO", "-m", "relay_nb.testing.mcp_server", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--transport" in done.stdout
