"""Profile strings and the conformance reports."""

from __future__ import annotations

import json

import pytest

from relay_nb.errors import ConfigurationError
from relay_nb.runtime import (
    Capabilities,
    InvocationRequest,
    InvocationResult,
    Message,
)
from relay_nb.runtime.conformance import check_batch_conformance, check_runtime_conformance
from relay_nb.runtime.profiles import parse_profile, runtime_from_profile
from relay_nb.runtime.replay import RecordingRuntime, ReplayRuntime
from relay_nb.runtime.scripted import ScriptedRuntime

SENSITIVE = "customer 4711 owes 99 euros"


def req(text: str = SENSITIVE) -> InvocationRequest:
    return InvocationRequest(messages=[Message.user(text)])


@pytest.mark.parametrize(
    ("profile", "fragment"),
    [
        ("claude-sonnet", "malformed"),
        ("gemini:pro", "unknown model profile kind 'gemini'"),
        ("anthropic:", "names no model"),
        ("", "malformed"),
    ],
)
def test_bad_profiles_say_what_is_valid(profile, fragment):
    with pytest.raises(ConfigurationError) as info:
        runtime_from_profile(profile)
    assert fragment in str(info.value)
    assert "claude-code:MODEL" in str(info.value)


def test_parse_profile_keeps_colons_in_the_value():
    assert parse_profile("scripted:C:/scripts/a.json") == ("scripted", "C:/scripts/a.json")
    assert parse_profile(" Anthropic : claude-opus-4-6 ") == ("anthropic", "claude-opus-4-6")


def test_scripted_and_replay_profiles(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "hi"}]))
    runtime = runtime_from_profile(f"scripted:{script}")
    assert isinstance(runtime, ScriptedRuntime) and runtime.remaining == 1
    recording = tmp_path / "r.jsonl"
    recording.write_text("")
    assert isinstance(runtime_from_profile(f"replay:{recording}"), ReplayRuntime)
    with pytest.raises(ConfigurationError, match="does not exist"):
        runtime_from_profile(f"replay:{tmp_path / 'none.jsonl'}")


def test_unknown_options_are_a_configuration_error(tmp_path):
    script = tmp_path / "s.json"
    script.write_text("[]")
    with pytest.raises(ConfigurationError, match="does not take"):
        runtime_from_profile(f"scripted:{script}", temperature=0.2)


def test_anthropic_and_claude_code_profiles_construct_without_credentials(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert runtime_from_profile("anthropic:claude-haiku-4-5").id == "anthropic:claude-haiku-4-5"
    assert runtime_from_profile("claude-code:sonnet").id == "claude-code:sonnet"


async def test_scripted_runtime_conforms_and_report_holds_no_content():
    runtime = ScriptedRuntime([lambda r: {"text": f"echo {r.messages[0].text()}"}])
    report = await check_runtime_conformance(runtime, req())
    assert report.passed, report.failures
    assert {c.name for c in report.checks} >= {
        "id",
        "capabilities",
        "structured_tools_fidelity",
        "physical_batch",
        "invocation",
        "result_identity",
        "model_source",
    }
    assert "4711" not in report.model_dump_json()


class _Liar:
    """Declares a physical batch and native tools it does not have; answers with a dict."""

    id = "liar"

    def capabilities(self) -> Capabilities:
        return Capabilities(
            structured_tools=False,
            streaming=False,
            abort=False,
            usage=False,
            structured_tools_fidelity="native",
            output_token_limit_fidelity="unavailable",
            physical_batch=True,
            max_batch_size=4,
        )

    async def invoke(self, request, *, timeout=None, abort=None, on_text=None):
        return {"text": SENSITIVE}


async def test_inconsistent_runtime_fails_named_checks_without_raising():
    report = await check_runtime_conformance(_Liar())
    failed = {c.name for c in report.failures}
    assert {"structured_tools_fidelity", "physical_batch", "result_type"} <= failed
    assert not report.passed
    assert "4711" not in report.model_dump_json()


class _Failing:
    id = "failing"

    def capabilities(self) -> Capabilities:
        return (
            ScriptedRuntime()
            .capabilities()
            .model_copy(update={"physical_batch": False, "max_batch_size": None})
        )

    async def invoke(self, request, *, timeout=None, abort=None, on_text=None):
        raise RuntimeError(SENSITIVE)


async def test_invocation_failure_is_reported_by_type_only():
    report = await check_runtime_conformance(_Failing())
    invocation = next(c for c in report.checks if c.name == "invocation")
    assert not invocation.passed
    assert "RuntimeError" in invocation.detail
    assert "4711" not in report.model_dump_json()


async def test_batch_conformance_counts_and_mixed_outcomes():
    runtime = ScriptedRuntime(
        [{"text": "a"}, {"error": {"code": "INVALID_REQUEST", "message": SENSITIVE}}]
    )
    report = await check_batch_conformance(runtime, [req(), req()], require_mixed_outcomes=True)
    assert report.passed, report.failures
    assert (report.requested, report.returned, report.fulfilled, report.rejected) == (2, 2, 1, 1)

    all_ok = ScriptedRuntime([{"text": "a"}, {"text": "b"}])
    mixed = await check_batch_conformance(all_ok, [req(), req()], require_mixed_outcomes=True)
    assert [c.name for c in mixed.failures] == ["mixed_outcomes"]


async def test_batch_conformance_on_a_runtime_without_batches():
    replay = ReplayRuntime([])
    report = await check_batch_conformance(replay, [req()])
    assert [c.name for c in report.failures] == ["declares_batch"]


async def test_recording_runtime_conforms_around_a_batch_capable_runtime():
    recorder = RecordingRuntime(ScriptedRuntime([{"text": "ok"}]))
    report = await check_runtime_conformance(recorder)
    assert report.passed, report.failures
    assert recorder.capabilities().physical_batch is False  # batches would bypass the recorder


async def test_replay_miss_fails_conformance_with_a_typed_detail():
    report = await check_runtime_conformance(RecordingRuntime(ReplayRuntime([])))
    assert [c.name for c in report.failures] == ["invocation"]
    assert "INVALID_REQUEST" in report.failures[0].detail


def test_result_requires_model_source():
    with pytest.raises(ValueError, match="model_source"):
        InvocationResult(provider="p", model="m")  # type: ignore[call-arg]
