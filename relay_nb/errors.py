"""The relay_nb exception tree, shared by every layer.

Every error a user can see derives from :class:`RelayError`, so a notebook can catch one
thing. Messages are short, say how to fix the problem, and never carry provider text or
credentials::

    RelayError
    ├── ConfigurationError        a profile, option or setting is wrong; fix the call
    ├── InvocationError           one model invocation failed (code + retryable)
    │   └── ModelRequestsBlocked  a real model call was refused by the test switch
    └── ConnectorError            a connector could not do what was asked
        ├── UnsafeQueryError      the guard refused a query (rule + message), nothing ran
        └── QueryExecutionError   the database refused or failed a guarded query
            └── QueryTimeoutError the query ran past its time bound and was stopped

    KeyboardInterrupt
    └── Cancelled                 a synchronous call stopped by Ctrl-C or the stop button

``Cancelled`` stays a ``KeyboardInterrupt`` (a script stops, "Run All" stops), but IPython shows
it as one line instead of a traceback through relay_nb's threads and loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, get_args

__all__ = [
    "Cancelled",
    "ConfigurationError",
    "ConnectorError",
    "InvocationError",
    "InvocationErrorCode",
    "ModelRequestsBlocked",
    "QueryExecutionError",
    "QueryTimeoutError",
    "RelayError",
    "UnsafeQueryError",
]

InvocationErrorCode = Literal[
    "ABORTED",
    "AUTHENTICATION_FAILED",
    "INVALID_REQUEST",
    "PROVIDER_UNAVAILABLE",
    "RATE_LIMITED",
    "RUNTIME_FAILURE",
]
INVOCATION_ERROR_CODES: tuple[str, ...] = get_args(InvocationErrorCode)
_RETRYABLE_BY_DEFAULT = frozenset({"RATE_LIMITED", "PROVIDER_UNAVAILABLE"})

_Reduced = tuple[Callable[..., "InvocationError"], tuple[object, ...]]
"""What an invocation error's ``__reduce__`` gives pickle: how to rebuild it, and from what."""


class RelayError(Exception):
    """Base of every error relay_nb raises on purpose."""


class ConfigurationError(RelayError, ValueError):
    """A profile string, option or setting cannot be used as given."""


class InvocationError(RelayError):
    """One model invocation failed.

    ``code`` is one of :data:`InvocationErrorCode`; ``retryable`` is the signal a caller (the
    agent loop, a router) uses to decide whether trying again may help. ``retry_after_s`` is
    the provider's own hint when it sent one. The runtime never retries by itself.
    """

    def __init__(
        self,
        code: InvocationErrorCode,
        message: str,
        retryable: bool | None = None,
        *,
        retry_after_s: float | None = None,
    ) -> None:
        if code not in INVOCATION_ERROR_CODES:
            raise ValueError(f"unknown invocation error code {code!r}")
        super().__init__(message)
        self.code: InvocationErrorCode = code
        self.message = message
        self.retryable = code in _RETRYABLE_BY_DEFAULT if retryable is None else retryable
        self.retry_after_s = retry_after_s

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r}, retryable={self.retryable})"

    # keep code/retryable across pickling (multiprocessing, nbclient)
    def __reduce__(self) -> _Reduced:
        return (
            _rebuild_invocation_error,
            (type(self), self.code, self.message, self.retryable, self.retry_after_s),
        )


class ModelRequestsBlocked(InvocationError):
    """A real model request was refused because the process disallows them (tests)."""

    def __init__(self, runtime_id: str, scope: str) -> None:
        super().__init__(
            "INVALID_REQUEST",
            f"real model requests are disabled here (scope {scope!r}), so {runtime_id} was not "
            "called; use a ScriptedRuntime/ReplayRuntime, or opt in with "
            "relay_nb.runtime.allow_model_requests()",
            retryable=False,
        )
        self.runtime_id = runtime_id
        self.scope = scope

    def __reduce__(self) -> _Reduced:
        return (type(self), (self.runtime_id, self.scope))


class ConnectorError(RelayError):
    """A connector could not do what was asked (bad input, unreachable system, refusal)."""


class UnsafeQueryError(ConnectorError):
    """The guard refused a query before anything ran.

    ``rule`` is a stable identifier (e.g. ``"not_a_query"``, ``"table_not_allowed"``) that
    tests and the model can rely on; ``message`` says what to change.
    """

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"{rule}: {message}")
        self.rule = rule
        self.message = message

    def __reduce__(self):
        return (type(self), (self.rule, self.message))


class QueryExecutionError(ConnectorError):
    """The database refused or failed a guarded query; the message is the driver's, scrubbed
    of credentials."""


class QueryTimeoutError(QueryExecutionError):
    """A guarded query ran longer than its connector's statement timeout and was stopped
    (an evaluation counts it as a timeout, not a wrong query)."""


def _rebuild_invocation_error(
    cls: type[InvocationError],
    code: InvocationErrorCode,
    message: str,
    retryable: bool,
    retry_after_s: float | None,
) -> InvocationError:
    return cls(code, message, retryable, retry_after_s=retry_after_s)


class Cancelled(KeyboardInterrupt):
    """An interrupted synchronous call (see the module docstring): what was stopped, in one
    line. What the call was doing is cancelled first (a running statement rolled back)."""

    def _render_traceback_(self) -> list[str]:
        """IPython's hook: this list replaces the traceback."""
        return [f"cancelled: {self}"]
