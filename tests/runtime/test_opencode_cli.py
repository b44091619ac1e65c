"""OpenCodeCLIRuntime against ``stub_opencode.py`` (no real CLI): argv and config lockdown,
event parsing, usage, opt-in prompted structured output with its warning and schema check,
content-free failures, the working directory and one Relay turn. Abort and timeout, shared
with the other harness CLIs, are in ``test_harness_lifecycle.py``."""

from __future__ import annotations

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
from relay_nb.runtime.conformance import check_runtime_conformance
from relay_nb.runtime.opencode_cli import OpenCodeCLIRuntime
from relay_nb.runtime.profiles import runtime_from_profile
from relay_nb.runtime.prompted import schema_problem

SECRET = "STUBSECRET"
MODEL = "anthropic/claude-sonnet-4-5"
BASE_ARGS = ["run", "--format", "json", "--model", MODEL, "--agent", "relay_nb_locked"]
SUBMIT = ToolSpec(
    name="submit",
    description="Submit the answer.",
    input_schema={
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    },
)
FORCED = {"tools": [SUBMIT], "tool_choice": ToolChoice.tool("submit")}

pytestmark = pytest.mark.usefixtures("loopback_model_requests")


@pytest.fixture
def opencode_stub(stub_cli: Callable[[str], str]) -> str:
    return stub_cli("opencode")


@pytest.fixture
def make_runtime(stub_runtimes: Callable[..., Any]) -> Callable[..., OpenCodeCLIRuntime]:
    return stub_runtimes(OpenCodeCLIRuntime, "opencode", MODEL)


def exists(path: str | Path) -> bool:
    return os.path.exists(path)


# ------------------------------------------------------------------------------ requests


async def test_text_request_runs_with_tools_and_permissions_off(
    make_runtime, record_path: Path, monkeypatch, tmp_path: Path
) -> None:
    # permissive or redirecting settings in our own environment must not reach the CLI:
    # OpenCode takes its project from $PWD, and OPENCODE_CONFIG* load other configs
    notebook = tmp_path / "notebook"
    notebook.mkdir()
    monkeypatch.setenv("PWD", str(notebook))
    monkeypatch.setenv("OPENCODE_PERMISSION", '{"*": "allow"}')
    for name in ("OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_EXTRA"):
        monkeypatch.setenv(name, str(notebook))
    request = InvocationRequest(messages=[Message.system("Be terse."), Message.user("hi")])
    result = await make_runtime().invoke(request)

    record = read_record(record_path)
    assert record["argv"] == BASE_ARGS
    assert record["stdin"] == "<instructions>\nBe terse.\n</instructions>\n\nhi"
    assert Path(record["cwd"]).name.startswith("relay-opencode-")
    assert record["pwd"] == record["cwd"]  # not the notebook's folder
    assert not exists(record["cwd"])
    assert not {"OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_EXTRA"} & set(
        record["env_names"]
    )
    assert record["project_config_off"] == "true"
    config = json.loads(record["config"])
    assert config["permission"]["*"] == "deny" and config["permission"]["bash"] == "deny"
    assert config["tools"]["*"] is False and config["share"] == "disabled"
    agent = config["agent"]["relay_nb_locked"]  # the agent --agent selects
    assert agent["mode"] == "primary" and agent["permission"]["*"] == "deny"
    assert agent["tools"]["*"] is False and agent["permission"]["bash"] == "deny"
    assert json.loads(record["permission"])["*"] == "deny"
    assert (result.provider, result.model, result.model_source) == (
        "opencode",
        MODEL,
        "configured",
    )
    assert result.output_text == "Hello from the stub." and result.stop_reason == "end_turn"
    assert result.usage.model_dump() == {
        "input_tokens": 50,
        "output_tokens": 7,  # 4 output + 3 reasoning, reported apart by OpenCode
        "total_tokens": 69,
        "cache_read_tokens": 10,
        "cache_write_tokens": 2,
        "cache_write_1h_tokens": None,
        "cost_usd": 0.0021,
        "estimated": False,
    }
    assert result.warnings == []


async def test_only_the_last_message_is_the_answer_and_zero_cost_is_unknown(
    make_runtime,
) -> None:
    result = await make_runtime("two-steps").invoke(ask())
    assert result.output_text == "Final answer."
    assert result.usage.input_tokens == 100  # both steps' calls are counted

    free = await make_runtime("free").invoke(ask())
    assert free.usage.cost_usd is None  # 0 means "free" or "no price known": not a fact


@pytest.mark.parametrize(
    "args",
    [
        ["--auto"],
        ["--yolo"],
        ["--agent", "build"],
        ["-m", "x/y"],
        ["--attach=http://h"],
        # spellings yargs also accepts, which a deny-list missed
        ["--c"],
        ["--s", "ses_1"],
        ["--f", "/etc/passwd"],
        ["--dangerouslySkipPermissions"],
        ["--dangerously-skip-permissions=true"],
        # positionals, missing or flag-like values
        ["hello"],
        ["--variant"],
        ["--variant", "--auto"],
        ["--thinking=true"],
        ["--"],
    ],
)
def test_extra_args_cannot_reenable_tools_or_override_owned_flags(args: list[str]) -> None:
    with pytest.raises(ConfigurationError, match="extra_args may not contain"):
        OpenCodeCLIRuntime(MODEL, extra_args=args)


async def test_allowed_extra_args_follow_the_runtime_flags(make_runtime, record_path) -> None:
    extra = ["--variant", "high", "--title=notebook", "--thinking"]
    await make_runtime(extra_args=extra).invoke(ask())

    assert read_record(record_path)["argv"] == [*BASE_ARGS, *extra]


@pytest.mark.parametrize(
    "name",
    [
        "OPENCODE_CONFIG_CONTENT",
        "OPENCODE_PERMISSION",
        "OPENCODE_CONFIG_DIR",
        "OPENCODE_DISABLE_PROJECT_CONFIG",
        "PWD",
    ],
)
def test_env_cannot_override_the_lockdown(name: str) -> None:
    with pytest.raises(ConfigurationError, match=f"env may not set {name}"):
        OpenCodeCLIRuntime(MODEL, env={name: "{}"})


@pytest.mark.parametrize("model", ["--auto/x", "-m", "sonnet", "", "a b/c"])
def test_model_names_must_be_provider_slash_model(model: str) -> None:
    with pytest.raises(ConfigurationError, match="use provider/model"):
        OpenCodeCLIRuntime(model)


@pytest.mark.parametrize(
    ("prompted", "structured", "fidelity"),
    [(False, False, "unavailable"), (True, True, "prompted")],
)
def test_capabilities_follow_the_opt_in(prompted: bool, structured: bool, fidelity: str) -> None:
    caps = OpenCodeCLIRuntime(MODEL, prompted_tools=prompted).capabilities()
    assert caps.model_dump() == {
        "structured_tools": structured,
        "streaming": False,
        "abort": True,
        "usage": True,
        "structured_tools_fidelity": fidelity,
        "output_token_limit_fidelity": "unavailable",
        "physical_batch": False,
        "max_batch_size": None,
        "single_forced_tool_only": prompted,
        "token_counting": False,
        "prompt_cache_ttl": None,
    }


# ---------------------------------------------------------------- prompted structure


async def test_tools_are_refused_without_the_opt_in(make_runtime, record_path: Path) -> None:
    with pytest.raises(InvocationError) as info:
        await make_runtime().invoke(ask(**FORCED))

    assert info.value.code == "INVALID_REQUEST"
    assert "prompted_tools=True" in info.value.message
    assert not spawned(record_path)


async def test_prompted_tool_is_parsed_checked_and_flagged(make_runtime, record_path: Path) -> None:
    result = await make_runtime(prompted_tools=True).invoke(ask(**FORCED))

    stdin = read_record(record_path)["stdin"]
    assert 'the input of the tool "submit"' in stdin
    assert json.dumps(SUBMIT.input_schema, separators=(",", ":")) in stdin
    [call] = result.tool_calls
    assert (call.name, call.input) == ("submit", {"answer": 42})
    assert result.output_text == ""
    [warning] = result.warnings
    assert warning.startswith("STRUCTURED_OUTPUT_PROMPTED: the input of tool 'submit'")
    assert "did not enforce" in warning


@pytest.mark.parametrize(
    ("scenario", "fragment"),
    [
        ("prompted-invalid", "does not match its input schema (at answer: expected integer)"),
        ("prompted-prose", "held no JSON object for tool 'submit'"),
    ],
)
async def test_prompted_answers_that_break_the_schema_fail_without_leaking(
    make_runtime, scenario: str, fragment: str
) -> None:
    with pytest.raises(InvocationError) as info:
        await make_runtime(scenario, prompted_tools=True).invoke(ask(**FORCED))

    assert info.value.code == "RUNTIME_FAILURE"
    assert fragment in info.value.message
    assert SECRET not in str(info.value)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"sql": "x", "n": 3.0}, None),
        ({"n": 1}, "at sql: required property missing"),
        ({"sql": 1}, "at sql: expected string"),
        ({"sql": "x", "other": 1}, "at the top level: a property the schema does not declare"),
        ({"sql": "x", "n": True}, "at n: expected integer"),
        ({"sql": "x", "n": 0}, "at n: outside minimum"),
        ({"sql": "x", "mode": "z"}, "at mode: not one of the allowed values"),
        ({"sql": "x", "tags": ["a", 2]}, "at tags[1]: expected string"),
        ({"sql": "x", "where": {"col": 1}}, "at where.col: expected string"),
        ({"sql": "x", "either": 1.5}, "at either: anyOf not satisfied"),
        ({"sql": "x", "either": None}, None),
    ],
)
def test_schema_problem_names_the_rule_and_path_only(value: Any, problem: str | None) -> None:
    schema = {
        "type": "object",
        "properties": {
            "sql": {"type": "string"},
            "n": {"type": "integer", "minimum": 1},
            "mode": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "where": {"$ref": "#/$defs/Where"},
            "either": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["sql"],
        "additionalProperties": False,
        "$defs": {"Where": {"type": "object", "properties": {"col": {"type": "string"}}}},
    }
    assert schema_problem(value, schema) == problem


# ------------------------------------------------------------------------------ failures


@pytest.mark.parametrize(
    ("scenario", "code", "retryable", "message"),
    [
        ("auth", "AUTHENTICATION_FAILED", False, "run `opencode auth login`"),
        ("api-401", "AUTHENTICATION_FAILED", False, "credentials were refused (HTTP 401)"),
        ("rate-limit", "RATE_LIMITED", True, "OpenCode rate limited: rate limit reached"),
        ("unavailable", "PROVIDER_UNAVAILABLE", True, "overloaded or unavailable"),
        ("nonzero", "RUNTIME_FAILURE", False, "OpenCode exited with code 2"),
        ("error-exit0", "RUNTIME_FAILURE", False, "OpenCode reported a failed run"),
        ("tool-use", "RUNTIME_FAILURE", False, "used a tool although its tools were switched"),
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


async def test_output_token_overrun_is_reported(make_runtime) -> None:
    result = await make_runtime("many-tokens").invoke(ask(max_output_tokens=100))

    assert "OUTPUT_TOKEN_LIMIT_NOT_ENFORCED: requested 100, observed 500" in result.warnings[0]


# --------------------------------------------------------------------- working directory


async def test_a_given_cwd_is_used_as_is(make_runtime, record_path: Path, tmp_path: Path) -> None:
    await make_runtime(cwd=str(tmp_path)).invoke(ask())

    record = read_record(record_path)
    assert record["cwd"] == record["pwd"] == str(tmp_path)


# ------------------------------------------------------------ conformance, profiles, e2e


@pytest.mark.parametrize("prompted", [False, True])
async def test_conformance_passes_against_the_stub(make_runtime, prompted: bool) -> None:
    report = await check_runtime_conformance(make_runtime(prompted_tools=prompted))

    assert report.passed, report.failures


def test_opencode_profile_resolves_and_opts_in_by_query_or_option(opencode_stub: str) -> None:
    plain = runtime_from_profile(f"opencode:{MODEL}", executable=opencode_stub)
    query = runtime_from_profile(f"opencode:{MODEL}?prompted_tools=true")
    option = runtime_from_profile(f"opencode:{MODEL}", prompted_tools=True)

    assert isinstance(plain, OpenCodeCLIRuntime) and plain.executable == opencode_stub
    assert plain.id == f"opencode:{MODEL}" and plain.capabilities().structured_tools is False
    assert query.id == option.id == f"opencode:{MODEL}"
    assert query.capabilities().structured_tools_fidelity == "prompted"
    assert option.capabilities().structured_tools_fidelity == "prompted"
    with pytest.raises(ConfigurationError, match="only \\?prompted_tools"):
        runtime_from_profile(f"opencode:{MODEL}?tools=yes")


def test_a_relay_turn_answers_through_opencode(opencode_stub: str, tmp_path: Path) -> None:
    """A whole tool-using turn with prompted structured output: Relay forces ``next_step``,
    the stub answers with JSON text for a DataFrame query, then with the final answer; the
    turn carries the prompted-output warning."""
    from relay_nb import Relay

    steps = tmp_path / "steps.json"
    sql = "SELECT SUM(amount) AS total FROM sales"
    steps.write_text(json.dumps([{"tool": "query_sales", "input": {"sql": sql}}, {"answer": "60"}]))
    env = {"STUB_OPENCODE_SCENARIO": "steps", "STUB_OPENCODE_STEPS": str(steps)}
    runtime = OpenCodeCLIRuntime(MODEL, executable=opencode_stub, env=env, prompted_tools=True)
    relay = Relay(runtime, ledger=False)
    try:
        relay.connect("sales", pd.DataFrame({"region": ["n", "s", "e"], "amount": [10, 20, 30]}))
        turn = relay.ask("total sales?")
    finally:
        relay.close()

    assert turn.answer == "60"
    assert int(turn.df.iloc[0]["total"]) == 60
    assert [call.name for call in turn.tool_calls] == ["query_sales"]
    assert any(w.startswith("STRUCTURED_OUTPUT_PROMPTED") for w in turn.warnings)
