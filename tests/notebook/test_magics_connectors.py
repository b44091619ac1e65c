"""%relay --connect (URLs and notebook variables), --disconnect, --connectors, --refresh,
--config, and relay.config.json at %load_ext."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.facade import default as facade
from relay_nb.notebook.magics import RelayCellError
from relay_nb.testing.shell import TestingShell


def query(sql: str, tool: str = "query_sales") -> dict:
    return {"tool_calls": [{"name": tool, "input": {"sql": sql}, "id": "c1"}]}


def test_a_dataframe_variable_is_connected_by_name_so_rebinding_it_is_seen(
    shell: TestingShell, relay: Relay, model: ScriptedRuntime
) -> None:
    shell.ip.user_ns["sales"] = pd.DataFrame({"region": ["north", "south"], "amount": [5, 7]})
    out = shell.run("%relay --connect sales sales")
    assert "connected 'sales' (dataframe): query_sales" in out.stdout
    model.add(query("SELECT SUM(amount) AS total FROM sales"), {"text": "12"})
    assert shell.run("%relay total sales").result.df["total"].tolist() == [12]
    shell.run("sales = sales[sales.region == 'south']")  # a new object under the same name
    model.add(query("SELECT SUM(amount) AS total FROM sales"), {"text": "7"})
    assert shell.run("%relay total sales now").result.df["total"].tolist() == [7]
    shell.run("del sales")
    model.add(query("SELECT SUM(amount) AS total FROM sales"), {"text": "gone"})
    turn = shell.run("%relay and now").result
    error = turn.tool_results[0]
    assert error.is_error and "the notebook variable 'sales' no longer exists" in error.content


def test_connectors_table_disconnect_and_refresh(
    shell: TestingShell, relay: Relay, shop_url: str
) -> None:
    shell.run(f"%relay --connect archive {shop_url} --tables products,orders")
    shown = shell.run("%relay --connectors")
    assert "<th>objects</th>" in shown.htmls[0]
    frame = relay.connector_status()
    assert list(frame.columns) == ["id", "type", "target", "objects", "status"]
    archive = frame.set_index("id").loc["archive"]
    assert (archive["type"], archive["objects"], archive["status"]) == (
        "sql",
        "orders, products",
        "ok",
    )
    assert "schema re-read: shop, archive" in shell.run("%relay --refresh").stdout
    assert "disconnected 'archive'" in shell.run("%relay --disconnect archive").stdout
    assert list(relay.connectors) == ["shop"]
    with pytest.raises(RelayCellError, match="no connector 'archive'; registered: \\['shop'\\]"):
        shell.run("%relay --disconnect archive")


def test_a_connection_that_fails_says_why_and_registers_nothing(
    shell: TestingShell, relay: Relay, tmp_path: Path
) -> None:
    with pytest.raises(
        RelayCellError, match=r"cannot connect to 'pg'.*Connection refused"
    ) as caught:
        shell.run("%relay --connect pg postgresql+psycopg://reader:hunter2@127.0.0.1:1/shop")
    assert "hunter2" not in str(caught.value) and "\n" not in str(caught.value)
    missing = tmp_path / "missing.sqlite"
    with pytest.raises(RelayCellError, match="unable to open database file"):
        shell.run(f"%relay --connect lite sqlite:///{missing}")
    assert not missing.exists()  # never created
    assert list(relay.connectors) == ["shop"]


def test_passwords_are_masked_in_the_connectors_table(shell: TestingShell, relay: Relay) -> None:
    # a server that is down now, connected anyway: the status table says why
    relay.connect("pg", "postgresql+psycopg://reader:hunter2@127.0.0.1:1/shop", check=False)
    shown = shell.run("%relay --connectors")
    row = relay.connector_status().set_index("id").loc["pg"]
    assert row["target"] == "postgresql+psycopg://reader:[REDACTED]@127.0.0.1:1/shop"
    assert row["status"].startswith("error: could not read the schema of 'pg'")
    # shown whole, not clipped at pandas' 50 characters
    assert (
        html.escape(row["status"], quote=False) in shown.htmls[0]
        and row["status"] in shown.texts[0]
    )
    assert "hunter2" not in shown.htmls[0] + shown.texts[0]


def test_config_from_a_cell(
    shell: TestingShell, relay: Relay, shop_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "team.json"
    path.write_text(
        json.dumps({"connectors": [{"type": "sqlite", "id": "team", "config": {"url": shop_url}}]})
    )
    shell.ip.user_ns["team_config"] = str(path)
    assert "team.json: connected team" in shell.run("%relay --config {team_config}").stdout
    assert "team" in relay.connectors
    path.write_text("{")
    with pytest.raises(RelayCellError, match=r"team\.json is not valid JSON"):
        shell.run(f"%relay --config {path}")


def test_load_ext_reads_relay_config_json_and_a_broken_one_fails_loudly(
    shell: TestingShell, shop_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    facade._default = Relay(ScriptedRuntime(), ledger=False)
    try:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "relay.config.json").write_text(
            json.dumps({"connectors": [{"type": "sql", "id": "shop", "config": {"url": shop_url}}]})
        )
        out = shell.run("%reload_ext relay_nb")
        assert "relay.config.json: connected shop" in out.stdout
        assert list(facade._default.connectors) == ["shop"]

        monkeypatch.setenv("RELAY_CONFIG", str(tmp_path / "other.json"))
        (tmp_path / "other.json").write_text(
            json.dumps({"connectors": [{"type": "sql", "id": "x", "config": {"url": "${NOPE}"}}]})
        )
        with pytest.raises(RelayCellError, match=r"uses \$\{NOPE\}"):
            shell.run("%reload_ext relay_nb")
        # the magics are registered all the same: the analyst can fix it from a cell
        assert "connected" in shell.run(f"%relay --connect more {shop_url}").stdout
    finally:
        facade._default.close()
        facade._default = None


def test_a_quoted_url_connects(shell: TestingShell, relay: Relay, shop_url: str) -> None:
    assert "connected 'quoted'" in shell.run(f'%relay --connect quoted "{shop_url}"').stdout
    assert "connected 'single'" in shell.run(f"%relay --connect single '{shop_url}'").stdout
