"""The turn view-model: what every rendering of one turn shows, decided in one place.

A turn is shown three ways — the live widgets while it runs (:mod:`relay_nb.notebook.live`),
the static HTML a saved notebook keeps (:mod:`relay_nb.views.html`) and the plain text of
nbval, terminals and the CLI (:mod:`relay_nb.views.text`). Each used to re-derive from events
or results which calls to list, how each ended, what query it ran and how to sum the usage.
Now :class:`TurnView` holds that, and each renderer only maps its fields: a new panel is one
field here plus one mapping in each renderer.

A ``TurnView`` is built from a finished :class:`~relay_nb.agent.turn_result.TurnResult`
(:meth:`TurnView.of`), or fed the turn's events as they happen (:meth:`TurnView.apply`), which
is what the live view does; both end in the same fields.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.agent.clarify import CLARIFY_TOOL
from relay_nb.agent.events import Event
from relay_nb.agent.tool_calls import ToolOutcome
from relay_nb.agent.turn_result import TurnResult
from relay_nb.redaction import redact
from relay_nb.runtime.types import Simulated, Usage
from relay_nb.views.sql_layout import layout_written, readable_sql

__all__ = ["CallView", "TurnView", "describe_usage", "model_label", "sql_of", "status_of"]

_PHASES = {
    "resolving_context": "resolving context",
    "calling_model": "calling the model",
    "compacting_history": "compacting the history",
}
_MAX_QUERY_CHARS = 2000


class CallView(BaseModel):
    """One tool call as every view shows it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: int
    """1-based, in the order the calls were made (and their results reported)."""
    tool_call_id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    state: Literal["running", "awaiting_approval", "done"] = "running"
    is_error: bool = False
    content: str = ""
    """What went back to the model (an error's message, a result's preview)."""
    rule: str | None = None
    """A guard's refusal: its rule, which the model reads and the analyst does not
    (:attr:`shown_content`)."""
    artifact: Any = None
    """What stays local: a ``QueryResult`` with its DataFrame, a chart's PNG."""
    elapsed_ms: float = 0.0
    status_line: str = ""
    """The call's own line, sent while it ran (``tool_status``): a query's cost before it
    ran — ``≈ $0.004 model · ≈ 1.2 GB scanned (≈ $0.0075 at your price)``. Kept after it
    ends; empty for a call that sent none."""

    @classmethod
    def of(cls, index: int, outcome: ToolOutcome, status_line: str = "") -> CallView:
        return cls(
            index=index,
            tool_call_id=outcome.tool_call_id,
            name=outcome.name,
            input=redact(dict(outcome.input)) if isinstance(outcome.input, dict) else {},
            state="done",
            is_error=outcome.is_error,
            content=outcome.content,
            rule=outcome.rule,
            artifact=outcome.artifact,
            elapsed_ms=outcome.elapsed_ms,
            status_line=status_line,
        )

    @property
    def status(self) -> str:
        """How the call stands or ended: running, waiting, error, a row count, ok (with the
        estimate beside it only where the call's :attr:`status_line` does not show it already)."""
        if self.state == "running":
            return "running…"
        if self.state == "awaiting_approval":
            return "waiting for your approval"
        return "error" if self.is_error else status_of(self.artifact, estimate=not self.status_line)

    @property
    def shown_content(self) -> str:
        """:attr:`content` as the analyst reads it: a refusal's words without its rule code
        (``table_not_allowed: tracks is not …`` → ``tracks is not …``)."""
        prefix = f"{self.rule}: " if self.rule else ""
        return self.content.removeprefix(prefix) if prefix else self.content

    @property
    def title(self) -> str:
        return f"[{self.index}] {self.name} · {self.status}"

    @property
    def query(self) -> str:
        """What the call ran, or asked for when it was refused before running (a credential
        in it, even one the model wrote, is shown redacted)."""
        return redact(_query(self.name, self.input, self.artifact))

    @property
    def asked(self) -> str:
        """The model's question to the user and its options (a ``clarify`` call), else
        empty: shown as text, not as a query."""
        if self.name != CLARIFY_TOOL or not isinstance(self.input.get("question"), str):
            return ""
        options = self.input.get("options")
        listed = " | ".join(map(str, options)) if isinstance(options, list) else ""
        return f"asked: {self.input['question']}" + (f" [{listed}]" if listed else "")

    def readable_query(self, *, pretty: bool = True) -> str:
        """:attr:`query` as the analyst reads it. SQL the model wrote is shown as it wrote it
        (the guard's re-serialisation would turn ``substr`` into ``SUBSTRING`` and add the
        fetch row's ``LIMIT 201``; the result's note says where the row limit cut it), one
        long line broken before its clauses (``pretty``).
        A statement known only as it ran is laid out over lines (``pretty``), with the
        connector's row limit where it fetched one row past it (see
        :mod:`relay_nb.views.sql_layout`)."""
        artifact = self.artifact
        if _written_sql(self.input) is not None:
            dialect = getattr(artifact, "dialect", "") or ""
            return layout_written(self.query, dialect) if pretty else self.query
        return readable_sql(
            self.query,
            dialect=getattr(artifact, "dialect", "") or "",
            row_limit=getattr(artifact, "row_limit", None),
            pretty=pretty,
        )

    @property
    def frame(self) -> Any:
        """The result's DataFrame (None for errors, charts and text results)."""
        return None if self.is_error else getattr(self.artifact, "df", None)

    @property
    def png(self) -> bytes | None:
        return None if self.is_error else getattr(self.artifact, "png", None)

    @property
    def png_dark(self) -> bytes | None:
        """The chart drawn for a dark page (None where only the light one exists)."""
        return None if self.is_error else getattr(self.artifact, "png_dark", None)

    @property
    def notes(self) -> tuple[str, ...]:
        """What the result's bounds did (values cut, reading stopped at the byte limit; the
        row limit cut it, and how to raise that)."""
        if self.is_error:
            return ()
        notes = tuple(getattr(self.artifact, "notes", ()) or ())
        limit = getattr(self.artifact, "row_limit", None)
        cut = getattr(self.artifact, "truncated", False) and limit is not None
        if cut and getattr(self.artifact, "limit", "rows") == "rows":
            notes += (
                f"Only the first {limit:,} rows came back (the connector's row limit): "
                "aggregate or filter in the question, or raise the limit when you connect "
                "(%relay --connect NAME URL --row-limit N; relay.connect(..., row_limit=N)).",
            )
        return notes

    @property
    def shows_data(self) -> bool:
        """A table or a chart came back."""
        return self.frame is not None or self.png is not None


class TurnView(BaseModel):
    """One turn as every view shows it (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    question: str
    calls: list[CallView] = Field(default_factory=list)
    answer: str = ""
    finish_reason: str | None = None
    """None while the turn runs."""
    error: str | None = None
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    """What the context's sources noted about the finished turn (a verified query followed)."""
    usage: Usage | None = None
    """The turn's priced usage so far (None before the first model call)."""
    model: str = ""
    simulated: Simulated | None = None
    """Set when no model answered (a scripted or replayed turn): the usage line says so."""
    model_calls: int = 0
    phase: str = "starting"
    """What the turn is doing now, in words (the live status line)."""

    @classmethod
    def of(cls, turn: TurnResult) -> TurnView:
        """The finished turn: its calls from its results (each with the last line it sent
        while it ran), its ending from the result."""
        lines = {e.tool_call_id: e.status for e in turn.events if e.type == "tool_status"}
        return cls(
            question=turn.question,
            calls=[
                CallView.of(i, outcome, lines.get(outcome.tool_call_id, ""))
                for i, outcome in enumerate(turn.tool_results, 1)
            ],
            answer=turn.answer,
            finish_reason=turn.finish_reason,
            error=next((e.message for e in reversed(turn.events) if e.type == "error"), None),
            warnings=list(turn.warnings),
            notes=list(turn.notes),
            usage=turn.usage,
            model=turn.model,
            simulated=turn.simulated,
            model_calls=sum(1 for event in turn.events if event.type == "usage"),
            phase=f"done ({turn.finish_reason})",
        )

    @property
    def readings(self) -> list[str]:
        """What the analyst chose when the model asked back (a ``clarify`` call's answer),
        shown on the answer, which rests on it: ``"You chose: calendar quarter (asked: which
        quarter?)"``, or that nobody answered and the model picked a reading."""
        readings = []
        for call in self.calls:
            chosen = getattr(call.artifact, "choice", "")
            if not call.asked or call.is_error or chosen == "":
                continue
            asked = " ".join(str(call.input.get("question", "")).split())
            if chosen is None:
                readings.append(f"Nobody answered {asked!r}: the model picked a reading")
            else:
                readings.append(f"You chose: {chosen} (asked: {asked})")
        return readings

    def opened(self, call: CallView) -> bool:
        """Whether ``call`` is shown unfolded: the last query's table (what the answer is
        about, so its SQL and rows are visible without a click), every chart, and an error
        no later result made good. Earlier steps stay folded."""
        last_table = max((c.index for c in self.calls if c.frame is not None), default=0)
        if call.png is not None or call.index == last_table:
            return True
        last_data = max((c.index for c in self.calls if c.shows_data), default=0)
        return call.is_error and call.index > last_data

    # -- the live path -------------------------------------------------------------------------

    def apply(self, event: Event) -> CallView | None:
        """Take one event of the running turn; returns the call it changed, if any."""
        handler = getattr(self, f"_on_{event.type}", None)
        return handler(event) if handler is not None else None

    def call(self, tool_call_id: str) -> CallView | None:
        return next((c for c in self.calls if c.tool_call_id == tool_call_id), None)

    def _on_thinking(self, event: Any) -> None:
        if event.step == "retrying":
            if event.detail and "discarded" in event.detail:
                self.answer = ""  # the failed attempt's streamed text is void
            self.phase = f"retrying: {event.detail or ''}"
        elif event.step == "usage_cap":
            self.phase = f"stopped: {event.detail or 'usage cap'}"
        elif event.step == "calling_model" and self.model:
            self.phase = f"calling {model_label(self.model, self.simulated)}"
        else:
            self.phase = _PHASES.get(event.step, event.step)

    def _on_context_resolved(self, event: Any) -> None:
        sources = ", ".join(event.sources) or "none"
        self.phase = f"context from {sources} (~{event.token_estimate:,} tokens)"

    def _on_tool_call(self, event: Any) -> CallView:
        call = CallView(
            index=len(self.calls) + 1,
            tool_call_id=event.tool_call_id,
            name=event.name,
            input=dict(event.input),
        )
        self.calls.append(call)
        self.phase = f"running {event.name}"
        return call

    def _on_tool_awaiting_approval(self, event: Any) -> CallView | None:
        call = self.call(event.tool_call_id)
        if call is not None:
            call.state = "awaiting_approval"
        reason = getattr(event, "reason", "")
        self.phase = f"{event.name} needs your approval" + (f": {reason}" if reason else "")
        return call

    def _on_tool_status(self, event: Any) -> CallView | None:
        call = self.call(event.tool_call_id)
        if call is not None:
            call.status_line = event.status
        return call

    def _on_tool_result(self, event: Any) -> CallView:
        call = self.call(event.tool_call_id)
        if call is None:  # a result with no call of its own (a malformed next_step)
            call = CallView(
                index=len(self.calls) + 1, tool_call_id=event.tool_call_id, name=event.name
            )
            self.calls.append(call)
        call.state = "done"
        call.is_error = event.is_error
        call.content = event.output
        call.artifact = event.artifact
        return call

    def _on_text_delta(self, event: Any) -> None:
        self.answer += event.delta

    def _on_usage(self, event: Any) -> None:
        self.usage = event.usage if self.usage is None else self.usage + event.usage
        self.model = event.model
        self.simulated = self.simulated or event.simulated
        self.model_calls += 1

    def _on_done(self, event: Any) -> None:
        self.finish_reason = event.finish_reason
        self.usage = event.usage
        self.phase = f"done ({event.finish_reason})"

    def _on_error(self, event: Any) -> None:
        self.error = event.message
        self.phase = f"error: {event.message}"

    # -- shared lines --------------------------------------------------------------------------

    def usage_line(self, *, calls: bool = True) -> str:
        """Model, calls, tokens, cost: the line every view ends with."""
        usage = self.usage if self.usage is not None else Usage()
        return describe_usage(
            usage, self.model, calls=self.model_calls if calls else None, simulated=self.simulated
        )


def model_label(model: str, simulated: str | None = None) -> str:
    """Who answered, as every view names it: the model, or what stood in for one.

    A scripted model's usage is priced at the rates of the model it is labelled with (so the
    cost views have numbers to show), and a replayed turn repeats what the recorded model
    cost; the label says so, so neither passes for a real answer or for money spent.
    """
    if simulated == "scripted":
        unpriced = not model or model.startswith("scripted")
        return "scripted model" if unpriced else f"scripted model, priced as {model}"
    if simulated == "replayed":
        return f"replayed answer of {model or 'a recorded model'}"
    return model or "model unknown"


def describe_usage(
    usage: Usage, model: str, *, calls: int | None = None, simulated: str | None = None
) -> str:
    """One line: model, calls, tokens (flagged when estimated), cost or "cost unknown".

    For a scripted or replayed turn (``simulated``) the model is named as such and the cost
    is marked as not spent (see :func:`model_label`); unpriced, it reads "nothing spent".
    """
    parts = [model_label(model, simulated)]
    if calls is not None:
        parts.append(f"{calls} call{'s' if calls != 1 else ''}")
    tokens = f"{usage.input_tokens or 0:,} in / {usage.output_tokens or 0:,} out tokens"
    cached = (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0)
    if cached:
        tokens += f" (+{cached:,} cache)"
    if usage.estimated:
        tokens += " (estimated)"
    parts.append(tokens)
    if usage.cost_usd is None and simulated:
        parts.append("nothing spent")  # a script or a recording answered: no model was paid
    elif usage.cost_usd is None:
        parts.append("cost unknown")
    elif simulated:
        parts.append(f"${usage.cost_usd:.4f} (not spent)")
    else:
        parts.append(f"${usage.cost_usd:.4f}")
    return " · ".join(parts)


def status_of(artifact: Any, *, estimate: bool = True) -> str:
    """A result's row count (and whether more exist), and the engine's estimate of what it
    scanned when the connector asked first (its preflight; not with ``estimate=False``: the
    call's cost line shows it); or ``ok``."""
    rows = getattr(artifact, "row_count", None)
    if rows is None:
        return "ok"
    counted = f"{rows:,} row{'s' if rows != 1 else ''}"
    if getattr(artifact, "truncated", False):
        total = getattr(artifact, "total", None)
        if getattr(artifact, "limit", "rows") == "bytes":
            counted += " (stopped at the byte limit)"
        elif total is not None:
            counted = f"{rows:,} of {total.describe()} rows"
        else:
            counted += " (more exist)"
    estimated = getattr(artifact, "estimate", None) if estimate else None
    planned = f" · estimated {estimated.brief()}" if estimated is not None else ""
    return counted + planned


def sql_of(outcome: ToolOutcome) -> str:
    """What a finished call ran, or asked for (see :attr:`CallView.query`)."""
    arguments = outcome.input if isinstance(outcome.input, dict) else {}
    return _query(outcome.name, arguments, outcome.artifact)


def _written_sql(arguments: dict[str, Any]) -> str | None:
    """The SQL a call's input holds, as written (outer blank lines and indent removed)."""
    submitted = arguments.get("sql")
    if not isinstance(submitted, str) or not submitted.strip():
        return None
    return textwrap.dedent(submitted.strip("\n")).strip()


def _query(name: str, arguments: dict[str, Any], artifact: Any) -> str:
    """SQL tools show their statement as the model wrote it; other tools (an HTTP call, a
    Mongo query) what ran, or their input, so a refused ``GET ../admin`` is visible in the
    saved trace, not only its error."""
    written = _written_sql(arguments)
    if written is not None:
        return written
    executed = getattr(artifact, "executed_sql", None)
    if isinstance(executed, str) and executed:
        return executed
    if name.startswith("call_") and isinstance(arguments.get("path"), str):  # HTTP
        query = arguments.get("query")
        text = f"{arguments.get('method') or 'GET'} {arguments['path']}"
        return text + (f" {_compact(query)}" if query else "")
    if name == "web_search" and isinstance(arguments.get("query"), str):
        return f"web_search {_compact(arguments['query'])}"

    if name.startswith("query_") and arguments:  # a Mongo find or aggregate
        return _compact(arguments)
    return ""


def _compact(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= _MAX_QUERY_CHARS else text[: _MAX_QUERY_CHARS - 1] + "…"
