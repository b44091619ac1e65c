"""The kernel's default relay survives the cell that builds it being run again: same options,
same relay; a changed turn setting applied and said in one line, connectors, conversation
and usage kept; a creation-only option asks for ``fresh=True``; a closed relay is replaced.
Real SQLite, scripted model; ``test_notebooks_rerun.py`` runs every shipped notebook twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import relay_nb
import relay_nb.facade.default as facade
from relay_nb import ConfigurationError, ScriptedRuntime
from relay_nb.testing.seed import seed_database

ANSWER = [
    {
        "tool_calls": [
            {"name": "query_shop", "input": {"sql": "SELECT COUNT(*) AS n FROM products"}}
        ]
    },
    {"text": "20"},
]


@pytest.fixture(scope="module")
def shop_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('default') / 'shop.sqlite'}"
    seed_database(url)
    return url


@pytest.fixture(autouse=True)
def no_default(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts without a default relay and closes the one it made."""
    monkeypatch.setattr(facade, "_default", None)
    monkeypatch.setattr(facade, "_created_with", {})
    yield
    made = facade.existing_default_relay()
    if made is not None:
        made.close()


def _setup_cell(shop_url: str, **options: object) -> relay_nb.Relay:
    """The first cell of a shipped notebook: a model, the default relay, a connection."""
    relay = relay_nb.default_relay(model=ScriptedRuntime(list(ANSWER)), ledger=False, **options)
    relay.connect("shop", shop_url, tables=["products"])
    return relay


def test_running_the_setup_cell_again_gives_the_same_relay_and_keeps_its_state(
    shop_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _setup_cell(shop_url)
    assert first.ask("how many products?").answer == "20"
    spent = first.usage.cost_usd, first.usage.input_tokens

    again = _setup_cell(shop_url)  # the cell run again: a new ScriptedRuntime, a reconnect
    assert again is first and capsys.readouterr().out == ""  # nothing changed: nothing said
    assert (again.usage.cost_usd, again.usage.input_tokens) == spent
    assert len(again.turns) == 1 and list(again.connectors) == ["shop"]
    # the new model object is the one asked now (its script starts over)
    assert again.ask("and now?").answer == "20"


def test_a_changed_setting_is_applied_and_said_in_one_line(
    shop_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _setup_cell(shop_url)
    first.ask("how many products?")
    again = relay_nb.default_relay(
        model=ScriptedRuntime(list(ANSWER), id="scripted-b"), ledger=False, max_steps=3
    )
    out = capsys.readouterr().out
    assert again is first
    assert out == (
        "default relay: model scripted -> scripted-b, max_steps 8 -> 3 "
        "(connectors, conversation and usage kept)\n"
    )
    assert again.settings.max_steps == 3 and again.settings.model.id == "scripted-b"
    assert len(again.turns) == 1 and list(again.connectors) == ["shop"]


def test_a_creation_only_option_needs_fresh_which_starts_over(shop_url: str) -> None:
    first = _setup_cell(shop_url)
    with pytest.raises(ConfigurationError) as refused:
        relay_nb.default_relay(model=ScriptedRuntime(list(ANSWER)), ledger=False, keep_turns=5)
    message = str(refused.value)
    assert "keep_turns" in message and "fresh=True" in message and "\n" not in message
    assert facade.existing_default_relay() is first and not first.closed  # nothing lost

    fresh = relay_nb.default_relay(
        model=ScriptedRuntime(list(ANSWER)), ledger=False, keep_turns=5, fresh=True
    )
    assert fresh is not first and first.closed and not fresh.connectors


def test_a_function_defined_again_is_the_same_option(shop_url: str) -> None:
    def approver(request: object) -> bool:
        return True

    first = _setup_cell(shop_url, approver=approver)

    def approver(request: object) -> bool:
        return True

    assert _setup_cell(shop_url, approver=approver) is first

    def approver(request: object) -> bool:
        return False

    with pytest.raises(ConfigurationError, match="approver"):
        _setup_cell(shop_url, approver=approver)


def test_a_misspelt_option_is_the_same_error_as_on_creation(shop_url: str) -> None:
    _setup_cell(shop_url)
    with pytest.raises(TypeError, match="max_step"):
        relay_nb.default_relay(max_step=3)


def test_after_close_the_next_call_builds_a_new_relay(tmp_path: Path, shop_url: str) -> None:
    first = _setup_cell(shop_url)
    first.close()  # the last cell of a shipped notebook
    assert first.closed and facade.existing_default_relay() is None
    second = _setup_cell(shop_url)  # run the notebook again from the top
    assert second is not first and not second.closed and list(second.connectors) == ["shop"]
    assert second.ask("how many products?").answer == "20"
