"""ModelRouter: the forms of ``model=`` and DESIGN.md §2's resolution order for None."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from relay_nb.agent.routing import ModelRouter, resolve_default_model
from relay_nb.errors import ConfigurationError
from relay_nb.runtime.scripted import ScriptedRuntime


def test_a_profile_kind_alone_routes_by_tier() -> None:
    router = ModelRouter("anthropic", routes={"best": "claude-opus-9"})
    fast, best = router.runtime_for("fast"), router.runtime_for("best")
    assert (fast.id, best.id) == ("anthropic:claude-haiku-4-5", "anthropic:claude-opus-9")
    assert router.runtime_for("fast") is fast  # built once, reused
    assert router.runtime_for("balanced").id == "anthropic:claude-sonnet-4-6"


def test_a_full_profile_is_pinned_for_every_tier() -> None:
    router = ModelRouter("anthropic:claude-sonnet-4-6")
    assert router.runtime_for("fast") is router.runtime_for("best")


def test_a_runtime_object_is_used_as_is() -> None:
    runtime = ScriptedRuntime()
    assert ModelRouter(runtime).runtime_for("best") is runtime


def test_a_factory_gets_the_routed_model_id() -> None:
    router = ModelRouter(lambda model_id: ScriptedRuntime(model=model_id))
    assert router.runtime_for("fast").model == "claude-haiku-4-5"
    with pytest.raises(ConfigurationError, match="not a runtime"):
        ModelRouter(lambda model_id: "nope").runtime_for("fast")


@pytest.mark.parametrize("bad", ["gpt-4", "gemini:pro", ""])
def test_a_string_that_is_not_a_profile_is_refused_at_construction(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="not a profile"):
        ModelRouter(bad)


def test_an_unknown_tier_in_the_routes_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown tier 'cheap'"):
        ModelRouter("anthropic", routes={"cheap": "claude-haiku-4-5"})


def test_none_resolves_in_the_documented_order(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    claude.write_text("#!/bin/sh\n")
    claude.chmod(claude.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": str(tmp_path)}
    assert resolve_default_model(env) == "claude-code"
    assert resolve_default_model({**env, "ANTHROPIC_API_KEY": "k"}) == "anthropic"
    assert (
        resolve_default_model({**env, "ANTHROPIC_API_KEY": "k", "RELAY_MODEL": "scripted:s.json"})
        == "scripted:s.json"
    )
    with pytest.raises(ConfigurationError, match="set ANTHROPIC_API_KEY"):
        resolve_default_model({"PATH": str(tmp_path / "empty")})


def test_none_is_resolved_lazily_on_first_use(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("RELAY_MODEL", raising=False)
    router = ModelRouter()  # building a session must not need a model yet
    with pytest.raises(ConfigurationError, match="no model is configured"):
        router.runtime_for("balanced")
    monkeypatch.setenv("RELAY_MODEL", "anthropic:claude-haiku-4-5")
    assert router.runtime_for("balanced").id == "anthropic:claude-haiku-4-5"
