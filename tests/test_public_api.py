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
