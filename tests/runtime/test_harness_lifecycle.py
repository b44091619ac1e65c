"""Abort and timeout, which every harness CLI runtime must honour the same way, written once
and run against each runtime's stand-in (``stub_claude.py``, ``stub_codex.py``,
``stub_opencode.py``): the invocation fails with the documented code, and the CLI *and* its
child are gone (checked in ``/proc``, not inferred from the exception), with no pipe end or
private working directory left behind.

Each runtime's own checks (argv, parsing, failure wording) stay in its own test module; the
transport details behind these kills are in ``test_process_transport.py``.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from runtime_support import ask
from stub_common import read_record, reaped, wait_for_record, wait_gone

from relay_nb.errors import InvocationError
from relay_nb.runtime import AbortSignal
from relay_nb.runtime.claude_code import ClaudeCodeRuntime
from relay_nb.runtime.codex_cli import CodexCLIRuntime
from relay_nb.runtime.opencode_cli import OpenCodeCLIRuntime

pytestmark = pytest.mark.usefixtures("loopback_model_requests")


@dataclass(frozen=True)
class HarnessCLI:
    """One runtime under test: how ``stub_runtimes`` builds it, and whether it runs the CLI
    in a private working directory of its own (which it must remove even when aborted)."""

    cls: Callable[..., Any]
    stub: str
    args: tuple[str, ...] = ()
    private_cwd: bool = False


CLIS = {
    "claude-code": HarnessCLI(ClaudeCodeRuntime, "claude"),
    "codex": HarnessCLI(CodexCLIRuntime, "codex", private_cwd=True),
    "opencode": HarnessCLI(
        OpenCodeCLIRuntime, "opencode", ("anthropic/claude-sonnet-4-5",), private_cwd=True
    ),
}


@pytest.fixture(params=list(CLIS.values()), ids=list(CLIS))
def cli(request: pytest.FixtureRequest) -> HarnessCLI:
    result: HarnessCLI = request.param
    return result


@pytest.fixture
def make_runtime(stub_runtimes: Callable[..., Any], cli: HarnessCLI) -> Callable[..., Any]:
    return stub_runtimes(cli.cls, cli.stub, *cli.args)


def exists(path: str) -> bool:
    """A plain call, so the async tests do not do blocking ``os.path`` work themselves."""
    return os.path.exists(path)


def open_fds() -> int:
    """This process's open descriptors: a leaked pipe end shows up here, not in a warning."""
    return len(os.listdir("/proc/self/fd"))


async def test_abort_kills_the_cli_and_its_child_without_leaks(
    make_runtime, cli: HarnessCLI, record_path: Path
) -> None:
    abort = AbortSignal()

    async def abort_when_started() -> dict[str, Any]:
        record = await wait_for_record(record_path, children=1)
        abort.abort()
        return record

    gc.collect()  # earlier tests' garbage (an engine's pooled files) closes now, not mid-count
    fds_before = open_fds()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        aborter = asyncio.ensure_future(abort_when_started())
        with pytest.raises(InvocationError) as info:
            await make_runtime("hang-child").invoke(ask(), abort=abort)
        record = await aborter
        gc.collect()

    assert info.value.code == "ABORTED"
    assert open_fds() == fds_before
    assert reaped(record["pid"])  # waited for, not left a zombie
    assert wait_gone(record["children"]) == []
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
    if cli.private_cwd:
        assert not exists(record["cwd"])


async def test_timeout_kills_the_cli_and_its_child(
    make_runtime, cli: HarnessCLI, record_path: Path
) -> None:
    started = time.monotonic()
    with pytest.raises(InvocationError) as info:
        await make_runtime("hang-child", timeout=1.0).invoke(ask())

    assert (info.value.code, info.value.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert time.monotonic() - started < 5
    record = read_record(record_path)
    assert wait_gone([record["pid"], *record["children"]]) == []
    if cli.private_cwd:
        assert not exists(record["cwd"])
