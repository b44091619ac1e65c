"""Which runtime answers a turn: the user's model setting plus the skill's tier.

``model`` can be

- a runtime object — every tier uses it (scripted tests, a replay, a custom runtime);
- a profile naming a model, ``"anthropic:claude-sonnet-4-6"`` — pinned: every tier uses it;
- a profile *kind* alone, ``"anthropic"`` or ``"claude-code"`` — routed: the tier picks the
  model through the routing table (fast → Haiku, balanced → Sonnet, best → Opus);
- a callable ``model_id -> runtime`` — routed, built by the caller;
- None — resolved on first use, in DESIGN.md §2's order: ``RELAY_MODEL``, then an
  ``ANTHROPIC_API_KEY`` (routed Anthropic), then a ``claude`` CLI on PATH (routed
  ``claude-code``); otherwise an error that says how to configure one.

Runtimes are built once per model id and reused, so a session keeps one HTTP client per
model rather than one per question.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from relay_nb.agent.skills import route
from relay_nb.errors import ConfigurationError
from relay_nb.runtime.base import ModelRuntime
from relay_nb.runtime.profiles import PROFILE_KINDS, runtime_from_profile

__all__ = ["ModelRouter", "ModelSetting", "check_profile", "resolve_default_model"]

ModelSetting = ModelRuntime | str | Callable[[str], ModelRuntime] | None
_ROUTABLE_KINDS = ("anthropic", "claude-code")

NO_MODEL_MESSAGE = (
    "no model is configured. In a notebook: %relay --model PROFILE; else set RELAY_MODEL to "
    "one, set ANTHROPIC_API_KEY, or pass model=. A profile: 'anthropic:claude-sonnet-4-6', "
    "'openai:gpt-4.1-mini'; no API key: 'openai-compatible:llama3.2@http://127.0.0.1:11434/v1' "
    "(a local Ollama), 'claude-code:sonnet' (a logged-in `claude` CLI) or "
    "'scripted:path/to/steps.json' (plays back steps you write, offline and free)"
)


def resolve_default_model(environ: Mapping[str, str] | None = None) -> str:
    """The profile ``model=None`` stands for, in DESIGN.md §2's order."""
    env = os.environ if environ is None else environ
    configured = env.get("RELAY_MODEL", "").strip()
    if configured:
        return configured
    if env.get("ANTHROPIC_API_KEY", "").strip():
        return "anthropic"
    if shutil.which("claude", path=env.get("PATH")):
        return "claude-code"
    raise ConfigurationError(NO_MODEL_MESSAGE)


class ModelRouter:
    """Runtimes per tier for one session; see the module docstring for the forms of ``model``."""

    def __init__(
        self,
        model: ModelSetting = None,
        *,
        routes: Mapping[str, str] | None = None,
        runtime_options: Mapping[str, Any] | None = None,
    ) -> None:
        if model is not None and not isinstance(model, str | Callable) and not _is_runtime(model):
            raise ConfigurationError(
                f"model must be a profile string, a runtime or a callable, not "
                f"{type(model).__name__}"
            )
        if isinstance(model, str):
            check_profile(model)
        self._model = model
        self.routes = dict(routes or {})
        for tier in self.routes:
            route(tier, self.routes)  # an unknown tier or empty id fails here, not mid-turn
        self._options = dict(runtime_options or {})
        self._cache: dict[str, ModelRuntime] = {}

    def runtime_for(self, tier: str) -> ModelRuntime:
        """The runtime for ``tier`` (built on first use and reused)."""
        model = self._model
        if model is None:
            model = self._model = resolve_default_model()
            check_profile(model)
        if _is_runtime(model):
            return model  # type: ignore[return-value]
        if isinstance(model, str):
            if model in _ROUTABLE_KINDS:
                return self._cached(f"{model}:{route(tier, self.routes)}")
            return self._cached(model)
        model_id = route(tier, self.routes)
        if model_id not in self._cache:
            built = model(model_id)  # type: ignore[operator]
            if not _is_runtime(built):
                raise ConfigurationError(
                    f"the model factory returned {type(built).__name__} for {model_id!r}, "
                    "not a runtime"
                )
            self._cache[model_id] = built
        return self._cache[model_id]

    def runtimes(self) -> list[ModelRuntime]:
        """Every runtime built so far (to close them)."""
        return list(self._cache.values())

    def _cached(self, profile: str) -> ModelRuntime:
        if profile not in self._cache:
            self._cache[profile] = runtime_from_profile(profile, **self._options)
        return self._cache[profile]


def _is_runtime(value: object) -> bool:
    return hasattr(value, "invoke") and hasattr(value, "capabilities")


def check_profile(profile: str) -> None:
    if profile in _ROUTABLE_KINDS or ":" in profile:
        kind = profile.split(":", 1)[0]
        if kind in PROFILE_KINDS:
            return
    raise ConfigurationError(
        f"model {profile!r} is not a profile; use 'KIND:MODEL' with KIND one of "
        f"{', '.join(PROFILE_KINDS)}, or just 'anthropic' / 'claude-code' to route by tier"
    )
