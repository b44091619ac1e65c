"""The shared process transport (``relay_nb.runtime.process``): feeding and draining, the
output cap, killing the CLI's whole process group (and what a kill cannot reach), caller
cancellation and the exit/spawn wording every harness CLI runtime reports.

The runtime-level cases drive ``ClaudeCodeRuntime`` against ``stub_claude.py``, the one
stand-in with the SIGTERM-ignoring, escaping and non-reading scenarios; abort and timeout,
which every harness CLI must honour, are in ``test_harness_lifecycle.py``. Process checks
read ``/proc`` directly: "killed" must mean the process is gone, not that an error was raised.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_support import ask
from stub_common import read_record, reaped, spawned, wait_for_record, wait_gone

from relay_nb.errors import InvocationError
from relay_nb.runtime import AbortSignal
from relay_nb.runtime import process as process_module
from relay_nb.runtime.claude_code import ClaudeCodeRuntime
from relay_nb.runtime.process import exit_description, run_process

SECRET = "STUBSECRET"


@pytest.fixture
def make_runtime(stub_runtimes: Callable[..., Any]) -> Callable[..., ClaudeCodeRuntime]:
    return stub_runtimes(ClaudeCodeRuntime, "claude")


def open_fds() -> int:
    """This process's open descriptors: a leaked pipe end shows up here, not in a warning."""
    return len(os.listdir("/proc/self/fd"))


def assert_no_secret(error: BaseException) -> None:
    assert SECRET not in str(error)
    assert SECRET not in repr(error)


@pytest.mark.parametrize("scenario", ["oversize-stdout", "oversize-stderr"])
async def test_oversize_output_kills_the_cli(
    loopback_model_requests: None, make_runtime, record_path: Path, scenario: str
) -> None:
    with pytest.raises(InvocationError) as info:
        await make_runtime(scenario, max_output_bytes=100_000).invoke(ask())

    assert info.value.code == "RUNTIME_FAILURE"
    assert "output exceeded 100000 bytes" in info.value.message
    pid = read_record(record_path)["pid"]
    assert reaped(pid)


async def _abort_when_started(signal_: AbortSignal, record_path: Path, children: int) -> None:
    await wait_for_record(record_path, children=children)
    signal_.abort()


async def test_a_cli_that_ignores_sigterm_is_killed(
    loopback_model_requests: None, make_runtime, record_path: Path
) -> None:
    abort = AbortSignal()
    aborter = asyncio.ensure_future(_abort_when_started(abort, record_path, children=1))
    with pytest.raises(InvocationError):
        await make_runtime("hang-ignore-term").invoke(ask(), abort=abort)
    await aborter

    seen = read_record(record_path)
    assert wait_gone([seen["pid"], *seen["children"]]) == []


async def test_a_child_that_escaped_the_group_cannot_hang_the_invocation(
    loopback_model_requests: None, make_runtime, record_path: Path, monkeypatch
) -> None:
    """A helper in its own session survives the group kill and holds stdout open; the
    transport must still return (closing its pipe ends) rather than wait on it forever."""
    monkeypatch.setattr(process_module, "_DRAIN_AFTER_KILL_S", 0.3)
    abort = AbortSignal()
    aborter = asyncio.ensure_future(_abort_when_started(abort, record_path, children=1))
    fds_before = open_fds()
    started = time.monotonic()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(InvocationError) as info:
                await make_runtime("hang-escaped-child").invoke(ask(), abort=abort)
            await aborter
            gc.collect()
    finally:
        escaped = read_record(record_path)["children"] if spawned(record_path) else []
        for pid in escaped:  # ours to clean up: the runtime rightly cannot reach it
            os.kill(pid, signal.SIGKILL)

    assert info.value.code == "ABORTED"
    assert time.monotonic() - started < 3
    assert reaped(read_record(record_path)["pid"])
    assert open_fds() == fds_before  # our pipe ends were closed even though it holds its own
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


async def test_cancelling_the_caller_kills_the_cli_and_propagates(
    loopback_model_requests: None, make_runtime, record_path: Path
) -> None:
    task = asyncio.ensure_future(make_runtime("hang").invoke(ask()))
    await wait_for_record(record_path, children=0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert wait_gone([read_record(record_path)["pid"]]) == []


async def test_a_cli_that_never_reads_stdin_is_still_parsed(
    loopback_model_requests: None, make_runtime
) -> None:
    result = await make_runtime("no-read").invoke(ask("x" * 2_000_000))

    assert result.output_text == "Hello from the stub."


@pytest.mark.parametrize(
    ("exit_code", "text"),
    [(1, "exited with code 1"), (3, "exited with code 3"), (-9, "was killed by signal 9")],
)
def test_exit_description_is_shared_wording(exit_code: int, text: str) -> None:
    assert exit_description(exit_code) == text


async def test_transport_feeds_and_drains_concurrently() -> None:
    payload = os.urandom(3_000_000)  # far above any pipe buffer: sequential I/O would deadlock
    output = await asyncio.wait_for(
        run_process(["cat"], payload, env=None, cwd=None, max_output_bytes=4_000_000), 10
    )

    assert (output.exit_code, output.stdout, output.stderr) == (0, payload, b"")


async def test_missing_executable_names_only_the_executable(
    loopback_model_requests: None, tmp_path: Path
) -> None:
    missing = str(tmp_path / "no-such-dir" / "claude")
    runtime = ClaudeCodeRuntime(executable=missing, env={"ANTHROPIC_API_KEY": f"sk-{SECRET}"})
    with pytest.raises(InvocationError) as info:
        await runtime.invoke(ask())

    assert info.value.code == "RUNTIME_FAILURE"
    assert info.value.message == (
        f"executable {missing!r} not found; install it or pass executable=... with its path"
    )
    assert_no_secret(info.value)


@pytest.mark.parametrize("given_cwd", [True, False])
async def test_pwd_names_the_childs_real_working_directory(
    loopback_model_requests: None,
    make_runtime,
    record_path: Path,
    tmp_path: Path,
    monkeypatch,
    given_cwd: bool,
) -> None:
    """A stale ``$PWD`` (a notebook's folder after ``os.chdir``, or inherited) must not reach
    the child: CLIs that trust ``$PWD`` over ``getcwd()`` would load that folder's config."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("PWD", str(elsewhere))
    workdir = tmp_path / "work"
    workdir.mkdir()
    runtime = make_runtime(cwd=str(workdir)) if given_cwd else make_runtime()
    await runtime.invoke(ask())

    expected = str(workdir) if given_cwd else os.getcwd()
    assert read_record(record_path)["pwd"] == expected
