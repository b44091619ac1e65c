"""The real Codex CLI, at the release ``scripts/setup`` pins (``TESTED``), driven through
relay_nb's ``CodexCLIRuntime`` against a local Responses API (``stub_responses.py``): the
lockdown as the CLI really applies it (the tools it offers the model), a text answer and
its usage, a whole Relay turn with a query, failures classified within seconds, and
nothing of the CLI's text in an error. Slow (the CLI starts a process per call)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stub_responses import Reply, ResponsesStub

from relay_nb.errors import InvocationError
from relay_nb.runtime.codex_cli import TESTED, CodexCLIRuntime
from relay_nb.runtime.switch import add_stub_directory
from relay_nb.runtime.types import InvocationRequest, Message

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
CODEX = ROOT / ".clis" / "node_modules" / ".bin" / "codex"
KEY = "sk-stub-NOT-A-REAL-KEY-0123456789"
ALLOWED_TOOLS = {"request_user_input", "get_goal", "create_goal", "update_goal"}
"""The function tools this release offers the model with relay_nb's lockdown: none runs a
command, edits a file, browses, or reaches an MCP server (shell, exec_command,
apply_patch, web_search, view_image ... are gone). A new one fails the test until read."""


@pytest.fixture(scope="module")
def codex() -> str:
    if not CODEX.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CODEX} is missing: run scripts/setup (it installs {TESTED})")
        pytest.skip(f"no {CODEX}: run scripts/setup")
    # the pinned release may run in the "loopback" scope: every call below names a model
    # provider at the stub on 127.0.0.1 (and this machine reaches no model service)
    add_stub_directory(CODEX.parents[2])
    return str(CODEX)


@pytest.fixture
def stub(loopback_model_requests) -> Iterator[ResponsesStub]:
    with ResponsesStub() as stub:
        yield stub


def runtime(
    codex: str, stub: ResponsesStub, home: Path, *, retries: bool = True, **options
) -> CodexCLIRuntime:
    """The runtime with a model provider at the stub (``extra_args`` may define one);
    ``retries=False`` switches the CLI's own retries off for it."""
    home.mkdir(exist_ok=True)
    provider = {
        "model_provider": '"stub"',
        "model_providers.stub.name": '"stub"',
        "model_providers.stub.base_url": json.dumps(stub.base_url),
        "model_providers.stub.wire_api": '"responses"',
        "model_providers.stub.env_key": '"STUB_OPENAI_KEY"',
    }
    if not retries:
        provider["model_providers.stub.request_max_retries"] = "0"
        provider["model_providers.stub.stream_max_retries"] = "0"
    args = [arg for key, value in provider.items() for arg in ("-c", f"{key}={value}")]
    env = {"STUB_OPENAI_KEY": KEY, "CODEX_HOME": str(home)}
    return CodexCLIRuntime("gpt-5", executable=codex, extra_args=args, env=env, **options)


def ask(text: str = "Say hello") -> InvocationRequest:
    return InvocationRequest(
        messages=[Message(role="system", content="Be terse."), Message(role="user", content=text)]
    )


def test_the_release_runs_locked_down_and_reports_usage(
    codex: str, stub: ResponsesStub, tmp_path: Path
) -> None:
    import asyncio

    stub.queue(Reply(text="Hello from the stub."))
    result = asyncio.run(runtime(codex, stub, tmp_path / "home").invoke(ask()))

    assert result.output_text == "Hello from the stub."
    assert result.model_source == "configured" and result.usage.cost_usd is None
    # the Responses usage: 100 input tokens of which 40 cached, 7 output
    assert (result.usage.input_tokens, result.usage.cache_read_tokens) == (60, 40)
    assert result.usage.output_tokens == 7
    assert result.warnings == []  # no deprecation noise from relay_nb's own overrides
    (request,) = stub.requests
    offered = {tool.get("name") or tool.get("type") for tool in request.get("tools", [])}
    assert offered <= ALLOWED_TOOLS, offered - ALLOWED_TOOLS
    prompt = json.dumps(request["input"])
    assert "Say hello" in prompt and "Be terse." in prompt


def test_a_relay_turn_queries_and_answers_through_the_release(
    codex: str, stub: ResponsesStub, tmp_path: Path
) -> None:
    """The forced ``next_step`` tool travels as a strict output schema; the model's JSON
    comes back as the query, then the answer."""
    import pandas as pd

    from relay_nb import Relay

    sql = "SELECT SUM(amount) AS total FROM sales"
    stub.queue(
        Reply(text=json.dumps({"tool": "query_sales", "input": json.dumps({"sql": sql})})),
        Reply(text=json.dumps({"answer": "Total sales are 60."})),
    )
    relay = Relay(runtime(codex, stub, tmp_path / "home"), ledger=False)
    try:
        relay.connect("sales", pd.DataFrame({"region": ["n", "s", "e"], "amount": [10, 20, 30]}))
        turn = relay.ask("total sales?")
    finally:
        relay.close()
    assert turn.answer == "Total sales are 60."
    assert int(turn.df.iloc[0]["total"]) == 60
    first = stub.requests[0]
    schema = first["text"]["format"]
    assert schema["type"] == "json_schema" and schema["strict"] is True
    assert "query_sales" in json.dumps(first["input"])  # the connector's tool, in the prompt


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (401, "AUTHENTICATION_FAILED", False),
        (429, "RATE_LIMITED", True),
        (500, "PROVIDER_UNAVAILABLE", True),
        (503, "PROVIDER_UNAVAILABLE", True),
    ],
)
def test_a_failing_service_is_classified_within_seconds(
    codex: str, stub: ResponsesStub, tmp_path: Path, status: int, code: str, retryable: bool
) -> None:
    """With the CLI's own retries off for the provider (relay_nb's loop retries what is
    retryable), each class comes back in about a second, and right; with them on, still
    right, after the CLI's own backoff (the built-in OpenAI provider's retries cannot be
    switched off: relay_nb's timeout bounds them)."""
    import asyncio

    stub.otherwise = Reply(status=status)
    for retries, within in ((False, 10), (True, 60)):
        stub.requests.clear()
        started = time.monotonic()
        codex_runtime = runtime(codex, stub, tmp_path / "home", retries=retries, timeout=120)
        with pytest.raises(InvocationError) as info:
            asyncio.run(codex_runtime.invoke(ask()))
        took = time.monotonic() - started
        assert (info.value.code, info.value.retryable) == (code, retryable), str(info.value)
        assert KEY not in str(info.value) and "stub status" not in str(info.value)
        assert took < within, f"classified after {took:.0f} s ({len(stub.requests)} requests)"
        if not retries:
            assert len(stub.requests) == 1


def test_a_service_that_never_answers_ends_at_relay_nb_s_timeout(
    codex: str, stub: ResponsesStub, tmp_path: Path
) -> None:
    import asyncio

    stub.otherwise = Reply(hang=60)
    started = time.monotonic()
    with pytest.raises(InvocationError) as info:
        asyncio.run(runtime(codex, stub, tmp_path / "home", timeout=5).invoke(ask()))
    assert info.value.code == "PROVIDER_UNAVAILABLE" and info.value.retryable, str(info.value)
    assert "no answer from codex within 5 s" in str(info.value)
    assert time.monotonic() - started < 15
