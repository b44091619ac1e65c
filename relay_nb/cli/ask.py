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
    out: TextIO | None = None,
) -> int:
    """0 when the question was answered, 1 when the turn stopped short.

    A missing model, a bad profile or a target that cannot be connected raise
    :class:`~relay_nb.errors.RelayError`, which the CLI prints in one line.
    """
    from relay_nb.facade.relay import Relay
    from relay_nb.views import turn_text

    # typeshed's sys.stdout may be None (pythonw); a command runs with one to print to
    out = out or cast(TextIO, sys.stdout)
    choice = choose_model(model)
    if choice.scripted:
        raise ConfigurationError(
            "no model is configured: pass --model PROFILE (e.g. anthropic:claude-haiku-4-5) "
            "or set RELAY_MODEL or ANTHROPIC_API_KEY; `relay-nb demo` runs offline"
        )
    relay = Relay(choice.profile, max_tokens=REAL_TURN_CAP_TOKENS)
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
        turn = relay.ask(question)
        dialect = getattr(connector, "dialect", None)
        layout = pretty_sql(dialect) if isinstance(dialect, str) else None
        print(turn_text(turn, preview_rows=PREVIEW_ROWS, format_sql=layout, width=WIDTH), file=out)
        for event in turn.events:
            if event.type == "error":
                say(out, f"error: {event.message}")
        print("─" * WIDTH, file=out)
        print(f"{turn.finish_reason} after {time.perf_counter() - started:.1f} s", file=out)
    finally:
        relay.close()
    return 0 if turn.finish_reason == "stop" else 1
