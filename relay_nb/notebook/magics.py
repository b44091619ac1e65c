"""``%relay`` and ``%%relay``: ask a question from a cell, or manage the session.

Layout, after JupySQL: the magic parses its line into a ``Command`` (the options, the parser
and the help are declared in :mod:`relay_nb.notebook.command`) and runs it against the
kernel's default ``Relay`` (``relay_nb.default_relay()``), through its public methods only.
Settings are traitlets (``%config RelayMagics.max_cost_usd = 0.5``), or options alone on a
line (``%relay --model PROFILE``): both change the running session.

Errors are raised, so "Run All" and nbval stop at the failing cell, but shown short: a usage
mistake as IPython's ``UsageError``, anything else relay_nb reports as one line (no
traceback into library internals, no secrets).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from traitlets import Bool, CaselessStrEnum, Float, Int, TraitError, Unicode, validate

from relay_nb.agent.approval import Approver
from relay_nb.agent.settings import option_setting
from relay_nb.connectors.base import Connector
from relay_nb.context import DataFrameNamespaceSource
from relay_nb.errors import Cancelled, ConfigurationError, RelayError, UnsafeQueryError
from relay_nb.facade.default import default_relay, existing_default_relay, setting_changes
from relay_nb.facade.knowledge import knowledge_file_for
from relay_nb.facade.loop_thread import while_waiting
from relay_nb.facade.relay import Relay
from relay_nb.facade.targets import is_engine, is_frame
from relay_nb.notebook.approval import (
    ButtonApprover,
    ask_with_input,
    buttons_unavailable_reason,
    handle_clicks,
    takes_no_input,
)
from relay_nb.notebook.background import start_in_background
from relay_nb.notebook.clarify import clarifier_for
from relay_nb.notebook.command import (
    HELP,
    IDENTIFIER,
    SETTINGS,
    Command,
    interpolate,
    parse_command,
)
from relay_nb.notebook.live import LiveTurnView
from relay_nb.notebook.sql_cell import SQL_HELP, SqlCell, parse_sql_cell, sql_cell_text
from relay_nb.notebook.view import NotebookTurn, turn_bundle
from relay_nb.redaction import redact
from relay_nb.runtime.abort import AbortSignal
from relay_nb.views import CallView, status_of

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from relay_nb.facade.background import BackgroundRun

__all__ = ["Command", "RelayCellError", "RelayMagics", "parse_command"]

NAMESPACE_SOURCE = "notebook_dataframes"
_INTERPOLATED = ("connect", "config", "tables", "model", "eval", "describe", "knowledge")


class RelayCellError(Exception):
    """A relay_nb failure in a cell, shown as one line instead of a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"RelayError: {self}"]


@magics_class
class RelayMagics(Magics):
    """The ``%relay`` line and ``%%relay`` cell magic (see the module docstring)."""

    model = Unicode(
        None, allow_none=True, help="Model profile for the default session (None: auto)."
    ).tag(config=True)
    display_rows = Int(20, help="Rows of each result shown in the saved output.").tag(config=True)
    approval = CaselessStrEnum(
        ["ask", "deny", "allow"],
        default_value="ask",
        help="Tools that need approval: ask (Approve / Deny buttons in the live view, or an "
        "input() prompt where buttons cannot work), deny, or allow.",
    ).tag(config=True)
    approval_timeout_s = Float(
        300.0, help="Seconds the Approve / Deny buttons wait for a click; then the call is denied."
    ).tag(config=True)
    clarify = Bool(
        True,
        help="Let the model ask back when a question is ambiguous: option buttons in the live "
        "view, or an input() prompt; never in a run nobody answers (nbclient, nbval).",
    ).tag(config=True)
    clarify_timeout_s = Float(
        300.0, help="Seconds the model's question waits for a click; then it goes on without."
    ).tag(config=True)
    max_cost_usd = Float(
        None, allow_none=True, help="Per-turn cost cap in USD (None: no cap)."
    ).tag(config=True)
    widgets = Bool(
        True,
        help="Show the turn live (ipywidgets) while it runs, where someone can watch (not in "
        "nbclient, nbval or papermill); the saved output is the static trace alone.",
    ).tag(config=True)
    show_sql_cell = Bool(
        False, help="Like --sql on every question: put the last SQL into a new cell."
    ).tag(config=True)
    cell_id: str | None = None
    """The running cell's id, where the frontend sends one (JupyterLab, Notebook 7, VS Code):
    a re-run cell's ``--sql`` does not insert the same query again."""
    sql_inserted: dict[str, str]
    """What ``--sql`` inserted last, by the cell that ran it."""
    config_read: tuple[str, float | None] | None = None
    """The config file ``%load_ext`` read last, and when it had changed then: a re-run of
    the cell reads an unchanged one no more (relay_nb/notebook/__init__.py)."""

    def __init__(self, shell: InteractiveShell | None = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.sql_inserted = {}

    def note_cell(self, info: Any) -> None:
        """``pre_run_cell``: remember which cell runs (see :attr:`cell_id`)."""
        self.cell_id = getattr(info, "cell_id", None)

    @validate("model")
    def _model_applies_now(self, proposal: Any) -> Any:
        """``%config RelayMagics.model = ...`` changes the running session's model too (an
        unknown profile is refused here, and the setting keeps its value)."""
        relay = existing_default_relay()
        if relay is not None and proposal["value"] is not None:
            try:
                relay.configure(model=proposal["value"])
            except RelayError as exc:
                raise TraitError(redact(str(exc))) from None
        return proposal["value"]

    @no_var_expand  # IPython's own {x}/$x expansion would eat "$100" and "{{"; see interpolate
    @line_cell_magic
    def relay(self, line: str, cell: str | None = None) -> Any:
        """Replaced below by the generated help (``%relay?`` shows it)."""
        command = parse_command(line, cell)
        for key in _INTERPOLATED:  # `--config {path}`: a computed path, like the question
            value = command.options.get(key)
            where = f"--{key}"
            if isinstance(value, list):
                command.options[key] = [interpolate(v, self._shell.user_ns, where) for v in value]
            elif isinstance(value, str):
                command.options[key] = interpolate(value, self._shell.user_ns, where)
        try:
            return getattr(self, f"_{command.action}")(command)
        except RelayError as exc:
            raise RelayCellError(redact(str(exc))) from None

    @property
    def _shell(self) -> InteractiveShell:
        """The shell IPython registered the magics with (``%load_ext relay_nb``)."""
        if self.shell is None:
            raise RelayCellError("the relay magics are not registered with an IPython shell")
        return self.shell

    # -- the default session ------------------------------------------------------------------

    def _session(self) -> Relay:
        """The kernel's default Relay, created with this magic's settings on first use."""
        relay = existing_default_relay() or default_relay(
            model=self.model, notebook=_notebook_name()
        )
        if not relay.has_source(NAMESPACE_SOURCE):
            # the notebook's DataFrames (e.g. one kept with --out) are context the model sees
            relay.add_source(
                DataFrameNamespaceSource(lambda: self._shell.user_ns, name=NAMESPACE_SOURCE)
            )
        return relay

    # -- actions ------------------------------------------------------------------------------

    def _help(self, command: Command) -> None:
        print(HELP)

    def _set(self, command: Command) -> None:
        """Settings alone on a line, for every later question; one line says what changed.

        An option with a ``trait`` sets that trait of the magic (its own default for every
        question); one whose key is a trait of the magic too (``model``) is set through it,
        whose validator applies it to the session and which a new default relay is created
        with; the others are the session's (``relay.configure``, all at once).
        """
        relay = self._session()
        before = relay.settings
        own_before = {o.trait: getattr(self, o.trait) for o in SETTINGS.values() if o.trait}
        through: dict[str, Any] = {}
        session: dict[str, Any] = {}
        own: dict[str, Any] = {}
        for name, value in command.settings().items():
            option = SETTINGS[name]
            if option.trait is not None:
                own[option.trait] = value
            elif option.field is not None:
                (through if self.has_trait(option.field) else session)[option.field] = value
        try:
            for trait, value in through.items():
                setattr(self, trait, value)
        except TraitError as exc:
            raise RelayCellError(str(exc)) from None
        if session:
            relay.configure(**session)
        for trait, value in own.items():
            setattr(self, trait, value)
        changes = setting_changes(
            before,
            relay.settings,
            [option_setting(o.field) for o in SETTINGS.values() if o.field and not o.trait],
        )
        changes += [
            f"{o.field or name[2:]} {own_before[o.trait]} -> {getattr(self, o.trait)}"
            for name, o in SETTINGS.items()
            if o.trait and own_before[o.trait] != getattr(self, o.trait)
        ]
        if changes:  # a re-run cell that changes nothing says nothing
            print(f"for every question now: {', '.join(changes)}")

    def _ask(self, command: Command) -> NotebookTurn | BackgroundRun[Any]:
        from IPython.display import display

        relay = self._session()
        options = command.options
        question = interpolate(command.question, self._shell.user_ns)
        if not relay.connectors and not relay.tools:
            raise RelayCellError(
                "no data is connected; connect some first: %relay --connect NAME URL, or "
                "relay_nb.default_relay().connect(NAME, URL_OR_ENGINE)"
            )
        values = self._question_settings(command)
        turn_options = {o.field: values[name] for name, o in SETTINGS.items() if o.field}
        rows: int = values["--rows"]
        if "background" in options:
            if "sql" in options:
                raise RelayCellError("--sql waits for the answer; ask without --background")
            return start_in_background(
                relay,
                question,
                {**turn_options, "approval": self.approval},
                rows=rows,
                widgets=self.widgets,
                out=options.get("out"),
                user_ns=self._shell.user_ns,
            )
        view = None
        abort = AbortSignal()
        waiting: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        # a run nobody watches (nbclient, nbval, papermill) gets the static trace alone
        if self.widgets and not takes_no_input():
            view = LiveTurnView(question, max_rows=rows, session_usage=relay.usage)
            if buttons_unavailable_reason() is None:  # clicks reach this cell while it runs
                view.offer_stop(lambda: abort.abort("stopped"))
                waiting = while_waiting(handle_clicks)
            view.show()
        turns_before = len(relay.turns)
        try:
            with waiting:
                turn = relay.ask(
                    question,
                    **turn_options,
                    approval=self.approval,
                    approver=self._approver(view),
                    clarifier=(
                        clarifier_for(view, timeout_s=self.clarify_timeout_s)
                        if self.clarify
                        else None
                    ),
                    on_event=view.on_event if view is not None else None,
                    abort=abort,
                )
        except BaseException as exc:
            kept = relay.turns[-1] if len(relay.turns) > turns_before else None
            if view is not None:  # Ctrl-C: show the cancelled turn's trace, if it was kept
                if kept is not None:
                    view.finish(kept)
                else:
                    view.interrupted()
            if isinstance(exc, KeyboardInterrupt):  # one line that says what stopped
                where = "its trace is above" if kept is not None else "nothing was kept"
                raise Cancelled(
                    f"the question was stopped ({where}); the session is ready for the next"
                ) from None
            raise
        if view is not None:
            view.finish(turn)
        else:
            data, metadata = turn_bundle(turn, max_rows=rows)
            display(data, metadata=metadata, raw=True)
        shown = NotebookTurn.wrap(turn, shown_in_cell=self._shell.execution_count, max_rows=rows)
        if "out" in options:
            if turn.df is None:
                print(f"--out {options['out']}: this turn produced no DataFrame; not set")
            else:
                self._shell.user_ns[options["out"]] = turn.df
        if "sql" in options or self.show_sql_cell:
            self._insert_sql_cell(turn, explicit="sql" in options)
        if turn.finish_reason == "error":
            error = next((e for e in reversed(turn.events) if e.type == "error"), None)
            message = error.message if error is not None else "the turn failed"
            raise RelayCellError(message)
        return shown

    def _question_settings(self, command: Command) -> dict[str, Any]:
        """Every setting option's value for this question: the line's, else its trait's (the
        magic's own for every question), else None (not set: the session's applies)."""
        given = command.settings()
        return {
            name: given[name] if name in given else getattr(self, o.trait) if o.trait else None
            for name, o in SETTINGS.items()
        }

    def _insert_sql_cell(self, turn: Any, *, explicit: bool) -> None:
        """The turn's last SQL query as a runnable ``%%relay_sql`` cell below this one; a
        re-run cell that would insert the same text again leaves the one it inserted."""
        if not turn.sql_outcomes:
            if explicit:
                print("--sql: this turn ran no SQL query; no cell was inserted")
            return
        call = CallView.of(1, turn.sql_outcomes[-1])
        text = sql_cell_text(call.artifact.connector_id, call.readable_query())
        cell = self.cell_id
        if cell is not None and self.sql_inserted.get(cell) == text:
            print("--sql: the same query as this cell inserted before; not inserted again")
            return
        self._shell.set_next_input(text, replace=False)
        if cell is not None:
            self.sql_inserted[cell] = text

    def _sql(self, command: Command) -> None:
        """``%relay --sql`` alone: the last turn that ran SQL, into a cell (no model call)."""
        turn = next((t for t in reversed(self._session().turns) if t.sql_outcomes), None)
        if turn is None:
            raise RelayCellError(
                "--sql: no question has run a SQL query yet; ask one first (%relay QUESTION)"
            )
        self._insert_sql_cell(turn, explicit=True)

    # -- %%relay_sql ----------------------------------------------------------------------------

    @no_var_expand
    @line_cell_magic
    def relay_sql(self, line: str, cell: str | None = None) -> Any:
        """Replaced below by the generated help (``%relay_sql?`` shows it)."""
        if line.strip() in ("--help", "-h"):
            print(SQL_HELP)
            return None
        command = parse_sql_cell(line, cell)
        try:
            result = self._run_sql(command)
        except UnsafeQueryError as exc:  # the words, not the rule code (kept on the error)
            raise RelayCellError(redact(exc.message)) from None
        except RelayError as exc:
            raise RelayCellError(redact(str(exc))) from None
        except KeyboardInterrupt:
            raise Cancelled(
                "the query was cancelled on the database; the session is ready"
            ) from None
        print(f"{command.connector}: {status_of(result)} · {result.elapsed_ms:.0f} ms")
        for note in result.notes:
            print(f"note: {note}")
        if command.out is not None:
            self._shell.user_ns[command.out] = result.df
        return result.df

    def _run_sql(self, command: SqlCell) -> Any:
        from relay_nb.connectors.sql.connector import SQLConnector  # SQLAlchemy: when used

        connectors = self._session().connectors
        connector = connectors.get(command.connector)
        if connector is None:
            known = ", ".join(sorted(connectors)) or "nothing yet"
            raise RelayCellError(
                f"no connector named {command.connector!r} (connected: {known}); "
                "connect it with %relay --connect NAME URL"
            )
        if not isinstance(connector, SQLConnector):
            raise RelayCellError(
                f"{command.connector!r} is a {connector.kind} connector; %%relay_sql runs "
                "SQL on SQL and DataFrame connectors (ask it with %relay instead)"
            )
        return connector.query(command.sql)

    def _connect(self, command: Command) -> None:
        name, where = command.options["connect"]
        target = self._target(where)
        options: dict[str, Any] = {}
        if "tables" in command.options:
            is_mongo = isinstance(target, str) and target.lower().startswith("mongodb")
            allowlist = "collections" if is_mongo else "tables"
            options[allowlist] = [t.strip() for t in command.options["tables"].split(",")]
        if "row-limit" in command.options:
            options["row_limit"] = int(command.options["row-limit"])
        relay = self._session()
        connector = relay.connect(name, target, **options)
        tools = ", ".join(tool.name for tool in connector.tools())
        print(f"connected {connector.id!r} ({connector.kind}): {tools}")
        knowledge = command.options.get("knowledge")
        beside = knowledge_file_for(connector.id)
        if knowledge is None and beside.is_file():  # what --verify saved, in an earlier kernel
            knowledge = str(beside)
        if knowledge is not None:
            known = relay.knowledge(connector.id, knowledge)
            print(f"knowledge for {connector.id!r} from {knowledge}: {_knows(known)}")

    def _target(self, where: str) -> Any:
        """A notebook variable's value, or the text itself (a URL, a provider name).

        A DataFrame variable is connected *by name*: each query reads the variable again,
        so ``sales = sales[sales.amount > 0]`` in a later cell is what the next turn sees.
        """
        namespace = self._shell.user_ns
        if len(where) > 1 and where[0] == where[-1] and where[0] in "'\"":
            where = where[1:-1]  # a URL quoted as in Python or a shell: the quotes go
        if not IDENTIFIER.match(where) or where not in namespace:
            return where
        value = namespace[where]
        if is_frame(value):
            return _variable(namespace, where)
        if isinstance(value, dict) and value and all(is_frame(v) for v in value.values()):
            return {key: _variable(namespace, where, key) for key in value}
        if isinstance(value, str) and "://" in value:
            return value  # a URL kept in a variable
        if isinstance(value, Connector) or is_engine(value):
            return value
        return where  # e.g. `import tavily` must not hide the provider name "tavily"

    def _disconnect(self, command: Command) -> None:
        name = command.options["disconnect"]
        self._session().disconnect(name)
        print(f"disconnected {name!r}")

    def _connectors(self, command: Command) -> None:
        """The status table, shown whole: a clipped target or error is no use (the
        DataFrame itself is ``relay.connector_status()``)."""
        import pandas as pd
        from IPython.display import display

        status = self._session().connector_status()
        if status.empty:
            print("nothing is connected yet: %relay --connect NAME URL_OR_VARIABLE")
            return
        with pd.option_context(
            "display.max_colwidth", None, "display.max_columns", None, "display.width", 10_000
        ):
            display(status)

    def _refresh(self, command: Command) -> None:
        outcome = self._session().refresh()
        done = [cid for cid, status in outcome.items() if status == "ok"]
        print(f"schema re-read: {', '.join(done) or 'no connectors'}")
        for cid, status in outcome.items():
            if status != "ok":
                print(f"{cid}: {status}")

    def _config(self, command: Command) -> None:
        self.load_config_file(command.options["config"])

    def load_config_file(self, path: str) -> list[str]:
        """Register a ``relay.config.json``'s connectors and skills into the default session."""
        try:
            ids = self._session().load_config(path)
        except RelayError as exc:
            raise RelayCellError(redact(str(exc))) from None
        print(f"{Path(path).name}: connected {', '.join(ids) or 'nothing'}")
        return ids

    def _usage(self, command: Command) -> None:
        """The session's total, then a row per turn (the table only when there are turns)."""
        from IPython.display import display

        from relay_nb.views.session import usage_frame, usage_total

        relay = self._session()
        turns = relay.turns
        print(usage_total(turns, relay.usage))
        if turns:
            display(usage_frame(turns))

    def _eval(self, command: Command) -> None:
        # the evaluation code (and what it brings: YAML, the comparisons) loads with the
        # first %relay --eval, not with %load_ext
        from relay_nb.notebook.evaluation import run_eval_cell

        options = command.options
        report = run_eval_cell(
            self._session(),
            options["eval"],
            repeat=int(options.get("repeat", 1)),
            max_cost_usd=float(options["max-cost"]) if "max-cost" in options else None,
        )
        if "out" in options:
            self._shell.user_ns[options["out"]] = report

    def _verify(self, command: Command) -> None:
        relay = self._session()
        path = relay.verify()
        question = relay.turns[-1].question
        # a re-run cell verifies again: the file already holds it, and this line stays true
        print(f"{path}: {question!r} and its SQL are a verified query; similar questions use it")

    def _history(self, command: Command) -> None:
        from relay_nb.views.session import history_text

        print(history_text(self._session().turns))

    def _describe(self, command: Command) -> None:
        """A table's columns from the catalog the model sees: no query, no model call."""
        import pandas as pd
        from IPython.display import display

        from relay_nb.views.table_detail import find_table, table_frame, table_title

        connector_id, catalog, table = find_table(
            self._session().connectors, command.options["describe"]
        )
        print(table_title(connector_id, catalog, table))
        with pd.option_context("display.max_colwidth", 80, "display.max_rows", None):
            display(table_frame(catalog, table))

    def _reset(self, command: Command) -> None:
        self._session().reset()
        print("conversation reset (connectors, skills and usage totals kept)")

    def _approver(self, view: LiveTurnView | None) -> Approver | None:
        """Who is asked when ``approval`` is "ask" (the turn's settings decide "allow" and
        "deny"): buttons in the live view when a click can reach this cell while it waits
        (see relay_nb.notebook.approval), else an input() prompt."""
        if self.approval != "ask":
            return None
        if view is not None and buttons_unavailable_reason() is None:
            return ButtonApprover(view, timeout_s=self.approval_timeout_s)
        return ask_with_input


RelayMagics.relay.__doc__ = HELP  # %relay? and %relay --help say the same
RelayMagics.relay_sql.__doc__ = SQL_HELP


def _knows(knowledge: Any) -> str:
    """``2 rules, 1 verified query`` (what a knowledge file brought)."""
    counts = [
        (len(knowledge.rules), "rule", "rules"),
        (len(knowledge.metrics), "metric", "metrics"),
        (len(knowledge.synonyms), "synonym", "synonyms"),
        (len(knowledge.verified_queries), "verified query", "verified queries"),
    ]
    parts = [f"{n} {one if n == 1 else many}" for n, one, many in counts if n]
    return ", ".join(parts) or "nothing yet"


def _variable(namespace: dict[str, Any], name: str, key: str | None = None) -> Any:
    """A function returning the DataFrame the notebook variable holds *now*."""

    def read() -> Any:
        if name not in namespace:
            raise ConfigurationError(
                f"the notebook variable {name!r} no longer exists; define it again or "
                f"%relay --disconnect the connector"
            )
        value = namespace[name]
        if key is not None:
            if not isinstance(value, dict) or key not in value:
                raise ConfigurationError(
                    f"{name}[{key!r}] no longer exists; reconnect with %relay --connect"
                )
            value = value[key]
        return value

    return read


def _notebook_name() -> str | None:
    """The notebook's file name when the Jupyter server says it (never a full path)."""
    name = os.environ.get("JPY_SESSION_NAME")
    return Path(name).name if name else None
