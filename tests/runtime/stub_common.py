"""What the CLI stand-ins (``stub_claude.py``, ``stub_codex.py``, ``stub_opencode.py``) and
the tests that read their records have in common. Standard library only, like the stubs.

A stub runs as a script, so its own directory is ``sys.path[0]`` and ``import stub_common``
finds this file; a test module finds it the same way (pytest puts the rootless test
directory on ``sys.path``). Each stub keeps its own environment variables (``STUB_<CLI>_*``)
and passes their names in, so no variable, scenario or record key changes by sharing this.

Stub side: :func:`record` (argv, stdin, pid, children, ``$PWD`` and environment *names*, written
atomically), :func:`next_step` (the n-th item of a JSON list for the n-th run),
:func:`finish`/:func:`emit_events` (print and exit), :func:`hang` (block like a CLI waiting
on the model, optionally with a child process). Test side: :func:`spawned`,
:func:`read_record`, :func:`wait_for_record` and the ``/proc`` checks :func:`is_gone`,
:func:`reaped`, :func:`wait_gone`, which prove an aborted CLI *and* its child are gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:  # pathlib costs a stub start-up time for annotations alone
    from pathlib import Path

HANG_S = 30.0
"""How long a hanging stub blocks: far longer than any test waits for it."""

# ---------------------------------------------------------------------------- stub side


def record(variable: str, argv: list[str], stdin: str, children: list[int], **extra: Any) -> None:
    """Write what this run saw to the file named by ``$variable`` (if set), atomically, so a
    polling test never reads half a file. ``extra`` adds a stub's own keys."""
    path = os.environ.get(variable)
    if not path:
        return
    data = {
        "argv": argv,
        "stdin": stdin,
        "pid": os.getpid(),
        "children": children,
        "env_names": sorted(os.environ),  # names only: values may be keys
        "pwd": os.environ.get("PWD"),  # a path, not a secret: what $PWD-trusting CLIs use
        **extra,
    }
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(path + ".tmp", path)


def next_step(variable: str) -> Any:
    """The n-th item of the JSON list in the file named by ``$variable``, on the n-th run
    (counted in a file next to it), so one stub can play a multi-turn conversation."""
    path = os.environ[variable]
    with open(path, encoding="utf-8") as fh:
        steps = json.load(fh)
    counter = path + ".n"
    done_runs = 0
    if os.path.exists(counter):
        with open(counter, encoding="utf-8") as fh:
            done_runs = int(fh.read())
    with open(counter, "w", encoding="utf-8") as fh:
        fh.write(str(done_runs + 1))
    return steps[done_runs]


def finish(stdout: str = "", *, code: int = 0, stderr: str = "") -> NoReturn:
    """Print ``stdout`` and ``stderr`` (flushed, so a kill cannot lose them) and exit."""
    if stdout:
        sys.stdout.write(stdout)
        sys.stdout.flush()
    if stderr:
        sys.stderr.write(stderr)
        sys.stderr.flush()
    sys.exit(code)


def emit_events(*events: dict[str, object], code: int = 0, stderr: str = "") -> NoReturn:
    """Print ``events`` as JSON lines, as ``codex exec --json`` and ``opencode run`` do."""
    finish("".join(json.dumps(event) + "\n" for event in events), code=code, stderr=stderr)


def spawn_sleeper(*, ignore_term: bool = False, escape: bool = False) -> int:
    """A child that keeps the stub's stdout open, as a real helper process would; with
    ``escape`` it starts its own session, out of reach of a process-group kill."""
    code = "import signal,time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += f"time.sleep({HANG_S})\n"
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=escape).pid


def hang(
    record_run: Callable[[list[int]], None],
    *,
    child: bool,
    ignore_term: bool = False,
    escape: bool = False,
) -> NoReturn:
    """Block like a CLI waiting on its model; ``record_run(children)`` is called once the
    child (if any) has started, so a test that sees the record can abort at once."""
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    children = [spawn_sleeper(ignore_term=ignore_term, escape=escape)] if child else []
    time.sleep(0.2 if child else 0)  # let the child start and apply its own signal setup
    record_run(children)
    time.sleep(HANG_S)
    sys.exit(0)


# ---------------------------------------------------------------------------- test side


def spawned(path: Path) -> bool:
    """Whether the stub ran at all (it records before doing anything else)."""
    return path.exists()


def read_record(path: Path) -> dict[str, Any]:
    """What the stub recorded (see :func:`record`)."""
    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result


async def wait_for_record(path: Path, *, children: int, within: float = 5.0) -> dict[str, Any]:
    """The record, once the stub has written it with at least ``children`` child pids."""
    import asyncio  # here, not at the top: the stubs import this module on every run

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if spawned(path):
            data = read_record(path)
            if len(data["children"]) >= children:
                return data
        await asyncio.sleep(0.02)
    raise AssertionError("the stub never started")


def is_gone(pid: int) -> bool:
    """Dead for our purposes: no such process, or a zombie awaiting its (new) parent."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def reaped(pid: int) -> bool:
    """Gone without even a zombie entry: our own child must be waited for, not orphaned."""
    return not os.path.exists(f"/proc/{pid}")


def wait_gone(pids: list[int], within: float = 3.0) -> list[int]:
    """The pids still alive after up to ``within`` seconds (the kill is asynchronous)."""
    deadline = time.monotonic() + within
    alive = [p for p in pids if not is_gone(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = [p for p in alive if not is_gone(p)]
    return alive
