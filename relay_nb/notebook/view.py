"""How a turn shows up in a notebook's output: a static bundle plus metadata.

The bundle has ``text/plain`` (deterministic, for nbval and terminals) and ``text/html``
(the readable trace), so a reopened notebook, GitHub and nbconvert show the turn without any
widget state. The output metadata records what a later reader or tool needs to account for
the turn — model, turn id, connectors, tokens, cost — and nothing secret.

:class:`NotebookTurn` is the ``Turn`` the ``%relay`` magic returns (so ``t = %relay …``
works). The magic has already displayed it while it ran, so the same cell does not display
it a second time as its ``Out``; shown again in a later cell, it renders.
"""

from __future__ import annotations

from typing import Any

from pydantic import PrivateAttr

from relay_nb.agent.turn_result import TurnResult
from relay_nb.views import HTML_PREVIEW_ROWS, turn_html, turn_text

__all__ = ["NotebookTurn", "turn_bundle"]

METADATA_KEY = "relay_nb"


def turn_bundle(
    turn: TurnResult, *, max_rows: int = HTML_PREVIEW_ROWS
) -> tuple[dict[str, str], dict[str, Any]]:
    """``(data, metadata)`` for ``display(..., raw=True)`` or ``_repr_mimebundle_``."""
    data = {"text/plain": turn_text(turn), "text/html": turn_html(turn, max_rows=max_rows)}
    usage = turn.usage
    metadata = {
        METADATA_KEY: {
            "turn_id": turn.turn_id,
            "model": turn.model,
            "simulated": turn.simulated,
            "finish_reason": turn.finish_reason,
            "connectors": sorted(
                {a.connector_id for a in turn.artifacts if getattr(a, "connector_id", "")}
            ),
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "estimated": usage.estimated,
            "cost_usd": usage.cost_usd,
        }
    }
    return data, metadata


class NotebookTurn(TurnResult):
    """A ``TurnResult`` that knows it was already shown by the cell that produced it."""

    _shown_in_cell: int | None = PrivateAttr(default=None)
    _max_rows: int = PrivateAttr(default=HTML_PREVIEW_ROWS)

    @classmethod
    def wrap(
        cls, turn: TurnResult, *, shown_in_cell: int | None, max_rows: int = HTML_PREVIEW_ROWS
    ) -> NotebookTurn:
        wrapped = cls.model_construct(_fields_set=turn.model_fields_set, **dict(turn))
        wrapped._shown_in_cell = shown_in_cell
        wrapped._max_rows = max_rows
        return wrapped

    def _ipython_display_(self) -> None:
        from IPython import get_ipython
        from IPython.display import display

        shell = get_ipython()
        if shell is not None and self._shown_in_cell == shell.execution_count:
            return  # the magic displayed it during this very cell
        data, metadata = turn_bundle(self, max_rows=self._max_rows)
        display(data, metadata=metadata, raw=True)
