"""Keeping IPython's help syntax away from questions.

IPython reads a line ending in ``?`` as a request for help on the last word — so
``%relay which customers churned?`` would look up ``churned`` and never ask anything. This
cleanup transformer, registered by ``%load_ext relay_nb``, rewrites a ``%relay`` line (also
``x = %relay …``) into the explicit magic call before IPython's help rule sees it. Cell magics
(``%%relay``) need nothing: IPython hands their body over verbatim.

The cell that loads the extension was read before the transformer existed: in the README's
first block (``%load_ext relay_nb``, ``%relay --connect …``, ``%relay … quarter?`` in one
cell) IPython has already made the question a ``pinfo quarter``. :func:`rescue_current_cell`
reads that cell's raw text from the history and, for the rest of the cell only, answers each
such ``pinfo`` by asking the question it replaced.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["protect_question_marks", "rescue_current_cell"]

_LINE = re.compile(r"^(?P<indent>\s*)(?:(?P<target>[A-Za-z_][\w.]*)\s*=\s*)?%relay(?P<rest>\s.*)?$")


def protect_question_marks(lines: list[str]) -> list[str]:
    """An IPython cleanup transform: explicit ``run_line_magic`` for ``%relay …?`` lines."""
    result = []
    for line in lines:
        match = _LINE.match(line.rstrip("\n"))
        if match is None or not line.rstrip().endswith("?"):
            result.append(line)
            continue
        indent, target = match.group("indent"), match.group("target")
        args = (match.group("rest") or "").strip()
        call = f"get_ipython().run_line_magic('relay', {args!r})"
        assign = f"{target} = " if target else ""
        newline = "\n" if line.endswith("\n") else ""
        result.append(f"{indent}{assign}{call}{newline}")
    return result


_LOADS = re.compile(r"^\s*%(?:re)?load_ext\s+relay_nb\b")


_PINFO = re.compile(r"get_ipython\(\)\.run_line_magic\('(pinfo2?)', '(.*)'\)\s*$")


def questions_after_load(raw_cell: str) -> list[tuple[str, str]]:
    """For each ``%relay …?`` line after ``%load_ext relay_nb`` in ``raw_cell``, in order:
    the help request IPython made of it (``pinfo quarter``) and the line's arguments."""
    from IPython.core.inputtransformer2 import TransformerManager

    lines = raw_cell.splitlines()
    start = next((i for i, line in enumerate(lines) if _LOADS.match(line)), None)
    if start is None:
        return []
    reader = TransformerManager()
    found = []
    for line in lines[start + 1 :]:
        match = _LINE.match(line)
        if match is None or match.group("target") or not line.rstrip().endswith("?"):
            continue
        made = _PINFO.match(reader.transform_cell(line.strip()).strip())
        if made is not None:  # what IPython made of the line, read the way it reads it
            found.append((f"{made.group(1)} {made.group(2)}", (match.group("rest") or "").strip()))
    return found


def rescue_current_cell(shell: Any) -> None:
    """Ask the ``%relay …?`` questions of the cell now loading the extension, which IPython
    made help requests (``pinfo``) before the protecting transformer existed. Each help
    request is matched to the line it came from (a real ``df?`` in the same cell still gets
    its help); the help magics are themselves again once the cell has run."""
    history = getattr(shell, "history_manager", None)
    raw = getattr(history, "input_hist_raw", None) or [""]
    pending = questions_after_load(raw[-1])
    if not pending:
        return
    magics = shell.magics_manager.magics["line"]
    originals = {name: magics.get(name) for name in ("pinfo", "pinfo2")}

    def answering(name: str, original: Callable[..., Any] | None) -> Callable[..., Any]:
        def pinfo(parameter_s: str = "", *args: Any, **kwargs: Any) -> Any:
            if pending and pending[0][0] == f"{name} {parameter_s}":
                return shell.run_line_magic("relay", pending.pop(0)[1])
            return original(parameter_s, *args, **kwargs) if original is not None else None

        return pinfo

    for name, original in originals.items():
        magics[name] = answering(name, original)

    def restore(*_: Any) -> None:
        for name, original in originals.items():
            if original is not None:
                magics[name] = original
        pending.clear()
        shell.events.unregister("post_run_cell", restore)

    shell.events.register("post_run_cell", restore)
