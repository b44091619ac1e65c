"""``--verify`` in a notebook that is run again, and in a new kernel (issue 37, item 5):
verifying the same answer twice is not an error, and the file ``--verify`` wrote is attached
by the next ``--connect`` of that connector, with one line saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.notebook.magics import RelayCellError
from relay_nb.testing.shell import TestingShell

SQL = "SELECT COUNT(*) AS n FROM products"


def test_verify_twice_then_a_new_connect_attaches_the_file(
    shell: TestingShell,
    relay: Relay,
    model: ScriptedRuntime,
    shop_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    model.add({"tool_calls": [{"name": "query_shop", "input": {"sql": SQL}}]}, {"text": "20"})
    shell.run("%relay how many products?")
    first = shell.run("%relay --verify").stdout
    written = (tmp_path / "shop.knowledge.yaml").read_text(encoding="utf-8")
    again = shell.run("%relay --verify").stdout  # Run All again: no error, file unchanged
    assert first == again and "'how many products?' and its SQL are a verified query" in first
    assert (tmp_path / "shop.knowledge.yaml").read_text(encoding="utf-8") == written
    # a new kernel: the connector's file beside the notebook comes with --connect
    relay.disconnect("shop")
    out = shell.run(f"%relay --connect shop {shop_url}").stdout.splitlines()
    assert out[1] == "knowledge for 'shop' from shop.knowledge.yaml: 1 verified query"
    assert relay.has_source("knowledge:shop")


def test_knowledge_option_attaches_a_named_file_and_reports_a_broken_one(
    shell: TestingShell, relay: Relay, shop_url: str, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - revenue excludes refunds\n  - weeks start on Monday\n")
    out = shell.run(f"%relay --connect other {shop_url} --knowledge {rules}").stdout
    assert f"knowledge for 'other' from {rules}: 2 rules" in out
    broken = tmp_path / "broken.yaml"
    broken.write_text("metrcs: []\n")
    with pytest.raises(RelayCellError, match="metrcs"):
        shell.run(f"%relay --connect third {shop_url} --knowledge {broken}")
