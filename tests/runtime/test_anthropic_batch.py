"""AnthropicRuntime.invoke_batch: one Message Batch through the real SDK and the local stub.

As in test_anthropic.py nothing is mocked between the runtime and the socket: the SDK builds
the create body, parses the batch objects the stub sends, and decodes its JSONL results.
"""

from __future__ import annotations

import itertools
import threading
import time
import traceback
from collections.abc import AsyncIterator, Iterator

import pytest
from runtime_support import ask, assert_content_free

from relay_nb.errors import InvocationError, ModelRequestsBlocked
from relay_nb.runtime import (
    AbortSignal,
    BatchModelRuntime,
    InvocationRequest,
    Message,
    ToolCall,
    ToolChoice,
    ToolSpec,
)
from relay_nb.runtime.anthropic import MAX_BATCH_REQUESTS, AnthropicRuntime
from relay_nb.runtime.anthropic_batch import poll_delays
from relay_nb.runtime.conformance import check_batch_conformance, check_runtime_conformance
from relay_nb.testing.anthropic_stub import (
    STUB_MODEL,
    AnthropicStub,
    Delay,
    DropConnection,
    ErrorReply,
    MessageReply,
    RecordedRequest,
    ToolUse,
    UnprocessedReply,
)

API_KEY = "sk-ant-test-0123456789-SECRET"
LEAKY_BODY = "provider says: prompt was 'SELECT secret_column' and key sk-ant-test"
BATCHES = "/v1/messages/batches"

QUERY_TOOL = ToolSpec(
    name="query_shop",
    description="Run one read-only SQL query.",
    input_schema={"type": "object", "properties": {"sql": {"type": "string"}}},
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own key or base URL must not change what these tests see."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[AnthropicStub]:
    with AnthropicStub() as server:
        yield server


def fast_polling(rt: AnthropicRuntime) -> AnthropicRuntime:
    rt.batch_poll_interval = 0.01
    rt.batch_poll_max_interval = 0.04
    return rt


@pytest.fixture
async def runtime(
    stub: AnthropicStub, loopback_model_requests: None
) -> AsyncIterator[AnthropicRuntime]:
    rt = AnthropicRuntime("claude-test-alias", api_key=API_KEY, base_url=stub.base_url, timeout=5)
    yield fast_polling(rt)
    await rt.aclose()


def creates(stub: AnthropicStub) -> list[RecordedRequest]:
    return [r for r in stub.requests if r.method == "POST" and r.path == BATCHES]


def polls(stub: AnthropicStub, batch_id: str) -> list[RecordedRequest]:
    return [r for r in stub.requests if r.method == "GET" and r.path == f"{BATCHES}/{batch_id}"]


def cancels(stub: AnthropicStub, batch_id: str) -> list[RecordedRequest]:
    return [r for r in stub.requests if r.path == f"{BATCHES}/{batch_id}/cancel"]


def only_batch_id(stub: AnthropicStub) -> str:
    [batch_id] = stub.batches
    return batch_id


async def batch_failure(rt: AnthropicRuntime, requests: list[InvocationRequest], **kwargs: object):
    with pytest.raises(InvocationError) as caught:
        await rt.invoke_batch(requests, **kwargs)  # type: ignore[arg-type]
    return caught.value


def shown(err: InvocationError) -> str:
    return str(err) + repr(err) + "".join(traceback.format_exception(err))


# -- the declaration -------------------------------------------------------------------------


def test_declares_a_physical_batch_of_up_to_100k_requests() -> None:
    rt = AnthropicRuntime("claude-haiku-4-5")

    caps = rt.capabilities()
    assert (caps.physical_batch, caps.max_batch_size) == (True, 100_000)
    assert isinstance(rt, BatchModelRuntime)


def test_poll_delays_start_small_and_back_off_to_the_cap() -> None:
    assert list(itertools.islice(poll_delays(0.5, 30.0), 9)) == [
        0.5,
        1.0,
        2.0,
        4.0,
        8.0,
        16.0,
        30.0,
        30.0,
        30.0,
    ]
    assert list(itertools.islice(poll_delays(5.0, 2.0), 2)) == [2.0, 2.0]


def test_the_defaults_are_polite_to_the_provider() -> None:
    rt = AnthropicRuntime()
    assert (rt.batch_poll_interval, rt.batch_poll_max_interval) == (0.5, 30.0)


# -- outcomes --------------------------------------------------------------------------------


async def test_mixed_batch_gives_positional_outcomes(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(
        MessageReply(text="first", input_tokens=11, output_tokens=3),
        ErrorReply(status=400, message=f"{LEAKY_BODY} {API_KEY}"),
        MessageReply(tool_uses=[ToolUse(id="toolu_3", name="query_shop", input={"sql": "s"})]),
    )

    outcomes = await runtime.invoke_batch([ask("q0"), ask("q1"), ask("q2", tools=[QUERY_TOOL])])

    assert [o.status for o in outcomes] == ["fulfilled", "rejected", "fulfilled"]
    first, second, third = outcomes
    assert first.value is not None and third.value is not None and second.reason is not None
    assert first.value.output_text == "first"
    assert (first.value.model, first.value.model_source) == (STUB_MODEL, "provider-reported")
    assert (first.value.usage.input_tokens, first.value.usage.output_tokens) == (11, 3)
    assert first.value.stop_reason == "end_turn"
    assert first.value.latency_ms > 0
    assert third.value.tool_calls == [ToolCall(id="toolu_3", name="query_shop", input={"sql": "s"})]
    assert (second.reason.code, second.reason.retryable) == ("INVALID_REQUEST", False)
    assert "invalid_request_error" in second.reason.message
    assert_content_free(second.reason.model_dump_json(), API_KEY)
    # one physical batch, with positional custom ids; the results came back reversed
    [create] = creates(stub)
    assert [item["custom_id"] for item in create.body["requests"]] == ["r0", "r1", "r2"]
    assert stub.batch_results_order == "reversed"


async def test_results_are_matched_by_custom_id_in_any_order(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    for order in ("given", "reversed"):
        stub.batch_results_order = order  # type: ignore[assignment]
        stub.enqueue(*(MessageReply(text=f"answer {i}") for i in range(5)))

        outcomes = await runtime.invoke_batch([ask(f"q{i}") for i in range(5)])

        assert [o.value.output_text for o in outcomes if o.value] == [
            f"answer {i}" for i in range(5)
        ]


async def test_each_invoke_batch_is_exactly_one_create(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(*(MessageReply(text="ok") for _ in range(5)))

    await runtime.invoke_batch([ask(), ask(), ask()])
    assert len(creates(stub)) == 1
    await runtime.invoke_batch([ask(), ask()])
    assert len(creates(stub)) == 2
    assert all(r.path.startswith(BATCHES) for r in stub.requests)  # no single invocations


async def test_item_params_are_exactly_what_invoke_sends(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    call = ToolCall(id="toolu_1", name="query_shop", input={"sql": "select 1"})
    request = InvocationRequest(
        messages=[
            Message.system("You answer questions."),
            Message.user("How many orders?"),
            Message.assistant("Let me look.", tool_calls=[call]),
            Message.tool_result("toolu_1", "42"),
        ],
        tools=[QUERY_TOOL],
        tool_choice=ToolChoice.tool("query_shop"),
        max_output_tokens=321,
        metadata={"turn": "turn-42"},
    )
    stub.enqueue(MessageReply(text="single"), MessageReply(text="batched"), MessageReply(text="b"))

    await runtime.invoke(request)
    await runtime.invoke_batch([request, ask("other")])

    single, create = stub.requests[0], creates(stub)[0]
    items = create.body["requests"]
    assert items[0]["params"] == single.body
    assert items[1]["params"] == {
        "model": "claude-test-alias",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "other"}]}],
    }
    assert "stream" not in items[0]["params"]
    assert b"turn-42" not in create.raw_body  # metadata stays with the caller
    assert create.headers["authorization"] == f"Bearer {API_KEY}"


async def test_prompt_caching_markers_reach_batch_items(
    stub: AnthropicStub, loopback_model_requests: None
) -> None:
    rt = fast_polling(
        AnthropicRuntime(api_key=API_KEY, base_url=stub.base_url, prompt_caching=True)
    )
    stub.enqueue(MessageReply(text="ok"))

    await rt.invoke_batch([ask("q", tools=[QUERY_TOOL])])
    await rt.aclose()

    params = creates(stub)[0].body["requests"][0]["params"]
    assert params["tools"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_polls_until_the_batch_has_ended(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.batch_in_progress_polls = 3
    stub.enqueue(MessageReply(text="done"))

    [outcome] = await runtime.invoke_batch([ask()])

    assert outcome.value is not None and outcome.value.output_text == "done"
    batch_id = only_batch_id(stub)
    batch = stub.batches[batch_id]
    assert batch.status == "ended" and not batch.cancel_requested
    # three answered in_progress, the fourth ended; the SDK's results() retrieves once more
    assert len(polls(stub, batch_id)) == 5
    paths = [r.path for r in stub.requests]
    assert paths.index(f"{BATCHES}/{batch_id}/results") == len(paths) - 1


@pytest.mark.parametrize(
    ("reply", "code", "retryable"),
    [
        (ErrorReply(status=400, message=LEAKY_BODY), "INVALID_REQUEST", False),
        (ErrorReply(status=401, message=LEAKY_BODY), "AUTHENTICATION_FAILED", False),
        (ErrorReply(status=404, message=LEAKY_BODY), "INVALID_REQUEST", False),
        (ErrorReply(status=429, message=LEAKY_BODY), "RATE_LIMITED", True),
        (ErrorReply(status=500, message=LEAKY_BODY), "PROVIDER_UNAVAILABLE", True),
        (ErrorReply(status=529, message=LEAKY_BODY), "PROVIDER_UNAVAILABLE", True),
        (ErrorReply(status=402, message=LEAKY_BODY), "RUNTIME_FAILURE", False),
        (
            ErrorReply(status=500, message=LEAKY_BODY, error_type="provider says: unheard_of"),
            "RUNTIME_FAILURE",
            False,
        ),
        (UnprocessedReply("canceled"), "ABORTED", False),
        (UnprocessedReply("expired"), "PROVIDER_UNAVAILABLE", True),
        (UnprocessedReply("missing"), "RUNTIME_FAILURE", False),
    ],
    ids=[
        "invalid",
        "auth",
        "not-found",
        "rate-limit",
        "api-error",
        "overloaded",
        "billing",
        "unknown-type",
        "canceled",
        "expired",
        "missing",
    ],
)
async def test_a_failed_item_is_classified_and_spares_its_siblings(
    runtime: AnthropicRuntime,
    stub: AnthropicStub,
    reply: ErrorReply | UnprocessedReply,
    code: str,
    retryable: bool,
) -> None:
    stub.enqueue(MessageReply(text="before"), reply, MessageReply(text="after"))

    before, failed, after = await runtime.invoke_batch([ask(), ask(), ask()])

    assert before.value is not None and before.value.output_text == "before"
    assert after.value is not None and after.value.output_text == "after"
    assert failed.status == "rejected" and failed.reason is not None
    assert (failed.reason.code, failed.reason.retryable) == (code, retryable)
    assert failed.reason.message
    assert_content_free(failed.reason.model_dump_json(), API_KEY)
    assert "unheard_of" not in failed.reason.message


# -- whole-batch failures --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (401, "AUTHENTICATION_FAILED", False),
        (400, "INVALID_REQUEST", False),
        (429, "RATE_LIMITED", True),
        (529, "PROVIDER_UNAVAILABLE", True),
    ],
)
async def test_a_refused_create_fails_the_whole_batch_without_provider_text(
    runtime: AnthropicRuntime, stub: AnthropicStub, status: int, code: str, retryable: bool
) -> None:
    stub.enqueue(MessageReply(text="never used"))
    stub.enqueue_batch_faults(ErrorReply(status=status, message=f"{LEAKY_BODY} {API_KEY}"))

    err = await batch_failure(runtime, [ask()])

    assert (err.code, err.retryable) == (code, retryable)
    assert_content_free(shown(err), API_KEY)
    assert stub.batches == {} and stub.pending == 1
    assert len(stub.requests) == 1  # max_retries=0: the SDK did not retry behind our back


async def test_a_transient_poll_failure_is_tolerated(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.batch_in_progress_polls = 1
    stub.enqueue(MessageReply(text="survived"))
    stub.enqueue_batch_faults(None, ErrorReply(status=529), DropConnection())

    [outcome] = await runtime.invoke_batch([ask()])

    assert outcome.value is not None and outcome.value.output_text == "survived"
    assert len(polls(stub, only_batch_id(stub))) == 5  # two failed, one in_progress, ended, SDK


async def test_a_hard_poll_failure_fails_the_batch_and_cancels_it(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.batch_in_progress_polls = 100
    stub.enqueue(MessageReply(text="unused"))
    stub.enqueue_batch_faults(None, ErrorReply(status=403, message=f"{LEAKY_BODY} {API_KEY}"))

    err = await batch_failure(runtime, [ask()])

    assert (err.code, err.retryable) == ("AUTHENTICATION_FAILED", False)
    assert_content_free(shown(err), API_KEY)
    batch_id = only_batch_id(stub)
    assert len(cancels(stub, batch_id)) == 1
    assert stub.batches[batch_id].cancel_requested


async def test_polling_gives_up_after_too_many_transient_failures(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    runtime.batch_poll_max_failures = 2
    stub.batch_in_progress_polls = 100
    stub.enqueue(MessageReply(text="unused"))
    stub.enqueue_batch_faults(None, ErrorReply(status=503), ErrorReply(status=503))

    err = await batch_failure(runtime, [ask()])

    assert (err.code, err.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert len(cancels(stub, only_batch_id(stub))) == 1


async def test_empty_and_oversized_batches_are_refused_before_any_request(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    empty = await batch_failure(runtime, [])
    oversized = await batch_failure(runtime, [ask()] * (MAX_BATCH_REQUESTS + 1))

    assert (empty.code, empty.retryable) == ("INVALID_REQUEST", False)
    assert (oversized.code, oversized.retryable) == ("INVALID_REQUEST", False)
    assert str(MAX_BATCH_REQUESTS) in oversized.message
    assert stub.requests == []


# -- abort and timeout -----------------------------------------------------------------------


def abort_when(stub: AnthropicStub, signal: AbortSignal, requests: int) -> threading.Thread:
    def run() -> None:
        assert stub.wait_for_requests(requests)
        signal.abort("user pressed stop")

    thread = threading.Thread(target=run)
    thread.start()
    return thread


async def test_abort_mid_poll_cancels_the_batch(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.batch_in_progress_polls = 10_000
    stub.enqueue(MessageReply(text="never"), MessageReply(text="never"))
    signal = AbortSignal()
    aborter = abort_when(stub, signal, 3)  # the create and two polls

    started = time.perf_counter()
    err = await batch_failure(runtime, [ask(), ask()], abort=signal)
    aborter.join()

    assert (err.code, err.retryable) == ("ABORTED", False)
    assert time.perf_counter() - started < 3
    batch_id = only_batch_id(stub)
    assert len(cancels(stub, batch_id)) == 1
    assert stub.batches[batch_id].status == "canceling"


async def test_abort_while_the_create_is_in_flight_still_cancels_the_batch(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(MessageReply(text="never"))
    stub.enqueue_batch_faults(Delay(0.5))  # the create answers late
    signal = AbortSignal()
    aborter = abort_when(stub, signal, 1)

    err = await batch_failure(runtime, [ask()], abort=signal)
    aborter.join()

    assert (err.code, err.retryable) == ("ABORTED", False)
    batch_id = only_batch_id(stub)
    assert len(cancels(stub, batch_id)) == 1
    assert stub.batches[batch_id].cancel_requested
    assert polls(stub, batch_id) == []


async def test_an_aborted_signal_refuses_before_any_request(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    signal = AbortSignal()
    signal.abort()

    err = await batch_failure(runtime, [ask()], abort=signal)

    assert (err.code, err.retryable) == ("ABORTED", False)
    assert stub.requests == []


async def test_timeout_cancels_the_batch(runtime: AnthropicRuntime, stub: AnthropicStub) -> None:
    stub.batch_in_progress_polls = 10_000
    stub.enqueue(MessageReply(text="never"))

    started = time.perf_counter()
    err = await batch_failure(runtime, [ask()], timeout=0.3)

    assert (err.code, err.retryable) == ("PROVIDER_UNAVAILABLE", True)
    assert time.perf_counter() - started < 3
    assert len(cancels(stub, only_batch_id(stub))) == 1


async def test_a_failed_cancel_does_not_hide_the_abort(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.batch_in_progress_polls = 10_000
    stub.enqueue(MessageReply(text="never"))
    signal = AbortSignal()
    aborter = abort_when(stub, signal, 2)
    # create and first poll served; every later call (polls, the cancel) fails
    stub.enqueue_batch_faults(None, None, *([ErrorReply(status=500, message=LEAKY_BODY)] * 50))

    err = await batch_failure(runtime, [ask()], abort=signal)
    aborter.join()

    assert (err.code, err.retryable) == ("ABORTED", False)
    assert_content_free(shown(err), API_KEY)


# -- the switch and credentials --------------------------------------------------------------


async def test_default_test_scope_blocks_the_batch(stub: AnthropicStub) -> None:
    rt = AnthropicRuntime(api_key=API_KEY, base_url=stub.base_url)
    stub.enqueue(MessageReply(text="must not be served"))

    with pytest.raises(ModelRequestsBlocked):
        await rt.invoke_batch([ask()])

    assert stub.requests == []


async def test_a_results_url_off_loopback_is_refused(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.results_base_url = "https://results.example.com"
    stub.enqueue(MessageReply(text="ok"))

    with pytest.raises(ModelRequestsBlocked):
        await runtime.invoke_batch([ask()])

    assert not any(r.path.endswith("/results") for r in stub.requests)


async def test_a_results_url_on_another_server_is_refused(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    """Loopback passes the switch, but 127.0.0.2 is not the server the key is for."""
    stub.results_base_url = stub.base_url.replace("127.0.0.1", "127.0.0.2")
    stub.enqueue(MessageReply(text="ok"))

    err = await batch_failure(runtime, [ask()])

    assert (err.code, err.retryable) == ("RUNTIME_FAILURE", False)
    assert "another server" in err.message
    assert not any(r.path.endswith("/results") for r in stub.requests)


async def test_missing_key_fails_before_any_request(
    stub: AnthropicStub, loopback_model_requests: None
) -> None:
    rt = AnthropicRuntime(base_url=stub.base_url)

    err = await batch_failure(rt, [ask()])

    assert (err.code, err.retryable) == ("AUTHENTICATION_FAILED", False)
    assert stub.requests == []


# -- conformance -----------------------------------------------------------------------------


async def test_batch_conformance_passes_with_mixed_outcomes(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(
        MessageReply(text="ok"),
        ErrorReply(status=529, message=f"{LEAKY_BODY} {API_KEY}"),
        MessageReply(text="ok"),
    )

    report = await check_batch_conformance(
        runtime, [ask("a"), ask("b"), ask("c")], require_mixed_outcomes=True, timeout=30
    )

    assert report.passed, report.failures
    assert (report.requested, report.returned, report.fulfilled, report.rejected) == (3, 3, 2, 1)
    assert "mixed_outcomes" in {c.name for c in report.checks}
    assert_content_free(report.model_dump_json(), API_KEY)


async def test_runtime_conformance_accepts_the_batch_declaration(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(MessageReply(text="ok"))

    report = await check_runtime_conformance(runtime)

    assert report.passed, report.failures


async def test_the_runtime_still_invokes_after_a_batch(
    runtime: AnthropicRuntime, stub: AnthropicStub
) -> None:
    stub.enqueue(MessageReply(text="batched"), MessageReply(text="single"))

    await runtime.invoke_batch([ask()])
    result = await runtime.invoke(ask())

    assert result.output_text == "single"
