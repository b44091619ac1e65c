"""The ``relay-nb`` command line: the demo, and talking to a model runtime from a shell.

``relay-nb demo`` builds a sample shop database and asks it three questions end to end
(offline with a scripted model when none is configured; see :mod:`relay_nb.demo`);
``--notebook`` writes and executes the quickstart notebook instead.
``relay-nb ask TARGET QUESTION`` asks your own database (see :mod:`relay_nb.cli.ask`);
``relay-nb eval BANK`` measures the answers on a question bank (see
:mod:`relay_nb.cli.evaluate`). ``relay-nb invoke PROFILE QUESTION`` sends one question and
prints the answer with its usage receipt; ``relay-nb conformance PROFILE`` checks a runtime
against the Relay contract. Both take the same profile strings as ``RELAY_MODEL``
(``scripted:PATH`` works offline).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import sys
from collections.abc import Sequence

from relay_nb import __version__
from relay_nb.errors import RelayError

__all__ = ["main"]


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


def _build_parser() -> argparse.ArgumentParser:
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


async def _invoke(args: argparse.Namespace) -> int:
    from relay_nb.runtime.profiles import runtime_from_profile
    from relay_nb.runtime.types import InvocationRequest, Message

    runtime = runtime_from_profile(args.profile)
    messages = [Message.system(args.system)] if args.system else []
    request = InvocationRequest(
        messages=[*messages, Message.user(args.question)], max_output_tokens=args.max_output_tokens
    )

    def echo(delta: str) -> None:
        sys.stdout.write(delta)
        sys.stdout.flush()

    stream = args.stream and runtime.capabilities().streaming and not args.json
    result = await runtime.invoke(request, timeout=args.timeout, on_text=echo if stream else None)
    if args.json:
        print(result.model_dump_json(indent=2))
        return 0
    if stream:
        print()
    else:
        print(result.output_text)
    for call in result.tool_calls:
        print(f"tool call {call.name}: {json.dumps(call.input)}")
    print(_receipt(result), file=sys.stderr)
    return 0


def _receipt(result) -> str:
    usage = result.usage
    approx = "~" if usage.estimated else ""
    cost = "cost unknown" if usage.cost_usd is None else f"${usage.cost_usd:.6f}"
    who = f"{result.simulated} {result.provider}" if result.simulated else result.provider
    return (
        f"[{who} {result.model} ({result.model_source}) · "
        f"{approx}{usage.input_tokens or 0} in / {approx}{usage.output_tokens or 0} out · "
        f"{cost} · {result.latency_ms:.0f} ms]"
    )


async def _conformance(args: argparse.Namespace) -> int:
    from relay_nb.runtime.conformance import check_runtime_conformance
    from relay_nb.runtime.profiles import runtime_from_profile

    report = await check_runtime_conformance(
        runtime_from_profile(args.profile), timeout=args.timeout
    )
    if args.json:
        print(json.dumps({"passed": report.passed, **report.model_dump(mode="json")}, indent=2))
    else:
        for check in report.checks:
            mark = "ok  " if check.passed else "FAIL"
            print(f"{mark} {check.name}" + (f"  ({check.detail})" if check.detail else ""))
        print(f"{report.runtime_id}: {'conforms' if report.passed else 'does NOT conform'}")
    return 0 if report.passed else 1


def _ask(args: argparse.Namespace) -> int:
    from relay_nb.cli.ask import run_ask

    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    return run_ask(args.target, args.question, model=args.model, tables=tables)


def _eval(args: argparse.Namespace) -> int:
    from relay_nb.cli.evaluate import EvalOptions, run_eval_command

    options = EvalOptions(
        args.bank,
        model=args.model,
        connect=args.connect,
        concurrency=args.concurrency,
        repeat=args.repeat,
        max_cost_usd=args.max_cost,
        batch=args.batch,
        min_accuracy=args.min_accuracy,
        record=args.record,
        compare=args.compare,
        save=not args.no_save,
        output_json=args.json,
        html=args.html,
        estimate_only=args.estimate,
        oracle=args.oracle,
    )
    return run_eval_command(options)


def _demo(args: argparse.Namespace) -> int:
    from relay_nb.demo.run import run_demo

    return run_demo(db=args.db, model=args.model, notebook=args.notebook, timeout=args.timeout)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # `relay-nb` alone: what it can do, not an error
        parser.print_help()
        return 0
    handlers = {
        "ask": _ask,
        "demo": _demo,
        "eval": _eval,
        "invoke": _invoke,
        "conformance": _conformance,
    }
    handler = handlers[args.command]
    try:
        outcome = handler(args)
        return asyncio.run(outcome) if inspect.iscoroutine(outcome) else outcome
    except RelayError as exc:
        print(f"relay-nb: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("relay-nb: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `relay-nb eval … | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
