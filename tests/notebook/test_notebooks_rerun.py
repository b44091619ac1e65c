"""Every shipped notebook, run top to bottom twice in one kernel, as an analyst does when they
re-run all cells: the second run must not fail anywhere (the setup cell's default relay,
connections made again, a relay closed by the last cell). nbval checks the first run's
outputs; this checks that running again is safe."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))
NEEDS = {"07_postgresql.ipynb": "RELAY_TEST_PG_URL"}

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # a kernel per notebook, run twice


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_cell_runs_again_in_the_same_kernel(path: Path, tmp_path: Path) -> None:
    variable = NEEDS.get(path.name)
    if variable and not os.environ.get(variable):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{path.name} needs {variable} under CI (scripts/services start)")
        pytest.skip(f"{variable} is not set: run scripts/services start and source its env file")
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=120,
        startup_timeout=300,  # a kernel on two busy cores can take over a minute
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    env = {**os.environ, "RELAY_DATA_DIR": str(tmp_path)}  # ledgers and recordings go here
    with client.setup_kernel(env=env):
        for run in ("first", "second"):
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type != "code":
                    continue
                try:
                    client.execute_cell(cell, index)
                except CellExecutionError as error:
                    last = str(error).strip().splitlines()[-1]
                    pytest.fail(f"{path.name}, {run} run, cell {index}: {last}")
