"""The README's first block pasted into one cell asks its question (issue 37, item 2).

IPython reads a line ending in "?" as a help request; relay_nb's transformer that keeps
``%relay …?`` lines from it is registered by ``%load_ext relay_nb``, which in the README's
block is the cell's own first line — so the cell was read before it existed. Run here in a
real kernel (nbclient), the block taken from README.md as written, only the model (a script)
and the database (a seeded shop) swapped in, and run twice, as an analyst re-runs a cell.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from relay_nb.notebook.questions import questions_after_load
from relay_nb.testing.seed import seed_database

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_block() -> str:
    text = README.read_text()
    section = text.split("## Ask your own database", 1)[1]
    return re.search(r"```ipython\n(.*?)```", section, re.S).group(1)


def _readme_script() -> list[dict]:
    """The scripted answers the README's "No API key?" line shows, as written there."""
    text = README.read_text()
    found = re.search(r"`(\[\{\"tool_calls\".*?\])`", text, re.S)
    assert found is not None, "the README no longer shows a scripted answer"
    return json.loads(" ".join(found.group(1).split("\n")))


def _outputs(cell) -> str:
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif "data" in output:
            parts.append(output.data.get("text/plain", ""))
        elif output.output_type == "error":
            parts.append("\n".join(output.traceback))
    return "\n".join(parts)


@pytest.mark.timeout(180)
def test_the_readme_block_in_one_cell_asks_its_question_twice(tmp_path: Path) -> None:
    block = _readme_block()
    assert block.rstrip().endswith("?")  # what this test is about: the question ends in "?"
    shop = tmp_path / "shop.sqlite"
    seed_database(f"sqlite:///{shop}")
    turn = _readme_script()  # the README's own example script, asked twice
    script = tmp_path / "script.json"
    script.write_text(json.dumps(turn * 2))
    cell = re.sub(r"%relay --model \S+", f"%relay --model scripted:{script}", block)
    cell = cell.replace("sqlite:///path/to/shop.sqlite", f"sqlite:///{shop}")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)] * 2)
    notebook.cells[1] = nbformat.v4.new_code_cell(cell)
    client = NotebookClient(
        notebook,
        timeout=120,
        startup_timeout=300,  # a kernel on two busy cores can take over a minute
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
        store_widget_state=False,
    )
    client.execute(env={"RELAY_DATA_DIR": str(tmp_path / "data")})
    for run in notebook.cells:
        shown = _outputs(run)
        assert "not found" not in shown and "Traceback" not in shown, shown
        assert "300 orders." in shown and "Q: which customers spent the most last quarter?" in shown
    again = _outputs(notebook.cells[1])  # the same cell re-run: the answer, not noise
    assert "already loaded" not in again and "nothing changed" not in again, again
    assert "for every question now" not in again


def test_only_the_questions_after_the_load_line_are_taken_as_ipython_read_them():
    cell = (
        "%relay early?\n%load_ext relay_nb\nx = %relay apart?\n%relay a b?\nprint(1)\n %relay c??"
    )
    assert questions_after_load(cell) == [("pinfo b", "a b?"), ("pinfo2 c", "c??")]
    assert questions_after_load("%relay a?") == []
