#!/usr/bin/env python3
"""A stand-in for ``opencode run --format json`` used by test_opencode_cli.py.

Output follows the event lines the real CLI writes in ``--format json`` mode
(``packages/opencode/src/cli/cmd/run.ts`` in sst/opencode, ``emit(type, data)``): each line
is ``{"type", "timestamp", "sessionID", ...}`` with ``step_start`` {part}, ``text`` {part:
{type: "text", text, messageID, time}}, ``tool_use`` {part: {type: "tool", tool, state}},
``step_finish`` {part: {type: "step-finish", reason, cost, tokens: {input, output,
reasoning, cache: {read, write}}}} and ``error`` {error: {name, data: {message,
statusCode}}}; a run with an error exits 1. The piped stdin is the message.

It records argv, stdin, cwd, pid (plus any child's pid), environment *names* and the values
of ``OPENCODE_CONFIG_CONTENT``/``OPENCODE_PERMISSION``/``OPENCODE_DISABLE_PROJECT_CONFIG``
(settings, not secrets) as JSON in
``STUB_OPENCODE_RECORD``, then behaves as ``STUB_OPENCODE_SCENARIO`` says. Every failure
text carries ``SECRET``. A prompt asking for a JSON object is answered with
``STUB_OPENCODE_ANSWER`` (default: a fenced ``{"answer": 42}``); ``steps`` answers the n-th
run with the n-th item of the JSON list in ``STUB_OPENCODE_STEPS``. Standard library only.
"""

from __future__ import annotations

import json
import os
import sys

import stub_common
from stub_common import emit_events as emit

SECRET = "sk-ant-STUBSECRET-do-not-leak"
SESSION = "ses_494719016ffe85dkDMj0FPRbHK"


def record(argv: list[str], stdin: str, children: list[int]) -> None:
    stub_common.record(
        "STUB_OPENCODE_RECORD",
        argv,
        stdin,
        children,
        cwd=os.getcwd(),
        config=os.environ.get("OPENCODE_CONFIG_CONTENT"),
        permission=os.environ.get("OPENCODE_PERMISSION"),
        project_config_off=os.environ.get("OPENCODE_DISABLE_PROJECT_CONFIG"),
    )


def event(kind: str, **data: object) -> dict[str, object]:
    return {"type": kind, "timestamp": 1767036059338, "sessionID": SESSION, **data}


def text(value: str, message: str = "msg_1") -> dict[str, object]:
    part = {"id": "prt_2", "sessionID": SESSION, "messageID": message, "type": "text",
            "text": value, "time": {"start": 1, "end": 2}}  # fmt: skip
    return event("text", part=part)


def step(message: str = "msg_1") -> dict[str, object]:
    return event("step_start", part={"messageID": message, "type": "step-start"})


def finish(cost: float = 0.0021, reason: str = "stop", **tokens: object) -> dict[str, object]:
    counts = {"input": 50, "output": 4, "reasoning": 3, "cache": {"read": 10, "write": 2}}
    counts.update(tokens)
    part = {"messageID": "msg_1", "type": "step-finish", "reason": reason, "cost": cost,
            "tokens": counts}  # fmt: skip
    return event("step_finish", part=part)


def error(name: str, message: str, status: int | None = None) -> dict[str, object]:
    data: dict[str, object] = {"message": message}
    if status is not None:
        data["statusCode"] = status
        data["isRetryable"] = status >= 429
    return event("error", error={"name": name, "data": data})


def answer_for(stdin: str) -> str:
    if "Reply with only a JSON object" not in stdin:
        return "Hello from the stub."
    return os.environ.get("STUB_OPENCODE_ANSWER", 'Here it is:\n```json\n{"answer": 42}\n```')


def main() -> None:
    argv = sys.argv[1:]
    scenario = os.environ.get("STUB_OPENCODE_SCENARIO", "text")
    stdin = sys.stdin.read()
    if scenario in ("hang", "hang-child"):
        stub_common.hang(lambda pids: record(argv, stdin, pids), child=scenario == "hang-child")
    record(argv, stdin, [])
    if scenario == "text":
        emit(step(), text(answer_for(stdin)), finish())
    elif scenario == "two-steps":  # an earlier step's text is not the answer
        emit(step("msg_0"), text("Let me think.", "msg_0"), finish(reason="tool-calls"),
             step(), text("Final "), text("answer."), finish())  # fmt: skip
    elif scenario == "steps":
        emit(step(), text(json.dumps(stub_common.next_step("STUB_OPENCODE_STEPS"))), finish())
    elif scenario == "free":
        emit(step(), text("Hello from the stub."), finish(cost=0))
    elif scenario == "many-tokens":
        emit(step(), text("Long."), finish(output=497))  # + 3 reasoning = 500
    elif scenario == "prompted-invalid":
        emit(step(), text(f'{{"answer": "{SECRET}", "extra_{SECRET}": 1}}'), finish())
    elif scenario == "prompted-prose":
        emit(step(), text(f"I cannot do JSON today. {SECRET}"), finish())
    elif scenario == "auth":
        emit(error("ProviderAuthError", f"anthropic rejected {SECRET}"), code=1)
    elif scenario == "api-401":
        emit(step(), error("APIError", f"invalid x-api-key {SECRET}", 401), code=1)
    elif scenario == "rate-limit":
        emit(step(), error("APIError", f"Rate limit reached for requests {SECRET}", 429), code=1)
    elif scenario == "unavailable":
        emit(step(), error("APIError", f"Overloaded {SECRET}", 529), code=1)
    elif scenario == "nonzero":
        emit(code=2, stderr=f"TypeError: undefined is not a function {SECRET}\n")
    elif scenario == "error-exit0":
        emit(step(), error("UnknownError", f"odd {SECRET}"))
    elif scenario == "tool-use":
        state = {"status": "completed", "input": {"command": f"ls {SECRET}"}, "output": SECRET}
        emit(step(), event("tool_use", part={"type": "tool", "tool": "bash",
             "callID": "call_1", "state": state}), text("Done."), finish())  # fmt: skip
    elif scenario == "no-answer":
        emit(step(), finish())
    elif scenario == "malformed":
        sys.stdout.write(f"opencode v1 {SECRET} {{not json\n")
    else:
        emit(code=64, stderr=f"stub: unknown scenario {scenario!r}\n")


if __name__ == "__main__":
    main()
