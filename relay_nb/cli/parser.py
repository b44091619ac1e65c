"""The ``relay-nb`` command line's arguments: every command, its options and their help.

The commands run elsewhere in :mod:`relay_nb.cli`; this module only declares what each takes,
so ``relay-nb --help`` and a usage error cost no import beyond :mod:`argparse`.
"""

from __future__ import annotations

import argparse

from relay_nb import __version__

__all__ = ["build_parser"]


def _positive(kind: type[int] | type[float]):
    """An argparse type that refuses zero and negatives with a one-line usage error."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def build_parser() -> argparse.ArgumentParser:
    """``relay-nb`` and its commands: demo, ask, eval, invoke, conformance."""
    parser = argparse.ArgumentParser(
        prog="relay-nb", description="relay_nb: ask your data in plain language from Jupyter."
    )
    parser.add_argument("--version", action="version", version=f"relay-nb {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="ask a sample shop database three questions, end to end",
        description=(
            "Build a sample shop database (SQLite) and ask it three questions, printing the SQL, "
            "result tables, answers, tokens and cost. Uses the model --model, RELAY_MODEL or "
            "ANTHROPIC_API_KEY names; without one it replays a scripted model offline."
        ),
    )
    demo.add_argument(
        "--db", metavar="PATH", help="where to write the database (default: a new temp dir)"
    )
    demo.add_argument("--model", metavar="PROFILE", help="e.g. anthropic:claude-haiku-4-5")
    demo.add_argument(
        "--notebook",
        nargs="?",
        const="relay_nb_quickstart.ipynb",
        metavar="PATH",
        help="write and execute the quickstart notebook (default relay_nb_quickstart.ipynb)",
    )
    demo.add_argument(
        "--timeout", type=_positive(float), default=300.0, help="seconds per notebook cell"
    )
    demo.add_argument(
        "--examples",
        nargs="?",
        const="examples",
        metavar="DIR",
        help="write the example question bank and scripted answers the docs use (default "
        "./examples), then stop",
    )

    ask = commands.add_parser(
        "ask",
        help="ask your own database a question, end to end",
        description=(
            "Connect TARGET (a SQLAlchemy URL such as sqlite:///shop.db or "
            "postgresql+psycopg://user@host/db, mongodb://…, an https:// API), ask QUESTION and "
            "print the SQL, result tables, answer, tokens and cost. Uses the model --model, "
            "RELAY_MODEL or ANTHROPIC_API_KEY names."
        ),
    )
    ask.add_argument("target", metavar="TARGET", help="e.g. sqlite:///shop.db")
    ask.add_argument("question", metavar="QUESTION")
    ask.add_argument("--model", metavar="PROFILE", help="e.g. anthropic:claude-haiku-4-5")
    ask.add_argument(
        "--tables", metavar="a,b", help="the only tables (or collections) the model may read"
    )
    ask.add_argument(
        "--out",
        metavar="FILE",
        help="save the answer's table (.csv, .parquet or .json) and its charts beside it",
    )

    evaluate = commands.add_parser(
        "eval",
        help="measure the answers on a question bank (accuracy, reasons, cost)",
        description=(
            "Ask every question of BANK (a .yaml, .json, .jsonl or .csv question bank), "
            "compare each answer's result with the expected one, and print accuracy, the "
            "reason for each "
            "miss and the cost; saved under $RELAY_DATA_DIR/evals/ and compared with the "
            "previous run of the bank. Exit 1 below --min-accuracy."
        ),
    )
    evaluate.add_argument("bank", metavar="BANK", help="e.g. examples/shop_questions.yaml")
    evaluate.add_argument(
        "--model", metavar="PROFILE", help="e.g. anthropic:claude-haiku-4-5, scripted:FILE"
    )
    evaluate.add_argument(
        "--connect",
        action="append",
        default=[],
        metavar="ID=URL",
        help="connect a connector the bank asks (repeatable; overrides the bank's connectors)",
    )
    evaluate.add_argument(
        "--allow-env",
        action="append",
        default=[],
        metavar="NAME",
        help="let the bank's connector URLs read ${NAME} from the environment (repeatable)",
    )
    evaluate.add_argument(
        "--concurrency", type=_positive(int), default=4, help="questions asked at once"
    )
    evaluate.add_argument(
        "--repeat", type=_positive(int), default=1, help="ask each question N times"
    )
    evaluate.add_argument(
        "--max-cost", type=_positive(float), metavar="USD", help="cap the whole run's cost"
    )
    evaluate.add_argument(
        "--batch", action="store_true", help="use the runtime's batch API (cheaper, slower)"
    )
    evaluate.add_argument(
        "--min-accuracy", type=float, metavar="FRACTION", help="exit 1 below it, e.g. 0.8"
    )
    evaluate.add_argument(
        "--record", metavar="FILE", help="record every model call for replay:FILE later"
    )
    evaluate.add_argument(
        "--compare", metavar="REPORT", help="a saved report to diff with (default: the last)"
    )
    evaluate.add_argument("--no-save", action="store_true", help="do not save the report")
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluate.add_argument("--html", metavar="FILE", help="also write the report as HTML")
    evaluate.add_argument(
        "--estimate", action="store_true", help="print the cost estimate and stop"
    )
    evaluate.add_argument(
        "--oracle", metavar="FILE", help="write the gold SQL as a scripted model's answers"
    )

    invoke = commands.add_parser("invoke", help="send one question to a model runtime")
    invoke.add_argument("profile", help="e.g. anthropic:claude-sonnet-4-6 or scripted:PATH")
    invoke.add_argument("question")
    invoke.add_argument("--system", default=None, help="a system prompt")
    invoke.add_argument("--max-output-tokens", type=_positive(int), default=1024)
    invoke.add_argument("--timeout", type=_positive(float), default=120.0, help="seconds")
    invoke.add_argument("--stream", action="store_true", help="print text as it arrives")
    invoke.add_argument("--json", action="store_true", help="print the whole result as JSON")

    conformance = commands.add_parser("conformance", help="check a runtime against the contract")
    conformance.add_argument("profile")
    conformance.add_argument("--timeout", type=_positive(float), default=120.0)
    conformance.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser
