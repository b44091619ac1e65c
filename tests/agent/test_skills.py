"""Skills are checked when registered, and tiers route to model ids through a table."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from relay_nb.agent.skills import TIER_MODELS, Skill, SkillRegistry, route
from relay_nb.errors import ConfigurationError

CONNECTORS = ("shop", "crm", "warehouse")
TOOLS = ("query_shop", "describe_shop", "plot_chart")


def skill(**overrides) -> Skill:
    fields = {
        "name": "sales",
        "description": "questions about orders and revenue",
        "prompt": "You answer sales questions with SQL.",
        "connectors": ("shop",),
        "tools": ("plot_chart",),
    }
    return Skill(**(fields | overrides))


def register(registry: SkillRegistry, item: Skill, **options) -> Skill:
    return registry.register(item, known_connectors=CONNECTORS, known_tools=TOOLS, **options)


def test_skill_defaults_and_field_checks():
    made = skill()
    # tier and max_steps unset: the session's settings apply while the skill is active
    assert made.tier is None and made.max_steps is None and made.examples == ()
    for bad in (
        {"name": "Sales Team"},
        {"name": "1sales"},
        {"tier": "fastest"},
        {"max_steps": 0},
        {"max_steps": 51},
        {"description": "   "},
        {"connectors": ("shop", "shop")},
        {"unknown_field": 1},
    ):
        with pytest.raises(ValidationError):
            skill(**bad)
    with pytest.raises(ValidationError):
        made.name = "other"  # frozen: a registered skill cannot drift from what was checked


def test_register_get_names_remove():
    registry = SkillRegistry()
    first = register(registry, skill())
    register(registry, skill(name="crm_lookup", connectors=("crm",), tools=(), tier="fast"))
    assert registry.get("sales") is first
    assert registry.names() == ("sales", "crm_lookup")
    assert "sales" in registry and len(registry) == 2
    assert registry.remove("sales") is first
    assert registry.names() == ("crm_lookup",)


def test_unknown_connector_is_an_error_with_close_matches_and_the_known_list():
    registry = SkillRegistry()
    with pytest.raises(ConfigurationError) as caught:
        register(registry, skill(connectors=("shopp",)))
    message = str(caught.value)
    assert "unknown connector 'shopp' (did you mean 'shop'?)" in message
    assert "known connectors: 'crm', 'shop', 'warehouse'" in message
    assert registry.names() == ()  # nothing half-registered


def test_unknown_tools_are_all_reported_with_hints():
    with pytest.raises(ConfigurationError) as caught:
        register(SkillRegistry(), skill(connectors=("crn",), tools=("plot_chrt", "zzz")))
    message = str(caught.value)
    assert "unknown connector 'crn' (did you mean 'crm'?)" in message
    assert "unknown tools 'plot_chrt' (did you mean 'plot_chart'?), 'zzz';" in message
    assert "known tools: 'describe_shop', 'plot_chart', 'query_shop'" in message


def test_nothing_known_says_none():
    with pytest.raises(ConfigurationError, match="known connectors: none"):
        SkillRegistry().register(skill(), known_connectors=(), known_tools=TOOLS)


def test_duplicate_names_are_refused_unless_replacing():
    registry = SkillRegistry()
    register(registry, skill())
    with pytest.raises(ConfigurationError, match="already registered"):
        register(registry, skill(prompt="another prompt"))
    replaced = register(registry, skill(prompt="another prompt"), replace=True)
    assert registry.get("sales") is replaced and registry.names() == ("sales",)


def test_unknown_skill_names_list_what_exists():
    registry = SkillRegistry()
    register(registry, skill())
    with pytest.raises(ConfigurationError) as caught:
        registry.get("sale")
    assert (
        str(caught.value)
        == "no skill named 'sale'; did you mean 'sales'? (registered skills: 'sales')"
    )
    with pytest.raises(ConfigurationError, match=r"registered skills: 'sales'"):
        registry.remove("other")
    with pytest.raises(ConfigurationError, match=r"registered skills: none"):
        SkillRegistry().get("sales")


def test_routing_defaults_overrides_and_errors():
    assert dict(TIER_MODELS) == {
        "fast": "claude-haiku-4-5",
        "balanced": "claude-sonnet-4-6",
        "best": "claude-opus-4-6",
    }
    assert route("fast") == "claude-haiku-4-5"
    assert route("best") == "claude-opus-4-6"
    table = {"best": "claude-opus-4-8"}
    assert route("best", table) == "claude-opus-4-8"
    assert route("balanced", table) == "claude-sonnet-4-6"  # a partial table pins one tier
    with pytest.raises(ConfigurationError, match="unknown tier 'fastest'"):
        route("fastest")
    with pytest.raises(ConfigurationError, match="not a model id"):
        route("fast", {"fast": ""})
    with pytest.raises(TypeError):
        TIER_MODELS["fast"] = "other"  # type: ignore[index]
