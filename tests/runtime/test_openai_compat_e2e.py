"""``openai:`` / ``openai-compatible:`` profiles, conformance, and whole turns end to end.

The end-to-end tests go all the way: a profile string in ``Relay(model=...)`` or a
``%relay --model`` line, the agent loop, the real ``openai`` SDK, the local Chat Completions
stub, and a real SQLite shop database. The stub's second reply is computed from the tool
result the SDK actually sent, so the answer proves the query ran and its rows crossed the
wire — nothing in an assertion is a number the test wrote itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from relay_nb import Relay, ScriptedRuntime
from relay_nb.errors import ConfigurationError
from relay_nb.runtime.conformance import check_runtime_conformance
from relay_nb.runtime.openai_compat import OpenAICompatibleRuntime
from relay_nb.runtime.profiles import runtime_from_profile
from relay_nb.testing.openai_stub import (
    STUB_MODEL,
    ChatReply,
    FunctionCall,
    OpenAIStub,
    RecordedRequest,
)
from relay_nb.testing.seed import expected_rows, seed_database

COUNT = "SELECT COUNT(*) AS n FROM products"
PRODUCTS = len(expected_rows("products"))


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RELAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


@pytest.fixture(scope="module")
def shop_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('openai_shop') / 'shop.sqlite'}"
    seed_database(url)
    return url


# -- profiles --------------------------------------------------------------------------------


def test_openai_profile() -> None:
    runtime = runtime_from_profile("openai:gpt-4.1-mini", timeout=30)
    assert isinstance(runtime, OpenAICompatibleRuntime)
    assert (runtime.id, runtime.provider, runtime.timeout) == ("openai:gpt-4.1-mini", "openai", 30)
    assert runtime.api_key_env == "OPENAI_API_KEY"


def test_compatible_profile_carries_its_options_in_the_url_query() -> None:
    runtime = runtime_from_profile(
        "openai-compatible:hf.co/org/Model-GGUF:Q4_K_M@http://127.0.0.1:11434/v1"
        "?tools=false&stream=off&structured_output=json_schema&key_env=OLLAMA_KEY"
        "&max_tokens_param=max_completion_tokens&timeout=30&max_retries=2"
    )
    assert isinstance(runtime, OpenAICompatibleRuntime)
    assert runtime.model == "hf.co/org/Model-GGUF:Q4_K_M"  # ':' and '/' belong to the model
    assert runtime.base_url == "http://127.0.0.1:11434/v1"  # the query is options, not URL
    assert (runtime.tools, runtime.stream, runtime.structured_output) == (
        False,
        False,
        "json_schema",
    )
    assert (runtime.api_key_env, runtime.max_tokens_param) == (
        "OLLAMA_KEY",
        "max_completion_tokens",
    )
    assert (runtime.timeout, runtime.max_retries) == (30.0, 2)
    plain = runtime_from_profile("openai-compatible:llama3.2@https://llm.internal/v1", tools=False)
    assert (plain.tools, plain.api_key_env, plain.provider) == (False, None, "openai-compatible")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("profile", "fragment"),
    [
        ("openai-compatible:llama3.2", "has no @URL"),
        ("openai-compatible:@http://127.0.0.1:1/v1", "has no @URL"),
        ("openai-compatible:m@ftp://127.0.0.1/v1", "has no @URL"),
        ("openai-compatible:m@http://127.0.0.1:1/v1?tools=maybe", "must be true or false"),
        ("openai-compatible:m@http://127.0.0.1:1/v1?temperature=0", "unknown openai-compatible"),
        ("openai-compatible:m@http://127.0.0.1:1/v1?timeout=soon", "must be seconds"),
        ("openai-compatible:m@http://127.0.0.1:1/v1?max_retries=-1", "whole number"),
        ("openai-compatible:m@http://127.0.0.1:1/v1?stream", "name=value pairs"),
        ("openai-compatible:m@http://127.0.0.1:1/v1?structured_output=xml", "one of json_object"),
        ("openai:gpt 4", "without spaces"),
    ],
)
def test_bad_openai_profiles_say_the_fix(profile: str, fragment: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        runtime_from_profile(profile)
    assert fragment in str(info.value)


def test_an_option_given_twice_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="given twice"):
        runtime_from_profile("openai-compatible:m@http://127.0.0.1:1/v1?tools=false", tools=True)


def test_the_profile_forms_are_listed_in_errors() -> None:
    with pytest.raises(ConfigurationError) as info:
        runtime_from_profile("gemini:pro")
    assert "openai:MODEL" in str(info.value) and "openai-compatible:MODEL@URL" in str(info.value)


# -- conformance -----------------------------------------------------------------------------


@pytest.mark.usefixtures("loopback_model_requests")
@pytest.mark.parametrize("options", ["", "?tools=false", "?stream=false"])
async def test_the_runtime_conforms(stub: OpenAIStub, options: str) -> None:
    runtime = runtime_from_profile(f"openai-compatible:llama-test@{stub.base_url}{options}")
    stub.enqueue(ChatReply(text="conformance-probe-answer"))

    report = await check_runtime_conformance(runtime)
    await runtime.aclose()  # type: ignore[attr-defined]

    assert report.passed, report.failures
    assert report.runtime_id == f"openai-compatible:llama-test@{stub.base_url}"
    assert "conformance-probe-answer" not in report.model_dump_json()
    assert len(stub.requests) == 1


# -- whole turns -----------------------------------------------------------------------------


def _tool_result(request: RecordedRequest) -> str:
    """The last tool result the client sent, as a native (role tool) or prompted message."""
    last = request.body["messages"][-1]
    if last["role"] == "tool":
        return last["content"]
    assert last["role"] == "user" and last["content"].startswith("Tool result:\n")
    return last["content"].removeprefix("Tool result:\n")


def _count_from(result: str) -> int:
    """The count in the connector's preview of a one-cell result (header, type, then rows)."""
    return int(result.strip().splitlines()[-1])


def _answer_from_tool_result(request: RecordedRequest) -> ChatReply:
    return ChatReply(text=f"We sell {_count_from(_tool_result(request))} products.")


def test_relay_answers_a_sql_question_through_a_compatible_endpoint(
    stub: OpenAIStub, shop_url: str, loopback_model_requests: None
) -> None:
    relay = Relay(model=f"openai-compatible:some-model@{stub.base_url}", ledger=False)
    relay.connect("shop", shop_url)
    stub.enqueue(
        ChatReply(
            tool_calls=[FunctionCall(id="call_q1", name="query_shop", arguments={"sql": COUNT})],
            prompt_tokens=500,
            completion_tokens=20,
        ),
        lambda request: ChatReply(
            text=[f"We sell {_count_from(_tool_result(request))} ", "products."],
            prompt_tokens=560,
            cached_tokens=500,
            completion_tokens=8,
        ),
    )

    turn = relay.ask("how many products do we sell?")
    relay.close()

    assert turn.finish_reason == "stop", turn.events
    assert turn.answer == f"We sell {PRODUCTS} products."
    assert int(turn.df.iloc[0]["n"]) == PRODUCTS
    assert turn.queries == [f"{COUNT} LIMIT 201"]
    assert turn.model == STUB_MODEL  # the served model, as the server reported it
    usage = turn.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (560, 500, 28)
    assert any(w.startswith(f"no price for model {STUB_MODEL!r}") for w in turn.warnings)
    deltas = [e.delta for e in turn.events if e.type == "text_delta"]
    assert deltas == [f"We sell {PRODUCTS} ", "products."]  # streamed, as the loop asked
    first, second = (r.body for r in stub.requests)
    assert first["stream"] is True and first["tool_choice"] == "auto"
    assert {t["function"]["name"] for t in first["tools"]} >= {"query_shop"}
    call, result = second["messages"][-2:]
    assert call["tool_calls"][0]["id"] == result["tool_call_id"] == "call_q1"
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {"sql": COUNT}


def test_a_model_without_tool_support_is_driven_through_one_forced_tool(
    stub: OpenAIStub, shop_url: str, loopback_model_requests: None
) -> None:
    """tools=False declares single_forced_tool_only, so the loop adapts as for the CLI
    harness: every step forces ``next_step``, answered here as a JSON object."""
    relay = Relay(model=f"openai-compatible:tiny@{stub.base_url}?tools=false", ledger=False)
    relay.connect("shop", shop_url)
    stub.enqueue(
        ChatReply(text=json.dumps({"tool": "query_shop", "input": {"sql": COUNT}})),
        lambda request: ChatReply(
            text=json.dumps({"answer": f"We sell {_count_from(_tool_result(request))} products."})
        ),
    )

    turn = relay.ask("how many products do we sell?")
    relay.close()

    assert turn.finish_reason == "stop", turn.events
    assert turn.answer == f"We sell {PRODUCTS} products."
    assert turn.queries == [f"{COUNT} LIMIT 201"]
    assert [e.type for e in turn.events].count("text_delta") == 0  # JSON is not an answer
    for sent in stub.requests:
        body = sent.body
        assert "tools" not in body and "tool_choice" not in body and "stream" not in body
        assert body["response_format"] == {"type": "json_object"}
        assert "next_step" in body["messages"][0]["content"]  # the forced tool's instructions
        assert "query_shop" in body["messages"][0]["content"]  # the real tools, described
        assert all(m["role"] in ("system", "user", "assistant") for m in body["messages"])
    replayed = stub.requests[1].body["messages"][-2]
    assert replayed == {
        "role": "assistant",
        "content": json.dumps({"tool": "query_shop", "input": {"sql": COUNT}}),
    }


def test_a_malformed_forced_step_goes_back_to_the_model_to_correct(
    stub: OpenAIStub, shop_url: str, loopback_model_requests: None
) -> None:
    relay = Relay(model=f"openai-compatible:tiny@{stub.base_url}?tools=false", ledger=False)
    relay.connect("shop", shop_url)
    stub.enqueue(
        ChatReply(text=json.dumps({"tool": "drop_tables", "input": {}})),
        ChatReply(text=json.dumps({"tool": "query_shop", "input": {"sql": COUNT}})),
        lambda request: ChatReply(
            text=json.dumps({"answer": f"We sell {_count_from(_tool_result(request))} products."})
        ),
    )

    turn = relay.ask("how many products?")
    relay.close()

    assert turn.answer == f"We sell {PRODUCTS} products."
    correction = stub.requests[1].body["messages"][-1]
    assert correction["role"] == "user" and correction["content"].startswith("Tool error:")
    assert "unknown tool 'drop_tables'" in correction["content"]


# -- the notebook magic ----------------------------------------------------------------------


@pytest.fixture
def shell_with_default_session(shop_url: str) -> Iterator[tuple[Any, ScriptedRuntime]]:
    """The kernel's default session on a scripted model that must not be asked anything."""
    from relay_nb.facade import default as facade
    from relay_nb.testing.shell import TestingShell

    shell = TestingShell()
    default_model = ScriptedRuntime(model="claude-haiku-4-5")
    session = Relay(default_model, ledger=False)
    session.connect("shop", shop_url)
    previous, facade._default = facade._default, session
    magics = shell.ip.magics_manager.registry["RelayMagics"]
    for name, trait in magics.traits(config=True).items():
        setattr(magics, name, trait.default())
    yield shell, default_model
    facade._default = previous
    session.close()


@pytest.mark.parametrize("spelled", ["literally", "as a notebook variable"])
def test_relay_magic_with_a_compatible_model(
    spelled: str,
    stub: OpenAIStub,
    shell_with_default_session: tuple[Any, ScriptedRuntime],
    loopback_model_requests: None,
) -> None:
    shell, default_model = shell_with_default_session
    stub.enqueue(
        ChatReply(tool_calls=[FunctionCall(name="query_shop", arguments={"sql": COUNT})]),
        _answer_from_tool_result,
    )
    profile = f"openai-compatible:some-model@{stub.base_url}"
    shell.ip.user_ns["local_model"] = profile  # a stub's port is only known at run time

    option = profile if spelled == "literally" else "{local_model}"
    run = shell.run(f"%relay --model {option} how many products?")

    assert run.result.answer == f"We sell {PRODUCTS} products."
    (text,) = run.texts
    assert text.splitlines()[0] == "Q: how many products?"
    assert f"{COUNT}\n" in text and "LIMIT" not in text  # as the model wrote it
    assert default_model.requests == []  # the --model runtime answered, not the default one
    assert [r.body["model"] for r in stub.requests] == ["some-model", "some-model"]
