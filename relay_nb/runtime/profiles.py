"""Build exactly one runtime from a ``PROFILE:VALUE`` string.

One string (in ``RELAY_MODEL``, a ``--model`` option, a config file) replaces a switch
statement copied into every caller. The resolver never selects providers, falls back, or
reads credentials: each runtime resolves its own key when it first invokes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from relay_nb.errors import ConfigurationError
from relay_nb.runtime.base import ModelRuntime

__all__ = ["PROFILE_KINDS", "parse_profile", "runtime_from_profile"]

_FORMS = (
    "anthropic:MODEL (e.g. anthropic:claude-sonnet-4-6), claude-code:MODEL (e.g. "
    "claude-code:sonnet), codex:MODEL (e.g. codex:gpt-5), opencode:PROVIDER/MODEL (e.g. "
    "opencode:anthropic/claude-sonnet-4-5, add ?prompted_tools=true for tools), "
    "openai:MODEL (e.g. openai:gpt-4.1-mini), "
    "openai-compatible:MODEL@URL (e.g. openai-compatible:llama3.2@http://127.0.0.1:11434/v1), "
    "scripted:PATH (a JSON script), replay:PATH (a JSONL recording)"
)


def _anthropic(value: str, options: dict[str, Any]) -> ModelRuntime:
    from relay_nb.runtime.anthropic import AnthropicRuntime

    return AnthropicRuntime(value, **options)


def _claude_code(value: str, options: dict[str, Any]) -> ModelRuntime:
    from relay_nb.runtime.claude_code import ClaudeCodeRuntime

    return ClaudeCodeRuntime(value, **options)


def _codex(value: str, options: dict[str, Any]) -> ModelRuntime:
    from relay_nb.runtime.codex_cli import CodexCLIRuntime

    return CodexCLIRuntime(value, **options)


def _opencode(value: str, options: dict[str, Any]) -> ModelRuntime:
    """``opencode:PROVIDER/MODEL[?prompted_tools=true]``: the query form lets a bare profile
    string (``RELAY_MODEL``, ``%relay --model``) opt in to prompted structured output."""
    from relay_nb.runtime.opencode_cli import OpenCodeCLIRuntime

    model, _, query = value.partition("?")
    if query:
        for key, raw in parse_qsl(query, keep_blank_values=True):
            if key != "prompted_tools" or raw.lower() not in ("true", "false"):
                raise ConfigurationError(
                    "an opencode profile takes only ?prompted_tools=true or ?prompted_tools=false"
                )
            if "prompted_tools" in options:
                raise ConfigurationError("prompted_tools is given twice (profile and option)")
            options["prompted_tools"] = raw.lower() == "true"
    return OpenCodeCLIRuntime(model, **options)


def _openai(value: str, options: dict[str, Any]) -> ModelRuntime:
    from relay_nb.runtime.openai_compat import openai_runtime_from_profile

    return openai_runtime_from_profile(value, options)


def _openai_compatible(value: str, options: dict[str, Any]) -> ModelRuntime:
    from relay_nb.runtime.openai_compat import compatible_runtime_from_profile

    return compatible_runtime_from_profile(value, options)


def _scripted(value: str, options: dict[str, Any]) -> ModelRuntime:
    from relay_nb.runtime.scripted import ScriptedRuntime

    return ScriptedRuntime.from_file(value, **options)


def _replay(value: str, options: dict[str, Any]) -> ModelRuntime:
    from relay_nb.runtime.replay import ReplayRuntime

    if options:
        raise ConfigurationError(f"replay profiles take no options, got {sorted(options)}")
    return ReplayRuntime.from_file(value)


_BUILDERS: dict[str, Callable[[str, dict[str, Any]], ModelRuntime]] = {
    "anthropic": _anthropic,
    "claude-code": _claude_code,
    "codex": _codex,
    "opencode": _opencode,
    "openai": _openai,
    "openai-compatible": _openai_compatible,
    "scripted": _scripted,
    "replay": _replay,
}
PROFILE_KINDS: tuple[str, ...] = tuple(_BUILDERS)


def parse_profile(profile: str) -> tuple[str, str]:
    """Split ``"kind:value"``; raise a :class:`ConfigurationError` listing the valid forms."""
    if not isinstance(profile, str) or ":" not in profile:
        raise ConfigurationError(f"model profile {profile!r} is malformed; use one of: {_FORMS}")
    kind, _, value = profile.partition(":")
    kind, value = kind.strip().lower(), value.strip()
    if kind not in _BUILDERS:
        raise ConfigurationError(f"unknown model profile kind {kind!r}; use one of: {_FORMS}")
    if not value:
        raise ConfigurationError(f"model profile {profile!r} names no model or path; use {_FORMS}")
    return kind, value


def runtime_from_profile(profile: str, **options: Any) -> ModelRuntime:
    """``runtime_from_profile("anthropic:claude-sonnet-4-6", timeout=60)`` and so on.

    ``options`` go to the runtime's constructor; an option it does not take is a
    :class:`ConfigurationError`, not a ``TypeError`` deep in a stack.
    """
    kind, value = parse_profile(profile)
    try:
        return _BUILDERS[kind](value, dict(options))
    except TypeError as exc:
        if "unexpected keyword argument" not in str(exc):
            raise
        raise ConfigurationError(
            f"the {kind} runtime does not take one of the options {sorted(options)}; "
            "see its constructor's help() for the options it takes"
        ) from None
