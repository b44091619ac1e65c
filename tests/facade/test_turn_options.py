"""The per-question options are declared once (``relay_nb.agent.settings``): the options
types agree with ``TurnSettings``, the ask methods and the ``%relay`` option table name them,
and the methods behave as if each option were written out as a keyword."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.agent.settings import (
    AskOptions,
    CallOptions,
    SessionOptions,
    SettingsLayer,
    TurnSettings,
    option_setting,
    options_layer,
)
from relay_nb.errors import ConfigurationError
from relay_nb.notebook.command import SETTINGS
from relay_nb.notebook.magics import RelayMagics

METHODS = {
    "ask": AskOptions,
    "ask_async": AskOptions,
    "stream": AskOptions,
    "ask_many": CallOptions,
    "ask_many_async": CallOptions,
    "configure": SessionOptions,
}


def keys(options: type) -> list[str]:
    return list(options.__annotations__)


def test_every_option_is_a_setting_and_every_setting_a_layer_key() -> None:
    fields = set(TurnSettings.model_fields)
    assert {option_setting(key) for key in keys(SessionOptions)} <= fields
    assert [k for k in keys(SessionOptions) if option_setting(k) != k] == ["skill"]
    assert set(keys(SettingsLayer)) == fields
    assert keys(AskOptions) == [*keys(CallOptions), "approval"]  # ask_many: no approval
    assert keys(SessionOptions)[: len(keys(AskOptions))] == keys(AskOptions)
    assert options_layer({"skill": "sales", "max_tokens": 5, "max_output_tokens": 9}) == {
        "skills": "sales",
        "max_tokens": 5,
        "max_output_tokens": 9,
    }


def test_every_magic_setting_names_a_real_option_and_trait() -> None:
    traits = set(RelayMagics.class_trait_names(config=True))
    for name, option in SETTINGS.items():
        assert option.field is None or option.field in keys(AskOptions), name
        assert option.trait is None or option.trait in traits, name
        assert option.field is not None or option.trait is not None, f"{name} goes nowhere"


@pytest.mark.parametrize("method", list(METHODS))
def test_the_signature_lists_each_option_as_a_keyword(method: str) -> None:
    parameters = inspect.signature(getattr(Relay, method)).parameters
    assert all(p.kind is not p.VAR_KEYWORD for p in parameters.values())
    for key in keys(METHODS[method]):
        assert parameters[key].kind is inspect.Parameter.KEYWORD_ONLY
        assert parameters[key].default is None
    assert parameters["max_tokens"].annotation == "int | None"
    assert ("approval" in parameters) == (METHODS[method] is not CallOptions)
    assert inspect.iscoroutinefunction(getattr(Relay, method)) == method.endswith("_async")


def test_unknown_keywords_and_bad_values_fail_as_before() -> None:
    relay = Relay(ScriptedRuntime([{"text": "unused"}]), ledger=False)
    try:
        for method in ("ask", "stream", "ask_many", "configure"):
            call = getattr(relay, method)
            first = ["q"] if method == "ask_many" else "q"
            args = () if method == "configure" else (first,)
            message = f"Relay.{method}() got an unexpected keyword argument 'max_step'"
            with pytest.raises(TypeError) as caught:
                call(*args, max_step=3)
            assert str(caught.value) == message
        # a type checker refuses these calls too (the ignores say so)
        with pytest.raises(TypeError, match=r"Relay.ask_many\(\) .* 'approval'"):
            relay.ask_many(["q"], approval="allow")  # pyright: ignore[reportCallIssue]
        with pytest.raises(TypeError, match=r"Relay.ask_async\(\) .* 'max_step'"):
            asyncio.run(relay.ask_async("q", max_step=3))  # pyright: ignore[reportCallIssue]
        with pytest.raises(ConfigurationError, match="ask: max_steps"):
            relay.ask("q", max_steps=0)
        with pytest.raises(ConfigurationError, match="session: max_output_tokens"):
            relay.configure(max_output_tokens=0)
        assert relay.ask("q", max_tokens=10_000, max_output_tokens=7).settings.max_tokens == 10_000
        assert relay.turns[-1].settings.max_output_tokens == 7
    finally:
        relay.close()
