"""The kernel's default ``Relay``: the one ``%relay`` uses, built by the first cell that asks.

``relay_nb.default_relay(model=..., ...)`` builds it with ``Relay``'s keywords;
``relay_nb.session()`` is its deprecated former name. Every live ``Relay`` is closed when the
kernel shuts down, so no connection outlives it.

Re-running the cell that built it is an analyst's habit, not a mistake: the same options give
the same relay back; a changed turn setting (``model``, ``max_steps``, ``max_cost_usd`` …) is
applied to it and said in one line, connectors, conversation and usage kept; an option that
only means something at creation (``ledger``, ``config``, ``prices`` …) asks for
``fresh=True``, which closes the old relay and builds a new one.
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
import threading
import warnings
from collections.abc import Iterable
from typing import Any

from relay_nb.agent.routing import ModelSetting
from relay_nb.agent.settings import TurnSettings
from relay_nb.errors import ConfigurationError
from relay_nb.facade.relay import Relay, open_relays

__all__ = ["default_relay", "existing_default_relay", "session", "setting_changes"]


@atexit.register
def _close_all_at_exit() -> None:
    """Kernel shutdown: close every live session's connectors (pools, clients, sockets)."""
    for relay in list(open_relays):
        with contextlib.suppress(Exception):
            relay._engine.connectors.close()


_default: Relay | None = None
_created_with: dict[str, Any] = {}
"""The creation-only options the default relay was built with (see :data:`_SETTINGS`)."""
_default_guard = threading.Lock()

_SETTINGS = (
    "model", "max_steps", "max_cost_usd", "max_tokens", "max_output_tokens", "approval",
    "tier", "context_window", "max_retries", "retry_base_s",
)  # fmt: skip
"""Options that are turn settings: ``Relay.configure`` changes them on a live relay."""


def default_relay(model: ModelSetting = None, *, fresh: bool = False, **options: Any) -> Relay:
    """The kernel's default ``Relay`` (the one ``%relay`` uses), created on first call with
    ``model`` and ``options`` (``Relay``'s keywords).

    Called again (a re-run cell): the turn settings given (``model``, ``max_steps``,
    ``max_cost_usd``, ``approval`` …) are applied to the same relay, with one line saying
    what changed; its connectors, conversation and usage are kept. Options that only apply
    when a relay is created (``ledger``, ``config``, ``prices``, ``session_max_cost_usd`` …)
    must match, or ``fresh=True`` closes the old relay and creates a new one. After
    ``relay.close()``, the next call creates a new one.
    """
    global _default, _created_with
    with _default_guard:
        if fresh and _default is not None:
            old, _default = _default, None
            old.close()
        if _default is not None and _default.closed:  # relay.close() ran: start anew
            _default = None
        if _default is None:
            _default = Relay(model, **options)
            _created_with = {k: v for k, v in options.items() if k not in _SETTINGS}
        elif model is not None or options:
            _apply_again(_default, {"model": model, **options})
        return _default


def _apply_again(relay: Relay, requested: dict[str, Any]) -> None:
    """A re-run's options on the live relay: settings applied (changes said), creation-only
    options checked against what it was created with."""
    inspect.signature(Relay).bind(**requested)  # a misspelt option: Relay's own TypeError
    given = {k: v for k, v in requested.items() if v is not None}
    fixed = {k: v for k, v in given.items() if k not in _SETTINGS}
    differ = [k for k, v in fixed.items() if not _same(v, _created_with.get(k))]
    if differ:
        raise ConfigurationError(
            f"the default relay was created with other values of {', '.join(differ)}, which "
            "apply only when it is created: default_relay(..., fresh=True) closes it and "
            "starts a new one (connectors, conversation and usage totals start over)"
        )
    settings = {k: v for k, v in given.items() if k in _SETTINGS}
    if not settings:
        return
    before = relay.settings
    relay.configure(**settings)  # a re-run's new model object replaces the old one
    changes = setting_changes(before, relay.settings, settings)
    if changes:
        print(f"default relay: {', '.join(changes)} (connectors, conversation and usage kept)")


def _same(value: Any, created: Any) -> bool:
    """Equal, or the same function defined again (a re-run cell makes a new function object
    from the same code)."""
    try:
        if value is created or bool(value == created):
            return True
    except Exception:  # e.g. an array's elementwise ==: not the same, then
        return False
    code, other = getattr(value, "__code__", None), getattr(created, "__code__", None)
    if code is None or other is None:
        return False
    return (code.co_code, code.co_consts, code.co_names) == (
        other.co_code,
        other.co_consts,
        other.co_names,
    )


def setting_changes(before: TurnSettings, after: TurnSettings, names: Iterable[str]) -> list[str]:
    """``"max_steps 8 -> 3"`` for each of ``names`` whose value changed, as the analyst is
    told (a runtime object by its ``id``, skills by name)."""
    shown = [(name, _shown(getattr(before, name)), _shown(getattr(after, name))) for name in names]
    return [f"{name} {old} -> {new}" for name, old, new in shown if old != new]


def _shown(value: Any) -> str:
    if value is None or isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) or "none"
    return str(getattr(value, "id", None) or type(value).__name__)


def existing_default_relay() -> Relay | None:
    """The kernel's default ``Relay`` if one was created and is not closed, else None
    (nothing is built)."""
    return _default if _default is not None and not _default.closed else None


def session(**options: Any) -> Relay:
    """Deprecated: the former name of :func:`default_relay` (it returns the same object)."""
    warnings.warn(
        "relay_nb.session() is now relay_nb.default_relay(); the old name goes in a later release",
        DeprecationWarning,
        stacklevel=2,
    )
    return default_relay(**options)
