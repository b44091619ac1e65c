#!/usr/bin/env python3
"""A stand-in for ``codex exec --json`` used by test_codex_cli.py.

Output follows the real CLI's JSONL event stream as defined in openai/codex
``codex-rs/exec/src/exec_events.rs`` and documented in its ``docs/exec.md``:
``thread.started`` {thread_id}, ``turn.started``, ``item.started``/``item.completed`` {item:
{id, type: agent_message|reasoning|command_execution|..., text}}, ``turn.completed`` {usage:
{input_tokens, cached_input_tokens, output_tokens}} (input includes the cached tokens),
``turn.failed`` {error: {message}} and ``error`` {message}; a failed turn exits 1. With
``--output-schema FILE`` the agent message's text is the JSON answer. Error wording imitates
reports seen from the real CLI ("exceeded retry limit, last status: 401 Unauthorized",
"You've hit your usage limit ... try again at ...").

It records argv, stdin, cwd, pid (plus any child's pid), environment *names* and the schema
file's content as JSON in ``STUB_CODEX_RECORD``, then behaves as ``STUB_CODEX_SCENARIO``
says. Every failure text carries ``SECRET``. ``steps`` answers the n-th run with the n-th
item of the JSON list in ``STUB_CODEX_STEPS``. Standard library only.
"""

from __future__ import annotations

import json
import os
import sys

import stub_common
from stub_common import emit_events as emit

SECRET = "sk-proj-STUBSECRET-do-not-leak"


def record(argv: list[str], stdin: str, children: list[int]) -> None:
    schema = None
    if "--output-schema" in argv:
        with open(argv[argv.index("--output-schema") + 1], encoding="utf-8") as fh:
            schema = json.load(fh)
    stub_common.record("STUB_CODEX_RECORD", argv, stdin, children, cwd=os.getcwd(), schema=schema)


START = ({"type": "thread.started", "thread_id": "0199a213-81c0-7800"}, {"type": "turn.started"})
USAGE = {"input_tokens": 120, "cached_input_tokens": 100, "output_tokens": 7}


def message(text: str, n: int = 1) -> dict[str, object]:
    return {"type": "item.completed", "item": {"id": f"item_{n}", "type": "agent_message",
                                               "text": text}}  # fmt: skip


def done(usage: dict[str, object] = USAGE) -> dict[str, object]:
    return {"type": "turn.completed", "usage": usage}


def failure(text: str, code: int = 1, stderr: str = "") -> None:
    emit(*START, {"type": "error", "message": text},
         {"type": "turn.failed", "error": {"message": text}}, code=code, stderr=stderr)  # fmt: skip


def answer_for(argv: list[str]) -> str:
    if "--output-schema" not in argv:
        return "Hello from the stub."
    return os.environ.get("STUB_CODEX_ANSWER", '{"answer": 42}')


def main() -> None:
    argv = sys.argv[1:]
    scenario = os.environ.get("STUB_CODEX_SCENARIO", "text")
    stdin = sys.stdin.read()
    if scenario in ("hang", "hang-child"):
        stub_common.hang(lambda pids: record(argv, stdin, pids), child=scenario == "hang-child")
    record(argv, stdin, [])
    reasoning = {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning",
                                                    "text": "**Thinking**"}}  # fmt: skip
    if scenario == "text":
        emit(*START, reasoning, message(answer_for(argv)), done())
    elif scenario == "steps":
        emit(*START, message(json.dumps(stub_common.next_step("STUB_CODEX_STEPS"))), done())
    elif scenario == "many-tokens":
        emit(*START, message("Long."), done({"input_tokens": 10, "output_tokens": 500}))
    elif scenario == "recovered-error":  # a retried stream error, then success
        retry = {"type": "error", "message": f"Reconnecting... 1/5 {SECRET}"}
        emit(*START, retry, message(answer_for(argv)), done())
    elif scenario == "auth":
        failure(f"exceeded retry limit, last status: 401 Unauthorized, request id: {SECRET}")
    elif scenario == "auth-stderr":
        emit(code=1, stderr=f"Error: Not logged in. Run codex login. {SECRET}\n")
    elif scenario == "rate-limit":
        failure(
            "You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to "
            f"purchase more credits or try again at Apr 28th, 2026 10:03 PM. {SECRET}"
        )
    elif scenario == "status-429":
        failure(f"exceeded retry limit, last status: 429 Too Many Requests {SECRET}")
    elif scenario == "unavailable":
        failure(f"exceeded retry limit, last status: 503 Service Unavailable {SECRET}")
    elif scenario == "old-cli":  # clap's usage error for a flag this version lacks
        sys.stderr.write(
            "error: unexpected argument '--ignore-user-config' found\n\n"
            f"Usage: codex exec [OPTIONS] [PROMPT] {SECRET}\n"
        )
        sys.exit(2)
    elif scenario == "nonzero":
        emit(code=3, stderr=f"thread 'main' panicked: {SECRET}\n")
    elif scenario == "failed-exit0":
        failure(f"something odd happened {SECRET}", code=0)
    elif scenario == "tool-activity":
        run = {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution",
               "command": f"bash -lc ls {SECRET}", "aggregated_output": "", "exit_code": 0,
               "status": "completed"}}  # fmt: skip
        emit(*START, run, message("Done.", 2), done())
    elif scenario == "no-answer":
        emit(*START, done())
    elif scenario == "bad-structured":
        emit(*START, message(f"Sure! {SECRET}"), done())
    elif scenario == "malformed":
        sys.stdout.write(f"Welcome to Codex {SECRET} {{not json\n")
    else:
        emit(code=64, stderr=f"stub: unknown scenario {scenario!r}\n")


if __name__ == "__main__":
    main()
