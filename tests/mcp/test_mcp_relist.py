"""A background re-list that changes the server's tools: the registry offers the new tools
on the next build, a tool named in the options that the server dropped is left out with a
note (strict at connect and refresh), prompts stop waiting after a failed re-list, and
refresh() releases whoever waits on a re-list it supersedes."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from mcp_support import SERVER

from relay_nb.connectors.mcp import MCP
from relay_nb.connectors.mcp.connector import MCPConnector, _Reload
from relay_nb.connectors.registry import ConnectorRegistry
from relay_nb.errors import ConfigurationError


def mutable(connector_id: str, **options: Any) -> MCPConnector:
    return MCP(command=[*SERVER, "--mutable-tools"], timeout_s=10, **options).build_connector(
        connector_id
    )


def relist(connector: MCPConnector) -> None:
    """What the registry's TTL expiry does, then wait for the re-list to be swapped in."""
    connector.invalidate()
    reload = connector._reload
    assert reload is not None and reload.finished.wait(20)


def test_the_registry_offers_the_tools_of_a_background_re_list() -> None:
    registry = ConnectorRegistry()
    connector = mutable("grow")
    registry.add(connector)
    try:
        assert "grow_beta" not in {t.name for t in registry.tools("grow")}
        version = connector.tools_version
        connector.call_tool("add_tool", {"name": "beta"})
        relist(connector)
        assert connector.tools_version == version + 1
        assert "grow_beta" in {t.name for t in registry.tools("grow")}
        relist(connector)  # the same tools again: nothing to rebuild
        assert connector.tools_version == version + 1
    finally:
        registry.close()


def test_a_dropped_tool_named_in_the_options_is_left_out_with_a_note_after_a_re_list() -> None:
    connector = mutable("shrink", read_only_tools=["extra"])
    try:
        assert "shrink_extra" in {t.name for t in connector.tools()}
        connector.call_tool("drop_tool", {"name": "extra"})
        relist(connector)
        names = {t.name for t in connector.tools()}  # no ConfigurationError
        assert "shrink_extra" not in names and "shrink_add_tool" in names
        context = connector.prompt_context()
        assert "Note: the server no longer offers extra (named in read_only_tools)" in context
        with pytest.raises(ConfigurationError, match=r"no tool.*'extra'.*read_only_tools"):
            connector.refresh()  # strict, as at connect
    finally:
        connector.close()


def test_connect_stays_strict_about_a_missing_tool() -> None:
    connector = mutable("strict", tools=["nope"])
    try:
        with pytest.raises(ConfigurationError, match=r"no tool.*'nope'.*named in tools"):
            connector.tools()
    finally:
        connector.close()


class _CountingEvent(threading.Event):
    def __init__(self) -> None:
        super().__init__()
        self.waits = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        return super().wait(0)


def test_after_a_failed_re_list_prompts_do_not_wait_for_the_next_one(
    stdio_files: MCPConnector, monkeypatch
) -> None:
    stdio_files.documents()
    reload = _Reload(stdio_files._generation)
    reload.listed, reload.finished = _CountingEvent(), _CountingEvent()  # never set
    monkeypatch.setattr(stdio_files, "_start_reload", lambda: reload)
    monkeypatch.setattr(stdio_files, "_stale", True)
    monkeypatch.setattr(stdio_files, "_reload_note", "listing its tools again failed (down)")
    assert "listing its tools again failed" in stdio_files.prompt_context()
    assert stdio_files.documents()
    assert reload.listed.waits == 0 and reload.finished.waits == 0


def test_refresh_releases_those_waiting_for_a_re_list_it_supersedes() -> None:
    connector = mutable("super")
    connector.tools()
    release = threading.Event()
    real_list = connector._list

    def listing() -> Any:
        if threading.current_thread().name.startswith("relay-mcp-relist"):
            release.wait(30)  # the background re-list hangs until the end of the test
        return real_list()

    connector._list = listing  # type: ignore[method-assign]
    try:
        connector.invalidate()
        reload = connector._reload
        assert reload is not None and not reload.listed.is_set()
        connector.refresh()
        assert reload.listed.is_set() and reload.finished.is_set()
        assert not connector._stale
    finally:
        release.set()
        connector.close()


def test_a_re_list_whose_names_clash_leaves_the_newcomer_out_and_turns_go_on() -> None:
    """A server that adds, after connecting, a tool whose agent name another already has —
    its own (``add.tool`` next to ``add_tool``) or another connector's (``x_extra`` on
    ``a`` is ``a_x_extra``, the ``extra`` of connector ``a_x``): the turn goes on without
    the newcomer. (Before, every later turn of the session raised "two tools are named".)"""
    from relay_nb import Relay, ScriptedRuntime

    relay = Relay(ScriptedRuntime([{"text": "fine"}]), ledger=False)
    try:
        first = mutable("a")
        relay.connect("a", first)
        relay.connect("a_x", mutable("a_x"))
        first.call_tool("add_tool", {"name": "add.tool"})
        first.call_tool("add_tool", {"name": "x_extra"})
        relist(first)
        names = [t.name for t in first.tools()]
        assert len(names) == len(set(names)) and names.count("a_add_tool") == 1
        turn = relay.ask("anything new?")
        assert turn.answer == "fine"
        first.refresh()  # strict again, as at connect: the clash is named
        with pytest.raises(ConfigurationError, match="both become"):
            first.tools()
    finally:
        relay.close()


def test_a_server_listing_hundreds_of_tools_offers_the_first_128() -> None:
    """Each tool is declared in every model request: a red team's server listed 25,000
    (61.6 MB a request). The listing stops at MAX_TOOLS and says so."""
    from relay_nb.connectors.mcp.catalog import MAX_TOOLS

    connector = mutable("many")
    try:
        for n in range(MAX_TOOLS + 20):
            connector.call_tool("add_tool", {"name": f"t{n:03d}"})
        relist(connector)
        assert len(connector.tools()) == MAX_TOOLS
        assert f"more than {MAX_TOOLS} tools" in connector.prompt_context()
    finally:
        connector.close()


def test_a_tool_with_a_huge_input_schema_is_left_out_with_a_note() -> None:
    from relay_nb.connectors.mcp.catalog import MAX_SCHEMA_CHARS

    connector = mutable("bulk")
    try:
        connector.call_tool("add_bulky_tool", {"name": "fine", "chars": 200})
        connector.call_tool("add_bulky_tool", {"name": "huge", "chars": MAX_SCHEMA_CHARS * 3})
        relist(connector)
        names = {t.name for t in connector.tools()}
        assert "bulk_fine" in names and "bulk_huge" not in names
        assert "input schema over" in connector.prompt_context()
    finally:
        connector.close()
