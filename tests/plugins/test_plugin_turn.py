"""A plugin connector in a turn and in the notebook: its prompt context and tools reach the
model request exactly like a built-in's, its tools run, and ``%relay --connectors`` shows it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest
from plugin_support import echo_type

import relay_nb
from relay_nb import Relay, ScriptedRuntime
from relay_nb.facade import default as facade
from relay_nb.testing.shell import TestingShell


def test_a_plugin_connector_s_context_and_tools_reach_the_model_like_a_built_in_s(
    csvdir_module: ModuleType, csv_dir: Path
) -> None:
    relay_nb.register_connector_type(csvdir_module.CSVDIR)
    relay_nb.register_connector_type(echo_type())
    model = ScriptedRuntime(
        [
            {
                "tool_calls": [
                    {"name": "query_files", "input": {"sql": "SELECT SUM(amount) AS n FROM sales"}},
                    {"name": "echo_e", "input": {"text": "yo"}},
                ]
            },
            {"text": "400"},
        ]
    )
    relay = Relay(model, ledger=False)
    files = relay.connect("files", f"csvdir://{csv_dir}")
    relay.connect("e", "echo", greeting="hey")
    frame = relay.connect("frame", pd.DataFrame({"a": [1]}))  # a built-in, side by side

    turn = relay.ask("total sales?")
    assert turn.answer == "400" and int(turn.df.iloc[0]["n"]) == 400
    assert turn.queries == ["SELECT SUM(amount) AS n FROM sales LIMIT 201"]

    request = model.requests[0]
    system = request.system_text()
    for connector in (files, relay.connectors["e"], frame):
        block = f'<context source="schema:{connector.id}">\n{connector.prompt_context()}'
        assert block in system, connector.id
    assert "### CSV directory connector: files — the CSV files in" in system
    assert "sales(region varchar?, month varchar?, amount bigint)" in system
    sent = {spec.name: spec for spec in request.tools}
    for connector in (files, relay.connectors["e"], frame):
        for tool in connector.tools():
            assert sent[tool.name].model_dump() == tool.spec()
    assert sent["query_files"].input_schema == sent["query_frame"].input_schema

    results = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [part.content for m in results for part in m.content] == [
        "1 row\ncolumns: n int64\nn\n400",
        "hey: yo",
    ]
    relay.close()


@pytest.fixture
def shell_relay(csvdir_module: ModuleType, csv_dir: Path) -> Iterator[tuple[TestingShell, Relay]]:
    shell = TestingShell()
    relay = Relay(ScriptedRuntime(), ledger=False)
    facade._default = relay
    yield shell, relay
    facade._default = None
    relay.close()


def test_registered_from_a_cell_and_listed_by_the_magic(
    shell_relay: tuple[TestingShell, Relay], csv_dir: Path
) -> None:
    shell, relay = shell_relay
    shell.user_ns["csv_dir"] = str(csv_dir)
    cell = (
        "import relay_nb, relay_nb_csvdir\n"
        "relay_nb.register_connector_type(relay_nb_csvdir.CSVDIR)\n"
        "relay_nb.default_relay().connect('files', 'csvdir', path=csv_dir)\n"
    )
    shell.run(cell)
    shell.run(cell)  # the cell run again: the type and the connector are replaced
    listing = shell.run("%relay --connectors").texts[-1]
    row = next(line for line in listing.splitlines() if " files " in line)
    assert row.split()[1:3] == ["files", "csvdir"]
    assert "regions_2026, sales" in row and row.rstrip().endswith("ok")
    assert list(relay.connectors) == ["files"]
