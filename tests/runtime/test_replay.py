"""Record and replay: digests, misses, and recordings free of credentials."""

from __future__ import annotations

import json

import pytest

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime import InvocationRequest, Message, ToolSpec
from relay_nb.runtime.replay import (
    RecordingRuntime,
    ReplayRuntime,
    canonical_json,
    invocation_digest,
    load_records,
)
from relay_nb.runtime.scripted import ScriptedRuntime


def request(text: str = "top customers") -> InvocationRequest:
    return InvocationRequest(
        messages=[Message.system("rules"), Message.user(text)],
        tools=[
            ToolSpec(
                name="query_shop",
                input_schema={"type": "object", "properties": {"sql": {"type": "string"}}},
            )
        ],
        metadata={"turn": "1"},
    )


def test_digest_ignores_key_order_and_has_the_documented_form():
    data = request().model_dump(mode="json")
    shuffled = json.loads(json.dumps(dict(reversed(list(data.items())))))
    assert list(shuffled) != list(data)
    assert invocation_digest(data) == invocation_digest(shuffled) == invocation_digest(request())
    digest = invocation_digest(data)
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 64
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'


def test_digest_changes_with_content():
    assert invocation_digest(request("a")) != invocation_digest(request("b"))


async def test_record_then_replay_round_trip(tmp_path):
    path = tmp_path / "rec.jsonl"
    recorder = RecordingRuntime(ScriptedRuntime([{"text": "one"}, {"text": "two"}]), path=path)
    await recorder.invoke(request("a"))
    await recorder.invoke(request("b"))
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert set(first) == {"schema_version", "request_digest", "request", "result"}
    assert first["schema_version"] == 1
    assert first["request_digest"] == invocation_digest(request("a"))

    replay = ReplayRuntime.from_file(path)
    assert (await replay.invoke(request("b"))).output_text == "two"
    assert (await replay.invoke(request("a"))).output_text == "one"


async def test_replay_miss_names_the_digest():
    replay = ReplayRuntime([])
    with pytest.raises(InvocationError) as info:
        await replay.invoke(request("unseen"))
    assert info.value.code == "INVALID_REQUEST"
    assert invocation_digest(request("unseen")) in info.value.message


async def test_repeated_requests_replay_in_recorded_order():
    recorder = RecordingRuntime(ScriptedRuntime([{"text": "first"}, {"text": "second"}]))
    await recorder.invoke(request())
    await recorder.invoke(request())
    replay = ReplayRuntime(recorder.records)
    outputs = [(await replay.invoke(request())).output_text for _ in range(3)]
    assert outputs == ["first", "second", "second"]


async def test_failures_are_not_recorded():
    recorder = RecordingRuntime(ScriptedRuntime([{"error": {"code": "RATE_LIMITED"}}]))
    with pytest.raises(InvocationError):
        await recorder.invoke(request())
    assert recorder.records == []


async def test_recordings_contain_no_credentials(tmp_path, monkeypatch):
    secret = "sk-ant-test-0123456789abcdef"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    path = tmp_path / "rec.jsonl"
    # the secret leaks into the prompt and the answer: the recording must still not hold it
    leaky = ScriptedRuntime([lambda r: {"text": f"your key is {secret}"}])
    recorder = RecordingRuntime(leaky, path=path)
    result = await recorder.invoke(request(f"my key is {secret}"))
    assert secret in result.output_text  # the live result is untouched
    text = path.read_text()
    assert secret not in text
    assert "[REDACTED]" in text
    # the digest is of the live request, so replay still matches it
    replay = ReplayRuntime.from_file(path)
    assert (
        await replay.invoke(request(f"my key is {secret}"))
    ).output_text == "your key is [REDACTED]"


def test_load_records_reports_bad_lines(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"schema_version": 1}\n')
    with pytest.raises(ConfigurationError, match="line 1"):
        load_records(path)
    with pytest.raises(ConfigurationError, match="does not exist"):
        load_records(tmp_path / "missing.jsonl")


def test_load_records_refuses_other_schema_versions(tmp_path):
    record = {
        "schema_version": 2,
        "request_digest": "sha256:x",
        "request": {},
        "result": {"provider": "p", "model": "m", "model_source": "configured"},
    }
    path = tmp_path / "v2.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(ConfigurationError, match="schema_version 2"):
        load_records(path)
