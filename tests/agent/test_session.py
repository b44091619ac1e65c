"""Session: history, skills and routing, results by reference, compaction, caps, ledger,
streaming and ask_many — scripted model, real SQLite database, real ledger file."""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path

import pytest

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.caps import UsageCaps
from relay_nb.agent.events import Event
from relay_nb.agent.ledger import UsageLedger
from relay_nb.agent.pricing import PriceTable
from relay_nb.agent.session import Session
from relay_nb.agent.skills import Skill
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import ConfigurationError
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import InvocationRequest, ToolResultPart, Usage

PRICES = PriceTable.load().with_prices({"scripted": {"input": 3, "output": 15}})


def session(
    runtime: ScriptedRuntime, shop: SQLConnector, *, accountant: Accountant | None = None, **options
) -> Session:
    """A session on the shop, billed at the test prices unless ``accountant`` says otherwise."""
    return Session(
        runtime, connectors=[shop], accountant=accountant or Accountant(prices=PRICES), **options
    )


def query(sql: str, call_id: str = "c1") -> dict:
    return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}, "id": call_id}]}


# -- history ------------------------------------------------------------------------------------


async def test_second_question_sees_the_first_turn_including_tool_calls(
    shop: SQLConnector,
) -> None:
    runtime = ScriptedRuntime(
        [query("SELECT COUNT(*) AS n FROM products"), {"text": "20 products"}, {"text": "yes"}]
    )
    s = session(runtime, shop)
    first = await s.ask_async("how many products?")
    second = await s.ask_async("is that a lot?")
    assert (first.answer, second.answer) == ("20 products", "yes")
    sent = runtime.requests[2].messages
    roles = [m.role for m in sent]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[1].text() == "how many products?" and sent[-1].text() == "is that a lot?"
    assert len(s.history) == 6 and len(s.turns) == 2
    assert s.usage.total_tokens == first.usage.total_tokens + second.usage.total_tokens
    assert s.usage.cost_usd == pytest.approx(first.usage.cost_usd + second.usage.cost_usd)
    s.reset()
    assert len(s.history) == 0 and s.turns == [] and s.usage.total_tokens > 0


async def test_large_results_are_kept_by_reference_in_the_history(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime(
        [query("SELECT * FROM customers"), {"text": "here they are"}, {"text": "ok"}]
    )
    s = session(runtime, shop, inline_result_chars=500)
    first = await s.ask_async("list customers")
    full = first.tool_results[0].content
    assert len(full) > 500  # the turn itself saw the whole preview
    await s.ask_async("thanks")
    (part,) = [
        p for m in runtime.requests[2].messages for p in m.parts() if isinstance(p, ToolResultPart)
    ]
    assert "kept whole as result r1" in part.content and len(part.content) < len(full)
    assert part.content.startswith(full[:200])
    stored = s.results["r1"]
    assert stored.content == full and len(stored.artifact.df) == 50


async def test_questions_on_one_session_run_one_at_a_time(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime([{"text": "a"}, {"text": "b"}])
    s = session(runtime, shop)
    await asyncio.gather(s.ask_async("one"), s.ask_async("two"))
    second_request = runtime.requests[1].messages
    assert [m.role for m in second_request] == ["system", "user", "assistant", "user"]


# -- compaction ---------------------------------------------------------------------------------


def _chatty(turns: int) -> list[dict]:
    return [{"text": f"answer {i}: " + "blah " * 1000} for i in range(turns)]


async def test_history_is_compacted_by_the_model_when_over_budget(shop: SQLConnector) -> None:
    notes = "- the analyst asked questions 0 and 1; answers were long"
    runtime = ScriptedRuntime([*_chatty(3), {"text": notes}])
    s = session(runtime, shop, settings={"context_window": 8_000})  # history budget 3,000 tokens
    budget = s.budget.history
    for i in range(2):
        await s.ask_async(f"question {i}")
    assert s.history.compactions == 0 and s.history.tokens() <= budget
    await s.ask_async("question 2")  # ~3,750 tokens of history: over budget
    assert s.history.compactions == 1 and runtime.remaining == 0
    assert s.history.memory == "- the analyst asked questions 0 and 1; answers were long"
    assert s.history.tokens() <= budget
    assert s.compaction_usage.total_tokens and s.usage.total_tokens > sum(
        t.usage.total_tokens for t in s.turns
    )
    summary_request = runtime.requests[-1]
    assert "compact the earlier part" in summary_request.system_text()
    assert "question 0" in summary_request.messages[-1].text()
    runtime.add({"text": "fine"})
    await s.ask_async("next")
    system = runtime.requests[-1].system_text()
    assert 'source="memory"' in system and "questions 0 and 1" in system
    assert runtime.requests[-1].messages[1].text() != "question 0"  # dropped from history


async def test_compaction_falls_back_to_a_digest_when_the_model_fails(shop: SQLConnector) -> None:
    failure = {"error": {"code": "RUNTIME_FAILURE", "message": "no summary today"}}
    runtime = ScriptedRuntime([*_chatty(3), failure])
    s = session(runtime, shop, settings={"context_window": 8_000})
    for i in range(3):
        await s.ask_async(f"question {i}")
    assert s.history.compactions == 1 and runtime.remaining == 0
    memory = s.history.memory or ""
    assert memory.startswith("- Q: question 0") and "A: answer 0" in memory
    assert s.history.tokens() <= s.budget.history


async def test_compaction_never_splits_a_tool_call_from_its_result(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime()
    s = session(runtime, shop, compact_with_model=False, settings={"context_window": 4_000})
    for i in range(6):
        runtime.add(query(f"SELECT {i} AS i, name FROM customers LIMIT 20", f"c{i}"))
        runtime.add({"text": f"answer {i}"})
        await s.ask_async(f"question {i}")
    assert s.history.compactions >= 1
    first = s.history.messages[0]
    assert first.role == "user" and first.text().startswith("question ")
    calls = [p.id for m in s.history.messages for p in m.parts() if p.type == "tool-call"]
    results = [
        p.tool_call_id for m in s.history.messages for p in m.parts() if p.type == "tool-result"
    ]
    assert calls == results and calls == [f"c{i}" for i in range(6 - len(calls), 6)]
    kept_questions = [m.text() for m in s.history.messages if m.role == "user"]
    assert kept_questions == [f"question {i}" for i in range(6 - len(kept_questions), 6)]
    assert "ran query_shop: SELECT 0 AS i" in (s.history.memory or "")


# -- skills and routing -------------------------------------------------------------------------


async def test_skill_tier_routes_the_model_and_limits_the_tools(
    shop: SQLConnector, shop_db: Path
) -> None:
    built: dict[str, ScriptedRuntime] = {}

    def factory(model_id: str) -> ScriptedRuntime:
        built[model_id] = ScriptedRuntime([{"text": f"from {model_id}"}], model=model_id)
        return built[model_id]

    other = SQLConnector("archive", f"sqlite:///{shop_db}")
    s = Session(factory, connectors=[shop, other], routes={"best": "opus-x"})
    s.add_skill(
        Skill(
            name="deep",
            description="hard questions",
            prompt="Think about revenue carefully.",
            connectors=("archive",),
            tier="best",
            examples=("What drove Q3 revenue?",),
        )
    )
    result = await s.ask_async("why?", {"skills": "deep"})
    assert result.answer == "from opus-x" and list(built) == ["opus-x"]
    request = built["opus-x"].requests[0]
    assert {t.name for t in request.tools} == {"query_archive", "describe_archive", "chart"}
    system = request.system_text()
    assert "# Skills\n\n## deep\nThink about revenue carefully." in system
    assert "- What drove Q3 revenue?" in system
    connectors = system.index("# Connectors")
    assert 'source="schema:archive"' in system[connectors:]
    assert "schema:shop" not in system  # only the active skill's connector
    await s.aclose()


def test_skill_with_unknown_connector_is_refused_at_registration(shop: SQLConnector) -> None:
    s = session(ScriptedRuntime(), shop)
    with pytest.raises(ConfigurationError, match=r"unknown connector 'shpo'.*did you mean 'shop'"):
        s.add_skill(Skill(name="x", description="d", prompt="p", connectors=("shpo",)))
    s.add_skill(Skill(name="x", description="d", prompt="p", connectors=("shop",)))
    s.remove_connector("shop", close=False)
    assert "x" not in s.skills and "shop" not in s.connectors


def test_duplicate_tool_names_are_refused(shop: SQLConnector) -> None:
    s = session(ScriptedRuntime(), shop)

    def query_shop(sql: str) -> str:
        """Shadows the connector's tool."""
        return sql

    with pytest.raises(ConfigurationError, match="already registered"):
        s.add_tool(query_shop)


# -- caps, ledger, report -----------------------------------------------------------------------


async def test_session_cost_cap_stops_a_later_turn_cleanly(shop: SQLConnector) -> None:
    usage = Usage(input_tokens=10_000, output_tokens=1_000)  # $0.045 at the test prices
    runtime = ScriptedRuntime([{"text": "a", "usage": usage}, {"text": "b", "usage": usage}])
    s = session(
        runtime,
        shop,
        settings={"max_output_tokens": 500},
        accountant=Accountant(prices=PRICES, caps=UsageCaps(max_cost_usd=0.05)),
    )
    first = await s.ask_async("one")
    second = await s.ask_async("two")
    assert first.finish_reason == "stop" and second.finish_reason == "usage_cap"
    assert len(runtime.requests) == 1
    assert any("session" in w and "cap" in w for w in second.warnings)
    assert s.usage.cost_usd == pytest.approx(0.045)


async def test_ledger_rows_and_usage_report(shop: SQLConnector, tmp_path: Path) -> None:
    runtime = ScriptedRuntime([query("SELECT COUNT(*) AS n FROM orders"), {"text": "n"}])
    s = session(
        runtime,
        shop,
        accountant=Accountant(
            prices=PRICES, ledger=UsageLedger(tmp_path / "usage.sqlite"), notebook="churn.ipynb"
        ),
    )
    result = await s.ask_async("how many orders?")
    rows = s.accountant.ledger.rows(session_id=s.id)
    assert list(rows["turn_id"]) == [result.turn_id] * 2 and list(rows["step"]) == [1, 2]
    assert set(rows["notebook"]) == {"churn.ipynb"} and rows["cost_usd"].notna().all()
    report = s.usage_report()
    assert list(report.columns[:3]) == ["day", "model", "notebook"]
    assert int(report["calls"].sum()) == 2
    assert report["cost_usd"].sum() == pytest.approx(result.usage.cost_usd)
    await s.aclose()


def test_the_engine_records_nothing_unless_given_a_ledger(shop: SQLConnector) -> None:
    """The default ledger file is Relay's choice (tests/facade); the engine's default
    accountant keeps none, so a test or a tool building one writes nothing to disk."""
    s = Session(ScriptedRuntime([{"text": "x"}]), connectors=[shop])
    assert s.accountant.ledger is None
    with pytest.raises(ConfigurationError, match="keeps no ledger"):
        s.usage_report()


# -- streaming ----------------------------------------------------------------------------------


async def test_the_engine_is_async_only(shop: SQLConnector) -> None:
    """The synchronous ask is Relay's (it works inside a running loop); the engine has none."""
    s = session(ScriptedRuntime([{"text": "x"}]), shop)
    assert not hasattr(s, "ask")


async def test_stream_yields_the_turns_events_in_order(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime([query("SELECT COUNT(*) AS n FROM products"), {"text": "20"}])
    s = session(runtime, shop)
    seen: list[Event] = [event async for event in s.stream("how many?")]
    assert seen == s.turns[-1].events
    assert seen[-1].type == "done" and seen[0].type == "thinking"


async def test_leaving_a_stream_early_cancels_the_turn(shop: SQLConnector) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
    runtime = ScriptedRuntime([query(endless), {"text": "unused"}])
    s = session(runtime, shop)
    async with contextlib.aclosing(s.stream("slow")) as events:
        async for event in events:
            if event.type == "tool_call":
                break
    assert s.turns[-1].finish_reason == "cancelled" and runtime.remaining == 1


async def test_empty_question_is_refused(shop: SQLConnector) -> None:
    with pytest.raises(ConfigurationError, match="non-empty question"):
        await session(ScriptedRuntime(), shop).ask_async("  ")


# -- ask_many -----------------------------------------------------------------------------------


def _answering_model(request: InvocationRequest) -> dict:
    """A stateless scripted model: counts the id in the question, then reports the result."""
    last = request.messages[-1]
    if last.role == "user":
        n = re.search(r"\d+", last.text()).group()  # type: ignore[union-attr]
        sql = f"SELECT COUNT(*) AS n FROM orders WHERE customer_id <= {n}"
        return {"tool_calls": [{"name": "query_shop", "input": {"sql": sql}}]}
    (part,) = last.parts()
    return {"text": f"result: {part.content.splitlines()[-1]}"}


async def test_ask_many_200_questions_bounded_and_without_connection_leaks(
    shop: SQLConnector,
) -> None:
    runtime = ScriptedRuntime([_answering_model] * 400)
    s = session(runtime, shop)
    in_flight = peak = 0
    original = runtime.invoke

    async def counting_invoke(*args, **kwargs):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            await asyncio.sleep(0.001)
            return await original(*args, **kwargs)
        finally:
            in_flight -= 1

    runtime.invoke = counting_invoke  # type: ignore[method-assign]
    questions = [f"orders of the first {i} customers" for i in range(1, 201)]
    results = await s.ask_many(questions, concurrency=4)
    assert [r.question for r in results] == questions
    assert all(r.finish_reason == "stop" for r in results)
    assert 2 <= peak <= 4  # concurrent, and bounded
    direct = shop.query("SELECT COUNT(*) AS n FROM orders WHERE customer_id <= 7").df
    assert int(results[6].df.iloc[0]["n"]) == int(direct.iloc[0]["n"])
    assert shop.engine.pool.checkedout() == 0  # every connection back in the pool
    assert len(s.history) == 0 and s.usage.total_tokens == sum(
        r.usage.total_tokens for r in results
    )


async def test_ask_many_through_a_physical_batch_at_the_batch_price(shop: SQLConnector) -> None:
    questions = [f"orders of the first {i} customers" for i in range(1, 151)]
    plain = await session(ScriptedRuntime([_answering_model] * 300), shop).ask_many(questions)
    runtime = ScriptedRuntime([_answering_model] * 300)
    calls: list[int] = []
    original = runtime.invoke_batch

    async def counting_batch(requests, **kwargs):
        calls.append(len(requests))
        return await original(requests, **kwargs)

    runtime.invoke_batch = counting_batch  # type: ignore[method-assign]
    batched = await session(runtime, shop).ask_many(questions, batch=True)
    assert calls == [100, 50, 100, 50]  # two rounds, each split at the 100-request maximum
    assert [r.answer for r in batched] == [r.answer for r in plain]
    for fast, slow in zip(batched, plain, strict=True):
        # each call's cost is rounded to 1e-6 USD before it is halved or summed: up to
        # 1e-6 apart per call, and a turn here makes two calls
        assert fast.usage.cost_usd == pytest.approx(slow.usage.cost_usd / 2, abs=2e-6)


async def test_ask_many_batch_needs_a_batching_runtime(shop: SQLConnector) -> None:
    class NoBatch(ScriptedRuntime):
        def capabilities(self):
            return super().capabilities().model_copy(update={"physical_batch": False})

    with pytest.raises(ConfigurationError, match="no physical batch"):
        await session(NoBatch(), shop).ask_many(["q"], batch=True)


async def test_ask_many_through_the_anthropic_message_batches_api(
    loopback_model_requests: None, shop: SQLConnector
) -> None:
    """The real SDK, the real Batches endpoints (local stub): one create per round, and the
    batch discount on every call."""
    from relay_nb.runtime.anthropic import AnthropicRuntime
    from relay_nb.testing.anthropic_stub import AnthropicStub, MessageReply, ToolUse

    sql = "SELECT COUNT(*) AS n FROM products"
    with AnthropicStub() as stub:
        for _ in range(3):
            stub.enqueue(
                MessageReply(tool_uses=[ToolUse(name="query_shop", input={"sql": sql})], model="m")
            )
        for _ in range(3):
            stub.enqueue(MessageReply(text="20 products", model="m"))
        runtime = AnthropicRuntime("m", api_key="sk-test", base_url=stub.base_url, timeout=5)
        runtime.batch_poll_interval = runtime.batch_poll_max_interval = 0.01
        prices = PriceTable.load().with_prices({"m": {"input": 1_000_000, "output": 1_000_000}})
        s = Session(runtime, connectors=[shop], accountant=Accountant(prices=prices))
        results = await s.ask_many(["a?", "b?", "c?"], batch=True)
        await runtime.aclose()
        creates = [
            r for r in stub.requests if r.method == "POST" and r.path == "/v1/messages/batches"
        ]
    assert len(creates) == 2  # two rounds: the tool calls, then the answers
    assert [r.answer for r in results] == ["20 products"] * 3
    assert all(int(r.df.iloc[0]["n"]) == 20 for r in results)
    # 2 calls x (12 in + 7 out) tokens at $1 per token, halved
    assert all(r.usage.cost_usd == pytest.approx(19.0) for r in results)


# -- hardening: shared caps, loops, cancellation, independence ----------------------------------


async def test_concurrent_ask_many_turns_share_the_session_cap(shop: SQLConnector) -> None:
    # $1 per 1,000 tokens: a ~700-token prompt plus 500 tokens of output room is a ~$1.2
    # worst case; the scripted model really uses the prompt and a few output tokens
    prices = PriceTable.load().with_prices({"scripted": {"input": 1000, "output": 1000}})
    runtime = ScriptedRuntime([{"text": "x"}] * 8)
    s = session(
        runtime,
        shop,
        settings={"max_output_tokens": 500},
        accountant=Accountant(prices=prices, caps=UsageCaps(max_cost_usd=2.5)),
    )
    results = await s.ask_many([f"q{i}" for i in range(8)], concurrency=4)
    answered = [r for r in results if r.finish_reason == "stop"]
    assert 1 <= len(answered) <= 3 and len(runtime.requests) == len(answered)
    assert all(r.finish_reason == "usage_cap" for r in results if r not in answered)
    assert s.usage.cost_usd <= 2.5  # without reservations, four turns would each see $2.5
    meter = s.accountant.meter
    assert meter.reserved_tokens == 0 and meter.reserved_cost_usd == pytest.approx(0)


async def test_a_turn_of_unknown_cost_stops_the_session_cost_cap(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime([{"text": "a", "model": "unpriced-model"}, {"text": "b"}])
    s = session(
        runtime, shop, accountant=Accountant(prices=PRICES, caps=UsageCaps(max_cost_usd=10))
    )
    assert (await s.ask_async("one")).finish_reason == "stop"
    second = await s.ask_async("two")
    assert second.finish_reason == "usage_cap" and len(runtime.requests) == 1
    assert any("cannot be enforced" in w for w in second.warnings)


async def test_compaction_uses_the_digest_when_the_session_cap_has_no_room(
    shop: SQLConnector,
) -> None:
    runtime = ScriptedRuntime(_chatty(3))
    s = session(
        runtime,
        shop,
        settings={"context_window": 8_000},
        accountant=Accountant(prices=PRICES, caps=UsageCaps(max_tokens=12_000)),
    )
    for i in range(3):
        await s.ask_async(f"question {i}")
    assert s.history.compactions == 1 and (s.history.memory or "").startswith("- Q: question 0")
    assert len(runtime.requests) == 3  # no summary call: it would have crossed the cap
    assert s.usage.total_tokens <= 12_000


def test_sync_ask_twice_with_concurrent_questions_in_between(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime([{"text": str(i)} for i in range(5)])
    s = session(runtime, shop)

    async def two() -> None:
        await asyncio.gather(s.ask_async("a"), s.ask_async("b"))

    asyncio.run(two())
    asyncio.run(two())  # a lock from the first loop must not break the second
    assert asyncio.run(s.ask_async("c")).answer == "4" and len(s.turns) == 5


async def test_ask_many_refuses_a_single_string_and_blank_questions(shop: SQLConnector) -> None:
    s = session(ScriptedRuntime(), shop)
    with pytest.raises(ConfigurationError, match="list of questions"):
        await s.ask_many("top 5 customers")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"positions \[1\]"):
        await s.ask_many(["fine", " "])


async def test_ask_many_questions_do_not_see_the_conversation_memory(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime([{"text": "a"}, {"text": "b"}, {"text": "c"}])
    s = session(runtime, shop)
    s.history.memory = "- the analyst only cares about 2025"
    await s.ask_async("one")
    assert "only cares about 2025" in runtime.requests[0].system_text()
    await s.ask_many(["two", "three"])
    assert all("only cares about 2025" not in r.system_text() for r in runtime.requests[1:])


async def test_a_failing_ask_many_turn_stops_the_others(shop: SQLConnector) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"

    class Picky(ScriptedRuntime):
        async def invoke(self, request, **kwargs):
            if request.messages[-1].text() == "bad":
                await asyncio.sleep(0.3)  # the other turn's statement is running by now
                raise ConfigurationError("a broken question")
            return await super().invoke(request, **kwargs)

    s = session(Picky([query(endless)]), shop)
    started = asyncio.get_running_loop().time()
    with pytest.raises(ConfigurationError, match="broken question"):
        await s.ask_many(["slow", "bad"], concurrency=2)
    assert asyncio.get_running_loop().time() - started < 3  # the endless query was cancelled
    assert shop.engine.pool.checkedout() == 0


async def test_cancelling_a_batched_ask_many_cancels_the_submitted_batch(
    loopback_model_requests: None, shop: SQLConnector
) -> None:
    from relay_nb.runtime.anthropic import AnthropicRuntime
    from relay_nb.testing.anthropic_stub import AnthropicStub, MessageReply

    with AnthropicStub() as stub:
        stub.batch_in_progress_polls = 10_000
        stub.enqueue(*[MessageReply(text="x", model="m")] * 3)
        runtime = AnthropicRuntime("m", api_key="sk-test", base_url=stub.base_url, timeout=30)
        runtime.batch_poll_interval = runtime.batch_poll_max_interval = 0.01
        s = Session(runtime, connectors=[shop])
        task = asyncio.create_task(s.ask_many(["a", "b", "c"], batch=True))
        for _ in range(200):
            await asyncio.sleep(0.01)
            if any(r.path.endswith("/batches") for r in stub.requests):
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await runtime.aclose()
        cancels = [r for r in stub.requests if r.path.endswith("/cancel")]
    assert len(cancels) == 1


async def test_after_leaving_a_stream_the_history_is_valid_and_the_next_question_works(
    shop: SQLConnector,
) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
    runtime = ScriptedRuntime([query(endless), {"text": "20 products"}])
    s = session(runtime, shop)
    async with contextlib.aclosing(s.stream("slow")) as events:
        async for event in events:
            if event.type == "tool_call":
                break
    assert shop.engine.pool.checkedout() == 0
    calls = [p.id for m in s.history.messages for p in m.parts() if p.type == "tool-call"]
    results = [
        p.tool_call_id for m in s.history.messages for p in m.parts() if p.type == "tool-result"
    ]
    assert calls == results == ["c1"]
    assert (await s.ask_async("how many products?")).answer == "20 products"


async def test_only_the_last_keep_turns_results_are_kept(shop: SQLConnector) -> None:
    runtime = ScriptedRuntime([{"text": str(i)} for i in range(3)])
    s = session(runtime, shop, keep_turns=2)
    for i in range(3):
        await s.ask_async(f"q{i}")
    assert [t.question for t in s.turns] == ["q1", "q2"]
    assert [m.text() for m in s.history.messages if m.role == "user"] == ["q0", "q1", "q2"]
    assert s.turns[-1].messages[0].text() == "q2"  # a turn holds its own messages only


async def test_history_token_count_matches_a_recount_after_compaction(shop: SQLConnector) -> None:
    from relay_nb.agent.history import _message_text
    from relay_nb.runtime.types import estimate_tokens

    runtime = ScriptedRuntime(_chatty(4))
    s = session(runtime, shop, compact_with_model=False, settings={"context_window": 8_000})
    for i in range(4):
        await s.ask_async(f"question {i}")
    assert s.history.compactions >= 1
    recount = sum(estimate_tokens(_message_text(m)) for m in s.history.messages)
    assert s.history.tokens() == recount + estimate_tokens(s.history.memory or "")


async def test_a_model_call_cancelled_with_its_task_still_leaves_a_ledger_row(
    shop: SQLConnector, tmp_path
) -> None:
    """Task cancellation (Ctrl-C through ask_many, a caller's wait_for) is not an abort
    signal: the call was made and may be billed, so the ledger keeps a ``cancelled`` row."""

    started = asyncio.Event()

    async def hang(request):
        started.set()
        await asyncio.Event().wait()

    ledger = UsageLedger(tmp_path / "usage.sqlite")
    s = session(
        ScriptedRuntime([hang], model="claude-haiku-4-5"),
        shop,
        accountant=Accountant(prices=PRICES, ledger=ledger),
    )
    task = asyncio.create_task(s.ask_async("how many orders?"))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    rows = ledger.rows(session_id=s.id)
    assert list(rows["finish_reason"]) == ["cancelled"]
    assert rows["cost_usd"].isna().all() and rows["input_tokens"].isna().all()
    ledger.close()
