"""``relay-nb eval BANK``: measure the answers on a question bank from the terminal (and CI).

Connects the bank's connectors (``connectors:`` in the bank; ``--connect ID=URL`` adds or
overrides one; ``demo`` builds the sample shop), prints the cost estimate, runs every
question with a progress bar (on a terminal), prints the report and, when an earlier run of
the bank was saved, what changed since. The exit code is the CI's signal: 0, or 1 when the
accuracy is below ``--min-accuracy`` (2 for a usage or configuration error, from the CLI).

``--record FILE`` keeps every model call of a live run in a replay file; ``--model
replay:FILE`` replays it offline, so a team can pin its assistant's accuracy in a test.
``--oracle FILE`` writes the bank's gold SQL as a scripted model's answers instead of
running (edit a step to make a known mistake).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from relay_nb.errors import ConfigurationError, RelayError

__all__ = ["EvalOptions", "run_eval_command"]

_BAR = 30


class EvalOptions:
    """The parsed command line of ``relay-nb eval``."""

    def __init__(
        self,
        bank: str,
        *,
        model: str | None = None,
        connect: Sequence[str] = (),
        concurrency: int = 4,
        repeat: int = 1,
        max_cost_usd: float | None = None,
        batch: bool = False,
        min_accuracy: float | None = None,
        record: str | None = None,
        compare: str | None = None,
        save: bool = True,
        output_json: bool = False,
        html: str | None = None,
        estimate_only: bool = False,
        oracle: str | None = None,
    ) -> None:
        self.bank, self.model, self.connect = bank, model, list(connect)
        self.concurrency, self.repeat, self.max_cost_usd = concurrency, repeat, max_cost_usd
        self.batch, self.min_accuracy, self.record = batch, min_accuracy, record
        self.compare, self.save, self.output_json, self.html = compare, save, output_json, html
        self.estimate_only, self.oracle = estimate_only, oracle


def run_eval_command(options: EvalOptions, *, out: TextIO | None = None) -> int:
    """Run ``relay-nb eval`` (see the module docstring); returns the exit code."""
    from relay_nb.eval import load_bank, oracle_script

    out = out or sys.stdout
    bank = load_bank(options.bank)
    if options.oracle is not None:
        target = Path(options.oracle).expanduser()
        target.write_text(json.dumps(oracle_script(bank), indent=1, ensure_ascii=False) + "\n")
        print(f"wrote the oracle's answers for {len(bank.questions)} questions to {target}")
        return 0
    if options.min_accuracy is not None and not 0 <= options.min_accuracy <= 1:
        raise ConfigurationError(
            f"--min-accuracy is a fraction between 0 and 1 (e.g. 0.8), got {options.min_accuracy}"
        )
    relay = _relay(options)
    try:
        _connect(relay, bank.connectors, options.connect)
        if options.estimate_only:
            estimate = relay.estimate(bank, repeat=options.repeat, batch=options.batch)
            print(estimate.line(), file=sys.stderr)
            return 0
        bar = _ProgressBar(sys.stderr) if sys.stderr.isatty() else None
        report = relay.evaluate(
            bank,
            concurrency=options.concurrency,
            repeat=options.repeat,
            max_cost_usd=options.max_cost_usd,
            batch=options.batch,
            save=options.save,
            on_estimate=lambda estimate: print(estimate.line(), file=sys.stderr, flush=True),
            on_progress=bar,
        )
        if bar is not None:
            bar.close()
    finally:
        relay.close()
    previous = report.compare(options.compare) if options.compare else _previous_diff(report)
    if options.html:
        Path(options.html).expanduser().write_text(_html_page(report, previous), "utf-8")
    if options.output_json:
        data = report.model_dump(mode="json")
        data["accuracy"] = report.accuracy
        if previous is not None:
            data["regression"] = previous.model_dump(mode="json")
        print(json.dumps(data, indent=1, ensure_ascii=False), file=out)
    else:
        print(report.summary(), file=out)
        if previous is not None:
            print(previous.summary(), file=out)
    accuracy = report.accuracy
    if options.min_accuracy is not None and (accuracy is None or accuracy < options.min_accuracy):
        shown = "n/a" if accuracy is None else f"{accuracy:.1%}"
        print(
            f"relay-nb eval: accuracy {shown} is below --min-accuracy {options.min_accuracy:.1%}",
            file=sys.stderr,
        )
        return 1
    return 0


def _relay(options: EvalOptions) -> Any:
    from relay_nb.facade.relay import Relay
    from relay_nb.runtime.profiles import runtime_from_profile
    from relay_nb.runtime.replay import RecordingRuntime

    model: Any = options.model
    if options.record is not None:
        if model is None:
            raise ConfigurationError("--record needs --model PROFILE (the model to record)")
        model = RecordingRuntime(runtime_from_profile(model), options.record)
    elif model is not None:
        model = runtime_from_profile(model)  # a bad profile fails here, in one line
    return Relay(model)


def _connect(relay: Any, declared: dict[str, str], overrides: Sequence[str]) -> None:
    targets = dict(declared)
    for item in overrides:
        connector_id, sep, url = item.partition("=")
        if not sep or not connector_id.strip() or not url.strip():
            raise ConfigurationError(
                f"--connect takes ID=URL (e.g. shop=sqlite:///shop.db), got {item!r}"
            )
        targets[connector_id.strip()] = url.strip()
    for connector_id, target in targets.items():
        if target == "demo":
            from relay_nb.demo.data import build_shop_database

            folder = Path(tempfile.mkdtemp(prefix="relay-nb-eval-"))
            target = build_shop_database(folder / "shop.sqlite").url
        relay.connect(connector_id, target)


def _previous_diff(report: Any) -> Any:
    try:
        return report.compare()
    except RelayError:
        return None  # the first run of this bank: nothing to compare with


def _html_page(report: Any, diff: Any) -> str:
    body = report._repr_html_() + (diff._repr_html_() if diff is not None else "")
    return (
        '<!doctype html><meta charset="utf-8"><title>relay-nb eval</title>'
        "<style>body{font:14px system-ui;margin:2em}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;"
        "vertical-align:top}code{white-space:pre-wrap}</style>" + body
    )


class _ProgressBar:
    """``[#####·····] 12/36 right 9 $0.0412`` on one terminal line, redrawn per attempt."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, progress: Any) -> None:
        filled = round(_BAR * progress.done / max(1, progress.total))
        cost = "" if progress.cost_usd is None else f" ${progress.cost_usd:.4f}"
        bar = "#" * filled + "·" * (_BAR - filled)
        self.stream.write(
            f"\r[{bar}] {progress.done}/{progress.total} right {progress.correct}{cost}"
        )
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()
