"""The process-wide switch that decides whether real model requests may leave the process.

Like pydantic-ai's ``ALLOW_MODEL_REQUESTS``, but with a middle setting so tests can run the
real SDK against a stub server on 127.0.0.1 while anything that could reach a real provider
fails loudly:

- ``"all"``      every request may go out (the library default);
- ``"loopback"`` HTTP runtimes only to 127.0.0.0/8, ::1 or localhost; harness CLIs only when
  given an explicit path to a stub inside a stub directory (the system temp directory, where
  tests write their stubs, or one added with :func:`add_stub_directory`) — never a bare name
  looked up on PATH, never an installed CLI;
- ``"none"``     no real runtime may invoke; scripted and replay runtimes still work.

``RELAY_MODEL_REQUESTS`` sets the starting scope; ``relay_nb.testing`` sets ``"none"``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from relay_nb.errors import ConfigurationError, ModelRequestsBlocked

__all__ = [
    "ModelRequestScope",
    "add_stub_directory",
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
        raise ConfigurationError(f"RELAY_MODEL_REQUESTS={raw!r} is not one of all, loopback, none")
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


_stub_directories: list[Path] = []


def add_stub_directory(path: str | os.PathLike[str]) -> None:
    """Let harness stubs under ``path`` run in the ``"loopback"`` scope."""
    _stub_directories.append(Path(path).resolve())


def is_stub_executable(executable: str) -> bool:
    """An explicit path that resolves inside the temp directory or a registered stub directory."""
    if os.sep not in executable:
        return False  # a bare name would be looked up on PATH: that is the real CLI
    resolved = Path(executable).resolve()
    roots = [Path(tempfile.gettempdir()).resolve(), *_stub_directories]
    return any(resolved.is_relative_to(root) for root in roots)


def is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_model_request(
    runtime_id: str, *, url: str | None = None, executable: str | None = None
) -> None:
    """Raise :class:`ModelRequestsBlocked` unless the current scope allows this target."""
    scope = _scope
    if scope == "all":
        return
    if scope == "loopback":
        if url is not None and is_loopback_url(url):
            return
        if executable is not None and is_stub_executable(executable):
            return
    raise ModelRequestsBlocked(runtime_id, scope)
