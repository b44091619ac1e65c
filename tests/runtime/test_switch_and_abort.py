"""The no-real-requests switch and the cross-thread abort signal."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import threading

import pytest

from relay_nb.errors import ConfigurationError, InvocationError, ModelRequestsBlocked
from relay_nb.runtime import AbortSignal, InvocationRequest, Message
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.switch import (
    allow_model_requests,
    check_model_request,
    is_loopback_url,
    model_request_scope,
    set_model_request_scope,
)


def test_tests_run_with_model_requests_disabled():
    assert model_request_scope() == "none"
    with pytest.raises(ModelRequestsBlocked) as info:
        check_model_request("anthropic:claude-x", url="https://api.anthropic.com")
    assert info.value.code == "INVALID_REQUEST"
    assert "allow_model_requests" in info.value.message


@pytest.mark.parametrize(
    ("url", "executable", "allowed"),
    [
        ("http://127.0.0.1:8080", None, True),
        ("http://127.9.9.9", None, True),
        ("http://[::1]:9000/v1", None, True),
        ("http://localhost:1234", None, True),
        ("https://api.anthropic.com", None, False),
        ("http://10.0.0.5", None, False),
        ("http://localhost.evil.example", None, False),
        (None, os.path.join(tempfile.gettempdir(), "stub_claude"), True),
        (None, "claude", False),
        (None, "/usr/local/bin/claude", False),
        (None, os.path.join(tempfile.gettempdir(), "..", "usr", "bin", "claude"), False),
    ],
)
def test_loopback_scope(url, executable, allowed):
    with allow_model_requests("loopback"):
        if allowed:
            check_model_request("rt", url=url, executable=executable)
        else:
            with pytest.raises(ModelRequestsBlocked):
                check_model_request("rt", url=url, executable=executable)
    assert model_request_scope() == "none"  # restored


def test_registered_stub_directories_are_allowed(tmp_path, monkeypatch):
    import relay_nb.runtime.switch as switch

    monkeypatch.setattr(switch, "_stub_directories", [])
    monkeypatch.setattr(switch.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    stub = tmp_path / "stubs" / "claude"
    with allow_model_requests("loopback"):
        with pytest.raises(ModelRequestsBlocked):
            check_model_request("rt", executable=str(stub))
        switch.add_stub_directory(tmp_path / "stubs")
        check_model_request("rt", executable=str(stub))


def test_scope_values_are_checked():
    with pytest.raises(ConfigurationError):
        set_model_request_scope("some")  # type: ignore[arg-type]
    assert is_loopback_url("http://127.0.0.1") and not is_loopback_url("http://example.com")


def test_env_var_sets_the_starting_scope():
    code = "import relay_nb.runtime.switch as s; print(s.model_request_scope())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"RELAY_MODEL_REQUESTS": "none", "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "none"
    bad = subprocess.run(
        [sys.executable, "-c", code],
        env={"RELAY_MODEL_REQUESTS": "maybe", "PATH": ""},
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "RELAY_MODEL_REQUESTS" in bad.stderr


async def test_scripted_runtime_ignores_the_switch():
    result = await ScriptedRuntime([{"text": "offline"}]).invoke(
        InvocationRequest(messages=[Message.user("x")])
    )
    assert result.output_text == "offline"


async def test_abort_from_another_thread_wakes_the_invocation():
    started = asyncio.Event()

    async def hang(request):
        started.set()
        await asyncio.sleep(30)

    signal = AbortSignal()
    runtime = ScriptedRuntime([hang])
    task = asyncio.create_task(
        runtime.invoke(InvocationRequest(messages=[Message.user("x")]), abort=signal)
    )
    await started.wait()
    threading.Thread(target=signal.abort, args=("stop button",)).start()
    with pytest.raises(InvocationError) as info:
        await asyncio.wait_for(task, 5)
    assert info.value.code == "ABORTED"
    assert signal.aborted and signal.reason == "stop button"
    signal.abort()  # idempotent


async def test_cancelling_the_caller_propagates_cancellation_and_cleans_up():
    cleaned = asyncio.Event()

    async def hang(request):
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.set()

    task = asyncio.create_task(
        ScriptedRuntime([hang]).invoke(InvocationRequest(messages=[Message.user("x")]))
    )
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned.is_set()


async def test_wait_returns_immediately_when_already_aborted():
    signal = AbortSignal()
    signal.abort()
    await asyncio.wait_for(signal.wait(), 1)


async def test_caller_cancelled_during_cleanup_still_gets_cancelled_error():
    """A timeout starts cleanup; the caller's own cancel during it must not be swallowed."""
    cleanup_done = asyncio.Event()

    async def slow_cleanup(request):
        try:
            await asyncio.sleep(30)
        finally:
            await asyncio.sleep(0.3)  # e.g. killing a child process
            cleanup_done.set()

    task = asyncio.create_task(
        ScriptedRuntime([slow_cleanup]).invoke(
            InvocationRequest(messages=[Message.user("x")]), timeout=0.05
        )
    )
    await asyncio.sleep(0.15)  # timeout fired, cleanup running
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleanup_done.is_set()  # cleanup finished before the cancellation surfaced
