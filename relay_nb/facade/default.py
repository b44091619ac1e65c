"""The kernel's default ``Relay``: the one ``%relay`` uses, built by the first cell that asks.

``relay_nb.default_relay(model=..., ...)`` builds it with ``Relay``'s keywords;
``relay_nb.session()`` is its deprecated former name. Every live ``Relay`` is closed when the
kernel shuts down, so no connection outlives it.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import warnings
from typing import Any

from relay_nb.agent.routing import ModelSetting
from relay_nb.errors import ConfigurationError
from relay_nb.facade.relay import Relay, open_relays

__all__ = ["default_relay", "existing_default_relay", "session"]


@atexit.register
def _close_all_at_exit() -> None:
    """Kernel shutdown: close every live session's connectors (pools, clients, sockets)."""
    for relay in list(open_relays):
        with contextlib.suppress(Exception):
            relay._engine.connectors.close()


_default: Relay | None = None
_default_guard = threading.Lock()


def default_relay(model: ModelSetting = None, **options: Any) -> Relay:
    """The kernel's default ``Relay`` (the one ``%relay`` uses), created on first call with
    ``model`` and ``options`` (``Relay``'s keywords).

    Options apply when it is created; to change them later, use ``relay.configure(...)``
    or build a ``Relay`` yourself.
    """
    global _default
    with _default_guard:
        if _default is None:
            _default = Relay(model, **options)
        elif model is not None or options:
            raise ConfigurationError(
                "the default relay already exists; options apply only when it is created "
                "(relay.configure(...) changes its settings; build your own Relay(...) for "
                "different ones)"
            )
        return _default


def existing_default_relay() -> Relay | None:
    """The kernel's default ``Relay`` if one was created, else None (nothing is built)."""
    return _default


def session(**options: Any) -> Relay:
    """Deprecated: the former name of :func:`default_relay` (it returns the same object)."""
    warnings.warn(
        "relay_nb.session() is now relay_nb.default_relay(); the old name goes in a later release",
        DeprecationWarning,
        stacklevel=2,
    )
    return default_relay(**options)
