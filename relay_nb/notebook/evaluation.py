"""``%relay --eval BANK``: a bank's run in a cell — the estimate, a progress bar while the
questions are asked, then the report and what changed since the previous run.

The progress bar is a widget (ipywidgets), updated from relay_nb's loop thread as each
attempt finishes, and blanked when the run ends, like the live turn view
(:mod:`relay_nb.notebook.live`): the cell then holds only static output — the report's HTML
table with its text summary, and the regression diff — so a saved notebook needs no widget
state and nbval compares exactly what is saved.
"""

from __future__ import annotations

import uuid

from relay_nb.errors import RelayError
from relay_nb.eval import EvalProgress, EvalReport, load_bank
from relay_nb.facade.relay import Relay
from relay_nb.notebook.live import close_tree

__all__ = ["EvalProgressBar", "run_eval_cell"]


class EvalProgressBar:
    """``[####·····] 12/36 · 9 right · $0.04`` as a widget, fed :class:`EvalProgress`."""

    def __init__(self, bank: str) -> None:
        import ipywidgets as widgets

        self.bar = widgets.IntProgress(value=0, min=0, max=1, description=bank[:20])
        self.label = widgets.Label("starting…")
        self.box = widgets.HBox([self.bar, self.label])
        self.display_id = uuid.uuid4().hex

    def show(self) -> None:
        from IPython.display import display

        view = {"version_major": 2, "version_minor": 0, "model_id": self.box.model_id}
        display(
            {"application/vnd.jupyter.widget-view+json": view, "text/plain": ""},
            raw=True,
            display_id=self.display_id,
        )

    def __call__(self, progress: EvalProgress) -> None:
        self.bar.max = max(1, progress.total)
        self.bar.value = progress.done
        cost = "" if progress.cost_usd is None else f" · ${progress.cost_usd:.4f}"
        self.label.value = f"{progress.done}/{progress.total} · {progress.correct} right{cost}"

    def close(self) -> None:
        from IPython.display import update_display

        update_display({"text/plain": ""}, raw=True, display_id=self.display_id)
        close_tree(self.box)


def run_eval_cell(
    relay: Relay, bank: str, *, repeat: int = 1, max_cost_usd: float | None = None
) -> EvalReport:
    """Run ``bank`` on ``relay`` and show the estimate, progress, report and diff."""
    from IPython.display import display

    loaded = load_bank(bank)
    estimate = relay.estimate(loaded, repeat=repeat)
    print(estimate.line())
    progress = EvalProgressBar(loaded.name)
    progress.show()
    try:
        report = relay.evaluate(
            loaded,
            repeat=repeat,
            max_cost_usd=max_cost_usd,
            estimate=estimate,
            on_progress=progress,
        )
    finally:
        progress.close()
    display(
        {"text/html": report._repr_html_(), "text/plain": report.summary()},
        raw=True,
    )
    try:
        diff = report.compare()
    except RelayError:
        print("(the first saved run of this bank: the next run is compared with it)")
    else:
        display({"text/html": diff._repr_html_(), "text/plain": diff.summary()}, raw=True)
    return report
