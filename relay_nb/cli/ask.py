"""``relay-nb ask TARGET "question"``: ask your own database from the terminal.

The demo's transcript on your data: which model answers and why, then the SQL of each tool
call (laid out for reading), the first rows of its result, the answer, tokens and cost. The
target is anything ``relay.connect`` takes as text (a SQLAlchemy URL, ``mongodb://…``, an
HTTP API); it is checked when connecting, so a wrong password or a missing file is one line.
A model must be configured (``--model``, ``RELAY_MODEL`` or ``ANTHROPIC_API_KEY``): unlike
the demo, there is no script for an arbitrary question, so none is made up.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO, cast

from relay_nb.demo.run import (
    PREVIEW_ROWS,
    REAL_TURN_CAP_TOKENS,
    WIDTH,
    choose_model,
    pretty_sql,
    say,
)
from relay_nb.errors import ConfigurationError
from relay_nb.redaction import redact

__all__ = ["CONNECTOR_ID", "run_ask"]

CONNECTOR_ID = "db"
"""The id the target is connected under (its tool is ``query_db``)."""


def run_ask(
    target: str,
    question: str,
    *,
    model: str | None = None,
    tables: list[str] | None = None,
    save_to: str | None = None,
    out: TextIO | None = None,
    progress: TextIO | None = None,
) -> int:
    """0 when the question was answered from data, 1 when the turn stopped short or none of
    its queries succeeded (the answer then rests on no data), 130 when interrupted.

    While the turn runs, one line per step goes to ``progress`` (stderr): what is running,
    then how it ended. ``save_to`` (``.csv``, ``.parquet`` or ``.json``) keeps the last
    result table; the turn's charts are saved beside it (``NAME-chart-1.png``).

    A missing model, a bad profile, an unknown file type or a target that cannot be
    connected raise :class:`~relay_nb.errors.RelayError`, which the CLI prints in one line.
    """
    from relay_nb.facade.relay import Relay
    from relay_nb.views import turn_text

    # typeshed's sys.stdout may be None (pythonw); a command runs with one to print to
    out = out or cast(TextIO, sys.stdout)
    progress = progress or cast(TextIO, sys.stderr)
    choice = choose_model(model)
    if choice.scripted:
        raise ConfigurationError(NO_MODEL)
    saver = result_saver(save_to) if save_to else None  # a bad suffix: before any model call
    relay = Relay(choice.profile, max_tokens=REAL_TURN_CAP_TOKENS)
    running = Running(progress)
    try:
        allowlist = "collections" if target.lower().startswith("mongodb") else "tables"
        options: dict[str, Any] = {allowlist: tables} if tables else {}
        connector = relay.connect(CONNECTOR_ID, target, **options)
        say(out, "relay-nb ask · " + choice.describe())
        names = connector.object_names()
        shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        where = redact(connector.target)  # a password in the URL is never printed
        print(f"\n{connector.kind} {where}: {shown or 'nothing listed'}", file=out)
        print("─" * WIDTH, file=out)
        out.flush()
        started = time.perf_counter()
        try:
            turn = relay.ask(question, on_event=running.on_event)
        except KeyboardInterrupt:
            doing = f" while {running.current}" if running.current else ""
            print(f"relay-nb: stopped{doing}", file=progress)
            return 130
        dialect = getattr(connector, "dialect", None)
        layout = pretty_sql(dialect) if isinstance(dialect, str) else None
        print(turn_text(turn, preview_rows=PREVIEW_ROWS, format_sql=layout, width=WIDTH), file=out)
        for event in turn.events:
            if event.type == "error":
                say(out, f"error: {event.message}")
        print("─" * WIDTH, file=out)
        print(f"{turn.finish_reason} after {time.perf_counter() - started:.1f} s", file=out)
        if saver is not None:
            for line in saver(turn):
                print(line, file=out)
        elif turn.charts:
            count = len(turn.charts)
            print(
                f"{count} chart{'s' if count != 1 else ''} drawn: --out FILE saves "
                "the table and the charts beside it",
                file=out,
            )
        unanswered = _no_data(turn, [t.name for t in connector.tools()])
        if unanswered:
            print(f"relay-nb: {unanswered}", file=progress)
    finally:
        relay.close()
    return 0 if turn.finish_reason == "stop" and not unanswered else 1


NO_MODEL = (
    "no model is configured: pass --model PROFILE (anthropic:claude-haiku-4-5; "
    "openai-compatible:llama3.2@http://127.0.0.1:11434/v1 for a local Ollama; "
    "scripted:FILE to play back steps you wrote, offline) or set RELAY_MODEL or "
    "ANTHROPIC_API_KEY; `relay-nb demo` runs offline"
)


class Running:
    """The step lines the terminal shows while a turn runs (nothing is shown otherwise)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.current = ""

    def on_event(self, event: Any) -> None:
        from relay_nb.views import status_of  # loaded with the turn's views, not at import

        if event.type == "tool_call":
            self.current = f"running {event.name}"
            self._say(f"… {self.current}")
        elif event.type == "tool_result":
            if not event.is_error:  # an error may be Ctrl-C cancelling it: still what ran
                self.current = ""
            ended = "error" if event.is_error else status_of(event.artifact)
            self._say(f"  {event.name}: {ended}")
        elif event.type == "thinking" and event.step == "calling_model":
            self.current = "waiting for the model"
            self._say("… calling the model")

    def _say(self, line: str) -> None:
        print(line, file=self.stream, flush=True)


def _no_data(turn: Any, tools: list[str]) -> str:
    """Why the answer rests on no data (every data call failed, or only tools this target
    does not have were called), or ``""``."""
    calls = [r for r in turn.tool_results if r.name in tools]
    if calls:
        if any(not r.is_error for r in calls):
            return ""
        return "no query succeeded, so the answer rests on no data (the errors are above)"
    unknown = [r.name for r in turn.tool_results if r.is_error]
    if not unknown:
        return ""
    return (
        f"{', '.join(dict.fromkeys(unknown))} is not a tool here; this target's tools "
        f"are {', '.join(tools)}, so no query ran"
    )


def result_saver(path: str) -> Any:
    """A function that saves a turn's last table (and its charts beside it) to ``path``,
    by its suffix; an unknown suffix is refused now, before the question is asked."""
    target = Path(path).expanduser()
    suffix = target.suffix.lower()
    if suffix not in (".csv", ".parquet", ".json"):
        raise ConfigurationError(
            f"--out {path}: the file's type comes from its name; end it in .csv, .parquet or .json"
        )
    if not target.parent.is_dir():
        raise ConfigurationError(f"--out {path}: no directory {target.parent}")

    def save(turn: Any) -> list[str]:
        said: list[str] = []
        frame = turn.df
        if frame is None:
            said.append(f"--out {path}: this turn produced no table; nothing saved")
        else:
            try:
                if suffix == ".csv":
                    frame.to_csv(target, index=False)
                elif suffix == ".parquet":
                    frame.to_parquet(target, index=False)
                else:
                    frame.to_json(target, orient="records", date_format="iso", indent=1)
            except ImportError:
                raise ConfigurationError(
                    "--out *.parquet needs pyarrow: pip install 'relay-nb[duckdb]'"
                ) from None
            said.append(f"saved {len(frame):,} rows to {target}")
        for number, chart in enumerate(turn.charts, 1):
            png = target.with_name(f"{target.stem}-chart-{number}.png")
            png.write_bytes(chart.png)
            said.append(f"saved a chart to {png}")
        return said

    return save
