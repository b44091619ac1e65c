"""Cross-runtime parity: one forced-tool request, every bundled runtime, the same tool call.

Each runtime talks to its own stand-in — the Anthropic and Chat Completions stub servers
through the real SDKs, the stub CLI executables through the process transport, a
recording for replay — and each stand-in answers in its own wire format with the *same*
model decision: :data:`PAYLOAD`, an input chosen to trip mappings (quotes and newlines in
SQL, non-ASCII keys, an emoji, floats, ``null``/``true``/``false`` in a list, an empty
object). Parity is checked on both sides of the wire:

- what the provider received: the tool's name and JSON schema, unchanged, and the choice
  forced (each provider says "forced" differently; :class:`Case.declared` reads it back);
- what the runtime returned: exactly one tool call named ``submit`` whose input equals
  :data:`PAYLOAD`, and a conformance report that passes.

Usage, latency and warnings may differ between runtimes; they are not compared.
"""

from __future__ import annotations

import json
import re
import shlex
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from relay_nb.runtime.anthropic import AnthropicRuntime
from relay_nb.runtime.base import ModelRuntime
from relay_nb.runtime.claude_code import ClaudeCodeRuntime
from relay_nb.runtime.codex_cli import CodexCLIRuntime, strict_schema
from relay_nb.runtime.conformance import check_runtime_conformance
from relay_nb.runtime.openai_compat import OpenAICompatibleRuntime
from relay_nb.runtime.opencode_cli import OpenCodeCLIRuntime
from relay_nb.runtime.replay import RecordingRuntime, ReplayRuntime
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import (
    InvocationRequest,
    InvocationResult,
    Message,
    ToolChoice,
    ToolSpec,
)
from relay_nb.testing.anthropic_stub import AnthropicStub, MessageReply, ToolUse
from relay_nb.testing.openai_stub import ChatReply, FunctionCall, OpenAIStub

pytestmark = pytest.mark.usefixtures("loopback_model_requests")

HERE = Path(__file__).parent
API_KEY = "sk-parity-test-key"

PAYLOAD: dict[str, Any] = {
    "sql": 'SELECT name, "total €" AS total\nFROM orders\nWHERE note = \'a "quoted" word\'',
    "limit": 5,
    "ratio": 0.25,
    "flags": [True, False, None],
    "nested": {"ünïcode": "日本語 ✓", "empty": {}},
    "emoji": "📈",
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sql": {"type": "string", "description": "one read-only SELECT"},
        "limit": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "flags": {"type": "array", "items": {"type": ["boolean", "null"]}},
        "nested": {"type": "object"},
        "emoji": {"type": "string"},
    },
    "required": ["sql", "limit"],
    "additionalProperties": False,
}
SUBMIT = ToolSpec(name="submit", description="Submit the query to run.", input_schema=SCHEMA)
OTHER = ToolSpec(
    name="other",
    description="A second declared tool the choice must not pick.",
    input_schema={"type": "object", "properties": {}},
)


def forced_request(*, with_other: bool = True) -> InvocationRequest:
    return InvocationRequest(
        messages=[
            Message.system("You write SQL for the shop database."),
            Message.user("Which orders mention a quoted word?"),
        ],
        tools=[SUBMIT, OTHER] if with_other else [SUBMIT],
        tool_choice=ToolChoice(type="tool", name="submit"),
        max_output_tokens=512,
    )


@dataclass
class Declared:
    """The forced tool as the provider received it."""

    name: str
    schema: dict[str, Any] | None
    """``None`` where the provider gets the schema only as prompt text (prompted mode)."""
    forced: bool
    streamed: bool | None = None
    """Whether the provider was asked to stream (``None``: not an HTTP provider)."""


@dataclass
class Case:
    runtime: ModelRuntime
    declared: Callable[[], Declared]
    request: InvocationRequest
    stream: bool = False
    schema_sent: dict[str, Any] | None = None
    """The schema the provider must receive, when the runtime rewrites it on purpose."""


CaseFactory = Callable[[Path], AbstractAsyncContextManager[Case]]


# -- the stand-ins, one per runtime ---------------------------------------------------------


def _anthropic_declared(stub: AnthropicStub) -> Declared:
    body = stub.requests[-1].body
    tool = next(t for t in body["tools"] if t["name"] == "submit")
    forced = body["tool_choice"] == {"type": "tool", "name": "submit"}
    return Declared(tool["name"], tool["input_schema"], forced, body.get("stream", False))


@asynccontextmanager
async def _anthropic(tmp: Path, *, stream: bool) -> AsyncIterator[Case]:
    with AnthropicStub() as stub:
        stub.enqueue(MessageReply(tool_uses=[ToolUse(name="submit", input=PAYLOAD)]))
        runtime = AnthropicRuntime("claude-parity", api_key=API_KEY, base_url=stub.base_url)
        yield Case(runtime, lambda: _anthropic_declared(stub), forced_request(), stream)
        await runtime.aclose()


def prompted_declaration(prompt: str) -> Declared:
    """Read a forced tool back from prompt text (servers without function calling)."""
    named = re.search(r'the input of the tool "([^"]+)"', prompt)
    schema = re.search(r"must match this JSON schema: (\{.*\})$", prompt, re.MULTILINE)
    return Declared(
        named.group(1) if named else "?",
        json.loads(schema.group(1)) if schema else None,
        named is not None,
    )


def _openai_declared(stub: OpenAIStub) -> Declared:
    body = stub.requests[-1].body
    if "tools" not in body:  # prompted mode: the forced tool is described in the prompt
        declared = prompted_declaration(body["messages"][0]["content"])
        fmt = body.get("response_format", {})
        if fmt.get("type") == "json_schema":  # and enforced by the server too
            assert fmt["json_schema"]["schema"] == declared.schema
        return declared
    function = next(t["function"] for t in body["tools"] if t["function"]["name"] == "submit")
    forced = body["tool_choice"] == {"type": "function", "function": {"name": "submit"}}
    return Declared(function["name"], function["parameters"], forced, body.get("stream", False))


@asynccontextmanager
async def _openai(
    tmp: Path, *, tools: bool, structured: str = "json_object", stream: bool = False
) -> AsyncIterator[Case]:
    with OpenAIStub() as stub:
        if tools:
            stub.enqueue(ChatReply(tool_calls=[FunctionCall(name="submit", arguments=PAYLOAD)]))
        else:
            stub.enqueue(ChatReply(text=json.dumps(PAYLOAD, ensure_ascii=False)))
        runtime = OpenAICompatibleRuntime(
            "parity-model",
            base_url=stub.base_url,
            api_key=API_KEY,
            tools=tools,
            structured_output=structured,  # type: ignore[arg-type]
        )
        request = forced_request(with_other=tools)
        yield Case(runtime, lambda: _openai_declared(stub), request, stream)
        await runtime.aclose()


def _stub_executable(tmp: Path, name: str, script: str) -> str:
    """An absolute-path CLI that execs ``script`` with this interpreter."""
    wrapper = tmp / "bin" / name
    wrapper.parent.mkdir(exist_ok=True)
    wrapper.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(HERE / script))} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def _argv_value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


@asynccontextmanager
async def _claude_code(tmp: Path) -> AsyncIterator[Case]:
    steps, record = tmp / "steps.json", tmp / "record.json"
    steps.write_text(json.dumps([PAYLOAD]), encoding="utf-8")
    env = {
        "STUB_CLAUDE_SCENARIO": "steps",
        "STUB_CLAUDE_STEPS": str(steps),
        "STUB_CLAUDE_RECORD": str(record),
    }
    runtime = ClaudeCodeRuntime(
        "sonnet", executable=_stub_executable(tmp, "claude", "stub_claude.py"), env=env
    )

    def declared() -> Declared:
        argv = json.loads(record.read_text(encoding="utf-8"))["argv"]
        schema = _argv_value(argv, "--json-schema")
        # the CLI has one structured output: forcing is the schema constraint itself
        return Declared("submit", json.loads(schema) if schema else None, schema is not None)

    yield Case(runtime, declared, forced_request(with_other=False))


def _cli_record(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@asynccontextmanager
async def _codex(tmp: Path) -> AsyncIterator[Case]:
    """Codex enforces OpenAI-strict schemas: the runtime closes every object, makes optional
    properties nullable and sends a free-form object as a JSON string; the model answers in
    that form and the runtime maps it back."""
    record = tmp / "record.json"
    strict_answer = {**PAYLOAD, "nested": json.dumps(PAYLOAD["nested"], ensure_ascii=False)}
    env = {
        "STUB_CODEX_ANSWER": json.dumps(strict_answer, ensure_ascii=False),
        "STUB_CODEX_RECORD": str(record),
    }
    runtime = CodexCLIRuntime(
        "gpt-5", executable=_stub_executable(tmp, "codex", "stub_codex.py"), env=env
    )

    def declared() -> Declared:
        seen = _cli_record(record)
        schema = seen.get("schema")
        return Declared("submit", schema, "--output-schema" in seen["argv"])

    request = forced_request(with_other=False)
    yield Case(runtime, declared, request, schema_sent=strict_schema(SCHEMA))


@asynccontextmanager
async def _opencode(tmp: Path) -> AsyncIterator[Case]:
    """OpenCode has no structured output: opted in, the schema rides in the prompt and the
    answer (here fenced, as models like to write it) is parsed and validated."""
    record = tmp / "record.json"
    answer = "Here is the input:\n```json\n" + json.dumps(PAYLOAD, ensure_ascii=False) + "\n```"
    env = {"STUB_OPENCODE_ANSWER": answer, "STUB_OPENCODE_RECORD": str(record)}
    runtime = OpenCodeCLIRuntime(
        "anthropic/claude-sonnet-4-5",
        prompted_tools=True,
        executable=_stub_executable(tmp, "opencode", "stub_opencode.py"),
        env=env,
    )
    yield Case(
        runtime,
        lambda: prompted_declaration(_cli_record(record)["stdin"]),
        forced_request(with_other=False),
    )


def _scripted_step(request: InvocationRequest) -> dict[str, Any]:
    return {"tool_calls": [{"name": request.tool_choice.name, "input": PAYLOAD}]}  # type: ignore[union-attr]


@asynccontextmanager
async def _scripted(tmp: Path) -> AsyncIterator[Case]:
    runtime = ScriptedRuntime([_scripted_step])

    def declared() -> Declared:
        seen = runtime.requests[-1]
        tool = next(t for t in seen.tools if t.name == "submit")
        return Declared(
            tool.name, tool.input_schema, seen.tool_choice == ToolChoice(type="tool", name="submit")
        )

    yield Case(runtime, declared, forced_request())


@asynccontextmanager
async def _replay(tmp: Path) -> AsyncIterator[Case]:
    """A recording of the Anthropic runtime's answer, written to disk and replayed."""
    path = tmp / "parity.jsonl"
    async with _anthropic(tmp, stream=False) as live:
        recorder = RecordingRuntime(live.runtime, path)
        await recorder.invoke(live.request)
        live_declared = live.declared()
    runtime = ReplayRuntime.from_file(path)
    yield Case(runtime, lambda: live_declared, forced_request())


CASES: dict[str, CaseFactory] = {
    "anthropic": lambda tmp: _anthropic(tmp, stream=False),
    "anthropic-streamed": lambda tmp: _anthropic(tmp, stream=True),
    "openai-compatible": lambda tmp: _openai(tmp, tools=True),
    "openai-compatible-streamed": lambda tmp: _openai(tmp, tools=True, stream=True),
    "openai-compatible-json-object": lambda tmp: _openai(tmp, tools=False),
    "openai-compatible-json-schema": lambda tmp: _openai(
        tmp, tools=False, structured="json_schema"
    ),
    "openai-compatible-prompted": lambda tmp: _openai(tmp, tools=False, structured="prompt"),
    "claude-code": _claude_code,
    "codex": _codex,
    "opencode-prompted": _opencode,
    "scripted": _scripted,
    "replay": _replay,
}


async def _invoke(case: Case) -> InvocationResult:
    chunks: list[str] = []
    on_text: Callable[[str], Awaitable[None] | None] | None = chunks.append if case.stream else None
    result = await case.runtime.invoke(case.request, timeout=30, on_text=on_text)
    assert not chunks, "a forced tool's input is not answer text to stream"
    return result


# -- the checks -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
async def test_the_same_forced_tool_request_gives_the_same_tool_call(
    name: str, tmp_path: Path
) -> None:
    async with CASES[name](tmp_path) as case:
        result = await _invoke(case)
        declared = case.declared()

    assert [(c.name, c.input) for c in result.tool_calls] == [("submit", PAYLOAD)]
    assert declared.name == "submit"
    assert declared.forced, f"{name}: the provider was not told to use submit"
    if declared.schema is not None:
        expected = case.schema_sent or SCHEMA
        assert declared.schema == expected, f"{name}: the schema changed on the way"
    if declared.streamed is not None:
        assert declared.streamed == case.stream
    assert result.output_text == "" or name.startswith(("openai-compatible-", "opencode"))
    prompted = case.runtime.capabilities().structured_tools_fidelity == "prompted"
    warned = any(w.startswith("STRUCTURED_OUTPUT_PROMPTED") for w in result.warnings)
    assert warned == name.startswith("opencode"), result.warnings
    assert not warned or prompted


@pytest.mark.parametrize("name", list(CASES))
async def test_every_bundled_runtime_conforms_on_a_forced_tool_request(
    name: str, tmp_path: Path
) -> None:
    async with CASES[name](tmp_path) as case:
        report = await check_runtime_conformance(case.runtime, case.request, timeout=30)

    assert report.passed, (name, report.failures)
    assert "quoted" not in report.model_dump_json()  # reports hold no request or answer text


async def test_a_message_batch_gives_the_same_tool_call(tmp_path: Path) -> None:
    """The Anthropic runtime's physical batch maps tool use like its single invocation."""
    with AnthropicStub() as stub:
        stub.enqueue(MessageReply(tool_uses=[ToolUse(name="submit", input=PAYLOAD)]))
        runtime = AnthropicRuntime("claude-parity", api_key=API_KEY, base_url=stub.base_url)
        runtime.batch_poll_interval = 0.01
        runtime.batch_poll_max_interval = 0.04
        (outcome,) = await runtime.invoke_batch([forced_request()], timeout=30)
        await runtime.aclose()
        created = next(r for r in stub.requests if r.path.endswith("/batches"))

    assert outcome.value is not None, outcome.reason
    assert [(c.name, c.input) for c in outcome.value.tool_calls] == [("submit", PAYLOAD)]
    params = created.body["requests"][0]["params"]
    assert params["tool_choice"] == {"type": "tool", "name": "submit"}
    assert next(t for t in params["tools"] if t["name"] == "submit")["input_schema"] == SCHEMA


# -- the capability table of docs/runtimes.md ---------------------------------------------

CAPABILITY_PROFILES = {
    "anthropic:MODEL": "anthropic:claude-sonnet-4-6",
    "openai:MODEL": "openai:gpt-4.1-mini",
    "openai-compatible:MODEL@URL": "openai-compatible:llama3.2@http://127.0.0.1:11434/v1",
    "openai-compatible:MODEL@URL?tools=false": (
        "openai-compatible:llama3.2@http://127.0.0.1:11434/v1?tools=false"
    ),
    "claude-code:MODEL": "claude-code:sonnet",
    "codex:MODEL": "codex:gpt-5",
    "opencode:PROVIDER/MODEL": "opencode:anthropic/claude-sonnet-4-5",
    "opencode:PROVIDER/MODEL?prompted_tools=true": (
        "opencode:anthropic/claude-sonnet-4-5?prompted_tools=true"
    ),
    "scripted:PATH": "scripted:" + str(HERE.parent.parent / "examples" / "hello_script.json"),
    "replay:PATH": "replay",
}
_YES_NO = {True: "yes", False: "no"}


def capability_table() -> str:
    """The Markdown table docs/runtimes.md shows between the ``capabilities`` markers."""
    from relay_nb.runtime.profiles import runtime_from_profile

    lines = [
        "| Profile | Tools | Streaming | Abort | Usage | Output-token limit | One forced tool only "
        "| Token counting | Batch |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for shown, profile in CAPABILITY_PROFILES.items():
        runtime = ReplayRuntime([]) if profile == "replay" else runtime_from_profile(profile)
        caps = runtime.capabilities()
        batch = f"yes (≤ {caps.max_batch_size})" if caps.physical_batch else "no"
        cells = [
            f"`{shown}`",
            caps.structured_tools_fidelity,
            _YES_NO[caps.streaming],
            _YES_NO[caps.abort],
            _YES_NO[caps.usage],
            caps.output_token_limit_fidelity,
            _YES_NO[caps.single_forced_tool_only],
            _YES_NO[caps.token_counting],
            batch,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def test_the_docs_show_what_each_runtime_declares() -> None:
    readme = (HERE.parent.parent / "docs" / "runtimes.md").read_text(encoding="utf-8")
    start, end = "<!-- capabilities:start -->\n", "\n<!-- capabilities:end -->"
    shown = readme[readme.index(start) + len(start) : readme.index(end)]
    assert shown == capability_table(), (
        "docs/runtimes.md capability table is stale; paste:\n" + capability_table()
    )
