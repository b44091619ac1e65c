"""The curated public names: __all__ matches what resolves, and the error tree is as documented."""

from __future__ import annotations

import pytest

import relay_nb
import relay_nb.errors
import relay_nb.runtime


def test_all_is_sorted_unique_and_every_name_resolves():
    assert relay_nb.__all__ == sorted(set(relay_nb.__all__))
    for name in relay_nb.__all__:
        assert getattr(relay_nb, name) is not None, name


def test_top_level_names_are_the_runtime_layer_objects():
    assert relay_nb.InvocationError is relay_nb.errors.InvocationError
    assert relay_nb.Message is relay_nb.runtime.Message
    assert relay_nb.ScriptedRuntime.__module__ == "relay_nb.runtime.scripted"


def test_runtime_all_resolves():
    for name in relay_nb.runtime.__all__:
        assert hasattr(relay_nb.runtime, name), name


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="NoSuchThing"):
        relay_nb.NoSuchThing  # noqa: B018


def test_exception_tree_matches_the_documented_one():
    errors = relay_nb.errors
    assert issubclass(errors.ConfigurationError, errors.RelayError)
    assert issubclass(errors.ConfigurationError, ValueError)
    assert issubclass(errors.InvocationError, errors.RelayError)
    assert issubclass(errors.ModelRequestsBlocked, errors.InvocationError)
    assert issubclass(errors.UnsafeQueryError, errors.ConnectorError)
    assert issubclass(errors.QueryExecutionError, errors.ConnectorError)
    assert issubclass(errors.QueryTimeoutError, errors.QueryExecutionError)
    assert issubclass(errors.ConnectorError, errors.RelayError)
    # an interrupt stays an interrupt; IPython shows it as one line
    assert issubclass(errors.Cancelled, KeyboardInterrupt)
    assert errors.Cancelled("stopped")._render_traceback_() == ["cancelled: stopped"]
    documented = (
        errors.Cancelled,
        errors.ConfigurationError,
        errors.InvocationError,
        errors.ModelRequestsBlocked,
        errors.ConnectorError,
        errors.UnsafeQueryError,
        errors.QueryExecutionError,
        errors.QueryTimeoutError,
    )
    for cls in documented:
        assert cls.__name__ in errors.__doc__
    assert set(errors.__all__) >= {cls.__name__ for cls in documented}
    refusal = errors.UnsafeQueryError("table_not_allowed", "use an allowed table")
    assert (refusal.rule, str(refusal)) == (
        "table_not_allowed",
        "table_not_allowed: use an allowed table",
    )


def test_dir_lists_public_names():
    assert set(relay_nb.__all__) <= set(dir(relay_nb))


def test_relay_is_the_one_public_conversation_object():
    """The engine behind it is the agent layer's, not a second public object; the kernel's
    default instance has a name that says what it is."""
    assert "Relay" in relay_nb.__all__ and "Session" not in relay_nb.__all__
    assert {"default_relay", "TurnSettings", "TurnServices", "Accountant"} <= set(relay_nb.__all__)
    import inspect

    for method in ("ask", "ask_async", "stream", "ask_many"):  # typed options, no **options
        parameters = inspect.signature(getattr(relay_nb.Relay, method)).parameters.values()
        assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in parameters), method
        assert {"model", "skill", "max_steps", "max_cost_usd"} <= {p.name for p in parameters}


# -- the connectors' public face: what a plugin author imports ------------------------------

CONNECTOR_PACKAGES = [
    "relay_nb.connectors",
    "relay_nb.connectors.sql",
    "relay_nb.connectors.dataframe",
    "relay_nb.connectors.spark",
    "relay_nb.connectors.mongo",
    "relay_nb.connectors.http",
    "relay_nb.connectors.websearch",
    "relay_nb.connectors.mcp",
    "relay_nb.connectors.plugins",
]


@pytest.mark.parametrize("package", CONNECTOR_PACKAGES)
def test_each_connector_package_s_all_is_sorted_and_resolves(package: str) -> None:
    import importlib

    module = importlib.import_module(package)
    names = module.__all__
    assert names == sorted(set(names)), f"{package}.__all__ is not sorted (or repeats a name)"
    for name in names:
        assert getattr(module, name) is not None, f"{package}.{name}"
    with pytest.raises(AttributeError, match="NoSuchThing"):
        module.NoSuchThing  # noqa: B018


LAZY_PACKAGES = ["relay_nb", "relay_nb.sql", "relay_nb.demo", *CONNECTOR_PACKAGES[:-1]]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_what_a_package_loads_lazily_is_in_its_all(package: str) -> None:
    """A package's lazy map (relay_nb._lazy) and its ``__all__`` name the same public names
    (the eager ones aside), sorted, and each resolves to the object its module defines."""
    import importlib

    module = importlib.import_module(package)
    names = module.__all__
    assert names == sorted(set(names)), f"{package}.__all__ is not sorted (or repeats a name)"
    assert set(module._EXPORTS) <= set(names)
    for name, source in module._EXPORTS.items():
        assert getattr(module, name) is getattr(importlib.import_module(source), name), name


def test_the_connectors_package_lists_what_it_loads_lazily():
    import relay_nb.connectors

    assert set(relay_nb.connectors._EXPORTS) == set(relay_nb.connectors.__all__)


def test_a_plugin_finds_what_it_needs_in_relay_nb_connectors():
    """What the example plugin imports from ``relay_nb`` (examples/relay_nb_csvdir), plus
    what a SQL-speaking or row-reading one builds on, is the same object there."""
    import relay_nb.connectors as connectors

    for name in (
        "ConfigurationError",
        "Connector",
        "ConnectorError",
        "ConnectorType",
        "QueryResult",
        "Tool",
        "ToolResult",
        "register_connector_type",
    ):
        assert getattr(connectors, name) is getattr(relay_nb, name), name
    from relay_nb.connectors.bounds import ResultBudget
    from relay_nb.connectors.dataframe import DataFrameConnector
    from relay_nb.connectors.guarded import GuardedSQLConnector

    assert connectors.GuardedSQLConnector is GuardedSQLConnector
    assert connectors.ResultBudget is ResultBudget
    assert issubclass(connectors.GuardedSQLConnector, connectors.Connector)
    assert DataFrameConnector is relay_nb.DataFrameConnector  # to compose, as csvdir does


def test_importing_the_connector_packages_loads_nothing_heavy():
    """The packages' names load on first use: importing them costs no driver, no pydantic."""
    import subprocess
    import sys

    lazy = [p for p in CONNECTOR_PACKAGES if not p.endswith((".http", ".mcp", ".plugins"))]
    code = (
        f"import sys, {', '.join(lazy)}; "
        "heavy = ['pydantic', 'pandas', 'sqlalchemy', 'sqlglot', 'duckdb', 'pymongo', 'httpx', "
        "'pyspark', 'numpy']; print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
