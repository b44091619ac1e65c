"""A ``%relay`` line as a command object: the declared options, the parser and the help.

After JupySQL: options first, each starting with ``--``, then the question as raw text, so
apostrophes and SQL-looking words in a question are never mistaken for syntax. Every option
is declared once in :data:`OPTIONS` with its help line; the usage line, ``%relay --help`` and
``%relay?`` are generated from that table, so they cannot drift from what the parser takes.
A setting option also names the per-question option it fills (a key of
:class:`~relay_nb.agent.settings.AskOptions`) and how its text becomes a value, which is what
checks it here and what the magic passes on (:meth:`Command.settings`).

What a line does (:attr:`Command.action`): one of the session actions (``--connect``,
``--usage`` …); ``set`` when it has settings but no question (``%relay --model X`` makes X
the model of every later question); else ``ask``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from IPython.core.error import UsageError

__all__ = [
    "HELP",
    "OPTIONS",
    "SETTINGS",
    "USAGE",
    "Command",
    "Option",
    "dollars",
    "interpolate",
    "parse_command",
    "rest_of_line",
    "whole_number",
]


def whole_number(text: str) -> int:
    """``N``: digits only (no sign, no point)."""
    if text.isdigit():
        try:
            return int(text)
        except ValueError:  # a digit that is not a decimal one, such as "²"
            pass
    raise ValueError("a whole number")


def dollars(text: str) -> float:
    """``USD``: an amount above 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:  # NaN too
        raise ValueError("dollars above 0")
    return value


@dataclass(frozen=True)
class Option:
    """One ``--option`` of ``%relay``."""

    values: str
    """Its values' names, space-separated ("" for a flag)."""
    help: str
    kind: Literal["question", "setting", "action", "connect", "eval"] = "question"
    """``question`` (goes with a question), ``setting`` (with a question: for it only; alone:
    for every later question), ``action`` (manages the session, no question), ``connect``
    (goes with ``--connect``) or ``eval`` (goes with ``--eval``)."""
    field: str | None = None
    """A setting's per-question option (a key of :class:`~relay_nb.agent.settings.AskOptions`,
    passed to ``relay.ask``); None: the magic's own (``--rows``, how much is shown)."""
    parse: Callable[[str], Any] | None = None
    """Its text into its value; a ``ValueError`` saying what it takes ("a whole number") is
    the usage error. None: the text as it is."""
    trait: str | None = None
    """The ``RelayMagics`` trait that holds a setting for every question: alone on a line the
    option sets it (and not the session's settings), and a question without the option gets
    its value. None: alone on a line, the option is the session's (``relay.configure``)."""

    @property
    def arity(self) -> int:
        return len(self.values.split())

    def value(self, text: str) -> Any:
        """``text`` (what followed the option) as its value; ``ValueError`` if it is none."""
        return text if self.parse is None else self.parse(text)


OPTIONS: dict[str, Option] = {
    "--model": Option(
        "PROFILE", "the model, e.g. anthropic:claude-sonnet-4-6", "setting", field="model"
    ),
    "--skill": Option("NAME", "answer with this skill only", "setting", field="skill"),
    "--max-steps": Option(
        "N", "model calls a turn may make", "setting", field="max_steps", parse=whole_number
    ),
    "--max-cost": Option(
        "USD",
        "a turn's cost cap in dollars",
        "setting",
        field="max_cost_usd",
        parse=dollars,
        trait="max_cost_usd",
    ),
    "--rows": Option(
        "N",
        "rows of each result shown in the cell",
        "setting",
        parse=whole_number,
        trait="display_rows",
    ),
    "--out": Option("VAR", "keep the answer's table in the notebook variable VAR"),
    "--sql": Option("", "put the question's last query into a new cell (alone: the last turn's)"),
    "--background": Option(
        "", "run the question while you run other cells; the cell returns its handle"
    ),
    "--connect": Option("NAME TARGET", "connect a URL, engine, DataFrame or API as NAME", "action"),
    "--tables": Option("a,b", "with --connect: the only tables the model may read", "connect"),
    "--row-limit": Option(
        "N", "with --connect: rows one query may return", "connect", parse=whole_number
    ),
    "--knowledge": Option(
        "FILE", "with --connect: its knowledge file (default: NAME.knowledge.yaml here)", "connect"
    ),
    "--disconnect": Option("NAME", "remove a connection", "action"),
    "--connectors": Option("", "each connection and its status", "action"),
    "--refresh": Option("", "renew every schema (a SQL one is read again if it changed)", "action"),
    "--config": Option("FILE", "connect what a relay.config.json lists", "action"),
    "--usage": Option("", "what each turn of this session cost: tokens, dollars, time", "action"),
    "--eval": Option("BANK", "score the answers to a question bank (accuracy, reasons)", "action"),
    "--repeat": Option("N", "with --eval: ask each question N times", "eval", parse=whole_number),
    "--verify": Option("", "save the last answer's question and SQL as a verified query", "action"),
    "--describe": Option(
        "TABLE", "a table's columns, types, keys and values (no model call)", "action"
    ),
    "--history": Option("", "the conversation so far: questions, SQL, rows, answers", "action"),
    "--reset": Option("", "forget the conversation (connections and usage kept)", "action"),
    "--help": Option("", "this help", "action"),
}

SETTINGS: dict[str, Option] = {n: o for n, o in OPTIONS.items() if o.kind == "setting"}
"""The setting options: alone on a line, for every later question; else for one."""

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)(?:\[(-?\d+)\])?\}")
_WITH_ACTION = {"--connect": ("connect",), "--eval": ("eval",)}
"""Option kinds an action takes besides itself; ``--eval`` also takes ``--max-cost`` (the
whole run's cap) and ``--out`` (the report's variable)."""
_EVAL_EXTRAS = ("max-cost", "out")


def _spelled(name: str) -> str:
    option = OPTIONS[name]
    return f"{name} {option.values}" if option.values else name


USAGE = "usage: %relay [OPTIONS] QUESTION  |  %relay --connect NAME TARGET  |  %relay --help"

HELP = "\n".join(
    [
        "%relay QUESTION asks the connected data in plain language; %%relay takes the",
        "question from the cell body (options on the first line).",
        "",
        "Options for a question (alone on a line, a setting applies to every later question):",
        *(
            f"  {_spelled(name):<24}{option.help}"
            for name, option in OPTIONS.items()
            if option.kind in ("setting", "question")
        ),
        "",
        "Managing the session (one per line, no question):",
        *(
            f"  {_spelled(name):<24}{option.help}"
            for name, option in OPTIONS.items()
            if option.kind in ("action", "connect", "eval")
        ),
        "",
        "{name} in a question is the notebook variable's value ({{ and }} for braces).",
        "More settings: %config RelayMagics (e.g. %config RelayMagics.approval = 'allow').",
        "Your own SQL on the same read-only path: %%relay_sql CONNECTOR (%relay_sql --help).",
        "",
        "Examples:",
        "  %relay --connect shop sqlite:///shop.sqlite",
        "  %relay which customers ordered the most last month?",
        "  %relay --model anthropic:claude-haiku-4-5 --max-cost 0.05",
        "  %relay --out top --sql top 5 products by revenue",
        "  %relay --describe orders",
        "  %relay --eval questions.yaml --repeat 3 --max-cost 2",
    ]
)


@dataclass
class Command:
    """A parsed ``%relay`` line: options by name (without ``--``) and the question."""

    options: dict[str, Any] = field(default_factory=dict)
    question: str = ""

    @property
    def action(self) -> str:
        """The session action named, ``set`` (settings without a question) or ``ask``."""
        for name, option in OPTIONS.items():
            if option.kind == "action" and name[2:] in self.options:
                return name[2:]
        if self.last_sql:
            return "sql"
        return "ask" if self.question else "set"

    @property
    def last_sql(self) -> bool:
        """``%relay --sql`` alone: the last turn's query into a cell, with no model call."""
        return not self.question and set(self.options) == {"sql"}

    def settings(self) -> dict[str, Any]:
        """The setting options given, by name (``"--max-steps"``), as their values (the
        parser checked them)."""
        return {
            name: option.value(self.options[name[2:]])
            for name, option in SETTINGS.items()
            if name[2:] in self.options
        }


def parse_command(line: str, cell: str | None = None) -> Command:
    """Options up to the first word that is not one (or ``--``); the rest is the question.

    In a cell magic the question is the cell body and the line holds only options.
    """
    words = line.split()
    command = Command()
    index = 0
    while index < len(words) and words[index].startswith("--"):
        word = words[index]
        if word == "--":
            index += 1
            break
        option = OPTIONS.get(word)
        if option is None:
            raise UsageError(f"unknown option {word}; %relay --help lists them")
        values = words[index + 1 : index + 1 + option.arity]
        if len(values) < option.arity or any(v.startswith("--") for v in values):
            raise UsageError(f"{word} needs {option.values}; {USAGE}")
        key = word[2:]
        if key in command.options:
            raise UsageError(f"{word} given twice")
        arity = option.arity
        command.options[key] = True if arity == 0 else values[0] if arity == 1 else values
        index += 1 + arity
    rest = rest_of_line(line, words, index)
    if cell is not None:
        if rest:
            raise UsageError(f"%%relay takes only options on its line, got {rest!r}; {USAGE}")
        rest = cell.strip()
    command.question = rest
    _check(command)
    return command


def rest_of_line(line: str, words: list[str], index: int) -> str:
    """The raw text after the first ``index`` words (spacing inside the question kept)."""
    text = line.strip()
    for word in words[:index]:
        text = text[text.index(word) + len(word) :].lstrip()
    return text


def _check(command: Command) -> None:
    options = command.options
    actions = [n for n, o in OPTIONS.items() if o.kind == "action" and n[2:] in options]
    if len(actions) > 1:
        raise UsageError(f"use one of {', '.join(actions)} at a time")
    if actions and command.question:
        raise UsageError(f"{actions[0]} takes no question; ask in a separate %relay")
    for kind in ("connect", "eval"):
        only = [n for n, o in OPTIONS.items() if o.kind == kind and n[2:] in options]
        if only and kind not in options:
            raise UsageError(f"{_listed(only)} with --{kind}")
    if not actions and not command.question and not command.last_sql:
        if not options:
            raise UsageError(f"no question; {USAGE}")
        with_question = [n for n, o in OPTIONS.items() if o.kind == "question" and n[2:] in options]
        if with_question:
            raise UsageError(f"{_listed(with_question)} with a question")
    if actions:
        kinds = _WITH_ACTION.get(actions[0], ())
        extras = _EVAL_EXTRAS if actions[0] == "--eval" else ()
        others = [
            f"--{key}"
            for key in options
            if f"--{key}" != actions[0]
            and OPTIONS[f"--{key}"].kind not in kinds
            and key not in extras
        ]
        if others:
            raise UsageError(f"{actions[0]} takes no {' or '.join(others)}")
    for name, option in OPTIONS.items():
        if name[2:] in options and option.arity == 1:
            try:
                option.value(options[name[2:]])
            except ValueError as exc:
                raise UsageError(f"{name} takes {exc}, got {options[name[2:]]!r}") from None
    if "out" in options and not IDENTIFIER.match(options["out"]):
        raise UsageError(f"--out takes a variable name, got {options['out']!r}")


def _listed(names: list[str]) -> str:
    """``--out goes`` / ``--tables and --row-limit go``."""
    return f"{names[0]} goes" if len(names) == 1 else f"{' and '.join(names)} go"


def interpolate(question: str, namespace: dict[str, Any], where: str = "the question") -> str:
    """``{name}``, ``{In[3]}``, ``{Out[4]}`` from the notebook; ``{{``/``}}`` for braces.

    Only names and one integer index: a question is text, never code to evaluate. ``where``
    names the text in errors (``--connect`` for its values).
    """

    def substitute(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name, index = match.group(1), match.group(2)
        if name not in namespace:
            raise UsageError(
                f"{{{name}}} in {where}: no variable {name!r} in the notebook "
                "(write {{ and }} for literal braces)"
            )
        value = namespace[name]
        if index is not None:
            try:
                value = value[int(index)]
            except (KeyError, IndexError, TypeError):
                raise UsageError(f"{token}: {name} has no entry {index}") from None
        return str(value)

    return _PLACEHOLDER.sub(substitute, question)
