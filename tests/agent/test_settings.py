"""Turn settings: one frozen value, merged in one visible order (call > skill > session >
config > defaults), each value checked when its layer is made."""

from __future__ import annotations

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.agent.settings import LAYERS, TurnSettings, merge_settings, settings_layer
from relay_nb.errors import ConfigurationError


def forever() -> dict:
    """A model that never answers: every step asks for the tool again."""
    return {"tool_calls": [{"name": "ping", "input": {}}]}


@pytest.fixture
def relay_with_ping() -> Relay:
    model = ScriptedRuntime([forever()] * 100)
    relay = Relay(model, ledger=False, max_steps=3)

    @relay.tool
    def ping() -> str:
        """Answers pong."""
        return "pong"

    yield relay
    relay.close()


def test_each_layer_overrides_the_ones_below_and_says_so() -> None:
    layers = [
        ("config", {"max_steps": 5, "max_retries": 1, "tier": "fast"}),
        ("session", {"max_steps": 4, "max_cost_usd": 1.0}),
        ("skill", {"max_steps": 6, "tier": "best"}),
        ("call", {"max_steps": 2}),
    ]
    merged = merge_settings(layers)
    assert (merged.max_steps, merged.tier, merged.max_retries) == (2, "best", 1)
    assert merged.origin("max_steps") == "call" and merged.origin("tier") == "skill"
    assert merged.origin("max_retries") == "config" and merged.origin("max_cost_usd") == "session"
    assert merged.origin("context_window") == "defaults" and merged.context_window == 200_000
    assert merged.layer("session") == {"max_cost_usd": 1.0}
    for cut in range(len(layers)):  # without the call, the skill's value; without it …
        assert merge_settings(layers[: len(layers) - cut]).max_steps == [2, 6, 4, 5][cut]
    assert LAYERS == ("defaults", "config", "session", "skill", "call")


def test_layers_out_of_order_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="in the order"):
        merge_settings([("call", {}), ("session", {})])


def test_none_means_not_set_so_a_call_cannot_drop_a_cap() -> None:
    merged = merge_settings([("session", {"max_cost_usd": 0.5}), ("call", {"max_cost_usd": None})])
    assert merged.max_cost_usd == 0.5 and merged.caps.max_cost_usd == 0.5


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"max_steps": 0}, "max_steps"),
        ({"max_cost_usd": -1}, "max_cost_usd"),
        ({"approval": "maybe"}, "approval"),
        ({"model": 42}, "model"),
        ({"max_retries": True}, "max_retries: .*must be a number, not bool"),
        ({"max_steps": "3"}, "max_steps: .*must be a number, not str"),
        ({"max_stesp": 3}, "no setting named max_stesp"),
    ],
)
def test_a_bad_value_fails_when_its_layer_is_made(values: dict, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        settings_layer(values, where="session")


def test_settings_are_frozen_values() -> None:
    settings = TurnSettings()
    with pytest.raises(Exception, match="frozen"):
        settings.max_steps = 3  # type: ignore[misc]


# -- through Relay: every layer reaches the turn -------------------------------------------------


def test_session_then_config_then_skill_then_call_decide_the_step_limit(
    relay_with_ping: Relay,
) -> None:
    relay = relay_with_ping
    relay.load_config({"settings": {"max_steps": 5, "max_retries": 0}})
    turn = relay.ask("ping")  # the session's 3 beats the config's 5
    assert (turn.steps, turn.finish_reason) == (3, "max_steps")
    assert turn.settings.origin("max_steps") == "session"
    assert turn.settings.origin("max_retries") == "config"

    relay.skill("pinger", prompt="Ping.", tools=["ping"], max_steps=4)
    turn = relay.ask("ping")  # the active skill's 4 beats the session's 3
    assert turn.steps == 4 and turn.settings.origin("max_steps") == "skill"

    turn = relay.ask("ping", max_steps=2)  # the question's own beats everything
    assert turn.steps == 2 and turn.settings.origin("max_steps") == "call"

    relay.skill("quiet", prompt="Quiet.", tools=["ping"])  # names no step limit
    turn = relay.ask("ping", skill="quiet")
    assert turn.steps == 3 and turn.settings.origin("max_steps") == "session"


def test_configure_changes_the_session_layer_for_later_questions(relay_with_ping: Relay) -> None:
    relay = relay_with_ping
    assert relay.settings.max_steps == 3
    settings = relay.configure(max_steps=2, max_tokens=50_000)
    assert settings.max_steps == 2 and relay.settings.max_tokens == 50_000
    assert relay.ask("ping").steps == 2
    relay.configure(max_cost_usd=None)  # None keeps what is there
    assert relay.settings.max_steps == 2


def test_configuring_an_unknown_skill_changes_nothing(relay_with_ping: Relay) -> None:
    """A value only the plan can check (a skill's name) is refused, and the session keeps
    what it had: before, the bad name stayed in the layer and every later question (and
    ``relay.settings``) failed on it until the skill existed."""
    relay = relay_with_ping
    relay.configure(max_steps=2)
    with pytest.raises(ConfigurationError, match="no skill named 'nope'"):
        relay.configure(skill="nope", max_steps=4)
    assert relay.settings.max_steps == 2 and relay.settings.skills is None
    assert relay.ask("ping").steps == 2


def test_a_bad_option_on_ask_fails_before_any_model_call(relay_with_ping: Relay) -> None:
    relay = relay_with_ping
    with pytest.raises(ConfigurationError, match="max_steps"):
        relay.ask("ping", max_steps=0)
    with pytest.raises(ConfigurationError, match="no skill named 'nope'"):
        relay.ask("ping", skill="nope")
    assert relay.turns == [] and relay.history == []


def test_relay_checks_its_own_settings_when_built() -> None:
    with pytest.raises(ConfigurationError, match="session: max_retries"):
        Relay(ScriptedRuntime(), ledger=False, max_retries=-1)
    with pytest.raises(ConfigurationError, match="not a profile"):
        Relay(ScriptedRuntime(), ledger=False).configure(model="nonsense")


def test_a_config_files_settings_are_checked_with_its_name(tmp_path) -> None:
    path = tmp_path / "relay.config.json"
    path.write_text('{"settings": {"max_steps": 0}}')
    with pytest.raises(ConfigurationError, match=r"relay.config.json: settings: max_steps"):
        Relay(ScriptedRuntime(), ledger=False, config=path)
    path.write_text('{"settings": {"model": "gpt"}}')
    with pytest.raises(ConfigurationError, match="not a profile"):
        Relay(ScriptedRuntime(), ledger=False, config=path)
