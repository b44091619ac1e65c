"""The entry point path for real: the example plugin pip-installed into a directory, used from
fresh interpreters; broken plugins skipped with a warning; entry points read only on need."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_support import run_python, write_csv_dir

# Counts reads of the relay_nb.connectors group from the first line of a fresh interpreter.
COUNTER = """
import importlib.metadata as _md, json, sys
_reads = []
_real = _md.entry_points
def _counting(**params):
    if params.get("group") == "relay_nb.connectors":
        _reads.append(1)
    return _real(**params)
_md.entry_points = _counting
"""


def _last_json(done) -> dict:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_installed_plugin_works_in_config_connect_a_turn_and_the_magic(
    installed_csvdir: Path, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    write_csv_dir(project / "data")
    extra = write_csv_dir(tmp_path / "elsewhere")
    (project / "relay.config.json").write_text(
        json.dumps({"connectors": [{"type": "csvdir", "id": "files", "config": {"path": "data"}}]})
    )
    script = (
        COUNTER
        + f"""
import relay_nb
from relay_nb import Relay, ScriptedRuntime
from relay_nb.testing.shell import TestingShell
reads_at_import = len(_reads)
sql = "SELECT region, SUM(amount) AS total FROM sales GROUP BY 1 ORDER BY 1"
model = ScriptedRuntime([
    {{"tool_calls": [{{"name": "query_files", "input": {{"sql": sql}}}}]}},
    {{"text": "north leads"}},
])
relay = relay_nb.default_relay(model=model, ledger=False)
ids = relay.load_config({str(project / "relay.config.json")!r})
more = relay.connect("more", "csvdir://{extra}")
turn = relay.ask("which region sold most?")
shell = TestingShell()
listing = shell.run("%relay --connectors").texts[-1]
row = next(t for t in relay_nb.connector_types() if t.name == "csvdir")
print(json.dumps({{
    "reads_at_import": reads_at_import,
    "reads": len(_reads),
    "ids": ids,
    "kinds": [c.kind for c in relay.connectors.values()],
    "more": sorted(more.object_names()),
    "answer": turn.answer,
    "rows": turn.df.to_dict("records"),
    "context": "### CSV directory connector: files" in model.requests[0].system_text(),
    "tools": [t.name for t in model.requests[0].tools],
    "listing": listing,
    "row": row.model_dump(mode="json"),
}}))
"""
    )
    result = _last_json(run_python(script, installed_csvdir, cwd=tmp_path))
    assert result["reads_at_import"] == 0 and result["reads"] >= 1
    assert result["ids"] == ["files"] and result["kinds"] == ["csvdir", "csvdir"]
    assert result["more"] == ["regions_2026", "sales"]
    assert result["answer"] == "north leads"
    assert result["rows"] == [{"region": "north", "total": 320}, {"region": "south", "total": 80}]
    assert result["context"] and {"query_files", "describe_files", "query_more"} <= set(
        result["tools"]
    )
    lines = {line.split()[1]: line.split() for line in result["listing"].splitlines()[1:]}
    assert lines["files"][2] == "csvdir" and lines["more"][2] == "csvdir"
    assert lines["files"][-1] == lines["more"][-1] == "ok"
    assert result["row"]["source"] == "plugin"
    assert result["row"]["origin"] == "relay-nb-csvdir 0.1.0"
    assert result["row"]["entry_point"] == "csvdir = relay_nb_csvdir:CSVDIR"


def test_import_and_built_in_targets_read_no_entry_points(installed_csvdir: Path) -> None:
    script = (
        COUNTER
        + """
import relay_nb
plugins_at_import = "relay_nb.connectors.plugins" in sys.modules
import pandas as pd
from relay_nb import Relay, ScriptedRuntime
relay = Relay(ScriptedRuntime(), ledger=False)
relay.connect("mem", "sqlite://")
relay.connect("frame", pd.DataFrame({"a": [1]}))
relay.load_config({"connectors": [{"type": "sqlite", "id": "cfg", "config": {"url": "sqlite://"}}]})
before = len(_reads), "relay_nb_csvdir" in sys.modules
names = [t.name for t in relay_nb.connector_types()]
print(json.dumps({"plugins_at_import": plugins_at_import, "before": before,
                  "after": [len(_reads), "relay_nb_csvdir" in sys.modules], "names": names}))
"""
    )
    result = _last_json(run_python(script, installed_csvdir))
    assert result["plugins_at_import"] is False  # `import relay_nb` stays light
    assert result["before"] == [0, False]  # connect / load_config with built-ins: no read
    assert result["after"][0] >= 1 and result["after"][1] is True  # listing reads them
    assert "csvdir" in result["names"]


BROKEN = {
    "missing": ("missing = no_such_module_xyz:TYPE", ""),
    "notatype": ("notatype = broken_notatype:TYPE", "TYPE = 42\n"),
    "sql": (
        "sql = broken_sql:TYPE",
        "from relay_nb import ConnectorType, Connector\n"
        "TYPE = ConnectorType(name='sql', factory=Connector)\n",
    ),
    "misnamed": (
        "misnamed = broken_misnamed:make",
        "from relay_nb import ConnectorType, Connector\n"
        "def make():\n    return ConnectorType(name='other', factory=Connector)\n",
    ),
    "nometa": ("nometa = no_such_module_nometa:TYPE", ""),  # and no METADATA file
    "echo": (
        "echo = good_echo:make",
        "from relay_nb import ConnectorType\n"
        "def make():\n"
        "    from plugin_support import Echo\n"
        "    return ConnectorType(name='echo', factory=Echo)\n",
    ),
}


@pytest.fixture(scope="module")
def broken_plugins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Hand-made installed distributions (dist-info + module), one fault each, plus one
    good plugin whose entry point is a function returning its type."""
    site = tmp_path_factory.mktemp("broken_site")
    for name, (entry, source) in BROKEN.items():
        dist = site / f"relay_nb_{name}-1.0.dist-info"
        dist.mkdir()
        if name != "nometa":
            (dist / "METADATA").write_text(
                f"Metadata-Version: 2.1\nName: relay-nb-{name}\nVersion: 1.0\n"
            )
        (dist / "entry_points.txt").write_text(f"[relay_nb.connectors]\n{entry}\n")
        module = entry.split("=", 1)[1].strip().split(":", 1)[0]
        if source:
            (site / f"{module}.py").write_text(source)
    return site


def test_broken_plugins_warn_by_name_and_the_rest_still_work(
    broken_plugins: Path, installed_csvdir: Path, tmp_path: Path
) -> None:
    data = write_csv_dir(tmp_path / "data")
    script = f"""
import json, warnings
import relay_nb
from relay_nb import Relay, ScriptedRuntime
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    names = [t.name for t in relay_nb.connector_types()]
    again = [t.name for t in relay_nb.connector_types()]
    relay = Relay(ScriptedRuntime(), ledger=False)
    kinds = [
        relay.connect("mem", "sqlite://").kind,
        relay.connect("files", "csvdir://{data}").kind,
        relay.connect("e", "echo", greeting="hey").kind,
    ]
    try:
        relay.load_config({{"connectors": [{{"type": "misnamed", "id": "m"}}]}})
        unknown = None
    except relay_nb.ConfigurationError as exc:
        unknown = str(exc)
print(json.dumps({{
    "warnings": [(w.category.__name__, str(w.message)) for w in caught],
    "places": sorted({{w.filename for w in caught}}),
    "names": names, "again": again, "kinds": kinds, "unknown": unknown,
}}))
"""
    tests_dir = Path(__file__).parent  # the good plugin's Echo lives in plugin_support
    result = _last_json(run_python(script, broken_plugins, installed_csvdir, tests_dir))
    assert {category for category, _ in result["warnings"]} == {"ConnectorPluginWarning"}
    messages = [message for _, message in result["warnings"]]
    assert len(messages) == 5  # one per broken plugin, once: the second listing is quiet
    assert result["places"] == ["<string>"]  # the warning points at the caller's code
    expected = {
        "missing": "'missing = no_such_module_xyz:TYPE' (relay-nb-missing 1.0) is skipped: "
        "loading it failed: ModuleNotFoundError: No module named 'no_such_module_xyz'",
        "notatype": "'notatype = broken_notatype:TYPE' (relay-nb-notatype 1.0) is skipped: it "
        "gives int, not a relay_nb.ConnectorType (or a function returning one)",
        "sql": "'sql = broken_sql:TYPE' (relay-nb-sql 1.0) is skipped: 'sql' is a built-in "
        "connector type; give the plugin's type another name",
        "misnamed": "'misnamed = broken_misnamed:make' (relay-nb-misnamed 1.0) is skipped: its "
        "type is named 'other'; the entry point must be named like its type",
        "nometa": "'nometa = no_such_module_nometa:TYPE' (a distribution without metadata "
        "(relay_nb_nometa-1.0.dist-info)) is skipped",
    }
    for name, text in expected.items():
        (found,) = [m for m in messages if f"'{name} = " in m]
        assert text in found, found
        assert found.startswith("connector plugin entry point ")
        assert found.endswith("The built-in connectors are not affected.")
    assert "sql" in result["names"] and result["names"].count("sql") == 1  # the built-in
    assert {"csvdir", "echo"} <= set(result["names"]) and result["again"] == result["names"]
    assert not {"missing", "notatype", "misnamed", "other"} & set(result["names"])
    assert result["kinds"] == ["sql", "csvdir", "echo"]
    assert "Input tag 'misnamed' found using 'type' does not match" in result["unknown"]
    assert "from plugins and notebook cells: csvdir, echo)" in result["unknown"]


def test_a_notebook_type_overrides_an_installed_one_only_when_asked(
    installed_csvdir: Path,
) -> None:
    script = """
import json, relay_nb
from relay_nb import ConnectorType, Connector
mine = ConnectorType(name="csvdir", factory=Connector, url_schemes=("csvdir",))
try:
    relay_nb.register_connector_type(mine)
    refused = None
except relay_nb.ConfigurationError as exc:
    refused = str(exc)
relay_nb.register_connector_type(mine, replace=True)
from relay_nb.connectors.plugins import connector_type_for_scheme, find_connector_type
rows = [(t.name, t.source) for t in relay_nb.connector_types() if t.name == "csvdir"]
print(json.dumps({"refused": refused, "mine": find_connector_type("csvdir") is mine,
                  "scheme": connector_type_for_scheme("csvdir") is mine, "rows": rows}))
"""
    result = _last_json(run_python(script, installed_csvdir))
    assert result["refused"] == (
        "connector type 'csvdir' is provided by the installed package relay-nb-csvdir 0.1.0; "
        "pass replace=True to use yours instead in this kernel"
    )
    assert result["mine"] and result["scheme"]
    assert result["rows"] == [["csvdir", "notebook"]]
