"""OpenAICompatibleRuntime against the real ``openai`` SDK and a local Chat Completions stub.

Nothing is mocked between the runtime and the socket: the SDK builds the request, the stub
records it, and the SDK parses the stub's JSON, SSE chunks and error bodies — the same bytes
a local Ollama, vLLM or llama.cpp server would send.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator

import pytest
from runtime_support import ask, assert_content_free, failure

from relay_nb.errors import ConfigurationError, ModelRequestsBlocked
from relay_nb.runtime import (
    AbortSignal,
    Capabilities,
    InvocationRequest,
    Message,
    ModelRuntime,
    ToolCall,
    ToolChoice,
    ToolSpec,
)
from relay_nb.runtime.openai_compat import OpenAICompatibleRuntime
from relay_nb.testing.openai_stub import (
    STUB_MODEL,
    ChatReply,
    Delay,
    DropConnection,
    ErrorReply,
    FunctionCall,
    OpenAIStub,
    StreamFault,
)

API_KEY = "sk-proj-test-0123456789-SECRET"
LEAKY = "provider says: prompt was 'SELECT secret_column' and key sk-proj-test"

QUERY_TOOL = ToolSpec(
    name="query_shop",
    description="Run one read-only SQL query.",
    input_schema={"type": "object", "properties": {"sql": {"type": "string"}}},
)
CHART_TOOL = ToolSpec(name="make_chart")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own key or base URL must not change what these tests see."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


@pytest.fixture
async def runtime(
    stub: OpenAIStub, loopback_model_requests: None
) -> AsyncIterator[OpenAICompatibleRuntime]:
    """A local server that needs no key, as Ollama or llama.cpp run by default."""
    rt = OpenAICompatibleRuntime("llama-test", base_url=stub.base_url, timeout=5)
    yield rt
    await rt.aclose()


# -- success paths ---------------------------------------------------------------------------


async def test_plain_text_result_and_request(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(ChatReply(text="Hi there", prompt_tokens=11, completion_tokens=3))

    result = await runtime.invoke(ask("hello", metadata={"turn": "turn-42"}))

    assert result.provider == "openai-compatible"
    assert (result.model, result.model_source) == (STUB_MODEL, "provider-reported")
    assert result.output_text == "Hi there"
    assert result.tool_calls == []
    assert result.stop_reason == "end_turn"
    assert result.latency_ms > 0
    assert (result.usage.input_tokens, result.usage.output_tokens) == (11, 3)
    assert result.usage.total_tokens == 14
    assert result.usage.cost_usd is None
    [sent] = stub.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.body == {
        "model": "llama-test",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "hello"}],
    }
    assert b"turn-42" not in sent.raw_body  # metadata stays with the caller
    assert "authorization" not in sent.headers  # no key configured: no header at all


async def test_request_mapping_system_tools_and_tool_history(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    call = ToolCall(id="call_1", name="query_shop", input={"sql": "select 1"})
    request = InvocationRequest(
        messages=[
            Message.system("You answer questions."),
            Message.system("Use SQL."),
            Message.user("How many orders?"),
            Message.assistant("Let me look.", tool_calls=[call]),
            Message.tool_result("call_1", "no such table", is_error=True),
            Message.user("Try the orders table."),
        ],
        tools=[QUERY_TOOL, CHART_TOOL],
        tool_choice=ToolChoice.required(),
        max_output_tokens=321,
    )
    stub.enqueue(ChatReply(text="ok"))

    await runtime.invoke(request)

    body = stub.requests[0].body
    assert body["max_tokens"] == 321
    assert body["tool_choice"] == "required"
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "query_shop",
                "description": "Run one read-only SQL query.",
                "parameters": QUERY_TOOL.input_schema,
            },
        },
        {
            "type": "function",
            "function": {"name": "make_chart", "parameters": {"type": "object", "properties": {}}},
        },
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You answer questions.\n\nUse SQL."},
        {"role": "user", "content": "How many orders?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "query_shop", "arguments": '{"sql": "select 1"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Error: no such table"},
        {"role": "user", "content": "Try the orders table."},
    ]


async def test_a_late_tool_result_moves_next_to_its_call_and_empty_turns_are_dropped(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    """The API rejects anything between an assistant's tool_calls and their tool messages."""
    first = ToolCall(id="call_a", name="make_chart", input={})
    second = ToolCall(id="call_b", name="query_shop", input={"sql": "select 2"})
    request = InvocationRequest(
        messages=[
            Message.user("Chart it."),
            Message.assistant("", tool_calls=[first, second]),
            Message.tool_result("call_a", "chart.png"),
            Message.user("(the user typed while the query ran)"),
            Message.tool_result("call_b", "2"),
            Message.assistant(""),
            Message.user("Thanks."),
        ]
    )
    stub.enqueue(ChatReply(text="ok"))

    await runtime.invoke(request)

    messages = stub.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user", "user"]
    assert messages[1]["content"] == ""
    assert [m["tool_call_id"] for m in messages[2:4]] == ["call_a", "call_b"]
    assert [m["content"] for m in messages[4:]] == [
        "(the user typed while the query ran)",
        "Thanks.",
    ]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice.auto(), "auto"),
        (ToolChoice.required(), "required"),
        (
            ToolChoice.tool("query_shop"),
            {"type": "function", "function": {"name": "query_shop"}},
        ),
        (None, None),
    ],
    ids=["auto", "required", "named", "unset"],
)
async def test_tool_choice_and_tool_calls(
    runtime: OpenAICompatibleRuntime,
    stub: OpenAIStub,
    choice: ToolChoice | None,
    wire: object,
) -> None:
    stub.enqueue(
        ChatReply(
            tool_calls=[FunctionCall(id="call_9", name="query_shop", arguments={"sql": "select 2"})]
        )
    )

    result = await runtime.invoke(ask(tools=[QUERY_TOOL, CHART_TOOL], tool_choice=choice))

    assert stub.requests[0].body.get("tool_choice") == wire
    assert result.tool_calls == [
        ToolCall(id="call_9", name="query_shop", input={"sql": "select 2"})
    ]
    assert result.output_text == ""
    assert result.stop_reason == "tool_use"


async def test_calls_without_ids_or_arguments_and_a_stop_finish_reason(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    """Local servers omit call ids, send "" for no arguments, and say "stop" after calls."""
    stub.enqueue(
        ChatReply(
            tool_calls=[
                FunctionCall(id=None, name="make_chart", arguments=""),
                FunctionCall(id=None, name="query_shop", arguments={"sql": "select 3"}),
            ],
            finish_reason="stop",
        )
    )

    result = await runtime.invoke(ask(tools=[QUERY_TOOL, CHART_TOOL]))

    first, second = result.tool_calls
    assert (first.name, first.input, second.input) == ("make_chart", {}, {"sql": "select 3"})
    assert first.id.startswith("call_relay_") and second.id.startswith("call_relay_")
    assert first.id != second.id  # each result must find its own call
    assert result.stop_reason == "tool_use"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(
    ("arguments", "finish", "fragment"),
    [
        ('{"sql": "select secret_column', "tool_calls", "not a JSON object"),
        ('["select secret_column"]', "tool_calls", "not a JSON object"),
        ('{"sql": "select secret_column', "length", "raise max_output_tokens"),
    ],
    ids=["broken", "not-an-object", "cut-off"],
)
async def test_unusable_tool_arguments_are_a_content_free_failure(
    runtime: OpenAICompatibleRuntime,
    stub: OpenAIStub,
    stream: bool,
    arguments: str,
    finish: str,
    fragment: str,
) -> None:
    """A tool cannot run on half an input; the turn must say why, without the model's text."""
    reply = ChatReply(
        tool_calls=[FunctionCall(name="query_shop", arguments=arguments)], finish_reason=finish
    )
    stub.enqueue(reply)

    err = await failure(runtime, ask(tools=[QUERY_TOOL]), on_text=[].append if stream else None)

    assert (err.code, err.retryable) == ("RUNTIME_FAILURE", False)
    assert fragment in err.message and "query_shop" in err.message
    assert_content_free(err, API_KEY)
    assert stub.requests[0].body.get("stream", False) is stream


async def test_an_undeclared_tool_name_from_the_server_is_not_repeated(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(ChatReply(tool_calls=[FunctionCall(name="secret_column_4711", arguments="{")]))

    err = await failure(runtime, ask(tools=[QUERY_TOOL]))

    assert "an undeclared tool" in err.message
    assert_content_free(err, API_KEY)


async def test_usage_maps_cached_prompt_tokens_to_cache_reads(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(
        ChatReply(text="cached", prompt_tokens=1200, completion_tokens=9, cached_tokens=1024),
        ChatReply(text="no usage", usage=False),
    )

    usage = (await runtime.invoke(ask())).usage
    missing = (await runtime.invoke(ask())).usage

    # prompt_tokens includes the cached ones; relay_nb's input_tokens does not (as Anthropic)
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (176, 1024, 9)
    assert usage.total_tokens == 1209  # the provider's own total, kept as reported
    assert usage.cache_write_tokens is None and usage.cost_usd is None
    assert usage.estimated is False
    assert (missing.input_tokens, missing.output_tokens, missing.total_tokens) == (None,) * 3


async def test_model_source_is_configured_when_the_response_names_no_model(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(ChatReply(text="anonymous", model=None), ChatReply(text=["a", "b"], model=None))

    plain = await runtime.invoke(ask())
    streamed = await runtime.invoke(ask(), on_text=[].append)

    assert (plain.model, plain.model_source) == ("llama-test", "configured")
    assert (streamed.model, streamed.model_source) == ("llama-test", "configured")


@pytest.mark.parametrize(
    ("reply", "stop", "text"),
    [
        (ChatReply(text="cut", finish_reason="length"), "max_tokens", "cut"),
        (ChatReply(text="", finish_reason="content_filter"), "refusal", ""),
        (ChatReply(refusal="I can't help with that."), "refusal", "I can't help with that."),
        (ChatReply(text="odd", finish_reason="eos_token"), "eos_token", "odd"),
        (ChatReply(text="odd", finish_reason="Weird Reason!"), None, "odd"),
    ],
    ids=["length", "content-filter", "refusal", "plain-unknown", "garbled"],
)
async def test_finish_reasons_map_to_portable_stop_reasons(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub, reply: ChatReply, stop: str, text: str
) -> None:
    stub.enqueue(reply)

    result = await runtime.invoke(ask())

    assert (result.stop_reason, result.output_text) == (stop, text)


# -- streaming -------------------------------------------------------------------------------


async def test_streaming_delivers_deltas_in_order_and_assembles_the_result(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(
        ChatReply(
            text=["The ", "answer ", "is 42."],
            tool_calls=[
                FunctionCall(id="call_s", name="query_shop", arguments={"sql": "select 42"}),
                FunctionCall(id="call_t", name="make_chart", arguments={"kind": "bar"}),
            ],
            prompt_tokens=30,
            cached_tokens=8,
            completion_tokens=21,
        )
    )
    deltas: list[str] = []

    result = await runtime.invoke(ask(tools=[QUERY_TOOL, CHART_TOOL]), on_text=deltas.append)

    assert deltas == ["The ", "answer ", "is 42."]
    assert result.output_text == "The answer is 42."
    assert result.tool_calls == [
        ToolCall(id="call_s", name="query_shop", input={"sql": "select 42"}),
        ToolCall(id="call_t", name="make_chart", input={"kind": "bar"}),
    ]
    assert result.stop_reason == "tool_use"
    assert (result.model, result.model_source) == (STUB_MODEL, "provider-reported")
    assert (result.usage.input_tokens, result.usage.cache_read_tokens) == (22, 8)
    assert result.usage.output_tokens == 21
    body = stub.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize(
    ("fault", "code", "retryable"),
    [
        (StreamFault(after_deltas=1), "PROVIDER_UNAVAILABLE", True),
        (StreamFault(after_deltas=1, kind="truncate"), "PROVIDER_UNAVAILABLE", True),
        (StreamFault(after_deltas=1, kind="error"), "PROVIDER_UNAVAILABLE", True),
        (
            StreamFault(after_deltas=1, kind="error", error_type=None, error_code=429),
            "RATE_LIMITED",
            True,
        ),
        (
            StreamFault(after_deltas=1, kind="error", error_type="invalid_request_error"),
            "INVALID_REQUEST",
            False,
        ),
        (
            StreamFault(
                after_deltas=1, kind="error", error_type="BadRequestError", error_code="400"
            ),
            "INVALID_REQUEST",
            False,
        ),
        (
            StreamFault(after_deltas=1, kind="error", error_type="unheard_of_error"),
            "RUNTIME_FAILURE",
            False,
        ),
    ],
    ids=["drop", "truncate", "server-error", "code-429", "invalid", "vllm-style", "unknown"],
)
async def test_a_broken_stream_is_classified(
    runtime: OpenAICompatibleRuntime,
    stub: OpenAIStub,
    fault: StreamFault,
    code: str,
    retryable: bool,
) -> None:
    stub.enqueue(ChatReply(text=["first ", "second"], stream_fault=fault))
    deltas: list[str] = []

    err = await failure(runtime, on_text=deltas.append)

    assert deltas == ["first "]
    assert (err.code, err.retryable) == (code, retryable)
    assert "stub stream failure" not in str(err)
    assert "unheard_of_error" not in str(err)  # only types from the fixed table are named


async def test_stream_false_answers_in_one_piece(
    stub: OpenAIStub, loopback_model_requests: None
) -> None:
    rt = OpenAICompatibleRuntime("llama-test", base_url=stub.base_url, stream=False)
    stub.enqueue(ChatReply(text=["one ", "piece"]))
    deltas: list[str] = []

    result = await rt.invoke(ask(), on_text=deltas.append)
    await rt.aclose()

    assert (result.output_text, deltas) == ("one piece", [])
    assert "stream" not in stub.requests[0].body
    assert rt.capabilities().streaming is False


# -- HTTP failures ---------------------------------------------------------------------------

STATUS_TABLE = [
    (400, "INVALID_REQUEST", False),
    (401, "AUTHENTICATION_FAILED", False),
    (403, "AUTHENTICATION_FAILED", False),
    (404, "INVALID_REQUEST", False),
    (408, "PROVIDER_UNAVAILABLE", True),
    (409, "PROVIDER_UNAVAILABLE", True),
    (422, "INVALID_REQUEST", False),
    (429, "RATE_LIMITED", True),
    (500, "PROVIDER_UNAVAILABLE", True),
    (501, "RUNTIME_FAILURE", False),
    (502, "PROVIDER_UNAVAILABLE", True),
    (503, "PROVIDER_UNAVAILABLE", True),
]


@pytest.mark.parametrize(("status", "code", "retryable"), STATUS_TABLE)
async def test_http_status_is_classified_without_provider_text(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub, status: int, code: str, retryable: bool
) -> None:
    stub.enqueue(ErrorReply(status=status, message=f"{LEAKY} {API_KEY}"))

    err = await failure(runtime)

    assert (err.code, err.retryable) == (code, retryable)
    assert f"HTTP {status}" in err.message
    assert err.retry_after_s is None
    assert_content_free(err, API_KEY)
    assert len(stub.requests) == 1  # max_retries=0: the SDK did not retry behind our back


async def test_a_404_says_how_to_fix_the_base_url(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(ErrorReply(status=404, message=LEAKY))

    err = await failure(runtime)

    assert "/v1" in err.message and "model name" in err.message


@pytest.mark.parametrize(
    ("headers", "seconds"), [({"retry-after": "7"}, 7.0), ({"retry-after-ms": "1500"}, 1.5)]
)
async def test_retry_after_header_becomes_retry_after_s(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub, headers: dict[str, str], seconds: float
) -> None:
    stub.enqueue(ErrorReply(status=429, message=LEAKY, headers=headers))

    err = await failure(runtime)

    assert (err.code, err.retryable, err.retry_after_s) == ("RATE_LIMITED", True, seconds)
    assert len(stub.requests) == 1


async def test_sdk_retries_are_opt_in(stub: OpenAIStub, loopback_model_requests: None) -> None:
    """Proves the one-request assertions above can fail: with retries on, the SDK resends."""
    rt = OpenAICompatibleRuntime("m", base_url=stub.base_url, max_retries=1)
    stub.enqueue(
        ErrorReply(status=503, headers={"retry-after-ms": "1"}), ChatReply(text="second try")
    )

    result = await rt.invoke(ask())
    await rt.aclose()

    assert result.output_text == "second try"
    assert len(stub.requests) == 2


async def test_dropped_connection_is_retryable_unavailability(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(DropConnection())

    err = await failure(runtime)

    assert (err.code, err.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert len(stub.requests) == 1


async def test_a_server_that_is_not_there_is_retryable_unavailability(
    loopback_model_requests: None,
) -> None:
    with OpenAIStub() as gone:
        url = gone.base_url  # a port that was just free, now closed again
    rt = OpenAICompatibleRuntime("m", base_url=url)

    err = await failure(rt)
    await rt.aclose()

    assert (err.code, err.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert "connection" in err.message


async def test_slow_provider_hits_the_runtime_timeout(
    stub: OpenAIStub, loopback_model_requests: None
) -> None:
    rt = OpenAICompatibleRuntime("m", base_url=stub.base_url, timeout=0.3)
    stub.enqueue(Delay(3))  # would answer "late" if the HTTP timeout did not cut it

    err = await failure(rt)
    await rt.aclose()

    assert (err.code, err.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert "timed out" in err.message
    assert len(stub.requests) == 1


# -- caller timeout and abort ----------------------------------------------------------------


async def test_invoke_timeout_gives_up_and_closes_the_request(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(ChatReply(text="warm"), Delay(3))
    await runtime.invoke(ask())  # the SDK import and the client are out of the way now

    err = await failure(runtime, timeout=0.5)

    assert (err.code, err.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert "within 0.5 s" in err.message
    assert len(stub.requests) == 2
    assert await asyncio.to_thread(stub.wait_for_abandoned, 1)


async def test_abort_signal_from_another_thread_aborts_mid_stream(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(ChatReply(text=["a", "b", "c", "d"], event_delay_s=1.0))
    signal = AbortSignal()

    def abort_once_the_request_is_in_flight() -> None:
        assert stub.wait_for_requests(1)
        signal.abort("user pressed stop")

    aborter = threading.Thread(target=abort_once_the_request_is_in_flight)
    aborter.start()
    err = await failure(runtime, abort=signal, on_text=[].append)
    aborter.join()

    assert (err.code, err.retryable) == ("ABORTED", False)
    assert await asyncio.to_thread(stub.wait_for_abandoned, 1)


async def test_runtime_still_works_after_an_abort(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    signal = AbortSignal()
    signal.abort()
    stub.enqueue(ChatReply(text="fresh"))

    assert (await failure(runtime, abort=signal)).code == "ABORTED"
    assert stub.requests == []
    assert (await runtime.invoke(ask())).output_text == "fresh"


# -- credentials -----------------------------------------------------------------------------


async def test_openai_needs_a_key_and_reads_it_at_invoke_time(
    stub: OpenAIStub, loopback_model_requests: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``openai:MODEL`` (here pointed at the stub through OPENAI_BASE_URL) needs
    OPENAI_API_KEY; a rotated key is picked up by the next invocation."""
    rt = OpenAICompatibleRuntime("gpt-test")
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-account-id")
    stub.enqueue(ChatReply(text="one"), ChatReply(text="two"))

    err = await failure(rt)
    assert (err.code, err.retryable) == ("AUTHENTICATION_FAILED", False)
    assert "OPENAI_API_KEY" in err.message and "api_key=" in err.message
    assert stub.requests == []

    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-first-123")
    await rt.invoke(ask())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-rotated-456")
    await rt.invoke(ask())
    await rt.aclose()

    keys = [r.headers["authorization"] for r in stub.requests]
    assert keys == ["Bearer sk-env-first-123", "Bearer sk-env-rotated-456"]
    # OpenAI's own client conventions hold for OpenAI (what the test of the reverse relies on)
    assert stub.requests[0].headers["openai-organization"] == "org-account-id"
    assert (rt.id, rt.provider) == ("openai:gpt-test", "openai")


async def test_openai_key_is_never_sent_to_another_server_unless_named(
    stub: OpenAIStub, loopback_model_requests: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-private-account-id")
    monkeypatch.setenv("VLLM_API_KEY", "vllm-key-0123456789")
    implicit = OpenAICompatibleRuntime("m", base_url=stub.base_url)
    named = OpenAICompatibleRuntime("m", base_url=stub.base_url, api_key_env="VLLM_API_KEY")
    given = OpenAICompatibleRuntime("m", base_url=stub.base_url, api_key=API_KEY)
    stub.enqueue(*(ChatReply(text="ok") for _ in range(3)))

    for rt in (implicit, named, given):
        await rt.invoke(ask())
        await rt.aclose()

    auth = [r.headers.get("authorization") for r in stub.requests]
    assert auth == [None, "Bearer vllm-key-0123456789", f"Bearer {API_KEY}"]
    assert all("openai-organization" not in r.headers for r in stub.requests)
    monkeypatch.delenv("VLLM_API_KEY")
    err = await failure(named)
    assert err.code == "AUTHENTICATION_FAILED" and "VLLM_API_KEY" in err.message
    assert len(stub.requests) == 3


def test_a_key_in_the_wrong_place_is_refused_without_echoing_it() -> None:
    from relay_nb.runtime.profiles import runtime_from_profile

    attempts = [
        lambda: runtime_from_profile(
            f"openai-compatible:m@http://127.0.0.1:1/v1?api_key={API_KEY}"
        ),
        lambda: runtime_from_profile(
            f"openai-compatible:m@http://127.0.0.1:1/v1?key_env={API_KEY}"
        ),
        lambda: OpenAICompatibleRuntime("m", base_url=f"http://user:{API_KEY}@127.0.0.1:1/v1"),
        lambda: OpenAICompatibleRuntime("m", api_key_env=API_KEY),
    ]
    for attempt in attempts:
        with pytest.raises(ConfigurationError) as info:
            attempt()
        assert API_KEY not in str(info.value)
        assert "environment variable" in str(info.value) or "key_env" in str(info.value)


async def test_the_key_never_shows_in_repr(stub: OpenAIStub, loopback_model_requests: None) -> None:
    rt = OpenAICompatibleRuntime("m", base_url=stub.base_url, api_key=API_KEY)
    stub.enqueue(ChatReply(text="ok"))
    await rt.invoke(ask())  # so the cached SDK client is part of the state too

    for shown in (repr(rt), str(rt), repr(vars(rt))):
        assert API_KEY not in shown
    assert repr(rt) == f"<OpenAICompatibleRuntime openai-compatible:m@{stub.base_url}>"
    await rt.aclose()


async def test_a_constructor_key_never_reaches_a_recording(
    stub: OpenAIStub, loopback_model_requests: None, tmp_path
) -> None:
    """The key is not in the environment here; the runtime must still have it scrubbed."""
    from relay_nb.runtime.replay import RecordingRuntime

    rt = OpenAICompatibleRuntime("m", base_url=stub.base_url, api_key=API_KEY)
    stub.enqueue(ChatReply(text=f"the key you sent was {API_KEY}"))
    path = tmp_path / "rec.jsonl"
    result = await RecordingRuntime(rt, path=path).invoke(ask(f"my key is {API_KEY}"))
    await rt.aclose()

    assert API_KEY in result.output_text  # the live answer is the caller's business
    recorded = path.read_text()
    assert API_KEY not in recorded
    assert "[REDACTED]" in recorded


# -- the model-request switch ----------------------------------------------------------------


async def test_default_test_scope_blocks_the_request(stub: OpenAIStub) -> None:
    rt = OpenAICompatibleRuntime("m", base_url=stub.base_url)
    stub.enqueue(ChatReply(text="must not be served"))

    with pytest.raises(ModelRequestsBlocked) as caught:
        await rt.invoke(ask())

    assert caught.value.scope == "none"
    assert stub.requests == []
    assert stub.pending == 1


@pytest.mark.usefixtures("loopback_model_requests")
@pytest.mark.parametrize(
    "setup", ["openai-default", "OPENAI_BASE_URL", "remote-server"], ids=lambda s: s
)
async def test_loopback_scope_refuses_anything_but_127_0_0_1(
    monkeypatch: pytest.MonkeyPatch, setup: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    if setup == "openai-default":
        rt = OpenAICompatibleRuntime("gpt-test")
    elif setup == "OPENAI_BASE_URL":
        monkeypatch.setenv("OPENAI_BASE_URL", "https://proxy.example.com/v1")
        rt = OpenAICompatibleRuntime("gpt-test")
    else:
        rt = OpenAICompatibleRuntime("llama", base_url="http://gpu-box.example.com:8000/v1")

    with pytest.raises(ModelRequestsBlocked) as caught:
        await rt.invoke(ask())

    assert caught.value.scope == "loopback"
    assert API_KEY not in str(caught.value)


# -- shape, lifecycle, import cost ------------------------------------------------------------


def test_identity_and_capabilities() -> None:
    openai = OpenAICompatibleRuntime("gpt-4.1-mini")
    local = OpenAICompatibleRuntime("llama3.2", base_url="http://127.0.0.1:11434/v1/")
    no_tools = OpenAICompatibleRuntime("phi", base_url="http://127.0.0.1:8080/v1", tools=False)
    enforced = OpenAICompatibleRuntime(
        "phi", base_url="http://127.0.0.1:8080/v1", tools=False, structured_output="json_schema"
    )

    assert isinstance(openai, ModelRuntime)
    assert (openai.id, openai.provider, openai.timeout) == ("openai:gpt-4.1-mini", "openai", 120)
    assert local.id == "openai-compatible:llama3.2@http://127.0.0.1:11434/v1"
    assert (local.provider, local.timeout) == ("openai-compatible", 600)
    assert (
        openai.capabilities()
        == local.capabilities()
        == Capabilities(
            structured_tools=True,
            streaming=True,
            abort=True,
            usage=True,
            structured_tools_fidelity="native",
            output_token_limit_fidelity="native",
        )
    )
    assert no_tools.capabilities().single_forced_tool_only is True
    assert no_tools.capabilities().structured_tools_fidelity == "prompted"
    assert enforced.capabilities().structured_tools_fidelity == "native"
    assert openai._max_tokens_param() == "max_completion_tokens"  # newer OpenAI models want it
    assert local._max_tokens_param() == "max_tokens"  # what local servers understand


async def test_the_output_limit_field_can_be_chosen(
    stub: OpenAIStub, loopback_model_requests: None
) -> None:
    rt = OpenAICompatibleRuntime(
        "m", base_url=stub.base_url, max_tokens_param="max_completion_tokens"
    )
    stub.enqueue(ChatReply(text="ok"))

    await rt.invoke(ask(max_output_tokens=77))
    await rt.aclose()

    body = stub.requests[0].body
    assert body["max_completion_tokens"] == 77 and "max_tokens" not in body


def test_one_client_per_event_loop(stub: OpenAIStub, loopback_model_requests: None) -> None:
    """Each asyncio.run gets its own client, and the finished loop's client gets closed."""
    rt = OpenAICompatibleRuntime("m", base_url=stub.base_url)
    stub.enqueue(ChatReply(text="first loop"), ChatReply(text="second loop"))

    async def invoke_and_expose_client() -> tuple[str, object]:
        result = await rt.invoke(ask())
        return result.output_text, rt._slot.client  # type: ignore[union-attr]

    first_text, first_client = asyncio.run(invoke_and_expose_client())
    second_text, second_client = asyncio.run(invoke_and_expose_client())

    assert (first_text, second_text) == ("first loop", "second loop")
    assert first_client is not second_client
    assert first_client.is_closed()  # type: ignore[attr-defined]
    assert second_client.is_closed()  # type: ignore[attr-defined]


async def test_sdk_client_gets_key_url_timeout_and_retries_explicitly(
    stub: OpenAIStub, loopback_model_requests: None
) -> None:
    rt = OpenAICompatibleRuntime("m", base_url=stub.base_url, api_key=API_KEY, timeout=5)
    stub.enqueue(ChatReply(text="ok"))
    await rt.invoke(ask())

    client = rt._slot.client  # type: ignore[union-attr]  # the SDK object is the evidence
    assert client.api_key == API_KEY
    assert str(client.base_url).rstrip("/") == stub.base_url
    assert (client.timeout, client.max_retries) == (5, 0)
    await rt.aclose()


async def test_concurrent_invocations_share_one_client(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(*(ChatReply(text=f"answer {i}") for i in range(4)))

    results = await asyncio.gather(*(runtime.invoke(ask(f"q{i}")) for i in range(4)))

    assert sorted(r.output_text for r in results) == [f"answer {i}" for i in range(4)]
    assert len(stub.requests) == 4


async def test_aclose_is_idempotent_and_the_runtime_reopens(
    runtime: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    stub.enqueue(ChatReply(text="before"), ChatReply(text="after"))

    assert (await runtime.invoke(ask())).output_text == "before"
    await runtime.aclose()
    await runtime.aclose()
    assert (await runtime.invoke(ask())).output_text == "after"


def test_a_missing_sdk_is_a_configuration_error_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # what an uninstalled package looks like

    with pytest.raises(ConfigurationError, match=r"pip install 'relay-nb\[openai\]'"):
        OpenAICompatibleRuntime("llama3.2", base_url="http://127.0.0.1:11434/v1")


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = (
        "import sys, relay_nb, relay_nb.runtime.openai_compat\n"
        "from relay_nb.runtime.profiles import runtime_from_profile\n"
        "runtime_from_profile('openai-compatible:m@http://127.0.0.1:9/v1?tools=false')\n"
        "runtime_from_profile('openai:gpt-4.1-mini')\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'httpx', "
        "'httpx2'))\n"
        "print(loaded)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "[]"


# -- tools=False: a model without function calling -------------------------------------------


@pytest.fixture
async def no_tools(
    stub: OpenAIStub, loopback_model_requests: None
) -> AsyncIterator[OpenAICompatibleRuntime]:
    rt = OpenAICompatibleRuntime("tiny", base_url=stub.base_url, tools=False)
    yield rt
    await rt.aclose()


async def test_prompted_mode_puts_the_schema_in_the_prompt_and_replays_history_as_text(
    no_tools: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    earlier = ToolCall(id="call_1", name="query_shop", input={"sql": "select 1"})
    request = InvocationRequest(
        messages=[
            Message.system("Be brief."),
            Message.user("How many orders?"),
            Message.assistant("", tool_calls=[earlier]),
            Message.tool_result("call_1", "no such table", is_error=True),
            Message.user("Use orders."),
        ],
        tools=[QUERY_TOOL, CHART_TOOL],
        tool_choice=ToolChoice.tool("query_shop"),
    )
    stub.enqueue(ChatReply(text='{"sql": "SELECT count(*) FROM orders"}'))

    result = await no_tools.invoke(request, on_text=[].append)

    body = stub.requests[0].body
    assert "tools" not in body and "tool_choice" not in body and "stream" not in body
    assert body["response_format"] == {"type": "json_object"}
    system, *turns = body["messages"]
    assert system["role"] == "system" and system["content"].startswith("Be brief.\n\n")
    assert (
        '"query_shop"' in system["content"] and "Run one read-only SQL query." in system["content"]
    )
    assert json.dumps(QUERY_TOOL.input_schema, separators=(",", ":")) in system["content"]
    assert turns == [
        {"role": "user", "content": "How many orders?"},
        {"role": "assistant", "content": '{"sql": "select 1"}'},  # its own format, replayed
        {"role": "user", "content": "Tool error:\nno such table\n\nUse orders."},  # merged
    ]
    assert result.output_text == "" and result.stop_reason == "tool_use"
    [call] = result.tool_calls
    assert (call.name, call.input) == ("query_shop", {"sql": "SELECT count(*) FROM orders"})
    assert call.id.startswith("call_relay_")


@pytest.mark.parametrize(
    "text",
    [
        'Sure! Here it is:\n```json\n{"sql": "SELECT 1"}\n```',
        'The input is {"sql": "SELECT 1"} as requested.',
        '  {"sql": "SELECT 1"}\n',
    ],
    ids=["fenced", "in-prose", "bare"],
)
async def test_prompted_mode_finds_the_object_small_models_wrap(
    no_tools: OpenAICompatibleRuntime, stub: OpenAIStub, text: str
) -> None:
    stub.enqueue(ChatReply(text=text))

    result = await no_tools.invoke(ask(tools=[QUERY_TOOL], tool_choice=ToolChoice.required()))

    assert result.tool_calls[0].input == {"sql": "SELECT 1"}


@pytest.mark.parametrize(
    ("mode", "wire"),
    [
        ("json_schema", {"type": "json_schema", "json_schema": {"name": "query_shop"}}),
        ("prompt", None),
    ],
)
async def test_prompted_mode_response_format_options(
    stub: OpenAIStub, loopback_model_requests: None, mode: str, wire: dict | None
) -> None:
    rt = OpenAICompatibleRuntime(
        "tiny",
        base_url=stub.base_url,
        tools=False,
        structured_output=mode,  # type: ignore[arg-type]
    )
    stub.enqueue(ChatReply(text='{"sql": "SELECT 1"}'))

    await rt.invoke(ask(tools=[QUERY_TOOL], tool_choice=ToolChoice.tool("query_shop")))
    await rt.aclose()

    sent = stub.requests[0].body.get("response_format")
    if wire is None:
        assert sent is None
    else:
        assert sent == {
            "type": "json_schema",
            "json_schema": {"name": "query_shop", "schema": QUERY_TOOL.input_schema},
        }


@pytest.mark.parametrize(
    ("tools", "choice", "fragment"),
    [
        ([QUERY_TOOL], ToolChoice.auto(), "cannot let the model choose"),
        ([QUERY_TOOL], None, "cannot let the model choose"),
        ([QUERY_TOOL, CHART_TOOL], ToolChoice.required(), "exactly one declared tool"),
    ],
)
async def test_prompted_mode_refuses_what_it_cannot_honour(
    no_tools: OpenAICompatibleRuntime,
    stub: OpenAIStub,
    tools: list[ToolSpec],
    choice: ToolChoice | None,
    fragment: str,
) -> None:
    err = await failure(no_tools, ask(tools=tools, tool_choice=choice))

    assert (err.code, err.retryable) == ("INVALID_REQUEST", False)
    assert fragment in err.message and "ToolChoice.tool" in err.message
    assert stub.requests == []


@pytest.mark.parametrize(
    ("text", "finish", "fragment"),
    [
        ("I think you should look at secret_column.", "stop", "not a JSON object"),
        ('{"sql": "SELECT secret_column', "length", "raise max_output_tokens"),
    ],
)
async def test_prompted_mode_without_a_json_object_is_a_content_free_failure(
    no_tools: OpenAICompatibleRuntime, stub: OpenAIStub, text: str, finish: str, fragment: str
) -> None:
    stub.enqueue(ChatReply(text=text, finish_reason=finish))

    err = await failure(no_tools, ask(tools=[QUERY_TOOL], tool_choice=ToolChoice.required()))

    assert (err.code, err.retryable) == ("RUNTIME_FAILURE", False)
    assert fragment in err.message
    assert_content_free(err, API_KEY)


async def test_prompted_mode_streams_plain_answers(
    no_tools: OpenAICompatibleRuntime, stub: OpenAIStub
) -> None:
    """Without tools in the request the reply is an answer, and it streams as usual."""
    stub.enqueue(ChatReply(text=["plain ", "answer"]))
    deltas: list[str] = []

    result = await no_tools.invoke(ask(), on_text=deltas.append)

    assert deltas == ["plain ", "answer"] and result.output_text == "plain answer"
    assert "response_format" not in stub.requests[0].body
