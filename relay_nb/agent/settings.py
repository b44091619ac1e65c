"""What one turn is allowed to do, as one frozen value merged from named layers.

A turn's settings used to travel as loose keywords through four hops (facade, session, loop,
turn state); now they are a :class:`TurnSettings`, validated once, and every hop passes the
value. Where a value comes from is one visible order, lowest first::

    defaults < config < session < skill < call

- **defaults**: the field defaults below;
- **config**: the ``"settings"`` object of a ``relay.config.json``;
- **session**: ``Relay(...)`` keywords and ``relay.configure(...)``;
- **skill**: what the active skills ask for (the most demanding ``tier`` and ``max_steps``);
- **call**: the keywords of one ``relay.ask(...)`` / ``%relay --max-steps …``.

The keywords a question takes are declared once, here, beside the model they fill:
:class:`CallOptions` (``ask_many``'s), :class:`AskOptions` (``ask``, ``ask_async`` and
``stream``: ``approval`` too) and :class:`SessionOptions` (``relay.configure``: the settings
that are not per question too). They are ``TypedDict`` classes, used as ``**options:
Unpack[AskOptions]``, so an IDE or a type checker still sees each keyword and its type; the
``%relay`` magic's option table names the key each of its settings fills.
:func:`options_layer` turns them into a :class:`SettingsLayer` (only ``skill`` is spelled
otherwise than its field, ``skills``).

A layer is a plain mapping of the fields it sets (:func:`settings_layer` checks one); a
value of ``None`` in a call means "not set here", so a call cannot *remove* a cap the session
set — it can only set its own. :meth:`TurnSettings.origin` says which layer set a field,
so "why did this turn stop at 4 steps?" has an answer.

Services — the runtime, tools, resolver, accountant, approver, event sink — are not
settings: they are objects with behaviour, bundled in
:class:`~relay_nb.agent.services.TurnServices`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal, TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from relay_nb.agent.caps import UsageCaps
from relay_nb.agent.routing import ModelSetting
from relay_nb.agent.skills import TIERS, Tier
from relay_nb.errors import ConfigurationError

__all__ = [
    "LAYERS",
    "Approval",
    "AskOptions",
    "CallOptions",
    "SessionOptions",
    "SettingsLayer",
    "TurnSettings",
    "merge_settings",
    "option_setting",
    "options_layer",
    "settings_layer",
    "skill_layer",
]

Approval = Literal["ask", "allow", "deny"]
"""Tools that need approval: ask the approver (buttons, a prompt), run them, or refuse them."""

LAYERS: tuple[str, ...] = ("defaults", "config", "session", "skill", "call")
"""The merge order, lowest first: a later layer's value wins."""

Layer = Mapping[str, Any]
_NUMBERS = (
    "max_steps",
    "max_output_tokens",
    "max_cost_usd",
    "max_tokens",
    "max_retries",
    "retry_base_s",
    "context_window",
)


class TurnSettings(BaseModel):
    """Every setting of one turn (see the module docstring for where each comes from)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    model: Any = None
    """A profile (``"anthropic:claude-sonnet-4-6"``), a kind routed by tier (``"anthropic"``),
    a runtime object, a factory ``model_id -> runtime``; None: the session's model."""
    skills: tuple[str, ...] | None = None
    """The skills that apply (None: every registered one)."""
    tier: Tier = "balanced"
    """fast | balanced | best: which model a routed kind picks."""
    max_steps: int = Field(default=8, ge=1, le=50)
    """Model calls a turn may make before it stops with ``finish_reason="max_steps"``."""
    max_output_tokens: int = Field(default=4096, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)
    """This turn's dollar cap (the session's own cap is the accountant's)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """This turn's token cap."""
    approval: Approval = "ask"
    max_retries: int = Field(default=3, ge=0, le=20)
    """Extra attempts for a model call that failed with a retryable error."""
    retry_base_s: float = Field(default=0.5, ge=0, le=60)
    """The first wait between attempts, doubled each time (or the provider's hint)."""
    context_window: int = Field(default=200_000, ge=1_000)
    """The model's window, split into system, context and history budgets."""
    batch: bool = False
    """Price every call at the batch discount (``ask_many(batch=True)`` sets it: its calls
    go through the runtime's physical batch)."""

    _origins: Mapping[str, str] = PrivateAttr(default_factory=dict)

    @field_validator(*_NUMBERS, mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        """A number, not text or a bool that pydantic would read as one (``"3"``, ``True``)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number, not {type(value).__name__}")
        return value

    @field_validator("model")
    @classmethod
    def _model_kind(cls, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        if hasattr(value, "invoke") and hasattr(value, "capabilities"):
            return value  # a runtime object
        if callable(value):
            return value  # a factory model_id -> runtime
        raise ValueError(
            f"must be a profile string, a runtime or a callable, not {type(value).__name__}"
        )

    @field_validator("skills", mode="before")
    @classmethod
    def _skill_names(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @property
    def caps(self) -> UsageCaps:
        """This turn's caps as the loop checks them."""
        return UsageCaps(max_cost_usd=self.max_cost_usd, max_tokens=self.max_tokens)

    def origin(self, field: str) -> str:
        """The layer that set ``field`` (``"defaults"`` when none did)."""
        if field not in type(self).model_fields:
            raise ConfigurationError(f"no setting named {field!r}; settings: {_names()}")
        return self._origins.get(field, "defaults")

    def layer(self, name: str) -> dict[str, Any]:
        """The values the layer ``name`` contributed (what ``origin`` points at)."""
        return {f: getattr(self, f) for f, source in self._origins.items() if source == name}


class SettingsLayer(TypedDict, total=False):
    """One layer as a type: the :class:`TurnSettings` fields it sets (a key left out, or
    None, is not set here)."""

    model: ModelSetting
    skills: str | Sequence[str] | None
    tier: Tier | None
    max_steps: int | None
    max_output_tokens: int | None
    max_cost_usd: float | None
    max_tokens: int | None
    approval: Approval | None
    max_retries: int | None
    retry_base_s: float | None
    context_window: int | None
    batch: bool | None


class CallOptions(TypedDict, total=False):
    """The settings one question may set, as keywords (``relay.ask_many(qs, max_steps=4)``).

    A keyword left out, or None, is not set by the question: the session's value (or its
    skill's) applies. Each is checked by :class:`TurnSettings` when the question is asked.
    """

    model: ModelSetting
    """A profile (``"anthropic:claude-sonnet-4-6"``), a kind routed by tier, or a runtime."""
    skill: str | Sequence[str] | None
    """A skill's name, or several (the ``skills`` setting; None: every registered one)."""
    max_steps: int | None
    """Model calls the turn may make."""
    max_cost_usd: float | None
    """The turn's dollar cap."""
    max_tokens: int | None
    """The turn's token cap."""
    max_output_tokens: int | None
    """Output tokens one model call may produce."""


class AskOptions(CallOptions, total=False):
    """What ``relay.ask``, ``ask_async`` and ``stream`` take: :class:`CallOptions` and
    ``approval``, which needs someone to ask (``ask_many``'s independent questions have
    none)."""

    approval: Approval | None
    """Tools that need approval: "ask" the approver, "allow" or "deny" them."""


class SessionOptions(AskOptions, total=False):
    """What ``relay.configure`` takes: :class:`AskOptions` and the settings a question does
    not set on its own."""

    tier: Tier | None
    context_window: int | None
    max_retries: int | None
    retry_base_s: float | None


_OPTION_SETTINGS = {"skill": "skills"}
"""Options spelled otherwise than the setting they fill (``skill="x"`` sets ``skills``)."""


def option_setting(option: str) -> str:
    """The :class:`TurnSettings` field the option ``option`` fills."""
    return _OPTION_SETTINGS.get(option, option)


def options_layer(options: Mapping[str, Any]) -> SettingsLayer:
    """The settings layer that keyword options (:class:`SessionOptions`' keys) make; their
    values are checked when the layer is (:func:`settings_layer`)."""
    return cast(SettingsLayer, {option_setting(key): value for key, value in options.items()})


def settings_layer(values: Mapping[str, Any], *, where: str = "settings") -> dict[str, Any]:
    """The set values of one layer, each checked now (``None`` means "not set").

    An unknown name or a bad value is one ConfigurationError naming ``where`` and the field,
    raised when the layer is made (``Relay(max_steps=0)``), not in the middle of a turn.
    """
    given = {key: value for key, value in values.items() if value is not None}
    unknown = sorted(set(given) - set(TurnSettings.model_fields))
    if unknown:
        raise ConfigurationError(f"{where}: no setting named {', '.join(unknown)}; {_names()}")
    try:
        checked = TurnSettings.model_validate(given)
    except ValidationError as exc:
        raise ConfigurationError(f"{where}: {_problems(exc)}") from None
    return {key: getattr(checked, key) for key in given}


def merge_settings(layers: Sequence[tuple[str, Layer]]) -> TurnSettings:
    """One :class:`TurnSettings` from ``(name, layer)`` pairs given lowest first.

    The names must follow :data:`LAYERS`' order (a layer may be missing); each layer's
    values were checked by :func:`settings_layer`, so merging cannot fail on them.
    """
    order = [LAYERS.index(name) for name, _ in layers]
    if order != sorted(order):
        raise ConfigurationError(f"settings layers must come in the order {LAYERS}")
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for name, layer in layers:
        for key, value in layer.items():
            if value is not None:
                merged[key] = value
                origins[key] = name
    settings = TurnSettings.model_validate(merged)
    settings._origins = MappingProxyType(origins)
    return settings


def skill_layer(tiers: Sequence[str | None], steps: Sequence[int | None]) -> dict[str, Any]:
    """What the active skills ask for: the most demanding tier and step limit among those
    that say (a skill that names neither leaves the session's values in place)."""
    layer: dict[str, Any] = {}
    named = [t for t in tiers if t is not None]
    if named:
        layer["tier"] = max(named, key=TIERS.index)
    counted = [s for s in steps if s is not None]
    if counted:
        layer["max_steps"] = max(counted)
    return layer


def _names() -> str:
    return "settings: " + ", ".join(TurnSettings.model_fields)


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors()
    )
