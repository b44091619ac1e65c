"""The ``relay-nb`` command line: ``main`` parses the arguments and runs one command.

- ``relay-nb demo`` builds a sample shop database and asks it three questions end to end
  (offline with a scripted model when none is configured; see :mod:`relay_nb.demo`);
  ``--notebook`` writes and executes the quickstart notebook instead;
- ``relay-nb ask TARGET QUESTION`` asks your own database (:mod:`relay_nb.cli.ask`);
- ``relay-nb eval BANK`` measures the answers on a question bank (:mod:`relay_nb.cli.evaluate`);
- ``relay-nb invoke PROFILE QUESTION`` and ``relay-nb conformance PROFILE`` talk to a model
  runtime from a shell (:mod:`relay_nb.cli.runtimes`).

The arguments of each are in :mod:`relay_nb.cli.parser`. A command's module loads when it
runs, so ``import relay_nb.cli`` and ``relay-nb --help`` stay light.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import sys
from collections.abc import Sequence

from relay_nb.cli.parser import build_parser
from relay_nb.cli.runtimes import conformance_command, invoke_command
from relay_nb.errors import RelayError

__all__ = ["main"]


def _ask(args: argparse.Namespace) -> int:
    from relay_nb.cli.ask import run_ask

    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables else None
    return run_ask(args.target, args.question, model=args.model, tables=tables, save_to=args.out)


def _eval(args: argparse.Namespace) -> int:
    from relay_nb.cli.evaluate import EvalOptions, run_eval_command

    options = EvalOptions(
        args.bank,
        model=args.model,
        connect=args.connect,
        allow_env=args.allow_env,
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
    if args.examples is not None:
        return _examples(args.examples)
    from relay_nb.demo.run import run_demo

    return run_demo(db=args.db, model=args.model, notebook=args.notebook, timeout=args.timeout)


def _examples(directory: str) -> int:
    from relay_nb.demo.files import write_examples

    written, kept = write_examples(directory)
    for path in written:
        print(f"wrote {path}")
    for path in kept:
        print(f"kept {path} (it exists)")
    bank, answers = (
        f"{directory.rstrip('/')}/{n}" for n in ("shop_questions.yaml", "shop_answers.json")
    )
    print(f"Next: relay-nb eval {bank} --model scripted:{answers}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # `relay-nb` alone: what it can do, not an error
        parser.print_help()
        return 0
    handlers = {
        "ask": _ask,
        "demo": _demo,
        "eval": _eval,
        "invoke": invoke_command,
        "conformance": conformance_command,
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
