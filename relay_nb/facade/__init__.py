"""The Python facade: ``Relay`` (connect, skills, tools, settings, sync and async ask) and the
kernel's default instance, ``relay_nb.default_relay()``. Sits above the agent layer, below the
notebook."""

from __future__ import annotations

from relay_nb.facade.default import default_relay, session
from relay_nb.facade.relay import Relay, Turn

__all__ = ["Relay", "Turn", "default_relay", "session"]
