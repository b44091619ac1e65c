"""Failure classification: the Relay table, causes, and no copied provider text."""

from __future__ import annotations

import asyncio
import errno

import pytest

from relay_nb.errors import InvocationError
from relay_nb.runtime.failures import classify_exception, classify_status

SECRET_BODY = "sk-live-SECRET provider said: prompt was 'DROP TABLE users'"


class HTTPStatusFailure(Exception):
    """Shaped like SDK status errors: a status_code and a response with headers."""

    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(SECRET_BODY)
        self.status_code = status
        self.response = type("Resp", (), {"status_code": status, "headers": headers or {}})()


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (401, "AUTHENTICATION_FAILED", False),
        (403, "AUTHENTICATION_FAILED", False),
        (429, "RATE_LIMITED", True),
        (408, "PROVIDER_UNAVAILABLE", True),
        (409, "PROVIDER_UNAVAILABLE", True),
        (500, "PROVIDER_UNAVAILABLE", True),
        (502, "PROVIDER_UNAVAILABLE", True),
        (503, "PROVIDER_UNAVAILABLE", True),
        (529, "PROVIDER_UNAVAILABLE", True),
        (501, "RUNTIME_FAILURE", False),
        (400, "INVALID_REQUEST", False),
        (404, "INVALID_REQUEST", False),
        (422, "INVALID_REQUEST", False),
        (402, "RUNTIME_FAILURE", False),
        (413, "RUNTIME_FAILURE", False),
    ],
)
def test_status_table(status, code, retryable):
    assert classify_status(status) == (code, retryable)
    err = classify_exception(HTTPStatusFailure(status), provider="anthropic")
    assert (err.code, err.retryable) == (code, retryable)
    assert SECRET_BODY not in str(err) and "SECRET" not in err.message
    assert str(status) in err.message


def test_retry_after_is_read_as_a_number_only():
    assert classify_exception(HTTPStatusFailure(429, {"retry-after": "7"})).retry_after_s == 7
    assert (
        classify_exception(HTTPStatusFailure(429, {"retry-after-ms": "1500"})).retry_after_s == 1.5
    )
    dated = HTTPStatusFailure(429, {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"})
    assert classify_exception(dated).retry_after_s is None


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionResetError(errno.ECONNRESET, "reset"),
        ConnectionRefusedError(errno.ECONNREFUSED, "refused"),
        BrokenPipeError(errno.EPIPE, "pipe"),
        OSError(errno.ETIMEDOUT, "timed out"),
        TimeoutError("slow"),
        TimeoutError(),
    ],
)
def test_transport_failures_are_retryable_unavailability(exc):
    err = classify_exception(exc)
    assert (err.code, err.retryable) == ("PROVIDER_UNAVAILABLE", True)


def test_sdk_connection_errors_are_recognised_by_class_name():
    class APIConnectionError(Exception):
        pass

    class APITimeoutError(APIConnectionError):
        pass

    assert classify_exception(APIConnectionError(SECRET_BODY)).code == "PROVIDER_UNAVAILABLE"
    timeout = classify_exception(APITimeoutError())
    assert (timeout.code, timeout.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert "timed out" in timeout.message


def _wrapped(inner: BaseException, depth: int) -> BaseException:
    exc = inner
    for level in range(depth):
        try:
            raise RuntimeError(f"wrapper {level}") from exc
        except RuntimeError as wrapper:
            exc = wrapper
    return exc


def test_looks_through_three_levels_of_cause_but_not_four():
    assert classify_exception(_wrapped(HTTPStatusFailure(429), 3)).code == "RATE_LIMITED"
    assert classify_exception(_wrapped(HTTPStatusFailure(429), 4)).code == "RUNTIME_FAILURE"


def test_implicit_context_counts_as_a_cause():
    def fail_while_handling() -> None:
        try:
            raise ConnectionResetError("reset")
        except ConnectionResetError:
            raise ValueError("while handling") from None  # suppressed display, context kept

    with pytest.raises(ValueError, match="while handling") as info:
        fail_while_handling()
    assert info.value.__context__ is not None
    assert classify_exception(info.value).code == "PROVIDER_UNAVAILABLE"


def test_cancellation_is_aborted_and_invocation_errors_pass_through():
    assert classify_exception(asyncio.CancelledError()).code == "ABORTED"
    original = InvocationError("RATE_LIMITED", "fixed phrase")
    assert classify_exception(_wrapped(original, 2)) is original


def test_unknown_is_runtime_failure_without_text():
    err = classify_exception(ValueError(SECRET_BODY))
    assert (err.code, err.retryable) == ("RUNTIME_FAILURE", False)
    assert "SECRET" not in str(err)
    assert "ValueError" in err.message


def test_cycles_in_the_cause_chain_terminate():
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    assert classify_exception(a).code == "RUNTIME_FAILURE"


def test_invocation_error_pickles_with_its_fields():
    import pickle

    err = InvocationError("RATE_LIMITED", "slow down", retry_after_s=3.0)
    back = pickle.loads(pickle.dumps(err))
    assert (back.code, back.message, back.retryable, back.retry_after_s) == (
        "RATE_LIMITED",
        "slow down",
        True,
        3.0,
    )
    with pytest.raises(ValueError, match="unknown invocation error code"):
        InvocationError("NOPE", "x")  # type: ignore[arg-type]


async def test_classified_errors_do_not_keep_the_provider_exception_reachable():
    from relay_nb.runtime import InvocationRequest, Message
    from relay_nb.runtime.scripted import ScriptedRuntime

    def provider_fails(request):
        raise HTTPStatusFailure(429)

    runtime = ScriptedRuntime([provider_fails])
    with pytest.raises(InvocationError) as info:
        await runtime.invoke(InvocationRequest(messages=[Message.user("x")]))
    assert info.value.code == "RATE_LIMITED"
    assert info.value.__cause__ is None and info.value.__context__ is None


async def test_runtime_typed_errors_raised_while_handling_provider_errors_are_cut_loose():
    from relay_nb.runtime import InvocationRequest, Message
    from relay_nb.runtime.scripted import ScriptedRuntime

    def typed_inside_handler(request):
        try:
            raise ValueError(SECRET_BODY)
        except ValueError:
            raise InvocationError("PROVIDER_UNAVAILABLE", "stream broke") from None

    runtime = ScriptedRuntime([typed_inside_handler])
    with pytest.raises(InvocationError) as info:
        await runtime.invoke(InvocationRequest(messages=[Message.user("x")]))
    assert info.value.message == "stream broke"
    assert info.value.__context__ is None and info.value.__cause__ is None
