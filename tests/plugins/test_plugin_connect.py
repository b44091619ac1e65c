"""relay.connect with plugin types (by URL scheme or type name) and with descriptor objects
(anything with ``build_connector``); built-in targets are never handed to a plugin."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from plugin_support import Echo, echo_type

import relay_nb
from relay_nb import ConfigurationError, Connector, Relay, ScriptedRuntime
from relay_nb.connectors.plugins import ConnectorType
from relay_nb.testing.seed import seed_database


@pytest.fixture
def relay() -> Relay:
    r = Relay(ScriptedRuntime(), ledger=False)
    yield r
    r.close()


@pytest.fixture
def csvdir(csvdir_module: ModuleType) -> ConnectorType:
    return relay_nb.register_connector_type(csvdir_module.CSVDIR)


def test_a_claimed_scheme_builds_the_plugin_type(relay: Relay, csvdir: Any, csv_dir: Path) -> None:
    files = relay.connect("files", f"csvdir://{csv_dir}", row_limit=50, name="Exports")
    assert type(files).__name__ == "CSVDirConnector" and files.kind == "csvdir"
    assert (files.name, files.row_limit) == ("Exports", 50)  # type: ignore[attr-defined]
    assert sorted(files.object_names()) == ["regions_2026", "sales"]
    result = files.query("SELECT region, SUM(amount) AS total FROM sales GROUP BY 1 ORDER BY 1")
    assert result.df.to_dict("records") == [
        {"region": "north", "total": 320},
        {"region": "south", "total": 80},
    ]
    assert relay.connectors["files"] is files


def test_the_type_name_builds_it_with_keyword_options(
    relay: Relay, csvdir: Any, csv_dir: Path
) -> None:
    files = relay.connect("files", "csvdir", path=str(csv_dir), description="monthly exports")
    assert files.description == "monthly exports"
    assert "monthly exports" in files.prompt_context()


@pytest.mark.parametrize(
    ("target", "options", "message"),
    [
        (
            "csvdir:///{dir}",
            {"rows": 5},
            "the csvdir connector does not take rows; it takes: name, description, path, "
            "pattern, row_limit, statement_timeout_s",
        ),
        ("csvdir", {}, "csvdir connector's options are not valid: path: Field required"),
        ("csvdir", {"path": "/no/such/dir"}, "path: Value error, no directory at '/no/such/dir'"),
        ("csvdir:///{dir}", {"row_limit": 0}, "row_limit: Input should be greater than or equal"),
        ("csvdir:///{dir}", {"path": "/x"}, "path is given twice: by the csvdir URL and as a"),
    ],
)
def test_bad_options_are_reported_like_a_built_in_s_and_nothing_is_registered(
    relay: Relay, csvdir: Any, csv_dir: Path, target: str, options: dict, message: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        relay.connect("files", target.replace("/{dir}", str(csv_dir)), **options)
    assert message in str(caught.value)
    assert relay.connectors == {}


def test_a_factory_without_a_config_model_takes_its_keyword_parameters(relay: Relay) -> None:
    relay_nb.register_connector_type(echo_type(url_schemes=("echo",)))
    # echo's factory takes no `url`, so its URL form (default options {"url": URL}) fails
    with pytest.raises(ConfigurationError, match="does not take url; it takes: name, descr"):
        relay.connect("e", "echo://anything")
    built = relay.connect("e", "echo", greeting="hello", name="Echo!")
    assert (built.greeting, built.name, built.kind) == ("hello", "Echo!", "echo")  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="does not take shout; it takes: name, desc"):
        relay.connect("e", "echo", shout=True)


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda cid: 42, "the 'broken' connector type's factory returned int, not a relay_nb"),
        (lambda cid: Echo("other"), "built a connector with id 'other', not 'b'"),
        (lambda cid: 1 / 0, "the 'broken' connector could not be built: ZeroDivisionError"),
    ],
)
def test_a_misbehaving_factory_is_a_clear_configuration_error(
    relay: Relay, factory: Any, message: str
) -> None:
    relay_nb.register_connector_type(ConnectorType(name="broken", factory=factory))
    with pytest.raises(ConfigurationError, match=message):
        relay.connect("b", "broken")
    assert relay.connectors == {}


def test_a_factory_s_own_configuration_error_passes_through(relay: Relay) -> None:
    def refuse(connector_id: str) -> Connector:
        raise ConfigurationError("set LAKE_REGION first")

    relay_nb.register_connector_type(ConnectorType(name="lake", factory=refuse))
    with pytest.raises(ConfigurationError, match=r"^set LAKE_REGION first$"):
        relay.connect("l", "lake")


class EchoServer:
    """A descriptor in the style of relay_nb.MCP(...): it knows how to build its connector."""

    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    def build_connector(self, connector_id: str, *, timeout_s: float = 5.0) -> Connector:
        connector = Echo(connector_id, greeting=self.greeting)
        connector.timeout_s = timeout_s  # type: ignore[attr-defined]
        return connector


def test_an_object_with_build_connector_builds_its_own_connector(relay: Relay) -> None:
    echo = relay.connect("greeter", EchoServer("ahoy"), timeout_s=2.0)
    assert isinstance(echo, Echo) and echo.id == "greeter" and echo.timeout_s == 2.0  # type: ignore[attr-defined]
    assert [t.name for t in relay.connectors["greeter"].tools()] == ["echo_greeter"]
    with pytest.raises(ConfigurationError, match="EchoServer does not take retries; it takes: "):
        relay.connect("greeter", EchoServer("ahoy"), retries=3)


@pytest.mark.parametrize(
    ("built", "message"),
    [
        (lambda cid: "not a connector", "EchoServer2.build_connector\\(\\) returned str"),
        (lambda cid: Echo("someone_else"), "built a connector with id 'someone_else'"),
    ],
)
def test_a_descriptor_must_build_a_connector_with_the_id_asked_for(
    relay: Relay, built: Any, message: str
) -> None:
    class EchoServer2:
        def build_connector(self, connector_id: str, **options: Any) -> Any:
            return built(connector_id)

    with pytest.raises(ConfigurationError, match=message):
        relay.connect("greeter", EchoServer2())
    assert relay.connectors == {}


def test_built_in_targets_never_reach_a_plugin(
    relay: Relay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SQLite URL, a DataFrame and a provider name are built without reading plugins."""
    import importlib.metadata

    import pandas as pd

    from relay_nb.connectors.plugins import discovery

    real = importlib.metadata.entry_points

    def no_plugins(**params: Any) -> Any:
        if params.get("group") == discovery.ENTRY_POINT_GROUP:
            raise AssertionError("entry points were read for a built-in target")
        return real(**params)

    monkeypatch.setattr(discovery, "_cached", None)  # not read yet in this process
    monkeypatch.setattr(importlib.metadata, "entry_points", no_plugins)
    url = f"sqlite:///{tmp_path / 'shop.sqlite'}"
    seed_database(url)
    assert relay.connect("shop", url).kind == "sql"
    assert relay.connect("frame", pd.DataFrame({"a": [1]})).kind == "dataframe"
    monkeypatch.setenv("TAVILY_API_KEY", "test-key-not-used")
    assert relay.connect("web", "tavily").kind == "websearch"


def test_an_unclaimed_scheme_still_goes_to_sqlalchemy(relay: Relay) -> None:
    with pytest.raises(ConfigurationError) as caught:
        relay.connect("x", "nosuchdialect://host/db")
    assert "csvdir" not in str(caught.value)


def test_a_type_composing_a_built_in_shows_its_own_kind(relay: Relay, tmp_path: Path) -> None:
    """A factory may return a built-in connector (a DataFrameConnector over a file); the
    status table still shows the type the analyst asked for."""
    import pandas as pd

    def jsonl(connector_id: str, *, path: str) -> Connector:
        frame = pd.read_json(path, lines=True)
        return relay_nb.DataFrameConnector(connector_id, {connector_id: frame})

    relay_nb.register_connector_type(
        ConnectorType(name="jsonl-test", factory=jsonl, url_schemes=("jsonl-test",))
    )
    try:
        events = tmp_path / "events.jsonl"
        events.write_text('{"kind": "view"}\n{"kind": "click"}\n')
        connector = relay.connect("events", "jsonl-test", path=str(events))
        assert type(connector).__name__ == "DataFrameConnector"
        (row,) = relay.connector_status().to_dict("records")
        assert (row["type"], row["objects"], row["status"]) == ("jsonl-test", "events", "ok")
    finally:
        relay_nb.unregister_connector_type("jsonl-test")


@pytest.mark.parametrize("word", ["csvdr", "lake", "files"])
def test_a_mistyped_type_name_is_reported_as_one(relay: Relay, csvdir: Any, word: str) -> None:
    """A bare word can never be a SQLAlchemy URL: no 'SQLConnector does not take path'."""
    with pytest.raises(ConfigurationError) as caught:
        relay.connect("f", word, path="data/")
    message = str(caught.value)
    assert message.startswith(f"{word!r} is neither a URL nor a connector type")
    assert "from plugins and notebook cells: csvdir)" in message
    assert "then restart the kernel" in message and "SQLConnector" not in message


def test_a_type_name_is_read_in_any_case(relay: Relay, csvdir: Any, csv_dir: Path) -> None:
    assert relay.connect("f", "CSVDIR", path=str(csv_dir)).kind == "csvdir"


def test_a_bare_built_in_word_still_gets_the_built_in_s_advice(relay: Relay) -> None:
    with pytest.raises(ConfigurationError, match="not a database URL or a database file"):
        relay.connect("db", "sqlite")


def test_name_and_description_are_every_connector_s_even_through_a_descriptor(
    relay: Relay,
) -> None:
    echo = relay.connect("greeter", EchoServer("ahoy"), name="Greeter", description="says hi")
    assert (echo.name, echo.description, echo.timeout_s) == ("Greeter", "says hi", 5.0)  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="it takes: name, description, timeout_s"):
        relay.connect("greeter", EchoServer("ahoy"), retries=3)


def test_a_descriptor_that_fails_is_reported_short_and_redacted(
    relay: Relay, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESCRIPTOR_TOKEN", "tok-descriptor-secret")

    class Failing:
        def build_connector(self, connector_id: str) -> Connector:
            raise RuntimeError("login failed for tok-descriptor-secret\ntraceback…")

    with pytest.raises(ConfigurationError) as caught:
        relay.connect("f", Failing())
    assert str(caught.value) == (
        "Failing.build_connector() failed: RuntimeError: login failed for [REDACTED]"
    )
    assert relay.connectors == {}


def test_a_descriptor_whose_signature_cannot_be_read_is_called_as_is(relay: Relay) -> None:
    class Unreadable:
        @property
        def __signature__(self) -> Any:
            raise ValueError("no signature found")

        def __call__(self, connector_id: str, **options: Any) -> Connector:
            return Echo(connector_id, **options)

    class Opaque:
        build_connector = Unreadable()

    built = relay.connect("a", Opaque(), greeting="yo")
    assert (built.id, built.greeting) == ("a", "yo")  # type: ignore[attr-defined]
