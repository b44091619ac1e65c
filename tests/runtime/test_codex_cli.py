"""CodexCLIRuntime against ``stub_codex.py`` (no real CLI): argv lockdown, event parsing,
usage, strict output schemas, content-free failures and one Relay turn. Abort and timeout,
shared with the other harness CLIs, are in ``test_harness_lifecycle.py``."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from runtime_support import ask
from stub_common import read_record, spawned

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime import InvocationRequest, Message, ToolChoice, ToolSpec
from relay_nb.runtime.codex_cli import _LOCKDOWN, CodexCLIRuntime, from_strict, strict_schema
from relay_nb.runtime.conformance import check_runtime_conformance
from relay_nb.runtime.profiles import runtime_from_profile

SECRET = "STUBSECRET"
LOCKDOWN = list(_LOCKDOWN)
BASE_ARGS = ["exec", "--json", "--model", "gpt-5", "--sandbox", "read-only"]
BASE_ARGS += ["--skip-git-repo-check", "--ephemeral", "--ignore-user-config"]
BASE_ARGS += ["--color", "never"]
BASE_ARGS += [arg for override in LOCKDOWN for arg in ("-c", override)]
SUBMIT = ToolSpec(
    name="submit",
    description="Submit the answer.",
    input_schema={
        "type": "object",
        "properties": {
            "answer": {"type": "integer", "description": "The numeric answer."},
            "unit": {"type": "string"},
            "extra": {"type": "object", "description": "Anything else."},
        },
        "required": ["answer"],
    },
)

pytestmark = pytest.mark.usefixtures("loopback_model_requests")


@pytest.fixture
def codex_stub(stub_cli: Callable[[str], str]) -> str:
    return stub_cli("codex")


@pytest.fixture
def make_runtime(stub_runtimes: Callable[..., Any]) -> Callable[..., CodexCLIRuntime]:
    return stub_runtimes(CodexCLIRuntime, "codex")


def exists(path: str | Path) -> bool:
    return os.path.exists(path)


# ------------------------------------------------------------------------------ requests


@pytest.mark.parametrize(
    "override",
    [
        'approval_policy="never"',
        'sandbox_mode="read-only"',
        "mcp_servers={}",
        # tools and features that run code or reach out (codex-rs/features/src/lib.rs)
        *(
            f"features.{name}=false"
            for name in (
                "shell_tool",
                "unified_exec",
                "multi_agent",
                "js_repl",
                "code_mode",
                "apps",
                "plugins",
                "hooks",
                "image_generation",
                "memories",
                "request_permissions_tool",
                "enable_fanout",
                "artifact",
                "view_image",
            )
        ),
    ],
)
def test_the_lockdown_switches_off_every_code_running_surface(override: str) -> None:
    args, _ = CodexCLIRuntime().profile.prepare(ask())
    pairs = list(itertools.pairwise(args))

    assert ("-c", override) in pairs
    # the user's config.toml (its profiles, features, MCP servers) is not read at all; a
    # profile override is refused by current CLIs ("legacy `profile = ...` config is no
    # longer supported"), so none is passed
    assert "--ignore-user-config" in args
    assert not any(arg.startswith(("profile=", "profiles.")) for arg in args)


async def test_text_request_runs_the_locked_down_command(make_runtime, record_path: Path) -> None:
    request = InvocationRequest(messages=[Message.system("Be terse."), Message.user("hi")])
    result = await make_runtime().invoke(request)

    record = read_record(record_path)
    assert record["argv"] == [*BASE_ARGS, "-"]
    assert record["stdin"] == "<instructions>\nBe terse.\n</instructions>\n\nhi"
    assert Path(record["cwd"]).name.startswith("relay-codex-")
    assert record["pwd"] == record["cwd"]  # $PWD names the private directory too
    assert not exists(record["cwd"])  # the private working directory is removed
    assert (result.provider, result.model, result.model_source) == ("codex", "gpt-5", "configured")
    assert result.output_text == "Hello from the stub." and result.tool_calls == []
    assert result.usage.model_dump() == {
        "input_tokens": 20,  # 120 reported, of which 100 were cache reads
        "output_tokens": 7,
        "total_tokens": 127,
        "cache_read_tokens": 100,
        "cache_write_tokens": None,
        "cache_write_1h_tokens": None,
        "cost_usd": None,  # Codex reports no cost; Relay never invents one
        "estimated": False,
    }
    assert result.warnings == []


async def test_extra_args_go_before_the_stdin_marker(make_runtime, record_path: Path) -> None:
    extra = [
        "-c",
        "model_reasoning_effort=low",
        "-cmodel_verbosity=low",
        "--config=model_reasoning_summary=auto",
    ]
    await make_runtime(extra_args=extra).invoke(ask())

    assert read_record(record_path)["argv"] == [*BASE_ARGS, *extra, "-"]


@pytest.mark.parametrize(
    "args",
    [
        ["--sandbox", "danger-full-access"],
        ["-sdanger-full-access"],
        ["--yolo"],
        ["--dangerously-bypass-approvals-and-sandbox"],
        ["--full-auto"],
        ["--enable", "shell_tool"],
        ["--profile=mine"],
        ["-m", "o3"],
        ["--output-schema", "x.json"],
        ["-c", "features.shell_tool=true"],
        ["--config=sandbox_mode=danger-full-access"],
        ['-cmcp_servers={a={command="sh"}}'],
        ["-c", 'profile="mine"'],
        ["-c", "profiles.relay_nb_locked.features.shell_tool=true"],
        ["-c"],
        ["-c", "model_verbosity"],
        # positionals: a subcommand or a second prompt
        ["resume", "--last"],
        ["review"],
        ["hello"],
        # flags not on the allow-list
        ["--oss"],
        ["-i", "x.png"],
        ["--c", "model=x"],
        ["--ignore-rules"],
    ],
)
def test_extra_args_cannot_loosen_the_lockdown(args: list[str]) -> None:
    with pytest.raises(ConfigurationError, match="extra_args may"):
        CodexCLIRuntime(extra_args=args)


@pytest.mark.parametrize("model", ["--yolo", "-m", "", "gpt 5"])
def test_model_names_that_could_be_flags_are_refused(model: str) -> None:
    with pytest.raises(ConfigurationError, match="not a Codex model id"):
        CodexCLIRuntime(model)


def test_identity_and_capabilities() -> None:
    runtime = CodexCLIRuntime("gpt-5-codex")
    assert (runtime.id, runtime.provider) == ("codex:gpt-5-codex", "codex")
    assert runtime.capabilities().model_dump() == {
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


async def test_forced_tool_sends_a_strict_schema_and_maps_the_answer_back(
    make_runtime, record_path: Path
) -> None:
    answer = {"answer": 42, "unit": None, "extra": json.dumps({"note": "x"})}
    runtime = make_runtime(extra_env={"STUB_CODEX_ANSWER": json.dumps(answer)})
    result = await runtime.invoke(ask(tools=[SUBMIT], tool_choice=ToolChoice.tool("submit")))

    record = read_record(record_path)
    assert record["argv"][-3:-1] == ["--output-schema", record["argv"][-2]]
    assert record["schema"] == strict_schema(SUBMIT.input_schema)
    assert "Tool description: Submit the answer." in record["stdin"]
    assert "- answer: The numeric answer." in record["stdin"]
    [call] = result.tool_calls
    assert (call.name, call.input) == ("submit", {"answer": 42, "extra": {"note": "x"}})
    assert result.output_text == "" and result.stop_reason == "tool_use"


def test_strict_schema_closes_objects_and_encodes_free_form_ones() -> None:
    schema = {
        "type": "object",
        "properties": {
            "sql": {"type": "string", "default": "x"},
            "opts": {"oneOf": [{"$ref": "#/$defs/O"}, {"type": "null"}]},
            "rows": {"type": "array", "items": {"type": "object"}},
        },
        "required": ["sql"],
        "$defs": {"O": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    }
    assert strict_schema(schema) == {
        "type": "object",
        "properties": {
            "sql": {"type": "string"},
            "opts": {"anyOf": [{"anyOf": [{"$ref": "#/$defs/O"}, {"type": "null"}]}, NULL]},
            "rows": {"anyOf": [{"type": "array", "items": FREE}, NULL]},
        },
        "required": ["sql", "opts", "rows"],
        "additionalProperties": False,
        "$defs": {
            "O": {
                "type": "object",
                "properties": {"n": {"anyOf": [{"type": "integer"}, NULL]}},
                "required": ["n"],
                "additionalProperties": False,
            }
        },
    }
    strict = {"sql": "s", "opts": {"n": None}, "rows": ['{"a": 1}', "{}"]}
    assert from_strict(strict, schema) == {"sql": "s", "opts": {}, "rows": [{"a": 1}, {}]}
    assert strict_schema({"type": "object"}) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "object", "additionalProperties": True}, "free-form keys"),
        ({"type": "object", "additionalProperties": {"type": "string"}}, "free-form keys"),
        (
            {
                "type": "object",
                "properties": {"a": {"allOf": [{"type": "string"}, {"minLength": 1}]}},
            },
            "allOf",
        ),
    ],
)
async def test_schemas_strict_mode_cannot_enforce_are_refused_before_spawning(
    make_runtime, record_path: Path, schema: dict[str, Any], problem: str
) -> None:
    tool = ToolSpec(name="open_tool", description="", input_schema=schema)
    with pytest.raises(InvocationError) as info:
        await make_runtime().invoke(ask(tools=[tool], tool_choice=ToolChoice.tool("open_tool")))

    assert info.value.code == "INVALID_REQUEST"
    assert "tool 'open_tool'" in info.value.message and problem in info.value.message
    assert not spawned(record_path)


def test_a_property_named_allof_is_not_the_keyword() -> None:
    schema = {"type": "object", "properties": {"allOf": {"type": "string"}}}
    assert strict_schema(schema)["required"] == ["allOf"]


NULL = {"type": "null"}
FREE = {"type": "string", "description": "a JSON object, encoded as a string"}


@pytest.mark.parametrize(
    ("tools", "choice"),
    [([SUBMIT], None), ([SUBMIT], ToolChoice.auto())],
    ids=["no-choice", "auto"],
)
async def test_unforceable_tool_choices_are_refused_before_spawning(
    make_runtime, record_path: Path, tools, choice
) -> None:
    with pytest.raises(InvocationError) as info:
        await make_runtime().invoke(ask(tools=tools, tool_choice=choice))

    assert info.value.code == "INVALID_REQUEST"
    assert not spawned(record_path)


async def test_output_token_overrun_is_reported(make_runtime) -> None:
    result = await make_runtime("many-tokens").invoke(ask(max_output_tokens=100))

    assert result.warnings == [
        "OUTPUT_TOKEN_LIMIT_NOT_ENFORCED: requested 100, observed 500; Codex has no "
        "per-invocation output limit"
    ]


async def test_a_recovered_stream_error_does_not_fail_the_run(make_runtime) -> None:
    result = await make_runtime("recovered-error").invoke(ask())

    assert result.output_text == "Hello from the stub."


# ------------------------------------------------------------------------------ failures


@pytest.mark.parametrize(
    ("scenario", "code", "retryable", "message"),
    [
        ("auth", "AUTHENTICATION_FAILED", False, "refused (HTTP 401); run `codex login`"),
        ("auth-stderr", "AUTHENTICATION_FAILED", False, "not logged in or its credentials"),
        (
            "rate-limit",
            "RATE_LIMITED",
            True,
            "Codex rate limited: usage limit reached; resets Apr 28, 2026, 10:03pm",
        ),
        ("status-429", "RATE_LIMITED", True, "Codex rate limited: rate limit reached"),
        ("unavailable", "PROVIDER_UNAVAILABLE", True, "overloaded or unavailable"),
        ("nonzero", "RUNTIME_FAILURE", False, "Codex exited with code 3"),
        ("failed-exit0", "RUNTIME_FAILURE", False, "Codex reported a failed run"),
        ("tool-activity", "RUNTIME_FAILURE", False, "used a tool (command_execution)"),
        ("malformed", "RUNTIME_FAILURE", False, "printed no JSON events"),
        ("no-answer", "RUNTIME_FAILURE", False, "finished without an answer"),
    ],
)
async def test_failures_are_classified_without_copying_cli_output(
    make_runtime, scenario: str, code: str, retryable: bool, message: str
) -> None:
    with pytest.raises(InvocationError) as info:
        await make_runtime(scenario).invoke(ask())

    assert (info.value.code, info.value.retryable) == (code, retryable)
    assert message in info.value.message
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)


async def test_a_non_json_structured_answer_is_refused(make_runtime) -> None:
    request = ask(tools=[SUBMIT], tool_choice=ToolChoice.tool("submit"))
    with pytest.raises(InvocationError) as info:
        await make_runtime("bad-structured").invoke(request)

    assert info.value.message == "Codex returned no structured output for tool 'submit'"


# ------------------------------------------------------------ conformance, profiles, e2e


async def test_conformance_passes_against_the_stub(make_runtime) -> None:
    report = await check_runtime_conformance(make_runtime())

    assert report.passed, report.failures


def test_codex_profile_resolves_with_options(codex_stub: str) -> None:
    runtime = runtime_from_profile("codex:gpt-5-codex", executable=codex_stub, timeout=60)

    assert isinstance(runtime, CodexCLIRuntime)
    assert (runtime.id, runtime.executable, runtime.default_timeout) == (
        "codex:gpt-5-codex",
        codex_stub,
        60,
    )


def test_a_relay_turn_answers_through_codex(codex_stub: str, tmp_path: Path) -> None:
    """A whole tool-using turn: Relay drives Codex through the forced ``next_step`` tool,
    the stub answers with a query over a DataFrame, then with the final answer."""
    from relay_nb import Relay

    steps = tmp_path / "steps.json"
    sql = "SELECT SUM(amount) AS total FROM sales"
    steps.write_text(
        json.dumps([{"tool": "query_sales", "input": json.dumps({"sql": sql})}, {"answer": "60"}])
    )
    env = {"STUB_CODEX_SCENARIO": "steps", "STUB_CODEX_STEPS": str(steps)}
    relay = Relay(CodexCLIRuntime(executable=codex_stub, env=env), ledger=False)
    try:
        relay.connect("sales", pd.DataFrame({"region": ["n", "s", "e"], "amount": [10, 20, 30]}))
        turn = relay.ask("total sales?")
    finally:
        relay.close()

    assert turn.answer == "60"
    assert int(turn.df.iloc[0]["total"]) == 60
    assert [call.name for call in turn.tool_calls] == ["query_sales"]
    assert steps.with_suffix(".json.n").read_text() == "2"  # both steps were used


async def test_a_cli_too_old_for_a_lockdown_flag_says_to_update(make_runtime) -> None:
    """clap exits 2 on an unknown flag; running without the lockdown is not an option."""
    with pytest.raises(InvocationError) as info:
        await make_runtime("old-cli").invoke(ask())
    assert info.value.code == "RUNTIME_FAILURE" and not info.value.retryable
    assert "update the Codex CLI" in str(info.value)
    assert SECRET not in str(info.value)
