"""``relay-nb invoke PROFILE QUESTION`` and ``relay-nb conformance PROFILE``: a model runtime
from a shell, named by the same profile strings as ``RELAY_MODEL`` (``scripted:PATH`` works
offline).

``invoke`` sends one question and prints the answer (streamed with ``--stream``) with its
usage receipt on stderr; ``conformance`` checks the runtime against the Relay contract and
exits 1 when it does not conform.
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["conformance_command", "invoke_command"]


async def invoke_command(args: argparse.Namespace) -> int:
    """``relay-nb invoke``: one question to the runtime ``args.profile`` names."""
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


async def conformance_command(args: argparse.Namespace) -> int:
    """``relay-nb conformance``: 0 when the runtime conforms, 1 when it does not."""
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
