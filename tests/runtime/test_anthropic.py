"""AnthropicRuntime against the real SDK and a local stub speaking the Messages wire format.

Nothing is mocked between the runtime and the socket: the SDK builds the request, the stub
records it, and the SDK parses the stub's JSON, SSE and error bodies. That is what makes
the error-classification and request-mapping assertions worth something.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from runtime_support import ask, assert_content_free, failure

from relay_nb.errors import ModelRequestsBlocked
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
from relay_nb.runtime.anthropic import AnthropicRuntime
from relay_nb.testing.anthropic_stub import (
    STUB_MODEL,
    AnthropicStub,
    Delay,
    DropConnection,
    ErrorReply,
    MessageReply,
    StreamFault,
    ToolUse,
)

API_KEY = "sk-ant-test-0123456789-SECRET"
LEAKY_BODY = "provider says: prompt was 'SELECT secret_column' and key sk-ant-test"
EPHEMERAL = {"type": "ephemeral"}

QUERY_TOOL = ToolSpec(
    name="query_shop",
    description="Run one read-only SQL query.",
    input_schema={"type": "object", "properties": {"sql": {"type": "string"}}},
)
CHART_TOOL = ToolSpec(name="make_chart")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own key or base URL must not change what these tests see."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[AnthropicStub]:
    with AnthropicStub() as server:
        yield server


@pytest.fixture
async def runtime(
    stub: AnthropicStub, loopback_model_requests: None
) -> AsyncIterator[AnthropicRuntime]:
    rt = AnthropicRuntime("claude-test-alias", api_key=API_KEY, base_url=stub.base_url, timeout=5)
    yield rt
    await rt.aclose()


# -- success paths ---------------------------------------------------------------------------


async def test_plain_text_result_and_request(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(MessageReply(text="Hi there", input_tokens=11, output_tokens=3))

    result = await runtime.invoke(ask("hello", metadata={"turn": "turn-42"}))

    assert result.provider == "anthropic"
    assert (result.model, result.model_source) == (STUB_MODEL, "provider-reported")
    assert result.output_text == "Hi there"
    assert result.tool_calls == []
    assert result.stop_reason == "end_turn"
    assert result.latency_ms > 0
    assert (result.usage.input_tokens, result.usage.output_tokens) == (11, 3)
    assert result.usage.total_tokens == 14
    assert result.usage.cost_usd is None
    [sent] = stub.requests
    assert sent.path == "/v1/messages"
    assert sent.body == {
        "model": "claude-test-alias",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    }
    assert b"turn-42" not in sent.raw_body  # metadata stays with the caller
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"


async def test_request_mapping_joins_system_merges_roles_and_maps_tool_history(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    call = ToolCall(id="toolu_1", name="query_shop", input={"sql": "select 1"})
    request = InvocationRequest(
        messages=[
            Message.system("You answer questions."),
            Message.system("Use SQL."),
            Message.user("How many orders?"),
            Message.user("Only this year."),
            Message.assistant("Let me look.", tool_calls=[call]),
            Message.tool_result("toolu_1", "no such table", is_error=True),
            Message.user("Try the orders table."),
        ],
        tools=[QUERY_TOOL, CHART_TOOL],
        tool_choice=ToolChoice.required(),
        max_output_tokens=321,
    )
    stub.enqueue(MessageReply(text="ok"))

    await runtime.invoke(request)

    body = stub.requests[0].body
    assert body["system"] == "You answer questions.\n\nUse SQL."
    assert body["max_tokens"] == 321
    assert body["tool_choice"] == {"type": "any"}
    assert body["tools"] == [
        {
            "name": "query_shop",
            "description": "Run one read-only SQL query.",
            "input_schema": QUERY_TOOL.input_schema,
        },
        {"name": "make_chart", "input_schema": {"type": "object", "properties": {}}},
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "How many orders?"},
                {"type": "text", "text": "Only this year."},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "query_shop",
                    "input": {"sql": "select 1"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "no such table",
                    "is_error": True,
                },
                {"type": "text", "text": "Try the orders table."},
            ],
        },
    ]


async def test_tool_results_lead_their_turn_and_empty_turns_are_dropped(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    """The API rejects a user turn whose text precedes its tool results, and empty turns."""
    call = ToolCall(id="toolu_2", name="make_chart", input={})
    request = InvocationRequest(
        messages=[
            Message.user("Chart it."),
            Message.assistant("", tool_calls=[call]),
            Message.user("(the user typed while the tool ran)"),
            Message.tool_result("toolu_2", "chart.png"),
            Message.assistant(""),
            Message.user("Thanks."),
        ]
    )
    stub.enqueue(MessageReply(text="ok"))

    await runtime.invoke(request)

    messages = stub.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "tool_use", "id": "toolu_2", "name": "make_chart", "input": {}}
    ]
    assert [block["type"] for block in messages[2]["content"]] == ["tool_result", "text", "text"]
    assert messages[2]["content"][0]["is_error"] is False


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice.auto(), {"type": "auto"}),
        (ToolChoice.required(), {"type": "any"}),
        (ToolChoice.tool("query_shop"), {"type": "tool", "name": "query_shop"}),
    ],
)
async def test_tool_choice_and_tool_calls(
    runtime: AnthropicRuntime, stub: AnthropicStub, choice: ToolChoice, wire: dict[str, str]
) -> None:
    stub.enqueue(
        MessageReply(
            tool_uses=[ToolUse(id="toolu_9", name="query_shop", input={"sql": "select 2"})]
        )
    )

    result = await runtime.invoke(ask(tools=[QUERY_TOOL, CHART_TOOL], tool_choice=choice))

    assert stub.requests[0].body["tool_choice"] == wire
    assert result.tool_calls == [
        ToolCall(id="toolu_9", name="query_shop", input={"sql": "select 2"})
    ]
    assert result.output_text == ""
    assert result.stop_reason == "tool_use"


async def test_usage_reports_cache_reads_and_writes(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(
        MessageReply(
            text="cached",
            input_tokens=5,
            output_tokens=9,
            cache_read_input_tokens=1200,
            cache_creation_input_tokens=340,
        )
    )

    usage = (await runtime.invoke(ask())).usage

    # total = input + output + cache reads + cache writes (everything processed)
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (5, 9, 1554)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (1200, 340)
    assert usage.cost_usd is None
    assert usage.estimated is False


async def test_model_source_is_configured_when_the_response_names_no_model(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(MessageReply(text="anonymous", model=None))

    result = await runtime.invoke(ask())

    assert (result.model, result.model_source) == ("claude-test-alias", "configured")


# -- prompt caching --------------------------------------------------------------------------


def cached_request() -> InvocationRequest:
    return InvocationRequest(
        messages=[Message.system("Stable instructions."), Message.user("q")],
        tools=[QUERY_TOOL, CHART_TOOL],
    )


async def test_prompt_caching_marks_last_tool_and_system_block(
    stub: AnthropicStub, loopback_model_requests: None
) -> None:
    rt = AnthropicRuntime(api_key=API_KEY, base_url=stub.base_url, prompt_caching=True)
    stub.enqueue(MessageReply(text="ok"))

    await rt.invoke(cached_request())
    await rt.aclose()

    body = stub.requests[0].body
    assert [tool.get("cache_control") for tool in body["tools"]] == [None, EPHEMERAL]
    assert body["system"] == [
        {"type": "text", "text": "Stable instructions.", "cache_control": EPHEMERAL}
    ]
    assert "cache_control" not in json.dumps(body["messages"])


async def test_no_cache_markers_without_prompt_caching(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(MessageReply(text="ok"))

    await runtime.invoke(cached_request())

    sent = stub.requests[0]
    assert b"cache_control" not in sent.raw_body
    assert sent.body["system"] == "Stable instructions."


# -- streaming -------------------------------------------------------------------------------


async def test_streaming_delivers_deltas_in_order_and_assembles_the_result(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(
        MessageReply(
            text=["The ", "answer ", "is 42."],
            tool_uses=[ToolUse(id="toolu_s", name="query_shop", input={"sql": "select 42"})],
            cache_read_input_tokens=8,
            output_tokens=21,
        )
    )
    deltas: list[str] = []

    result = await runtime.invoke(ask(tools=[QUERY_TOOL]), on_text=deltas.append)

    assert deltas == ["The ", "answer ", "is 42."]
    assert result.output_text == "The answer is 42."
    assert result.tool_calls == [
        ToolCall(id="toolu_s", name="query_shop", input={"sql": "select 42"})
    ]
    assert result.stop_reason == "tool_use"
    assert (result.model, result.model_source) == (STUB_MODEL, "provider-reported")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (12, 21)
    assert result.usage.cache_read_tokens == 8
    assert stub.requests[0].body["stream"] is True


@pytest.mark.parametrize(
    ("fault", "code", "retryable"),
    [
        (StreamFault(after_deltas=1), "PROVIDER_UNAVAILABLE", True),
        (StreamFault(after_deltas=1, kind="truncate"), "PROVIDER_UNAVAILABLE", True),
        (StreamFault(after_deltas=1, kind="error"), "PROVIDER_UNAVAILABLE", True),
        (
            StreamFault(after_deltas=1, kind="error", error_type="rate_limit_error"),
            "RATE_LIMITED",
            True,
        ),
        (
            StreamFault(after_deltas=1, kind="error", error_type="invalid_request_error"),
            "INVALID_REQUEST",
            False,
        ),
        (
            StreamFault(after_deltas=1, kind="error", error_type="conflict_error"),
            "PROVIDER_UNAVAILABLE",
            True,
        ),
        (
            StreamFault(after_deltas=1, kind="error", error_type="billing_error"),
            "RUNTIME_FAILURE",
            False,
        ),
        (
            StreamFault(after_deltas=1, kind="error", error_type="unheard_of_error"),
            "RUNTIME_FAILURE",
            False,
        ),
    ],
    ids=[
        "drop",
        "truncate",
        "overloaded",
        "rate-limit",
        "invalid",
        "conflict",
        "billing",
        "unknown-type",
    ],
)
async def test_a_broken_stream_is_classified(
    runtime: AnthropicRuntime, stub: AnthropicStub, fault: StreamFault, code: str, retryable: bool
) -> None:
    stub.enqueue(MessageReply(text=["first ", "second"], stream_fault=fault))
    deltas: list[str] = []

    err = await failure(runtime, on_text=deltas.append)

    assert deltas == ["first "]
    assert (err.code, err.retryable) == (code, retryable)
    assert "stub stream failure" not in str(err)


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
    (529, "PROVIDER_UNAVAILABLE", True),
]


@pytest.mark.parametrize(("status", "code", "retryable"), STATUS_TABLE)
async def test_http_status_is_classified_without_provider_text(
    runtime: AnthropicRuntime, stub: AnthropicStub, status: int, code: str, retryable: bool
) -> None:
    stub.enqueue(ErrorReply(status=status, message=f"{LEAKY_BODY} {API_KEY}"))

    err = await failure(runtime)

    assert (err.code, err.retryable) == (code, retryable)
    assert f"HTTP {status}" in err.message
    assert err.retry_after_s is None
    assert_content_free(err, API_KEY)
    assert len(stub.requests) == 1  # max_retries=0: the SDK did not retry behind our back


async def test_retry_after_header_becomes_retry_after_s(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(ErrorReply(status=429, message=LEAKY_BODY, headers={"retry-after": "7"}))

    err = await failure(runtime)

    assert (err.code, err.retryable, err.retry_after_s) == ("RATE_LIMITED", True, 7.0)
    assert len(stub.requests) == 1


async def test_sdk_retries_are_opt_in(stub: AnthropicStub, loopback_model_requests: None) -> None:
    """Proves the one-request assertions above can fail: with retries on, the SDK resends."""
    rt = AnthropicRuntime(api_key=API_KEY, base_url=stub.base_url, max_retries=1)
    stub.enqueue(
        ErrorReply(status=529, headers={"retry-after-ms": "1"}), MessageReply(text="second try")
    )

    result = await rt.invoke(ask())
    await rt.aclose()

    assert result.output_text == "second try"
    assert len(stub.requests) == 2


async def test_dropped_connection_is_retryable_unavailability(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(DropConnection())

    err = await failure(runtime)

    assert (err.code, err.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert len(stub.requests) == 1


async def test_slow_provider_hits_the_runtime_timeout(
    stub: AnthropicStub, loopback_model_requests: None
) -> None:
    rt = AnthropicRuntime(api_key=API_KEY, base_url=stub.base_url, timeout=0.3)
    stub.enqueue(Delay(3))

    started = time.perf_counter()
    err = await failure(rt)
    await rt.aclose()

    assert (err.code, err.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert "timed out" in err.message
    assert time.perf_counter() - started < 2
    assert len(stub.requests) == 1


# -- caller timeout and abort ----------------------------------------------------------------


async def test_invoke_timeout_gives_up_and_closes_the_request(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(Delay(3))

    started = time.perf_counter()
    err = await failure(runtime, timeout=0.3)

    assert (err.code, err.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert time.perf_counter() - started < 2
    assert await asyncio.to_thread(stub.wait_for_abandoned, 1)


async def test_abort_signal_from_another_thread_aborts_mid_request(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(Delay(3))
    signal = AbortSignal()

    def abort_once_the_request_is_in_flight() -> None:
        assert stub.wait_for_requests(1)
        signal.abort("user pressed stop")

    aborter = threading.Thread(target=abort_once_the_request_is_in_flight)
    aborter.start()
    started = time.perf_counter()
    err = await failure(runtime, abort=signal)
    aborter.join()

    assert (err.code, err.retryable) == ("ABORTED", False)
    assert time.perf_counter() - started < 2
    assert await asyncio.to_thread(stub.wait_for_abandoned, 1)


async def test_runtime_still_works_after_an_abort(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    signal = AbortSignal()
    signal.abort()
    stub.enqueue(MessageReply(text="fresh"))

    assert (await failure(runtime, abort=signal)).code == "ABORTED"
    assert stub.requests == []
    assert (await runtime.invoke(ask())).output_text == "fresh"


# -- credentials -----------------------------------------------------------------------------


async def test_missing_key_fails_before_any_request(
    stub: AnthropicStub, loopback_model_requests: None
) -> None:
    rt = AnthropicRuntime(base_url=stub.base_url)

    err = await failure(rt)

    assert (err.code, err.retryable) == ("AUTHENTICATION_FAILED", False)
    assert "ANTHROPIC_API_KEY" in err.message
    assert "api_key=" in err.message
    assert stub.requests == []


async def test_key_and_base_url_from_the_environment_are_read_at_invoke_time(
    stub: AnthropicStub, loopback_model_requests: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = AnthropicRuntime()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env-first")
    stub.enqueue(MessageReply(text="one"), MessageReply(text="two"))

    await rt.invoke(ask())
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env-rotated")
    await rt.invoke(ask())
    await rt.aclose()

    keys = [r.headers["authorization"] for r in stub.requests]
    assert keys == ["Bearer sk-env-first", "Bearer sk-env-rotated"]


async def test_the_key_never_shows_in_repr(runtime: AnthropicRuntime, stub: AnthropicStub) -> None:
    stub.enqueue(MessageReply(text="ok"))
    await runtime.invoke(ask())  # so the cached SDK client is part of the state too

    for shown in (repr(runtime), str(runtime), repr(vars(runtime))):
        assert API_KEY not in shown
    assert repr(runtime) == "<AnthropicRuntime anthropic:claude-test-alias>"


# -- the model-request switch ----------------------------------------------------------------


async def test_default_test_scope_blocks_the_request(stub: AnthropicStub) -> None:
    rt = AnthropicRuntime(api_key=API_KEY, base_url=stub.base_url)
    stub.enqueue(MessageReply(text="must not be served"))

    with pytest.raises(ModelRequestsBlocked) as caught:
        await rt.invoke(ask())

    assert caught.value.scope == "none"
    assert stub.requests == []
    assert stub.pending == 1


@pytest.mark.usefixtures("loopback_model_requests")
@pytest.mark.parametrize("via_env", [False, True], ids=["argument", "ANTHROPIC_BASE_URL"])
async def test_loopback_scope_refuses_a_real_provider(
    monkeypatch: pytest.MonkeyPatch, via_env: bool
) -> None:
    if via_env:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
        rt = AnthropicRuntime(api_key=API_KEY)
    else:
        rt = AnthropicRuntime(api_key=API_KEY, base_url="https://proxy.example.com")

    with pytest.raises(ModelRequestsBlocked) as caught:
        await rt.invoke(ask())

    assert caught.value.scope == "loopback"


# -- shape, lifecycle, import cost ------------------------------------------------------------


def test_identity_and_capabilities() -> None:
    rt = AnthropicRuntime("claude-haiku-4-5")

    assert isinstance(rt, ModelRuntime)
    assert (rt.id, rt.provider) == ("anthropic:claude-haiku-4-5", "anthropic")
    assert rt.capabilities() == Capabilities(
        structured_tools=True,
        streaming=True,
        abort=True,
        usage=True,
        structured_tools_fidelity="native",
        output_token_limit_fidelity="native",
        physical_batch=True,
        max_batch_size=100_000,
        token_counting=True,
    )


def test_one_client_per_event_loop(stub: AnthropicStub, loopback_model_requests: None) -> None:
    """Each asyncio.run gets its own client, and the finished loop's client gets closed."""
    rt = AnthropicRuntime(api_key=API_KEY, base_url=stub.base_url)
    stub.enqueue(MessageReply(text="first loop"), MessageReply(text="second loop"))

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
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(MessageReply(text="ok"))
    await runtime.invoke(ask())

    client = runtime._slot.client  # type: ignore[union-attr]  # the SDK object is the evidence
    assert client.api_key == API_KEY
    assert str(client.base_url).rstrip("/") == stub.base_url
    assert (client.timeout, client.max_retries) == (5, 0)
    assert client.open_telemetry["traces"]["enabled"] is False


async def test_concurrent_invocations_share_one_client(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(*(MessageReply(text=f"answer {i}") for i in range(4)))

    results = await asyncio.gather(*(runtime.invoke(ask(f"q{i}")) for i in range(4)))

    assert sorted(r.output_text for r in results) == [f"answer {i}" for i in range(4)]
    assert len(stub.requests) == 4


async def test_aclose_is_idempotent_and_the_runtime_reopens(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(MessageReply(text="before"), MessageReply(text="after"))

    assert (await runtime.invoke(ask())).output_text == "before"
    await runtime.aclose()
    await runtime.aclose()
    assert (await runtime.invoke(ask())).output_text == "after"


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = (
        "import sys, relay_nb.runtime.anthropic\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'httpx2'))\n"
        "print(loaded)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "[]"


async def test_a_constructor_key_never_reaches_a_recording(
    runtime: AnthropicRuntime, stub: AnthropicStub, tmp_path
) -> None:
    """The key is not in the environment here; the runtime must still have it scrubbed."""
    from relay_nb.runtime.replay import RecordingRuntime

    stub.enqueue(MessageReply(text=f"the key you sent was {API_KEY}"))
    path = tmp_path / "rec.jsonl"
    result = await RecordingRuntime(runtime, path=path).invoke(ask(f"my key is {API_KEY}"))

    assert API_KEY in result.output_text  # the live answer is the caller's business
    recorded = path.read_text()
    assert API_KEY not in recorded
    assert "[REDACTED]" in recorded


async def test_count_tokens_asks_the_provider_and_feeds_the_context_budget(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    from relay_nb.context.budget import count_tokens_with
    from relay_nb.testing.anthropic_stub import TokenCountReply

    stub.enqueue(TokenCountReply(input_tokens=1234))
    stub.enqueue(ErrorReply(status=529, message="provider says overloaded"))
    assert runtime.capabilities().token_counting is True
    assert await count_tokens_with(runtime, "how many orders?") == (1234, False)
    sent = stub.requests[-1]
    assert sent.path.startswith("/v1/messages/count_tokens")
    assert sent.body["model"] == "claude-test-alias" and "max_tokens" not in sent.body
    # a failed count falls back to the chars/4 estimate, flagged as such
    assert await count_tokens_with(runtime, "x" * 40) == (10, True)


async def test_runtimes_without_token_counting_get_the_estimate() -> None:
    from relay_nb.context.budget import count_tokens_with
    from relay_nb.runtime.scripted import ScriptedRuntime

    assert await count_tokens_with(ScriptedRuntime([]), "x" * 9) == (3, True)
