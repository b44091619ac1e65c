"""The Python facade: ``Relay`` (connect, skills, tools, sync and async ask) and the kernel's
default instance, ``relay_nb.session()``. Sits above the agent layer, below the notebook."""

from __future__ import annotations

from relay_nb.facade.relay import Relay, Turn, session

__all__ = ["Relay", "Turn", "session"]
