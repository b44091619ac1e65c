"""``relay-nb demo``: build the sample shop, ask it three questions, print what happened.

The first thing printed is which model answers and why: the one ``--model`` names, else the
one ``RELAY_MODEL`` or ``ANTHROPIC_API_KEY`` configures (``Relay(model=None)`` resolves it), else
— said plainly — the demo's scripted model (:mod:`relay_nb.demo.script`), which calls no
model but runs real SQL and answers from the real results. Then the database is built, and
each question is asked through :class:`relay_nb.Relay` and printed as a transcript
(:func:`relay_nb.views.turn_text`): the SQL of each tool call, the first rows of
its result, the answer, tokens and cost.

``--notebook`` writes the same questions as a ``%relay`` quickstart notebook instead and
executes it (:mod:`relay_nb.demo.quickstart`).
"""

from __future__ import annotations

import functools
import os
import sys
import textwrap
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, cast

from relay_nb.demo.data import (
    DEMO_TABLES,
    ShopDatabase,
    build_shop_database,
    check_database_target,
)
from relay_nb.demo.quickstart import (
    QuickstartModel,
    check_notebook_target,
    notebook_answers,
    quickstart_notebook,
    require_notebook_tools,
    write_and_execute,
)
from relay_nb.demo.script import SCRIPTED_MODEL_ID, demo_questions, scripted_demo_model

__all__ = ["ModelChoice", "choose_model", "run_demo"]

WIDTH = 100
PREVIEW_ROWS = 12
# a token cap, not a dollar cap: it holds for every runtime (a model without a price, such as
# the claude CLI's, would stop a dollar cap at once); ~$0.20 of Sonnet input at most
REAL_TURN_CAP_TOKENS = 60_000


@dataclass(frozen=True)
class ModelChoice:
    """Which model the demo uses, and where that choice came from."""

    scripted: bool
    profile: str | None = None  # what Relay(model=...) gets; None = RELAY_MODEL / the API key
    source: str = ""  # "--model", "RELAY_MODEL" or "ANTHROPIC_API_KEY"
    shown: str = ""  # the profile as the user set it

    def describe(self) -> str:
        if self.scripted:
            return (
                "offline: neither RELAY_MODEL nor ANTHROPIC_API_KEY is set, so this replays a "
                "scripted transcript with ScriptedRuntime — no model is called. The SQL is real "
                "and runs against the sample database, the tables are its results, and each "
                "answer is composed from those results. Token counts are estimated (about 4 "
                f"characters per token) and priced as {SCRIPTED_MODEL_ID}."
            )
        routed = " (routed by tier)" if self.shown in ("anthropic", "claude-code") else ""
        kind = self.shown.split(":", 1)[0]
        calls = (
            "It plays back recorded or scripted replies"
            if kind in ("scripted", "replay")
            else "These are real model calls, billed to your account"
        )
        return (
            f"model {self.shown}{routed}, from {self.source}. {calls}; each "
            f"question is capped at {REAL_TURN_CAP_TOKENS:,} tokens."
        )


def choose_model(flag: str | None, environ: Mapping[str, str] | None = None) -> ModelChoice:
    """``--model`` first, then what ``Relay(model=None)`` would use, else the scripted model."""
    env = os.environ if environ is None else environ
    if flag:
        return ModelChoice(scripted=False, profile=flag, source="--model", shown=flag)
    configured = env.get("RELAY_MODEL", "").strip()
    if configured:
        return ModelChoice(scripted=False, source="RELAY_MODEL", shown=configured)
    if env.get("ANTHROPIC_API_KEY", "").strip():
        return ModelChoice(scripted=False, source="ANTHROPIC_API_KEY", shown="anthropic")
    return ModelChoice(scripted=True)


def run_demo(
    *,
    db: str | None = None,
    model: str | None = None,
    notebook: str | None = None,
    timeout: float = 300.0,
    out: TextIO | None = None,
) -> int:
    """The command: 0 when every question was answered, 1 when one stopped short.

    Configuration problems (a bad ``--db``, a missing extra, an unknown profile) raise
    :class:`~relay_nb.errors.ConfigurationError`, which the CLI prints in one line.
    """
    # typeshed's sys.stdout may be None (pythonw); a command runs with one to print to
    out = out or cast(TextIO, sys.stdout)
    choice = choose_model(model)
    _check_early(choice, db, notebook)
    say(out, "relay-nb demo · " + choice.describe())
    if notebook is not None:
        return _notebook(choice, db, notebook, timeout, out)
    shop = build_shop_database(db)
    _say_database(out, shop)
    return _ask_all(choice, shop, out)


def _check_early(choice: ModelChoice, db: str | None, notebook: str | None) -> None:
    """Refuse a bad --model or --db before printing anything."""
    if choice.profile is not None:
        from relay_nb.agent.routing import ModelRouter

        ModelRouter(choice.profile)  # checks the profile's form; builds nothing
    if db is not None:
        check_database_target(Path(db).expanduser().absolute())
    if notebook is not None:
        require_notebook_tools()
        check_notebook_target(_notebook_path(notebook))


# -- the terminal transcript ---------------------------------------------------------------------


def _ask_all(choice: ModelChoice, shop: ShopDatabase, out: TextIO) -> int:
    from relay_nb.facade.relay import Relay
    from relay_nb.views import describe_usage, turn_text

    if choice.scripted:
        relay = Relay(scripted_demo_model(shop), ledger=False)
    else:
        relay = Relay(choice.profile, max_tokens=REAL_TURN_CAP_TOKENS)
    questions = demo_questions(shop)
    started = time.perf_counter()
    failed = 0
    try:
        relay.connect("shop", shop.url, tables=list(DEMO_TABLES), description=shop.description)
        for number, question in enumerate(questions, 1):
            print(f"\n── Question {number} of {len(questions)} ".ljust(WIDTH, "─"), file=out)
            out.flush()
            turn = relay.ask(question)
            text = turn_text(
                turn, preview_rows=PREVIEW_ROWS, format_sql=pretty_sql("sqlite"), width=WIDTH
            )
            print(text, file=out)
            out.flush()
            if turn.finish_reason != "stop":
                failed += 1
                for event in turn.events:
                    if event.type == "error":
                        say(out, f"error: {event.message}")
                for warning in turn.warnings:
                    say(out, f"warning: {warning}")
                if turn.finish_reason == "error":
                    say(out, "Stopping here: the next questions would fail the same way.")
                    break
        elapsed = time.perf_counter() - started
        last = relay.turns[-1] if relay.turns else None
        print("\n" + "─" * WIDTH, file=out)
        total = describe_usage(
            relay.usage,
            last.model if last else "",
            simulated=last.simulated if last else None,
        )
        asked = len(relay.turns)
        print(f"{asked} question{'s' if asked != 1 else ''} in {elapsed:.1f} s · {total}", file=out)
    finally:
        relay.close()
    print(
        f"The database stays at {shop.path}\n"
        f'In Python: relay.connect("shop", "{shop.url}")\n'
        "Next: `relay-nb demo --notebook` writes these questions as a Jupyter notebook "
        "(%relay magics) and runs it.",
        file=out,
    )
    return 1 if failed else 0


def pretty_sql(dialect: str) -> Callable[[str], str]:
    """SQL as written, a long line broken before its clauses, as the notebook's trace shows
    it (never re-serialised: ``substr`` stays ``substr``)."""
    from relay_nb.views.sql_layout import layout_written

    return functools.partial(layout_written, dialect=dialect)


# -- the notebook ---------------------------------------------------------------------------------


def _notebook(
    choice: ModelChoice, db: str | None, notebook: str, timeout: float, out: TextIO
) -> int:
    path = _notebook_path(notebook)
    # the database sits next to the notebook unless --db says otherwise; the notebook's first
    # cell rebuilds it (same rows), so the notebook re-runs on its own
    if db is None:
        db_file = path.with_suffix(".sqlite")
        in_notebook = db_file.name  # relative: the kernel runs in the notebook's directory
    else:
        db_file = Path(db).expanduser().absolute()
        in_notebook = str(db_file)
    shop = build_shop_database(db_file)
    _say_database(out, shop)
    document = quickstart_notebook(in_notebook, _notebook_model(choice))
    where = "the current directory" if path.parent == Path.cwd() else str(path.parent)
    print(f"\nWriting {path.name} in {where} ({path.parent})", file=out)
    print(f"Executing {path.name} with the python3 kernel …", file=out)
    out.flush()
    started = time.perf_counter()
    executed = write_and_execute(document, path, timeout=timeout)
    print(f"executed in {time.perf_counter() - started:.1f} s; its answers:", file=out)
    for answer in notebook_answers(executed):
        print(
            textwrap.fill(answer, WIDTH, initial_indent="  A: ", subsequent_indent="     "),
            file=out,
        )
    print(f"\nNotebook: {path}", file=out)
    say(out, "Open it in Jupyter (e.g. `jupyter lab " + path.name + "`) to ask your own.")
    return 0


def _notebook_path(notebook: str) -> Path:
    path = Path(notebook).expanduser().absolute()
    return path if path.suffix == ".ipynb" or path.is_dir() else path.with_suffix(".ipynb")


def _notebook_model(choice: ModelChoice) -> QuickstartModel:
    if choice.scripted:
        return QuickstartModel(
            code="model = scripted_demo_model(shop)",
            comment=(
                "offline: the demo's scripted model (no model is called; SQL and results are "
                "real).\n# model = None would use the model RELAY_MODEL or ANTHROPIC_API_KEY "
                "configures."
            ),
            session_options=", ledger=False",
            scripted=True,
        )
    code = "model = None" if choice.profile is None else f"model = {choice.profile!r}"
    comment = (
        f"the model {choice.source} configures (real calls, billed)"
        if choice.profile is None
        else "the profile given to relay-nb demo --model (real calls, billed)"
    )
    return QuickstartModel(
        code=code,
        comment=comment,
        session_options=f", max_tokens={REAL_TURN_CAP_TOKENS}",
        scripted=False,
    )


# -- output ---------------------------------------------------------------------------------------


def say(out: TextIO, text: str) -> None:
    print(textwrap.fill(text, WIDTH, break_on_hyphens=False), file=out)
    out.flush()


def _say_database(out: TextIO, shop: ShopDatabase) -> None:
    print(
        f"\nSample database: {shop.path} (SQLite, built in {shop.build_ms:.0f} ms)\n"
        f"  {shop.summary()}",
        file=out,
    )
    out.flush()
