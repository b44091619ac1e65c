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
