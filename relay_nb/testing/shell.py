"""``TestingShell``: run notebook cells against a real IPython shell in a test.

A real ``InteractiveShell`` (not a mock) with ``%load_ext relay_nb`` done: cells go through
IPython's own parsing, magics, display publisher and display hook, so a test sees what a
notebook would — the rich outputs a cell displayed and the value it returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CellRun", "TestingShell"]


@dataclass
class CellRun:
    """What one cell did: its value (``Out``), its displays, and what it printed."""

    result: Any
    outputs: list[dict[str, Any]] = field(default_factory=list)
    stdout: str = ""

    @property
    def texts(self) -> list[str]:
        """The non-empty ``text/plain`` outputs (a finished live view leaves an empty one)."""
        return [o["text/plain"] for o in self.outputs if o.get("text/plain")]

    @property
    def htmls(self) -> list[str]:
        return [o["text/html"] for o in self.outputs if "text/html" in o]


class TestingShell:
    """The process's IPython shell with relay_nb's magics loaded."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self) -> None:
        from IPython.core.interactiveshell import InteractiveShell

        self.ip = InteractiveShell.instance()
        self.ip.run_line_magic("load_ext", "relay_nb")

    def run(self, cell: str, *, cell_id: str | None = None) -> CellRun:
        """Run ``cell``; re-raise whatever it raised (so a test can assert on it).
        ``cell_id``: the id a frontend such as JupyterLab sends with the cell."""
        from IPython.utils.capture import capture_output

        with capture_output() as captured:
            executed = self.ip.run_cell(cell, store_history=True, cell_id=cell_id)
        error = executed.error_before_exec or executed.error_in_exec
        if error is not None:
            raise error
        return CellRun(
            result=executed.result,
            outputs=_fold_updates(captured.outputs),
            stdout=captured.stdout,
        )

    @property
    def user_ns(self) -> dict[str, Any]:
        return self.ip.user_ns


def _fold_updates(outputs: list[Any]) -> list[dict[str, Any]]:
    """Displays as a notebook ends up with them: an ``update_display`` replaces the output
    with the same display id instead of adding one."""
    folded: list[dict[str, Any]] = []
    slots: dict[str, int] = {}
    for output in outputs:
        display_id = (getattr(output, "transient", None) or {}).get("display_id")
        if display_id is not None and getattr(output, "update", False) and display_id in slots:
            folded[slots[display_id]] = output.data
            continue
        if display_id is not None:
            slots[display_id] = len(folded)
        folded.append(output.data)
    return folded
