"""The process-wide switch that decides whether real model requests may leave the process.

Like pydantic-ai's ``ALLOW_MODEL_REQUESTS``, but with a middle setting so tests can run the
real SDK against a stub server on 127.0.0.1 while anything that could reach a real provider
fails loudly:

- ``"all"``      every request may go out (the library default);
- ``"loopback"`` HTTP runtimes only to 127.0.0.0/8, ::1 or localhost; harness CLIs only when
  given an explicit executable path (a local stub), never a bare name looked up on PATH;
- ``"none"``     no real runtime may invoke; scripted and replay runtimes still work.

``RELAY_MODEL_REQUESTS`` sets the starting scope; ``relay_nb.testing`` sets ``"none"``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import threading
from collections.abc import Iterator
from typing import Literal
from urllib.parse import urlsplit

from relay_nb.errors import ConfigurationError, ModelRequestsBlocked

__all__ = [
    "ModelRequestScope",
    "allow_model_requests",
    "check_model_request",
    "model_request_scope",
    "set_model_request_scope",
]

ModelRequestScope = Literal["all", "loopback", "none"]
_SCOPES: tuple[str, ...] = ("all", "loopback", "none")
_lock = threading.Lock()


def _initial_scope() -> ModelRequestScope:
    raw = os.environ.get("RELAY_MODEL_REQUESTS", "all").strip().lower() or "all"
    if raw not in _SCOPES:
        raise ConfigurationError(
            f"RELAY_MODEL_REQUESTS={raw!r} is not one of all, loopback, none"
        )
    return raw  # type: ignore[return-value]


_scope: ModelRequestScope = _initial_scope()


def model_request_scope() -> ModelRequestScope:
    return _scope


def set_model_request_scope(scope: ModelRequestScope) -> ModelRequestScope:
    """Set the scope for the whole process; returns the previous one."""
    global _scope
    if scope not in _SCOPES:
        raise ConfigurationError(f"model request scope must be one of {', '.join(_SCOPES)}")
    with _lock:
        previous, _scope = _scope, scope
    return previous


@contextlib.contextmanager
def allow_model_requests(scope: ModelRequestScope = "all") -> Iterator[None]:
    """Temporarily allow model requests (``"loopback"`` for stub-server tests)."""
    previous = set_model_request_scope(scope)
    try:
        yield
    finally:
        set_model_request_scope(previous)


def is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_model_request(runtime_id: str, *, url: str | None = None, executable: str | None = None) -> None:
    """Raise :class:`ModelRequestsBlocked` unless the current scope allows this target."""
    scope = _scope
    if scope == "all":
        return
    if scope == "loopback":
        if url is not None and is_loopback_url(url):
            return
        if executable is not None and os.sep in executable:
            return
    raise ModelRequestsBlocked(runtime_id, scope)
