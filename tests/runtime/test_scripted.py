"""ScriptedRuntime: the deterministic model every higher layer is tested with."""

from __future__ import annotations

import json

import pytest

from relay_nb.errors import ConfigurationError, InvocationError
from relay_nb.runtime import (
    AbortSignal,
    InvocationRequest,
    InvocationResult,
    Message,
    ToolCall,
    ToolChoice,
    ToolSpec,
    Usage,
)
from relay_nb.runtime.scripted import (
    MAX_SCRIPTED_BATCH,
    NO_STEP_LEFT,
    ScriptedRuntime,
    estimate_tokens,
)


def ask(text: str = "hi") -> InvocationRequest:
    return InvocationRequest(messages=[Message.user(text)])


async def test_plays_steps_in_order_and_records_requests():
    runtime = ScriptedRuntime(
        [{"text": "first"}, {"tool_calls": [{"name": "query_shop", "input": {"sql": "SELECT 1"}}]}]
    )
    first = await runtime.invoke(ask("a"))
    second = await runtime.invoke(ask("b"))
    assert first.output_text == "first"
    assert first.stop_reason == "end_turn"
    assert second.tool_calls[0].name == "query_shop"
    assert second.tool_calls[0].input == {"sql": "SELECT 1"}
    assert second.tool_calls[0].id == "call_1"
    assert second.stop_reason == "tool_use"
    assert [r.messages[0].text() for r in runtime.requests] == ["a", "b"]
    assert runtime.remaining == 0


async def test_empty_queue_is_runtime_failure():
    runtime = ScriptedRuntime([])
    with pytest.raises(InvocationError) as info:
        await runtime.invoke(ask())
    assert info.value.code == "RUNTIME_FAILURE"
    assert info.value.message == NO_STEP_LEFT and "%relay --model" in NO_STEP_LEFT
    assert info.value.retryable is False


async def test_callable_steps_see_the_request_sync_and_async():
    async def echo_async(request: InvocationRequest) -> dict:
        return {"text": "async:" + request.messages[-1].text()}

    runtime = ScriptedRuntime([lambda r: {"text": r.messages[-1].text().upper()}, echo_async])
    assert (await runtime.invoke(ask("shout"))).output_text == "SHOUT"
    assert (await runtime.invoke(ask("x"))).output_text == "async:x"


async def test_result_objects_pass_through_and_usage_is_kept():
    given = InvocationResult(
        provider="p",
        model="m",
        model_source="provider-reported",
        output_text="ok",
        usage=Usage(input_tokens=10, output_tokens=2, cost_usd=0.01),
    )
    runtime = ScriptedRuntime(
        [given, {"text": "x", "usage": {"input_tokens": 7, "output_tokens": 1}}]
    )
    assert (await runtime.invoke(ask())).usage.cost_usd == 0.01
    second = await runtime.invoke(ask())
    assert second.usage.input_tokens == 7
    assert second.usage.total_tokens == 8
    assert second.usage.estimated is False


async def test_missing_usage_is_estimated_and_marked():
    runtime = ScriptedRuntime([{"text": "abcdefgh"}])
    result = await runtime.invoke(ask("hello"))
    assert result.usage.estimated is True
    assert result.usage.output_tokens == estimate_tokens("abcdefgh") == 2
    assert result.usage.input_tokens and result.usage.input_tokens > 0
    assert result.usage.cost_usd is None


async def test_scripted_errors_carry_code_and_retryability():
    runtime = ScriptedRuntime([{"error": {"code": "RATE_LIMITED", "retry_after_s": 2}}])
    with pytest.raises(InvocationError) as info:
        await runtime.invoke(ask())
    assert (info.value.code, info.value.retryable, info.value.retry_after_s) == (
        "RATE_LIMITED",
        True,
        2,
    )


async def test_streaming_delivers_the_text_in_chunks():
    runtime = ScriptedRuntime([{"text": "x" * 40}], stream_chunk_chars=16)
    deltas: list[str] = []
    result = await runtime.invoke(ask(), on_text=deltas.append)
    assert [len(d) for d in deltas] == [16, 16, 8]
    assert "".join(deltas) == result.output_text


@pytest.mark.parametrize(
    ("step", "fragment"),
    [
        ({"txt": "typo"}, "txt"),
        ({"tool_calls": [{"input": {}}]}, "tool_calls.0.name"),
        ({"error": {"code": "NOPE"}}, "error.code"),
        ("just a string", "use a dict"),
    ],
)
def test_bad_steps_fail_at_construction_with_a_useful_message(step, fragment):
    with pytest.raises(ConfigurationError) as info:
        ScriptedRuntime([{"text": "fine"}, step])
    assert "scripted step 1" in str(info.value)
    assert fragment in str(info.value)


def test_from_file_loads_json_script(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"text": "from file"}]))
    runtime = ScriptedRuntime.from_file(path)
    assert runtime.id == f"scripted:{path}"
    assert runtime.remaining == 1


@pytest.mark.parametrize(
    ("content", "fragment"), [("{not json", "not valid JSON"), ('{"text": "x"}', "JSON list")]
)
def test_from_file_rejects_bad_files(tmp_path, content, fragment):
    path = tmp_path / "script.json"
    path.write_text(content)
    with pytest.raises(ConfigurationError, match=fragment):
        ScriptedRuntime.from_file(path)


def test_from_file_missing():
    with pytest.raises(ConfigurationError, match="does not exist"):
        ScriptedRuntime.from_file("/nonexistent/script.json")


async def test_batch_positional_outcomes_keep_successful_siblings():
    runtime = ScriptedRuntime(
        [
            {"text": "a"},
            {"error": {"code": "INVALID_REQUEST", "message": "bad item"}},
            {"text": "c"},
        ]
    )
    outcomes = await runtime.invoke_batch([ask("1"), ask("2"), ask("3")])
    assert [o.status for o in outcomes] == ["fulfilled", "rejected", "fulfilled"]
    assert outcomes[0].value.output_text == "a"
    assert outcomes[2].value.output_text == "c"
    assert outcomes[1].reason.code == "INVALID_REQUEST"
    assert outcomes[1].reason.retryable is False
    assert [r.messages[0].text() for r in runtime.requests] == ["1", "2", "3"]


async def test_batch_size_is_bounded():
    runtime = ScriptedRuntime([{"text": "x"}] * (MAX_SCRIPTED_BATCH + 1))
    with pytest.raises(InvocationError) as info:
        await runtime.invoke_batch([ask()] * (MAX_SCRIPTED_BATCH + 1))
    assert info.value.code == "INVALID_REQUEST"
    assert runtime.requests == []  # nothing consumed
    outcomes = await runtime.invoke_batch([ask()] * MAX_SCRIPTED_BATCH)
    assert len(outcomes) == MAX_SCRIPTED_BATCH


async def test_aborted_signal_stops_before_consuming_a_step():
    signal = AbortSignal()
    signal.abort()
    runtime = ScriptedRuntime([{"text": "never"}])
    with pytest.raises(InvocationError) as info:
        await runtime.invoke(ask(), abort=signal)
    assert info.value.code == "ABORTED"
    assert runtime.remaining == 1


async def test_slow_callable_step_hits_the_timeout():
    import asyncio

    async def slow(request):
        await asyncio.sleep(5)
        return {"text": "late"}

    runtime = ScriptedRuntime([slow])
    with pytest.raises(InvocationError) as info:
        await runtime.invoke(ask(), timeout=0.05)
    assert (info.value.code, info.value.retryable) == ("PROVIDER_UNAVAILABLE", True)


def test_tools_and_choice_validation_in_requests():
    tool = ToolSpec(name="query_shop", input_schema={"type": "object", "properties": {}})
    with pytest.raises(ValueError, match="not a declared tool"):
        InvocationRequest(
            messages=[Message.user("x")], tools=[tool], tool_choice=ToolChoice.tool("nope")
        )
    with pytest.raises(ValueError, match="needs at least one tool"):
        InvocationRequest(messages=[Message.user("x")], tool_choice=ToolChoice.required())
    with pytest.raises(ValueError, match="unique"):
        InvocationRequest(messages=[Message.user("x")], tools=[tool, tool])
    with pytest.raises(ValueError, match="non-system"):
        InvocationRequest(messages=[Message.system("only system")])


async def test_batch_item_raising_a_provider_style_error_is_rejected_alone():
    class ProviderDown(Exception):
        status_code = 503

    def down(request):
        raise ProviderDown("upstream text that must not be copied")

    runtime = ScriptedRuntime([{"text": "a"}, down, {"text": "c"}])
    outcomes = await runtime.invoke_batch([ask(), ask(), ask()])
    assert [o.status for o in outcomes] == ["fulfilled", "rejected", "fulfilled"]
    assert (outcomes[1].reason.code, outcomes[1].reason.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert "upstream" not in outcomes[1].reason.message


def test_total_tokens_counts_cache_reads_and_writes():
    usage = Usage(input_tokens=4, output_tokens=10, cache_read_tokens=1500, cache_write_tokens=40)
    assert usage.total_tokens == 1554
    assert Usage(input_tokens=4, output_tokens=10, total_tokens=99).total_tokens == 99


# -- by_question: each question its own script, in order, whatever order turns run in --------


async def test_by_question_answers_each_question_from_its_own_steps_in_any_order():
    runtime = ScriptedRuntime(
        [{"text": "shared"}],
        by_question={"How many?": [{"text": "a1"}, {"text": "a2"}], " Which? ": [{"text": "b1"}]},
    )
    second = InvocationRequest(
        messages=[Message.user("How many?"), Message.assistant("a1"), Message.user("more")]
    )
    assert (await runtime.invoke(second)).output_text == "shared"  # a later user message
    follow_up = InvocationRequest(
        messages=[
            Message.user("How many?"),
            Message.assistant("", [ToolCall(id="c1", name="q", input={})]),
            Message.tool_result("c1", "42"),
        ]
    )
    assert (await runtime.invoke(follow_up)).output_text == "a2"
    assert (await runtime.invoke(ask("Which?"))).output_text == "b1"
    assert (await runtime.invoke(ask("How many?"))).output_text == "a1"  # asked again
    with pytest.raises(InvocationError, match="script for 'Which\\?' has 1 step"):
        await runtime.invoke(
            InvocationRequest(messages=[Message.user("Which?"), Message.assistant("b1")])
        )
    with pytest.raises(InvocationError, match="no script for 'Unscripted\\?'"):
        await runtime.invoke(ask("Unscripted?"))


def test_a_script_file_may_hold_questions_their_steps_and_a_model(tmp_path):
    path = tmp_path / "answers.json"
    path.write_text(
        json.dumps({"model": "claude-sonnet-4-6", "by_question": {"q": [{"text": "a"}]}})
    )
    runtime = ScriptedRuntime.from_file(path)
    assert runtime.model == "claude-sonnet-4-6" and list(runtime.by_question) == ["q"]
    path.write_text(json.dumps({"by_question": {"q": {"text": "a"}}}))
    with pytest.raises(ConfigurationError, match="by_question must map each question to a list"):
        ScriptedRuntime.from_file(path)
    path.write_text(json.dumps({"by_question": {"q": [{"txt": "a"}]}}))
    with pytest.raises(ConfigurationError, match="scripted step 0: txt"):
        ScriptedRuntime.from_file(path)
