"""The notebook layer: ``%relay`` magics, turn rendering and views.

``%load_ext relay_nb`` calls :func:`load_ipython_extension`, which registers
:class:`~relay_nb.notebook.magics.RelayMagics`. Only this package imports IPython and
ipywidgets.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["load_ipython_extension", "show_turns_as_traces"]


def show_turns_as_traces(shell: Any = None) -> None:
    """Make ``relay.ask(...)`` as a cell's last line show the turn's trace (its HTML), beside
    the one-line ``repr``. Called on ``import relay_nb`` inside IPython and by
    ``%load_ext``; the renderer is imported when a turn is first shown."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    if not formatters or "text/html" not in formatters:
        return  # a plain Python process, or a shell without rich display
    formatters["text/html"].for_type_by_name("relay_nb.agent.turn_result", "TurnResult", _turn_html)


def _turn_html(turn: Any) -> str:
    from relay_nb.views import turn_html

    return turn_html(turn)


def load_ipython_extension(shell: Any) -> None:
    """Register the ``%relay`` / ``%%relay`` magics with ``shell``, then load the config
    file (``$RELAY_CONFIG``, else ``relay.config.json`` in the working directory) if there
    is one. A broken config fails loudly, but only after the magics are registered, so the
    analyst can fix it and run ``%relay --config FILE``."""
    from relay_nb.facade.config import CONFIG_FILENAME
    from relay_nb.notebook.magics import RelayMagics
    from relay_nb.notebook.questions import protect_question_marks, rescue_current_cell

    loaded = shell.magics_manager.registry.get("RelayMagics")
    magics = loaded if isinstance(loaded, RelayMagics) else RelayMagics(shell=shell)
    if magics is not loaded:
        shell.register_magics(magics)
    show_turns_as_traces(shell)
    if magics.note_cell not in shell.events.callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", magics.note_cell)  # which cell --sql runs in
    cleanup = shell.input_transformers_cleanup
    if protect_question_marks not in cleanup:  # %reload_ext must not add it twice
        cleanup.append(protect_question_marks)
        rescue_current_cell(shell)  # this cell's own questions were read before the line above
    _quiet_reruns(shell)
    path = os.environ.get("RELAY_CONFIG") or (
        CONFIG_FILENAME if os.path.exists(CONFIG_FILENAME) else None
    )
    stamp = _stamp(path) if path else None
    if path and magics.config_read != stamp:  # a re-run reads an unchanged one once
        magics.load_config_file(path)
        magics.config_read = stamp  # after a read that succeeded: a broken one says so again


def _stamp(path: str) -> tuple[str, float | None]:
    """The config file and when it last changed (None: missing, which its read reports)."""
    try:
        return os.path.abspath(path), os.path.getmtime(path)
    except OSError:
        return os.path.abspath(path), None


def _quiet_reruns(shell: Any) -> None:
    """Let the cell that ran ``%load_ext relay_nb`` run again without IPython's two lines
    ("already loaded … use %reload_ext"): once the cell has run, the extension is taken off
    IPython's list of loaded ones, so the next ``%load_ext`` calls this module again, which
    then keeps the magics (and their state) it registered."""
    manager = getattr(shell, "extension_manager", None)
    if manager is None:
        return

    def forget(*_: Any) -> None:
        manager.loaded.discard(__name__.rsplit(".", 1)[0])
        for event in ("pre_run_cell", "post_run_cell"):
            shell.events.unregister(event, forget)

    # after the cell that loaded it, or before the first cell when it was loaded outside one
    # (an IPython profile's `extensions`, a startup file)
    for event in ("pre_run_cell", "post_run_cell"):
        shell.events.register(event, forget)
