"""``relay-nb eval BANK``: measure the answers on a question bank from the terminal (and CI).

Connects the bank's connectors (``connectors:`` in the bank; ``--connect ID=URL`` adds or
overrides one; ``demo`` is the sample shop, built once a day), prints the cost estimate, runs
every question with a progress bar (on a terminal), prints the report and, when an earlier
run of the bank was saved, what changed since. The exit code is the CI's signal: 0, or 1
when ``--min-accuracy`` is not met (or cannot be: attempts the cost cap stopped, nothing
scored); 2 for a usage or configuration error (a model that refuses its credentials
included), from the CLI.

``--record FILE`` keeps every model call of a live run in a replay file; ``--model
replay:FILE`` replays it offline, so a team can pin its assistant's accuracy in a test.
``--oracle FILE`` writes the bank's gold SQL as a scripted model's answers instead of
running (edit a step to make a known mistake).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable, Sequence
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
        allow_env: Sequence[str] = (),
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
        self.allow_env = list(allow_env)
        self.concurrency, self.repeat, self.max_cost_usd = concurrency, repeat, max_cost_usd
        self.batch, self.min_accuracy, self.record = batch, min_accuracy, record
        self.compare, self.save, self.output_json, self.html = compare, save, output_json, html
        self.estimate_only, self.oracle = estimate_only, oracle


def run_eval_command(options: EvalOptions, *, out: TextIO | None = None) -> int:
    """Run ``relay-nb eval`` (see the module docstring); returns the exit code."""
    from relay_nb.eval import EvalReport, load_bank, oracle_script

    out = out or sys.stdout
    bank = load_bank(options.bank)
    if options.oracle is not None:
        script = oracle_script(bank)
        target = Path(options.oracle).expanduser()
        text = json.dumps(script, indent=1, ensure_ascii=False) + "\n"
        target.write_text(text, encoding="utf-8")
        written = len(script["by_question"])
        rows_only = sum(q.sql is None for q in bank.questions)
        note = f" ({rows_only} give expected rows, not SQL: no answer)" if rows_only else ""
        print(f"wrote the oracle's answers to {written} questions{note}: {target}", file=out)
        return 0
    if options.min_accuracy is not None and not 0 <= options.min_accuracy <= 1:
        raise ConfigurationError(
            f"--min-accuracy is a fraction between 0 and 1 (e.g. 0.8), got {options.min_accuracy}"
        )
    previous = EvalReport.load(options.compare) if options.compare else None
    if previous is not None and previous.bank != bank.name:
        raise ConfigurationError(
            f"--compare {options.compare} is a run of bank {previous.bank!r}, not {bank.name!r}"
        )
    if options.html is not None and not Path(options.html).expanduser().parent.is_dir():
        raise ConfigurationError(f"--html {options.html}: its folder does not exist")
    relay = _relay(options)
    try:
        _connect(relay, bank, options.connect, allowed_env=options.allow_env)
        estimate = relay.estimate(bank, repeat=options.repeat, batch=options.batch)
        print(estimate.line(), file=sys.stderr, flush=True)
        if options.estimate_only:
            return 0
        cap = options.max_cost_usd
        if cap is not None and estimate.cost_usd is not None and estimate.cost_usd > cap:
            print(
                f"note: the estimate is above --max-cost ${cap:g}; the run stops when it is "
                "reached, and the questions it did not answer are not scored",
                file=sys.stderr,
            )
        bar = _ProgressBar(sys.stderr) if sys.stderr.isatty() else None
        try:
            report = relay.evaluate(
                bank,
                concurrency=options.concurrency,
                repeat=options.repeat,
                max_cost_usd=cap,
                batch=options.batch,
                save=options.save,
                estimate=estimate,
                on_progress=bar,
            )
        finally:
            if bar is not None:
                bar.close()
    finally:
        relay.close()
    diff = report.compare(previous) if previous is not None else _previous_diff(report)
    if options.output_json:
        data = report.data()
        if diff is not None:
            data["regression"] = diff.model_dump(mode="json")
        print(json.dumps(data, indent=1, ensure_ascii=False), file=out)
    else:
        print(report.summary(), file=out)
        if diff is not None:
            print(diff.summary(), file=out)
    if options.html:
        target = Path(options.html).expanduser()
        target.write_text(_html_page(report, diff), encoding="utf-8")
        print(f"wrote {target}", file=sys.stderr)
    return _verdict(report, options.min_accuracy)


def _verdict(report: Any, min_accuracy: float | None) -> int:
    """0, or 1 when ``--min-accuracy`` is not met — or cannot be (nothing scored; attempts
    the run's cost cap stopped)."""
    if min_accuracy is None:
        return 0
    accuracy = report.accuracy
    if report.not_run:
        problem = (
            f"{report.not_run} attempt(s) were not run (the run's cost cap), so the accuracy "
            "is not the bank's; raise --max-cost"
        )
    elif accuracy is None:
        problem = "no question could be scored (every expected result failed)"
    elif accuracy < min_accuracy:
        problem = f"accuracy {accuracy:.1%} is below --min-accuracy {min_accuracy:.1%}"
    else:
        return 0
    print(f"relay-nb eval: {problem}", file=sys.stderr)
    return 1


def _relay(options: EvalOptions) -> Any:
    from relay_nb.demo.run import choose_model
    from relay_nb.facade.relay import Relay
    from relay_nb.runtime.profiles import runtime_from_profile
    from relay_nb.runtime.replay import RecordingRuntime

    choice = choose_model(options.model)
    if choice.scripted:
        raise ConfigurationError(
            "no model is configured: pass --model PROFILE (e.g. anthropic:claude-haiku-4-5, "
            "or scripted:FILE / replay:FILE offline) or set RELAY_MODEL or ANTHROPIC_API_KEY"
        )
    model: Any = options.model
    if options.record is not None:
        if model is None:
            raise ConfigurationError("--record needs --model PROFILE (the model to record)")
        model = RecordingRuntime(runtime_from_profile(model), options.record)
    elif model is not None:
        model = runtime_from_profile(model)  # a bad profile fails here, in one line
    return Relay(model)


def _connect(
    relay: Any, bank: Any, overrides: Sequence[str], *, allowed_env: Sequence[str] = ()
) -> None:
    """The bank's connectors, with ``--connect ID=URL`` added or put in their place; a
    bank's URL reads only the environment variables ``--allow-env`` names."""
    asked = {q.connector for q in bank.questions}
    targets: dict[str, Callable[[], str]] = {
        cid: (lambda cid=cid: bank.target(cid, allowed_env=allowed_env)) for cid in bank.connectors
    }
    for item in overrides:
        connector_id, sep, url = item.partition("=")
        connector_id, url = connector_id.strip(), url.strip()
        if not sep or not connector_id or not url:
            raise ConfigurationError(
                f"--connect takes ID=URL (e.g. shop=sqlite:///shop.db), got {item!r}"
            )
        if connector_id not in asked:
            raise ConfigurationError(
                f"--connect {connector_id}: no question of the bank asks {connector_id!r} "
                f"(they ask {', '.join(sorted(asked))})"
            )
        targets[connector_id] = lambda url=url: url
    for connector_id in sorted(asked & set(targets)):
        target = targets[connector_id]()
        relay.connect(connector_id, demo_database() if target == "demo" else target)


def demo_database() -> str:
    """The demo shop for a bank's ``demo`` connector: built once a day beside the saved
    runs (its orders end yesterday, as the bank's time windows expect), older days removed."""
    from relay_nb.demo.data import build_shop_database
    from relay_nb.eval import eval_dir

    folder = eval_dir() / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    today = dt.date.today()
    path = folder / f"shop-{today:%Y%m%d}.sqlite"
    for old in folder.glob("shop-*.sqlite"):
        if old != path:
            old.unlink(missing_ok=True)
    if not path.exists():
        build_shop_database(path, today=today)
    return "sqlite:///" + path.as_posix()


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
