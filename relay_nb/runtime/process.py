"""The shared transport for non-interactive harness CLIs (``claude -p``, Codex, OpenCode).

A harness runtime is a thin :class:`HarnessProfile` codec on top of :func:`run_process`:
the profile turns a request into argv and stdin and the captured output back into a
result; the transport owns everything that must never differ between CLIs:

- the child runs in its own session, so abort and timeout can kill the whole process
  group (the CLI *and* anything it spawned) and reap it before ``CancelledError`` goes on;
- stdout and stderr are read concurrently and bounded, so a runaway CLI cannot fill memory;
- failures are content-free: no message here copies CLI output or the environment, since
  either may carry prompts, tokens or keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from relay_nb.errors import InvocationError
from relay_nb.redaction import is_secret_name, register_secret
from relay_nb.runtime.base import BaseRuntime, TextCallback
from relay_nb.runtime.switch import check_model_request
from relay_nb.runtime.types import Capabilities, InvocationRequest, InvocationResult

__all__ = [
    "DEFAULT_KILL_GRACE_S",
    "HarnessProfile",
    "ProcessOutput",
    "ProcessRuntime",
    "exit_description",
    "run_process",
]

DEFAULT_KILL_GRACE_S = 1.0
"""How long a cancelled CLI gets between SIGTERM and SIGKILL to flush and exit cleanly."""

_READ_CHUNK = 64 * 1024
_DRAIN_AFTER_KILL_S = 2.0
"""Bound on waiting for pipes to close after a kill; a setsid'd grandchild could hold them."""


@dataclass(frozen=True, slots=True)
class ProcessOutput:
    """What one CLI run produced. Raw bytes: decoding is the profile's business."""

    exit_code: int
    stdout: bytes
    stderr: bytes


def exit_description(exit_code: int) -> str:
    """How a failure message says a nonzero exit ended: "exited with code 3" or "was killed
    by signal 9" (asyncio reports death by signal N as -N)."""
    if exit_code < 0:
        return f"was killed by signal {-exit_code}"
    return f"exited with code {exit_code}"


class _OutputTooLarge(Exception):
    """Internal: one stream passed its byte bound; becomes an InvocationError after the kill."""


async def run_process(
    argv: Sequence[str],
    stdin: bytes,
    *,
    env: Mapping[str, str] | None,
    cwd: str | None,
    max_output_bytes: int,
    kill_grace_s: float = DEFAULT_KILL_GRACE_S,
) -> ProcessOutput:
    """Run ``argv`` to completion with ``stdin`` and capture both output streams.

    ``env`` is the child's complete environment (``None`` inherits this process's). On
    cancellation, an oversize stream or any other error, the child's process group is
    terminated and the child reaped before the exception propagates, so nothing is left
    running and asyncio has no unclosed transport to warn about.
    """
    if max_output_bytes <= 0:
        raise ValueError("max_output_bytes must be positive")
    proc = await _spawn(argv, env=env, cwd=cwd)
    try:
        stdout, stderr = await _exchange(proc, stdin, max_output_bytes)
        exit_code = await proc.wait()
    except BaseException as exc:
        await _stop(proc, kill_grace_s)
        if isinstance(exc, _OutputTooLarge):
            raise InvocationError(
                "RUNTIME_FAILURE",
                f"{_name(argv[0])} output exceeded {max_output_bytes} bytes; the process was "
                "stopped",
                False,
            ) from None
        raise
    return ProcessOutput(exit_code=exit_code, stdout=stdout, stderr=stderr)


async def _spawn(
    argv: Sequence[str], *, env: Mapping[str, str] | None, cwd: str | None
) -> asyncio.subprocess.Process:
    """Start the child in a new session; translate start failures without naming the env."""
    if not argv:
        raise ValueError("argv must name an executable")
    executable = argv[0]
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        if cwd is not None and exc.filename == cwd:
            raise InvocationError(
                "RUNTIME_FAILURE", "the working directory given as cwd= does not exist", False
            ) from None
        raise InvocationError(
            "RUNTIME_FAILURE",
            f"{_name(executable)} not found; install it or pass executable=... with its path",
            False,
        ) from None
    except PermissionError:
        raise InvocationError(
            "RUNTIME_FAILURE",
            f"{_name(executable)} cannot be run (permission denied); check executable=...",
            False,
        ) from None
    except OSError as exc:
        if exc.errno == errno.E2BIG:
            raise InvocationError(
                "INVALID_REQUEST",
                "the request is too large for a command line (system prompt or schema); shorten it",
                False,
            ) from None
        raise InvocationError(
            "RUNTIME_FAILURE",
            f"{_name(executable)} could not be started ({_errno_name(exc)})",
            False,
        ) from None


def _errno_name(exc: OSError) -> str:
    """The symbolic errno (e.g. ENOEXEC): enough to act on, and carries no path or text."""
    return errno.errorcode.get(exc.errno or 0, "OSError")


def _name(executable: str) -> str:
    """How messages name the executable: as the caller configured it, and nothing else."""
    return f"executable {executable!r}"


async def _exchange(
    proc: asyncio.subprocess.Process, data: bytes, limit: int
) -> tuple[bytes, bytes]:
    """Feed stdin and drain both pipes at once; a full pipe must never stall the other."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None
    feeder = asyncio.ensure_future(_feed(proc.stdin, data))
    out = asyncio.ensure_future(_drain(proc.stdout, limit))
    err = asyncio.ensure_future(_drain(proc.stderr, limit))
    tasks = (feeder, out, err)
    try:
        # FIRST_EXCEPTION returns when one task fails, or when all have finished.
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            failure = task.exception()
            if failure is not None:
                raise failure
        return out.result(), err.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _feed(stream: asyncio.StreamWriter, data: bytes) -> None:
    """Write the prompt; a CLI that exits without reading it is judged by its exit code."""
    try:
        if data:
            stream.write(data)
            await stream.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stream.close()


async def _drain(stream: asyncio.StreamReader, limit: int) -> bytes:
    """Collect one stream, failing as soon as it passes ``limit`` rather than at EOF."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(_READ_CHUNK):
        size += len(chunk)
        if size > limit:
            raise _OutputTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def _discard(stream: asyncio.StreamReader | None) -> None:
    """Read to EOF and drop it: a paused pipe would never see EOF, and asyncio (3.11)
    only reports the exit once every pipe has closed."""
    if stream is None:
        return
    while await stream.read(_READ_CHUNK):
        pass


async def _stop(proc: asyncio.subprocess.Process, grace: float) -> None:
    """Kill the process group and reap the child, leaving no process and no open pipe.

    SIGTERM first so a well-behaved CLI can exit cleanly; SIGKILL to the group after the
    grace period (always, since a grandchild may ignore SIGTERM or outlive its parent).
    If this cleanup is itself cancelled, the group still gets SIGKILL before unwinding.
    """
    if proc.stdin is not None:
        proc.stdin.close()
    drains = [asyncio.ensure_future(_discard(s)) for s in (proc.stdout, proc.stderr)]
    try:
        _signal_group(proc, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), grace)
        _signal_group(proc, signal.SIGKILL)
        _, open_pipes = await asyncio.wait(drains, timeout=_DRAIN_AFTER_KILL_S)
        if open_pipes:  # a descendant left the group and still holds stdout or stderr
            _force_close(proc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), _DRAIN_AFTER_KILL_S)
    except BaseException:
        _signal_group(proc, signal.SIGKILL)
        raise
    finally:
        for task in drains:
            task.cancel()
        await asyncio.gather(*drains, return_exceptions=True)


def _force_close(proc: asyncio.subprocess.Process) -> None:
    """Release our pipe ends when a process outside our reach still holds the other ends.

    ``Process`` has no public close; without this its transport would stay open (and
    asyncio 3.11's ``wait`` unresolved) for as long as that stray process lives.
    """
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


def _signal_group(proc: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    """Signal the child's whole group; the child leads it because of ``start_new_session``."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


class HarnessProfile(Protocol):
    """A CLI codec: everything that differs between harnesses, and nothing else."""

    def prepare(self, request: InvocationRequest) -> tuple[list[str], bytes]:
        """Arguments (after the executable) and stdin; raise INVALID_REQUEST to refuse."""
        ...

    def parse(self, output: ProcessOutput, request: InvocationRequest) -> InvocationResult:
        """Turn a zero-exit run into a result, or raise a typed InvocationError."""
        ...

    def classify_failure(
        self, output: ProcessOutput, request: InvocationRequest
    ) -> InvocationError | None:
        """A typed, content-free error for a nonzero exit; None for the generic one."""
        ...


class ProcessRuntime(BaseRuntime):
    """Runs one :class:`HarnessProfile` per invocation through :func:`run_process`.

    ``env`` entries are added on top of this process's environment at spawn time (the CLI
    needs ``PATH`` and ``HOME`` to find itself and its login); they are kept private and
    never appear in results, errors or ``repr``. Values under secret-looking names (see
    :func:`relay_nb.redaction.is_secret_name`) are registered as secrets, so a recording
    stays clean even when the CLI repeats one in its answer.

    A subclass names its ``provider`` (the runtime id is ``provider:model``) and may set the
    class attributes below; its constructor checks the model and ``extra_args`` and passes
    the rest on.
    """

    kill_grace_s: float = DEFAULT_KILL_GRACE_S
    workdir_prefix: str | None = None
    """Set by a subclass to run each invocation in a fresh private temporary directory."""
    trailing_args: tuple[str, ...] = ()
    """Arguments after ``extra_args`` (e.g. ``-`` for "read the prompt from stdin")."""
    default_env: Mapping[str, str] | None = None
    """Settings the runtime chooses unless the caller's ``env`` says otherwise (over this
    process's environment): e.g. the CLI's own retries off, since relay_nb retries."""
    forced_env: Mapping[str, str] | None = None
    """The profile's own settings (e.g. switching a CLI's tools off): applied last, so
    neither the caller's ``env`` nor this process's environment can override them."""
    dropped_env_prefixes: tuple[str, ...] = ()
    """Names inherited from this process's environment that the child must not see (e.g.
    variables pointing a CLI at another config); ``env`` is checked by the subclass."""

    def __init__(
        self,
        model: str,
        *,
        executable: str,
        profile: HarnessProfile,
        capabilities: Capabilities,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        max_output_bytes: int = 8_000_000,
        timeout: float | None = 300.0,
    ) -> None:
        if not executable:
            raise ValueError("executable must not be empty")
        if max_output_bytes <= 0:
            raise ValueError("max_output_bytes must be positive")
        self.model = model
        self.id = f"{self.provider}:{model}"
        self.executable = executable
        self.profile = profile
        self.extra_args = tuple(extra_args)
        self.cwd = cwd
        self.max_output_bytes = max_output_bytes
        self.default_timeout = timeout
        self._capabilities = capabilities
        self._env = dict(env) if env is not None else None
        for name, value in (env or {}).items():
            if is_secret_name(name):
                register_secret(value)

    def capabilities(self) -> Capabilities:
        return self._capabilities.model_copy()

    def _check_allowed(self) -> None:
        check_model_request(self.id, executable=self.executable)

    async def _invoke(
        self, request: InvocationRequest, *, on_text: TextCallback | None
    ) -> InvocationResult:
        if self.workdir_prefix is None:
            return await self._run(self.profile, request, cwd=self.cwd)
        # A fresh, private, empty directory per invocation: the CLI finds no project files,
        # instructions or config to act on, and a profile may keep files (a schema) there.
        # Removed on every exit, including abort and timeout.
        with tempfile.TemporaryDirectory(prefix=self.workdir_prefix) as workdir:
            profile = self._profile_for(workdir)
            return await self._run(profile, request, cwd=self.cwd or workdir)

    def _profile_for(self, workdir: str) -> HarnessProfile:
        """The profile for one invocation in ``workdir`` (see ``workdir_prefix``)."""
        return self.profile

    async def _run(
        self, profile: HarnessProfile, request: InvocationRequest, *, cwd: str | None
    ) -> InvocationResult:
        args, stdin = profile.prepare(request)  # refuses before anything is spawned
        output = await run_process(
            [self.executable, *args, *self.extra_args, *self.trailing_args],
            stdin,
            env=self._child_env(cwd),
            cwd=cwd,
            max_output_bytes=self.max_output_bytes,
            kill_grace_s=self.kill_grace_s,
        )
        if output.exit_code != 0:
            raise profile.classify_failure(output, request) or self._exit_failure(output)
        return profile.parse(output, request)

    def _child_env(self, cwd: str | None) -> dict[str, str]:
        """This process's environment (less ``dropped_env_prefixes``), then ``default_env``,
        ``env``, ``forced_env``; and ``PWD`` naming the child's real working directory, since a CLI
        that trusts ``$PWD`` over ``getcwd()`` (OpenCode) would otherwise load the
        notebook's folder, with its config, instructions and plugins."""
        inherited = {
            name: value
            for name, value in os.environ.items()
            if not (self.dropped_env_prefixes and name.startswith(self.dropped_env_prefixes))
        }
        env = {
            **inherited,
            **(self.default_env or {}),
            **(self._env or {}),
            **(self.forced_env or {}),
        }
        env["PWD"] = os.path.abspath(cwd) if cwd is not None else os.getcwd()
        return env

    def _exit_failure(self, output: ProcessOutput) -> InvocationError:
        how = exit_description(output.exit_code)
        return InvocationError("RUNTIME_FAILURE", f"{self.provider} {how}", False)
