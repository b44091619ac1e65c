#!/usr/bin/env python3
"""A stand-in for ``claude -p --output-format json`` used by test_claude_code.py.

It records its argv, stdin, pid (plus any child's pid) and environment *names* as JSON in
the file named by ``STUB_CLAUDE_RECORD``, then behaves as ``STUB_CLAUDE_SCENARIO`` says.
Output shapes follow the real CLI's result object (``type``/``subtype``/``is_error``/
``result``/``usage``/``total_cost_usd``/``modelUsage``/``structured_output``/
``api_error_status``). Every failure text carries ``SECRET`` so tests can prove no CLI
output is copied into errors. ``echo-env`` answers with the value of the variable named by
``STUB_CLAUDE_ECHO``; ``steps`` answers the n-th run
with the n-th structured output of the JSON list in ``STUB_CLAUDE_STEPS``. Standard library
only: it must run under any Python 3.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import stub_common
from stub_common import HANG_S, finish

SECRET = "sk-ant-api03-STUBSECRET-do-not-leak"
SERVED = "claude-sonnet-4-5-20250929"


def record(argv: list[str], stdin: str, children: list[int]) -> None:
    stub_common.record("STUB_CLAUDE_RECORD", argv, stdin, children)


def result(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1234,
        "num_turns": 1,
        "result": "Hello from the stub.",
        "session_id": "00000000-0000-0000-0000-000000000000",
        "total_cost_usd": 0.0042,
        "usage": {
            "input_tokens": 8,
            "output_tokens": 4,
            "cache_read_input_tokens": 120,
            "cache_creation_input_tokens": 16,
        },
        "modelUsage": {SERVED: {"inputTokens": 8, "outputTokens": 4, "costUSD": 0.0042}},
        "stop_reason": "end_turn",
    }
    base.update(fields)
    return base


def error_report(text: str, status: int | None) -> dict[str, object]:
    fields: dict[str, object] = {"is_error": True, "result": text, "total_cost_usd": 0}
    if status is not None:
        fields["api_error_status"] = status
    return result(**fields)


def emit(obj: object, code: int = 0, stderr: str = "") -> None:
    finish(json.dumps(obj), code=code, stderr=stderr)


def fail(stderr: str, code: int = 1) -> None:
    finish(stderr=stderr, code=code)


def flood(stream_name: str) -> None:
    stream = getattr(sys, stream_name).buffer
    chunk = b"x" * 65536
    for _ in range(64):  # 4 MiB, far over the test's bound
        stream.write(chunk)
        stream.flush()
    time.sleep(HANG_S)


def main() -> None:
    argv = sys.argv[1:]
    scenario = os.environ.get("STUB_CLAUDE_SCENARIO", "text")
    if scenario == "no-read":
        record(argv, "", [])
        emit(result())
    stdin = sys.stdin.read()
    if scenario in ("hang", "hang-child", "hang-ignore-term", "hang-escaped-child"):
        stub_common.hang(
            lambda pids: record(argv, stdin, pids),
            child=scenario != "hang",
            ignore_term=scenario == "hang-ignore-term",
            escape=scenario == "hang-escaped-child",
        )
    record(argv, stdin, [])
    schema_run = "--json-schema" in argv
    if scenario == "text":
        emit(result(structured_output={"answer": 42}) if schema_run else result())
    elif scenario == "steps":  # structured outputs in turn from a JSON list, one per run
        emit(result(structured_output=stub_common.next_step("STUB_CLAUDE_STEPS")))
    elif scenario == "tool-in-result":
        emit(result(result='{"answer": 7}'))
    elif scenario == "tool-missing":
        emit(result(result="I would rather chat."))
    elif scenario == "two-models":
        usage = {SERVED: {"outputTokens": 4}, "claude-haiku-4-5-20251001": {"outputTokens": 1}}
        emit(result(modelUsage=usage))
    elif scenario == "no-model-usage":
        emit(result(modelUsage={}))
    elif scenario == "many-tokens":
        emit(result(usage={"input_tokens": 10, "output_tokens": 500}))
    elif scenario == "auth-stderr":
        fail(f"Invalid API key · Please run /login (key {SECRET})\n")
    elif scenario == "weekly-limit":
        fail(f"Weekly limit reached ∙ resets Oct 4, 2pm (Europe/Berlin) [{SECRET}]\n")
    elif scenario == "overloaded":
        fail(f"API Error: Overloaded, the service is temporarily busy {SECRET}\n")
    elif scenario == "context-limit":
        fail(f"Context limit reached: prompt is too long; max turns limit hit {SECRET}\n")
    elif scenario == "random":
        fail(f"TypeError: cannot read properties of undefined {SECRET}\n", code=3)
    elif scenario == "report-401":
        body = f'API Error: 401 {{"type":"error","error":{{"message":"{SECRET}"}}}}'
        emit(error_report(body, 401), code=1)
    elif scenario == "report-403-text":
        emit(error_report(f"API Error: 403 forbidden {SECRET}", None), code=1)
    elif scenario == "report-429":
        emit(error_report(f"API Error: 429 rate_limit_error {SECRET}", 429), code=1)
    elif scenario == "report-limit-exit0":
        emit(error_report(f"You've hit your limit · resets 3pm (Europe/Berlin) {SECRET}", None))
    elif scenario == "report-error-exit0":
        emit(result(is_error=True, subtype="error_during_execution", result=SECRET))
    # Two signals at once: the harness order decides, so these pin it step by step.
    elif scenario == "report-429-auth-stderr":  # step 2 before step 3
        report = error_report(f"API Error: 429 rate_limit_error {SECRET}", 429)
        emit(report, code=1, stderr=f"Invalid API key · Please run /login {SECRET}\n")
    elif scenario == "report-401-limit":  # step 1 before step 2 (and 4)
        body = f"API Error: 401 weekly limit reached · resets Oct 4 {SECRET}"
        emit(error_report(body, 401), code=1, stderr=f"You've hit your limit {SECRET}\n")
    elif scenario == "auth-and-limit-stderr":  # step 3 before step 4
        fail(f"Invalid API key · Please run /login; weekly limit reached {SECRET}\n")
    elif scenario == "limit-and-overloaded-stderr":  # step 4 before step 5
        fail(f"API Error: Overloaded; 5-hour limit reached · resets 3pm {SECRET}\n")
    elif scenario == "overloaded-exit0":  # steps 5-6 only for a nonzero exit
        report = error_report(f"API Error: 529 Overloaded, temporarily unavailable {SECRET}", 529)
        emit(report, stderr=f"Overloaded: the service is temporarily unavailable {SECRET}\n")
    elif scenario == "killed":
        sys.stderr.write(f"fatal {SECRET}\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    elif scenario == "echo-env":  # a CLI that repeats a configured value in its answer
        value = os.environ.get(os.environ.get("STUB_CLAUDE_ECHO", ""), "")
        emit(result(result=f"The configured value is {value}."))
    elif scenario == "invalid-json":
        sys.stdout.write(f"Welcome to Claude Code! {SECRET} {{not json")
    elif scenario == "oversize-stdout":
        flood("stdout")
    elif scenario == "oversize-stderr":
        flood("stderr")
    else:
        fail(f"stub: unknown scenario {scenario!r}\n", code=64)


if __name__ == "__main__":
    main()
