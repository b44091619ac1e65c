"""ClaudeCodeRuntime against ``stub_claude.py`` (no real CLI): argv, prompt rendering,
structured output, model source, failure classification, secrets and the request switch.

The stub records its argv/stdin/pids to a file and behaves per ``STUB_CLAUDE_SCENARIO``.
The shared limit wording is tested in ``test_harness_limits.py``, the process transport
in ``test_process_transport.py``, and abort/timeout for every harness CLI in
``test_harness_lifecycle.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_support import ask
from stub_common import read_record, spawned

from relay_nb.errors import ConfigurationError, InvocationError, ModelRequestsBlocked
from relay_nb.runtime import (
    InvocationRequest,
    Message,
    ToolCall,
    ToolChoice,
    ToolSpec,
)
from relay_nb.runtime.claude_code import ClaudeCodeRuntime
from relay_nb.runtime.harness_common import schema_descriptions
from relay_nb.runtime.replay import RecordingRuntime

SECRET = "STUBSECRET"
SERVED = "claude-sonnet-4-5-20250929"
BASE_ARGS = ["-p", "--output-format", "json", "--model", "sonnet", "--tools", ""]
BASE_ARGS += ["--strict-mcp-config"]


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture
def make_runtime(stub_runtimes: Callable[..., Any]) -> Callable[..., ClaudeCodeRuntime]:
    return stub_runtimes(ClaudeCodeRuntime, "claude")


SUBMIT = ToolSpec(
    name="submit",
    description="Submit the final answer.",
    input_schema={
        "type": "object",
        "description": "The answer envelope.",
        "properties": {
            "answer": {"type": "integer", "description": "The numeric answer."},
            "steps": {
                "type": "array",
                "items": {"type": "string", "description": "One reasoning step."},
            },
            "unit": {
                "anyOf": [
                    {"type": "string", "description": "A unit name."},
                    {"type": "null"},
                ]
            },
            "where": {"$ref": "#/$defs/Place"},
        },
        "$defs": {
            "Place": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City of the answer."}},
            }
        },
        "required": ["answer"],
    },
)
OTHER = ToolSpec(name="other", description="Another tool.")


def assert_no_secret(error: BaseException) -> None:
    assert SECRET not in str(error)
    assert SECRET not in repr(error)


# ------------------------------------------------------------------------------- success


async def test_text_request_runs_the_documented_command(
    loopback_model_requests: None, make_runtime, record_path: Path
) -> None:
    result = await make_runtime().invoke(ask())

    seen = read_record(record_path)
    assert seen["argv"] == BASE_ARGS
    assert seen["stdin"] == "What is 6 x 7?"
    assert result.output_text == "Hello from the stub."
    assert result.tool_calls == []
    assert (result.provider, result.model, result.model_source) == (
        "claude-code",
        SERVED,
        "configured",  # the CLI's resolution of the alias, not what the service served
    )
    assert result.usage.model_dump() == {
        "input_tokens": 8,
        "output_tokens": 4,
        "total_tokens": 148,  # input + output + cache reads + cache writes
        "cache_read_tokens": 120,
        "cache_write_tokens": 16,
        "cache_write_1h_tokens": None,
        "cost_usd": 0.0042,
        "estimated": False,
    }
    assert result.stop_reason == "end_turn"
    assert result.warnings == []
    assert result.latency_ms > 0


async def test_system_messages_go_to_the_system_prompt_flag(
    loopback_model_requests: None, make_runtime, record_path: Path
) -> None:
    request = InvocationRequest(
        messages=[Message.system("Be terse."), Message.system("Use SI units."), Message.user("hi")]
    )
    await make_runtime().invoke(request)

    seen = read_record(record_path)
    assert seen["argv"] == [*BASE_ARGS, "--system-prompt", "Be terse.\n\nUse SI units."]
    assert seen["stdin"] == "hi"


async def test_conversation_with_tool_turns_is_rendered_readably(
    loopback_model_requests: None, make_runtime, record_path: Path
) -> None:
    call = ToolCall(id="call_1", name="lookup", input={"city": "Oslo"})
    request = InvocationRequest(
        messages=[
            Message.user("Weather in Oslo?"),
            Message.assistant("Let me check.", tool_calls=[call]),
            Message.tool_result("call_1", "rain, 4 C"),
            Message.tool_result("call_1", "timeout", is_error=True),
            Message.assistant("It rains."),
            Message.user("And tomorrow?"),
        ]
    )
    await make_runtime().invoke(request)

    stdin = read_record(record_path)["stdin"]
    expected_in_order = [
        "User:\nWeather in Oslo?",
        "Assistant:\nLet me check.",
        'Assistant called tool lookup (call call_1) with input:\n{"city": "Oslo"}',
        "Result of tool call call_1:\nrain, 4 C",
        "Error from tool call call_1:\ntimeout",
        "Assistant:\nIt rains.",
        "User:\nAnd tomorrow?",
    ]
    positions = [stdin.index(block) for block in expected_in_order]
    assert positions == sorted(positions)


async def test_extra_args_are_appended_and_env_never_leaks(
    loopback_model_requests: None, make_runtime, record_path: Path
) -> None:
    # Constructor env is for the CLI only: it must reach the child but never a result.
    secret_env = {"ANTHROPIC_API_KEY": f"sk-{SECRET}"}
    runtime = make_runtime(extra_args=["--max-turns", "1"], extra_env=secret_env)
    result = await runtime.invoke(ask())

    seen = read_record(record_path)
    assert seen["argv"] == [*BASE_ARGS, "--max-turns", "1"]
    assert {"ANTHROPIC_API_KEY", "PATH"} <= set(seen["env_names"])  # added on top of ours
    assert SECRET not in repr(runtime)
    assert SECRET not in result.model_dump_json()


@pytest.mark.parametrize(
    "flag", ["--tools", "--allowedTools=Bash", "--dangerously-skip-permissions"]
)
def test_extra_args_cannot_reenable_tools_or_override_owned_flags(flag: str) -> None:
    with pytest.raises(ConfigurationError, match="extra_args may not contain"):
        ClaudeCodeRuntime(extra_args=[flag])


def test_model_name_cannot_be_read_as_a_flag() -> None:
    with pytest.raises(ConfigurationError):
        ClaudeCodeRuntime("--dangerously-skip-permissions")


def test_identity_and_capabilities() -> None:
    runtime = ClaudeCodeRuntime("opus")
    caps = runtime.capabilities()
    assert (runtime.id, runtime.provider, runtime.default_timeout) == (
        "claude-code:opus",
        "claude-code",
        300.0,
    )
    assert caps.model_dump() == {
        "structured_tools": True,
        "streaming": False,
        "abort": True,
        "usage": True,
        "structured_tools_fidelity": "native",
        "output_token_limit_fidelity": "unavailable",
        "physical_batch": False,
        "max_batch_size": None,
        "single_forced_tool_only": True,
        "token_counting": False,
        "prompt_cache_ttl": None,
    }


# ---------------------------------------------------------------------- structured tools


async def test_forced_tool_uses_json_schema_and_prompts_field_descriptions(
    loopback_model_requests: None, make_runtime, record_path: Path
) -> None:
    request = ask(tools=[OTHER, SUBMIT], tool_choice=ToolChoice.tool("submit"))
    result = await make_runtime().invoke(request)

    seen = read_record(record_path)
    argv = seen["argv"]
    assert argv[: len(BASE_ARGS)] == BASE_ARGS  # --tools "" : the CLI's own tools stay off
    assert argv[len(BASE_ARGS)] == "--json-schema"
    assert json.loads(argv[len(BASE_ARGS) + 1]) == SUBMIT.input_schema
    stdin = seen["stdin"]
    assert stdin.startswith("What is 6 x 7?")
    for line in [
        '"submit"',
        "Tool description: Submit the final answer.",
        "- (the whole input): The answer envelope.",
        "- answer: The numeric answer.",
        "- steps[]: One reasoning step.",
        "- unit: A unit name.",
        "- $defs.Place.city: City of the answer.",
    ]:
        assert line in stdin
    assert "Another tool." not in stdin
    assert len(result.tool_calls) == 1
    call = result.tool_calls[0]
    assert (call.name, call.input) == ("submit", {"answer": 42})
    assert call.id
    assert result.output_text == ""


async def test_required_choice_with_exactly_one_tool_forces_it(
    loopback_model_requests: None, make_runtime, record_path: Path
) -> None:
    result = await make_runtime().invoke(ask(tools=[SUBMIT], tool_choice=ToolChoice.required()))

    assert "--json-schema" in read_record(record_path)["argv"]
    assert [c.name for c in result.tool_calls] == ["submit"]


@pytest.mark.parametrize(
    ("tools", "choice"),
    [
        ([SUBMIT], None),
        ([SUBMIT], ToolChoice.auto()),
        ([SUBMIT, OTHER], ToolChoice.required()),
    ],
    ids=["no-choice", "auto", "required-among-two"],
)
async def test_unforceable_tool_choices_are_refused_before_spawning(
    loopback_model_requests: None, make_runtime, record_path: Path, tools, choice
) -> None:
    with pytest.raises(InvocationError) as info:
        await make_runtime().invoke(ask(tools=tools, tool_choice=choice))

    assert (info.value.code, info.value.retryable) == ("INVALID_REQUEST", False)
    assert not spawned(record_path)


@pytest.mark.parametrize("scenario", ["tool-missing", "tool-in-result"])
async def test_forced_tool_without_structured_output_fails(
    loopback_model_requests: None, make_runtime, scenario: str
) -> None:
    """Fidelity is declared "native": only the CLI's schema-checked ``structured_output``
    counts. JSON that merely appears in the prose answer was never checked against the
    schema, so it is refused rather than passed off as the tool input."""
    request = ask(tools=[SUBMIT], tool_choice=ToolChoice.tool("submit"))
    with pytest.raises(InvocationError) as info:
        await make_runtime(scenario).invoke(request)

    assert (info.value.code, info.value.retryable) == ("RUNTIME_FAILURE", False)
    assert info.value.message == "Claude Code returned no structured output for tool 'submit'"


def test_schema_descriptions_walk_only_the_documented_keywords() -> None:
    schema = {
        "description": "root",
        "properties": {"a": {"oneOf": [{"description": "a1"}, {"allOf": [{"description": "a2"}]}]}},
        "items": [{"description": "tuple items are not a single schema"}],
        "not": {"description": "not walked"},
        "definitions": {"D": {"items": {"description": "d-item"}}},
    }
    assert schema_descriptions(schema) == [
        ("", "root"),
        ("a", "a1"),
        ("a", "a2"),
        ("definitions.D[]", "d-item"),
    ]


# --------------------------------------------------------------------------- model source


@pytest.mark.parametrize(
    ("scenario", "model", "source"),
    [
        ("text", SERVED, "configured"),
        ("two-models", "sonnet", "configured"),
        ("no-model-usage", "sonnet", "configured"),
    ],
)
async def test_model_source_follows_model_usage(
    loopback_model_requests: None, make_runtime, scenario: str, model: str, source: str
) -> None:
    result = await make_runtime(scenario).invoke(ask())

    assert (result.model, result.model_source) == (model, source)


@pytest.mark.parametrize(("limit", "warned"), [(100, True), (500, False), (None, False)])
async def test_output_token_overrun_is_reported_not_hidden(
    loopback_model_requests: None, make_runtime, limit: int | None, warned: bool
) -> None:
    result = await make_runtime("many-tokens").invoke(ask(max_output_tokens=limit))

    assert result.usage.output_tokens == 500
    flagged = [w for w in result.warnings if w.startswith("OUTPUT_TOKEN_LIMIT_NOT_ENFORCED")]
    assert bool(flagged) is warned
    if warned:
        assert "requested 100, observed 500" in flagged[0]


# ------------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("scenario", "code", "retryable", "fragment"),
    [
        ("auth-stderr", "AUTHENTICATION_FAILED", False, "not logged in"),
        ("weekly-limit", "RATE_LIMITED", True, "weekly limit reached"),
        ("overloaded", "PROVIDER_UNAVAILABLE", True, "overloaded or unavailable"),
        ("context-limit", "RUNTIME_FAILURE", False, "exited with code 1"),
        ("random", "RUNTIME_FAILURE", False, "exited with code 3"),
        ("report-401", "AUTHENTICATION_FAILED", False, "HTTP 401"),
        ("report-403-text", "AUTHENTICATION_FAILED", False, "HTTP 403"),
        ("report-429", "RATE_LIMITED", True, "rate limit reached"),
        ("report-limit-exit0", "RATE_LIMITED", True, "usage limit reached; resets 3pm"),
        ("report-error-exit0", "RUNTIME_FAILURE", False, "failed run (error_during_execution)"),
        ("invalid-json", "RUNTIME_FAILURE", False, "no JSON result"),
        ("killed", "RUNTIME_FAILURE", False, "Claude Code was killed by signal 9"),
    ],
)
async def test_failures_are_classified_without_copying_cli_output(
    loopback_model_requests: None,
    make_runtime,
    scenario: str,
    code: str,
    retryable: bool,
    fragment: str,
) -> None:
    with pytest.raises(InvocationError) as info:
        await make_runtime(scenario).invoke(ask())

    assert (info.value.code, info.value.retryable) == (code, retryable)
    assert fragment in info.value.message
    assert_no_secret(info.value)


@pytest.mark.parametrize(
    ("scenario", "code", "message"),
    [
        # 2 before 3: a structured 429 outranks auth wording on stderr.
        ("report-429-auth-stderr", "RATE_LIMITED", "Claude Code rate limited: rate limit reached"),
        # 1 before 2 and 4: a structured 401 outranks limit wording anywhere.
        ("report-401-limit", "AUTHENTICATION_FAILED", "credentials were refused (HTTP 401)"),
        # 3 before 4: auth wording outranks limit wording on stderr.
        ("auth-and-limit-stderr", "AUTHENTICATION_FAILED", "credentials were refused;"),
        # 4 before 5: limit wording outranks "overloaded".
        (
            "limit-and-overloaded-stderr",
            "RATE_LIMITED",
            "Claude Code rate limited: 5-hour limit reached; resets 3pm",
        ),
        # 5-6 apply only to a nonzero exit: an exit-0 failed run is never "unavailable".
        ("overloaded-exit0", "RUNTIME_FAILURE", "Claude Code reported a failed run"),
    ],
)
async def test_combined_signals_follow_the_harness_order(
    loopback_model_requests: None, make_runtime, scenario: str, code: str, message: str
) -> None:
    with pytest.raises(InvocationError) as info:
        await make_runtime(scenario).invoke(ask())

    assert info.value.code == code
    assert message in info.value.message
    assert_no_secret(info.value)


async def test_rate_limit_reason_is_rebuilt_from_fixed_phrases(
    loopback_model_requests: None, make_runtime
) -> None:
    with pytest.raises(InvocationError) as info:
        await make_runtime("weekly-limit").invoke(ask())

    # The stub's stderr also names a time zone and a key; only the date/time survive.
    assert info.value.message == "Claude Code rate limited: weekly limit reached; resets Oct 4, 2pm"


# ------------------------------------------------------------------------------ secrets


async def test_secret_named_env_values_never_reach_a_recording(
    loopback_model_requests: None, make_runtime, tmp_path: Path
) -> None:
    """A constructor env value under a secret-looking name is registered as a secret: the
    live answer may echo it (it is the caller's own data), the recording on disk may not."""
    value = f"sk-recording-{SECRET}-0123456789"
    env = {"MY_SERVICE_API_KEY": value, "STUB_CLAUDE_ECHO": "MY_SERVICE_API_KEY"}
    path = tmp_path / "calls.jsonl"
    recorder = RecordingRuntime(make_runtime("echo-env", extra_env=env), path)

    result = await recorder.invoke(ask())

    assert value in result.output_text
    recorded = path.read_text(encoding="utf-8")
    assert value not in recorded
    assert "[REDACTED]" in recorded


async def test_ordinary_env_values_are_not_treated_as_secrets(
    loopback_model_requests: None, make_runtime, tmp_path: Path
) -> None:
    value = "plain-config-value-0123456789"
    env = {"MY_SERVICE_REGION": value, "STUB_CLAUDE_ECHO": "MY_SERVICE_REGION"}
    path = tmp_path / "calls.jsonl"
    await RecordingRuntime(make_runtime("echo-env", extra_env=env), path).invoke(ask())

    assert value in path.read_text(encoding="utf-8")


# ---------------------------------------------------------------------- request switch


async def test_default_scope_none_spawns_nothing(make_runtime, record_path: Path) -> None:
    with pytest.raises(ModelRequestsBlocked) as info:
        await make_runtime().invoke(ask())

    assert info.value.scope == "none"
    assert not spawned(record_path)


async def test_loopback_scope_refuses_a_bare_executable_name(
    loopback_model_requests: None,
) -> None:
    with pytest.raises(ModelRequestsBlocked) as info:
        await ClaudeCodeRuntime(executable="claude").invoke(ask())

    assert (info.value.scope, info.value.runtime_id) == ("loopback", "claude-code:sonnet")


def test_the_cli_s_own_retries_are_off_unless_env_turns_them_on(monkeypatch) -> None:
    """relay_nb's loop retries what is retryable; the CLI retrying too made a refused key
    take 191 s, and a 401 read as an outage under a shorter timeout (issue 36, item 3)."""
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "10")  # the analyst's shell
    assert ClaudeCodeRuntime()._child_env(None)["CLAUDE_CODE_MAX_RETRIES"] == "0"
    chosen = ClaudeCodeRuntime(env={"CLAUDE_CODE_MAX_RETRIES": "2"})
    assert chosen._child_env(None)["CLAUDE_CODE_MAX_RETRIES"] == "2"
