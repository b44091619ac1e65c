"""``relay-nb demo --notebook``: the quickstart notebook, written and executed.

The notebook asks the demo's three questions through the ``%relay`` magics, against the same
sample shop, and is complete on its own: its first cell rebuilds the database (same seed, same
day, same rows) and picks the model, so it re-runs anywhere relay_nb is installed. Offline it
uses the demo's scripted model; with a model configured, the real one.

Executing it needs nbclient and ipykernel, which a plain ``pip install relay-nb`` does not
bring (they are in the ``notebook`` and ``test`` extras); :func:`require_notebook_tools` says
so before anything is written. This module never imports ``relay_nb.notebook``: the magics
run inside the kernel, loaded by the notebook's own ``%load_ext relay_nb``.
"""

from __future__ import annotations

import importlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relay_nb.demo.data import DEMO_TABLES
from relay_nb.errors import ConfigurationError, RelayError

__all__ = [
    "DEFAULT_NOTEBOOK",
    "NotebookFailed",
    "QuickstartModel",
    "check_notebook_target",
    "notebook_answers",
    "quickstart_notebook",
    "require_notebook_tools",
    "write_and_execute",
]

DEFAULT_NOTEBOOK = "relay_nb_quickstart.ipynb"
_MARK = {"generated_by": "relay-nb demo --notebook"}
_INSTALL = "pip install 'relay-nb[notebook]'"


class NotebookFailed(RelayError):
    """A cell of the executed notebook raised; the notebook was still written, with the error."""


@dataclass(frozen=True)
class QuickstartModel:
    """How the notebook's first cell picks its model: the code and a comment saying why."""

    code: str
    comment: str
    session_options: str
    scripted: bool


def require_notebook_tools() -> None:
    """Fail early, with the install command, when nbclient/nbformat/ipykernel are missing."""
    missing = []
    for name in ("nbformat", "nbclient", "ipykernel"):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ConfigurationError(
            f"relay-nb demo --notebook needs {' and '.join(missing)} to execute the notebook: "
            f"{_INSTALL}"
        )


def quickstart_notebook(db_path: str, model: QuickstartModel) -> Any:
    """The quickstart as an ``nbformat`` notebook (not executed)."""
    import nbformat

    v4 = nbformat.v4
    names = "build_shop_database, scripted_demo_model" if model.scripted else "build_shop_database"
    setup = f"""\
import relay_nb
from relay_nb.demo import {names}

# the demo's sample shop: same seed and day, same rows (rebuilt in well under a second)
shop = build_shop_database({db_path!r})
last_year = shop.last_year

# {model.comment}
{model.code}
relay = relay_nb.default_relay(model=model{model.session_options})
relay.connect("shop", shop.url, tables={list(DEMO_TABLES)!r}, description=shop.description)
print(shop.summary())"""
    cells = [
        v4.new_markdown_cell(
            "# relay_nb quickstart\n\n"
            "Ask a database questions in plain language with `%relay`. The data is the "
            "demo's sample shop — Northwind Roasters, two years of customers, products and "
            "orders in SQLite. Each answer below shows the SQL that ran, its result table, the "
            "answer and what the turn cost.\n\n"
            "Offline, the model is the demo's `ScriptedRuntime`: no model is called, but the "
            "SQL is real, it runs against the database, and each answer is composed from the "
            "rows it returned (token counts are estimated). Set `ANTHROPIC_API_KEY` (or "
            "`RELAY_MODEL`) and use `model = None` to ask a real model anything."
        ),
        v4.new_code_cell(setup),
        v4.new_code_cell("%load_ext relay_nb"),
        v4.new_markdown_cell(
            "A line magic: the question follows `%relay`, and `{last_year}` is filled in "
            "from the notebook's variables."
        ),
        v4.new_code_cell("%relay What was our revenue by month in {last_year}?"),
        v4.new_markdown_cell(
            "A cell magic: options go on the first line. `--out top` keeps the result table "
            "in the variable `top`, a pandas DataFrame to keep working with."
        ),
        v4.new_code_cell("%%relay --out top\nWho are our top 5 customers by revenue?"),
        v4.new_code_cell("top"),
        v4.new_code_cell("%relay Which product category has the most refunds?"),
        v4.new_markdown_cell("What the session has cost so far:"),
        v4.new_code_cell("%relay --usage"),
        v4.new_markdown_cell(
            "Your turn: `%relay` any question about the shop. `%relay --sql QUESTION` also "
            "puts the query it ran into a new cell below, to take over by hand; "
            "`%relay --connectors` lists what is connected."
        ),
    ]
    notebook = v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    notebook.metadata["language_info"] = {"name": "python"}
    notebook.metadata["relay_nb"] = dict(_MARK)
    return notebook


def check_notebook_target(path: Path) -> None:
    """Refuse to overwrite a notebook this command did not write (or a directory)."""
    if path.is_dir():
        raise ConfigurationError(f"{path} is a directory; give a notebook path such as quick.ipynb")
    if not path.parent.is_dir():
        raise ConfigurationError(f"cannot write {path}: directory {path.parent} does not exist")
    if path.exists() and not _written_by_demo(path):
        raise ConfigurationError(
            f"{path} exists and was not written by relay-nb demo; choose another path "
            "(the demo never overwrites other notebooks)"
        )


def _written_by_demo(path: Path) -> bool:
    try:
        metadata = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(metadata, dict) and metadata.get("relay_nb") == _MARK


def write_and_execute(notebook: Any, path: Path, *, timeout: float) -> Any:
    """Execute ``notebook`` with the ``python3`` kernel in ``path``'s directory, then write it.

    A failing cell still leaves the notebook written (with its traceback) and raises
    :class:`NotebookFailed` naming the cell.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    failure: str | None = None
    # the kernel process's own stderr carries only start-up chatter (ipykernel's "running over
    # TCP" warning); cell output comes back through the kernel protocol, not this stream
    try:
        client.execute(stderr=subprocess.DEVNULL)
    except CellExecutionError as exc:
        failure = f"{exc.ename}: {exc.evalue}" if exc.ename else "a cell raised"
    finally:
        nbformat.write(notebook, str(path))
    if failure is not None:
        raise NotebookFailed(f"the notebook stopped with {failure}; see {path}")
    return notebook


def notebook_answers(notebook: Any) -> list[str]:
    """The ``A: …`` lines of the executed notebook's saved turn outputs, in order."""
    answers = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            answers += [line[3:] for line in text.splitlines() if line.startswith("A: ")]
    return answers
