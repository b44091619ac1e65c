"""Helpers shared by the plugin tests: CSV files, the example's path, fresh interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from relay_nb import Connector, Tool
from relay_nb.connectors.plugins import ConnectorType

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "relay_nb_csvdir"

SALES_CSV = "region,month,amount\nnorth,2026-01,120\nsouth,2026-01,80\nnorth,2026-02,200\n"
REGIONS_CSV = "region,manager\nnorth,Ada\nsouth,Grace\n"


def write_csv_dir(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sales.csv").write_text(SALES_CSV)
    (directory / "Regions 2026.csv").write_text(REGIONS_CSV)
    (directory / "notes.txt").write_text("not a table")
    return directory


def run_python(code: str, *paths: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with ``paths`` first on its import path."""
    pythonpath = os.pathsep.join(
        [*(str(p) for p in paths), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env = {**os.environ, "PYTHONPATH": pythonpath, "PYTHONWARNINGS": "default"}
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
        check=False,
    )


class Echo(Connector):
    """The smallest real connector: one tool that echoes, one line of context."""

    kind = "echo"

    def __init__(self, id: str, *, greeting: str = "hi") -> None:
        self.id, self.name, self.greeting = id, id, greeting

    def tools(self) -> list[Tool]:
        def echo(text: str) -> str:
            """Echo the text back."""
            return f"{self.greeting}: {text}"

        return [Tool.from_function(echo, name=f"echo_{self.id}")]

    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        return f"### echo connector {self.id}: says {self.greeting!r}"


def echo_type(**overrides: Any) -> ConnectorType:
    return ConnectorType(**{"name": "echo", "factory": Echo, **overrides})
