"""Skills: named bundles of a system prompt, connectors, extra tools and a preferred tier.

A skill is registered from Python and checked *at registration*: a connector id or tool
name that does not exist is an error then, with the known names and the closest matches,
rather than a tool that silently never reaches the model when a question is asked.

The tier (fast | balanced | best) is routed to a model id through a table the user can
override per call, so a skill says what it needs, not which model generation exists today.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from relay_nb.errors import ConfigurationError

__all__ = ["TIER_MODELS", "Skill", "SkillRegistry", "Tier", "route"]

Tier = Literal["fast", "balanced", "best"]
TIERS: tuple[str, ...] = get_args(Tier)

TIER_MODELS: Mapping[str, str] = MappingProxyType(
    {"fast": "claude-haiku-4-5", "balanced": "claude-sonnet-4-6", "best": "claude-opus-4-6"}
)
"""Default tier → model routing. Read-only so one notebook cell cannot re-route every
session in the process by accident; pass ``table=`` to :func:`route` to change it."""

_SKILL_NAME = r"^[a-z][a-z0-9_]{0,63}$"


class Skill(BaseModel):
    """What the agent should know and may use for one kind of question."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=_SKILL_NAME, description="snake_case, unique in a registry")
    description: str = Field(min_length=1, description="when this skill applies")
    prompt: str = Field(min_length=1, description="system prompt text added for this skill")
    connectors: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    """Tool names beyond the ones the skill's connectors contribute."""
    tier: Tier | None = None
    """The tier this skill's questions need (None: the session's); with several skills
    active, the most demanding one named wins."""
    max_steps: int | None = Field(default=None, ge=1, le=50)
    """Model steps this skill's questions may take (None: the session's)."""
    examples: tuple[str, ...] = ()

    @field_validator("description", "prompt")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("connectors", "tools")
    @classmethod
    def _no_duplicates(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """A repeated name is almost always a typo for a different one; say so."""
        repeated = sorted({item for item in value if value.count(item) > 1})
        if repeated:
            raise ValueError(f"listed more than once: {', '.join(repeated)}")
        return value


class SkillRegistry:
    """Skills by name, validated against the connectors and tools that exist right now."""

    def __init__(self) -> None:
        self._skills: dict[str, Skill] = {}

    def register(
        self,
        skill: Skill,
        *,
        known_connectors: Collection[str],
        known_tools: Collection[str],
        replace: bool = False,
    ) -> Skill:
        """Add ``skill``; unknown connector ids or tool names and duplicate names are errors.

        ``replace=True`` lets a re-run notebook cell redefine a skill it registered before.
        """
        if not isinstance(skill, Skill):
            raise ConfigurationError(f"expected a Skill, got {type(skill).__name__}")
        if skill.name in self._skills and not replace:
            raise ConfigurationError(
                f"a skill named {skill.name!r} is already registered; remove it first or "
                "pass replace=True"
            )
        problems = [
            message
            for message in (
                _unknown(skill.name, "connector", skill.connectors, known_connectors),
                _unknown(skill.name, "tool", skill.tools, known_tools),
            )
            if message
        ]
        if problems:
            raise ConfigurationError("; ".join(problems))
        self._skills[skill.name] = skill
        return skill

    def get(self, name: str) -> Skill:
        """The skill called ``name``; an unknown name lists the registered ones."""
        try:
            return self._skills[name]
        except KeyError:
            raise ConfigurationError(self._missing(name)) from None

    def remove(self, name: str) -> Skill:
        """Unregister and return the skill called ``name``."""
        if name not in self._skills:
            raise ConfigurationError(self._missing(name))
        return self._skills.pop(name)

    def names(self) -> tuple[str, ...]:
        """Registered names, in registration order."""
        return tuple(self._skills)

    def __contains__(self, name: object) -> bool:
        return name in self._skills

    def __len__(self) -> int:
        return len(self._skills)

    def __repr__(self) -> str:
        return f"<SkillRegistry {list(self._skills)}>"

    def _missing(self, name: str) -> str:
        message = f"no skill named {name!r}"
        close = difflib.get_close_matches(name, list(self._skills), n=3)
        if close:
            message += f"; did you mean {_quoted(close)}?"
        known = _quoted(sorted(self._skills)) if self._skills else "none"
        return f"{message} (registered skills: {known})"


def route(tier: str, table: Mapping[str, str] | None = None) -> str:
    """The model id for ``tier``: from ``table`` when it names the tier, else the default.

    A partial table (e.g. ``{"best": "claude-opus-4-8"}``) overrides only what it names, so a
    user can pin one tier without restating the others.
    """
    if tier not in TIERS:
        raise ConfigurationError(f"unknown tier {tier!r}; use one of {_quoted(TIERS)}")
    model = (table or {}).get(tier, TIER_MODELS[tier])
    if not isinstance(model, str) or not model.strip():
        raise ConfigurationError(f"routing table maps tier {tier!r} to {model!r}, not a model id")
    return model


def _unknown(skill: str, kind: str, wanted: tuple[str, ...], known: Collection[str]) -> str:
    """One message for every unknown name of one kind, with close matches and the known set."""
    known_names = sorted(str(name) for name in known)
    missing = [name for name in wanted if name not in known]
    if not missing:
        return ""
    parts = []
    for name in missing:
        close = difflib.get_close_matches(name, known_names, n=3)
        hint = f" (did you mean {_quoted(close)}?)" if close else ""
        parts.append(f"{name!r}{hint}")
    known_text = _quoted(known_names) if known_names else "none"
    plural = "s" if len(missing) > 1 else ""
    listed = ", ".join(parts)
    return f"skill {skill!r} names unknown {kind}{plural} {listed}; known {kind}s: {known_text}"


def _quoted(names: Collection[str]) -> str:
    return ", ".join(repr(name) for name in names)
