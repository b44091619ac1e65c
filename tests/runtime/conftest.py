"""Fixtures for the harness-CLI runtime tests: each runs its runtime against a stand-in CLI
(``stub_claude.py``, ``stub_codex.py``, ``stub_opencode.py``) that records what it was given
to ``record_path`` and behaves as its ``STUB_<CLI>_SCENARIO`` variable says.

The helpers for reading a record and watching processes are plain functions in
``stub_common.py``, next to the stubs that write the records.
"""

from __future__ import annotations

import shlex
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def stub_cli(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], str]:
    """``stub_cli("codex")``: an absolute-path ``codex`` that execs ``stub_codex.py``.

    A wrapper (rather than the stub's own shebang) pins this interpreter; ``exec`` keeps
    the pid the runtime spawned equal to the stub's pid.
    """
    directory = tmp_path_factory.mktemp("bin")

    def make(name: str) -> str:
        wrapper = directory / name
        if not wrapper.exists():
            script = HERE / f"stub_{name}.py"
            wrapper.write_text(
                f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(script))} "$@"\n'
            )
            wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return str(wrapper)

    return make


@pytest.fixture
def record_path(tmp_path: Path) -> Path:
    """Where the stub writes its record (see ``stub_common.record``)."""
    return tmp_path / "record.json"


@pytest.fixture
def stub_runtimes(
    stub_cli: Callable[[str], str], record_path: Path
) -> Callable[..., Callable[..., Any]]:
    """``stub_runtimes(CodexCLIRuntime, "codex", *model)`` gives ``make(scenario="text", *,
    extra_env=None, **options)``: a runtime that runs the stub in ``scenario``, recording to
    ``record_path``, with a short kill grace so the abort tests stay quick."""

    def factory(cls: Callable[..., Any], name: str, *args: Any) -> Callable[..., Any]:
        executable = stub_cli(name)
        prefix = f"STUB_{name.upper()}_"

        def make(
            scenario: str = "text", *, extra_env: dict[str, str] | None = None, **options: Any
        ) -> Any:
            env = {f"{prefix}SCENARIO": scenario, f"{prefix}RECORD": str(record_path)}
            runtime = cls(*args, executable=executable, env={**env, **(extra_env or {})}, **options)
            runtime.kill_grace_s = 0.3
            return runtime

        return make

    return factory
