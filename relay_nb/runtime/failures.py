"""Turn any exception from a provider call into a typed, content-free ``InvocationError``.

The table follows the Relay concepts: HTTP status first (looking through up to three
levels of ``__cause__``/``__context__``), then transport failures, then ``RUNTIME_FAILURE``.
Messages are assembled from fixed phrases only: provider bodies can echo prompts or keys,
so not one character of ``str(exc)`` is ever copied.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Iterator

from relay_nb.errors import InvocationError, InvocationErrorCode

__all__ = ["classify_exception", "classify_status", "error_for_status"]

MAX_CAUSE_DEPTH = 3

_TRANSIENT_ERRNOS = frozenset(
    {
        errno.ECONNRESET,
        errno.ECONNREFUSED,
        errno.ECONNABORTED,
        errno.ETIMEDOUT,
        errno.EPIPE,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ENETDOWN,
    }
)
# Exception class names (anywhere in the MRO) that mean "the connection failed or timed
# out" in the HTTP stacks the SDKs use (httpx, httpx2, httpcore, aiohttp, anthropic). Matched
# by name so this module imports none of them.
_TRANSPORT_CLASS_NAMES = frozenset(
    {
        "APIConnectionError",
        "APITimeoutError",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "TimeoutException",
        "ReadError",
        "WriteError",
        "RemoteProtocolError",
        "NetworkError",
        "ServerDisconnectedError",
        "ClientConnectionError",
    }
)


def classify_status(status: int) -> tuple[InvocationErrorCode, bool]:
    """The Relay table: (code, retryable) for an HTTP status."""
    if status in (401, 403):
        return "AUTHENTICATION_FAILED", False
    if status == 429:
        return "RATE_LIMITED", True
    if status in (408, 409) or (500 <= status <= 599 and status != 501):
        return "PROVIDER_UNAVAILABLE", True
    if status in (400, 404, 422):
        return "INVALID_REQUEST", False
    return "RUNTIME_FAILURE", False


_STATUS_PHRASES: dict[InvocationErrorCode, str] = {
    "AUTHENTICATION_FAILED": (
        "the provider refused the credentials; check the API key and its permissions"
    ),
    "RATE_LIMITED": "the provider is rate limiting this key; wait and try again",
    "PROVIDER_UNAVAILABLE": "the provider is unavailable or overloaded; try again shortly",
    "INVALID_REQUEST": (
        "the provider rejected the request as invalid; check the model name and request"
    ),
    "RUNTIME_FAILURE": "the provider call failed unexpectedly",
}


def error_for_status(
    status: int, *, provider: str = "provider", retry_after_s: float | None = None
) -> InvocationError:
    code, retryable = classify_status(status)
    phrase = _STATUS_PHRASES[code].replace("the provider", provider, 1)
    return InvocationError(
        code, f"{phrase} (HTTP {status})", retryable, retry_after_s=retry_after_s
    )


def classify_exception(exc: BaseException, *, provider: str = "provider") -> InvocationError:
    """Map ``exc`` to an :class:`InvocationError` without copying its text."""
    chain = list(_cause_chain(exc))
    for err in chain:
        if isinstance(err, InvocationError):
            return err
    for err in chain:
        if isinstance(err, asyncio.CancelledError):
            return InvocationError("ABORTED", "the invocation was cancelled", False)
    for err in chain:
        status = _status_of(err)
        if status is not None:
            return error_for_status(status, provider=provider, retry_after_s=_retry_after(err))
    for err in chain:
        if _is_timeout(err):
            return InvocationError(
                "PROVIDER_UNAVAILABLE",
                f"the request to {provider} timed out; try again, or give the runtime a longer "
                "timeout",
                True,
            )
        if _is_transport_failure(err):
            return InvocationError(
                "PROVIDER_UNAVAILABLE",
                f"the connection to {provider} failed or was dropped; check the network (and "
                "the base URL) and try again",
                True,
            )
    return InvocationError(
        "RUNTIME_FAILURE", f"the call to {provider} failed ({type(exc).__name__})", False
    )


def _cause_chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and up to three levels of causes/contexts, breadth first, no repeats."""
    seen: set[int] = set()
    level = [exc]
    for _depth in range(MAX_CAUSE_DEPTH + 1):
        next_level: list[BaseException] = []
        for err in level:
            if id(err) in seen:
                continue
            seen.add(id(err))
            yield err
            next_level += [e for e in (err.__cause__, err.__context__) if e is not None]
        level = next_level
        if not level:
            return


def _status_of(err: BaseException) -> int | None:
    for attr in ("status_code", "status"):
        value = getattr(err, attr, None)
        if isinstance(value, int) and 100 <= value <= 599:
            return value
    response = getattr(err, "response", None)
    value = getattr(response, "status_code", None)
    if isinstance(value, int) and 100 <= value <= 599:
        return value
    return None


def _retry_after(err: BaseException) -> float | None:
    """The provider's retry hint in seconds (a number, never text), if it sent one."""
    headers = getattr(getattr(err, "response", None), "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            raw = headers.get(name)
        except Exception:  # a headers object we do not understand: no hint
            return None
        if raw is None:
            continue
        try:
            seconds = float(raw) * scale
        except (TypeError, ValueError):
            continue  # HTTP-date form: ignore rather than guess a clock
        if 0 <= seconds <= 3600:
            return seconds
    return None


def _mro_names(err: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(err).__mro__}


def _is_timeout(err: BaseException) -> bool:
    if isinstance(err, TimeoutError):  # also asyncio.TimeoutError and socket.timeout
        return True
    if isinstance(err, OSError) and err.errno == errno.ETIMEDOUT:
        return True
    names = _mro_names(err)
    return bool(names & {"APITimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout"})


def _is_transport_failure(err: BaseException) -> bool:
    if isinstance(err, ConnectionError):
        return True
    if isinstance(err, OSError) and err.errno in _TRANSIENT_ERRNOS:
        return True
    return bool(_mro_names(err) & _TRANSPORT_CLASS_NAMES)
