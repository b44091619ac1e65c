"""The notebook layer: ``%relay`` magics, turn rendering and views.

``%load_ext relay_nb`` calls :func:`load_ipython_extension`, which registers
:class:`~relay_nb.notebook.magics.RelayMagics`. Only this package imports IPython and
ipywidgets.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_ipython_extension"]


def load_ipython_extension(shell: Any) -> None:
    """Register the ``%relay`` / ``%%relay`` magics with ``shell``."""
    from relay_nb.notebook.magics import RelayMagics
    from relay_nb.notebook.questions import protect_question_marks

    shell.register_magics(RelayMagics)
    cleanup = shell.input_transformers_cleanup
    if protect_question_marks not in cleanup:  # %reload_ext must not add it twice
        cleanup.append(protect_question_marks)
