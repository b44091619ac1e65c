"""The accountant: one place that bills a call, plans a cap's worst case and keeps the ledger.

The bill and the plan read the same table through the same rates, so a cache TTL or the
batch discount that changes one changes the other; the loop, compaction and ``ask_many`` all
bill through it, so the session total is the ledger's sum.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from relay_nb.agent.accounting import Accountant
from relay_nb.agent.caps import UsageCaps
from relay_nb.agent.ledger import UsageLedger
from relay_nb.agent.pricing import PriceTable, price_usage, worst_case_rates
from relay_nb.agent.session import Session
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.runtime.anthropic import AnthropicRuntime
from relay_nb.runtime.scripted import ScriptedRuntime
from relay_nb.runtime.types import (
    Capabilities,
    InvocationRequest,
    InvocationResult,
    Message,
    Usage,
)
from relay_nb.testing.anthropic_stub import AnthropicStub, MessageReply

SONNET = "claude-sonnet-4-6"  # $3 in, $15 out, $3.75 5-minute writes, $6 1-hour writes
M = 1_000_000


def request(text: str = "x" * 4_000, max_output_tokens: int = 4096) -> InvocationRequest:
    return InvocationRequest(messages=[Message.user(text)], max_output_tokens=max_output_tokens)


def result(usage: Usage, model: str = SONNET) -> InvocationResult:
    return InvocationResult(
        provider="anthropic", model=model, model_source="configured", usage=usage
    )


class CachingRuntime(ScriptedRuntime):
    """A scripted model that says it writes 1-hour prompt-cache entries."""

    def capabilities(self) -> Capabilities:
        return super().capabilities().model_copy(update={"prompt_cache_ttl": "1h"})


# -- the bill ----------------------------------------------------------------------------------


def test_one_hour_cache_writes_are_billed_at_the_one_hour_price() -> None:
    usage = Usage(
        input_tokens=1_000, output_tokens=100, cache_write_tokens=2_000, cache_write_1h_tokens=500
    )
    priced, warnings = Accountant().charge(result(usage), request())
    # 1,000 x $3 + 100 x $15 + 1,500 x $3.75 (5 minutes) + 500 x $6 (1 hour), per MTok
    assert priced.cost_usd == pytest.approx((3_000 + 1_500 + 5_625 + 3_000) / M)
    assert warnings == []
    every_write_short = usage.model_copy(update={"cache_write_1h_tokens": None})
    cheaper, _ = price_usage(every_write_short, SONNET, PriceTable.load())
    assert cheaper.cost_usd == pytest.approx((3_000 + 1_500 + 7_500) / M)


def test_the_batch_discount_halves_every_kind_of_token() -> None:
    usage = Usage(input_tokens=M, output_tokens=M, cache_read_tokens=M, cache_write_tokens=M)
    plain, _ = Accountant().charge(result(usage), request())
    batched, _ = Accountant().charge(result(usage), request(), batch=True)
    assert plain.cost_usd == pytest.approx(3 + 15 + 0.30 + 3.75)
    assert batched.cost_usd == pytest.approx(plain.cost_usd / 2)


def test_a_charge_feeds_the_session_meter_and_total_even_without_a_turn() -> None:
    accountant = Accountant()
    priced, _ = accountant.charge(result(Usage(input_tokens=10, output_tokens=5)), request())
    assert accountant.meter.tokens == 15 and accountant.total.cost_usd == priced.cost_usd


# -- the worst case ----------------------------------------------------------------------------


def test_the_worst_case_uses_the_bills_rates_cache_write_and_batch_included() -> None:
    table = PriceTable.load()
    price = table.price_for(SONNET)
    assert price is not None
    assert worst_case_rates(price, table) == (Decimal(3), Decimal(15))
    assert worst_case_rates(price, table, cache_ttl="5m").prompt == Decimal("3.75")
    assert worst_case_rates(price, table, cache_ttl="1h").prompt == Decimal(6)
    halved = worst_case_rates(price, table, batch=True, cache_ttl="1h")
    assert halved == (Decimal(3), Decimal("7.5"))


@pytest.mark.parametrize(
    ("runtime", "batch", "prompt_as"),
    [
        (ScriptedRuntime(model=SONNET), False, "input"),
        (CachingRuntime(model=SONNET), False, "cache_write_1h"),
        (CachingRuntime(model=SONNET), True, "cache_write_1h"),
    ],
)
def test_a_caps_worst_case_is_what_the_bill_would_say(runtime, batch: bool, prompt_as: str) -> None:
    """Same arithmetic: the planned worst case of a call equals the bill of that call had
    its whole prompt been billed the dearest way and its whole output room been used."""
    accountant = Accountant()
    limits = accountant.limits(UsageCaps(max_cost_usd=0.03))
    ask = request()
    plan = accountant.plan(limits, ask, runtime=runtime, batch=batch)
    assert plan.stop_reason is None and 256 <= plan.max_output_tokens < 4096
    prompt = plan.worst_case_tokens - plan.max_output_tokens
    if prompt_as == "input":
        worst = Usage(input_tokens=prompt, output_tokens=plan.max_output_tokens)
    else:
        worst = Usage(
            input_tokens=0,
            output_tokens=plan.max_output_tokens,
            cache_write_tokens=prompt,
            cache_write_1h_tokens=prompt,
        )
    bill, _ = price_usage(worst, SONNET, accountant.prices, batch=batch)
    assert plan.worst_case_cost_usd == pytest.approx(bill.cost_usd, abs=1e-6)
    assert plan.worst_case_cost_usd <= 0.03


def test_caching_shrinks_and_batching_widens_the_output_room_under_one_cap() -> None:
    accountant = Accountant()
    room = {}
    for name, runtime, batch in (
        ("plain", ScriptedRuntime(model=SONNET), False),
        ("cached", CachingRuntime(model=SONNET), False),
        ("batched", ScriptedRuntime(model=SONNET), True),
    ):
        limits = accountant.limits(UsageCaps(max_cost_usd=0.02))
        plan = accountant.plan(limits, request(), runtime=runtime, batch=batch)
        room[name] = plan.max_output_tokens
    assert room["cached"] < room["plain"] < room["batched"]


def test_no_active_cap_plans_the_requested_room_without_a_price() -> None:
    plan = Accountant().plan(
        Accountant().limits(), request(), runtime=ScriptedRuntime(model="unpriced-model")
    )
    assert plan.max_output_tokens == 4096 and plan.stop_reason is None


# -- the runtime reports what it wrote ---------------------------------------------------------


async def test_the_anthropic_runtime_asks_for_and_reports_one_hour_cache_writes(
    loopback_model_requests: None,
) -> None:
    with AnthropicStub() as stub:
        runtime = AnthropicRuntime(
            api_key="sk-ant-test-key", base_url=stub.base_url, prompt_caching="1h"
        )
        stub.enqueue(
            MessageReply(
                text="ok", cache_creation_input_tokens=1_200, cache_creation_1h_input_tokens=1_200
            ),
            MessageReply(text="ok", cache_creation_input_tokens=300),
        )
        ask = InvocationRequest(messages=[Message.system("Stable."), Message.user("q")])
        split = await runtime.invoke(ask)
        unsplit = await runtime.invoke(ask)
        await runtime.aclose()
    marker = stub.requests[0].body["system"][0]["cache_control"]
    assert marker == {"type": "ephemeral", "ttl": "1h"}
    assert runtime.capabilities().prompt_cache_ttl == "1h"
    assert split.usage.cache_write_1h_tokens == 1_200
    # no split in the reply: the writes have the lifetime the runtime asked for
    assert unsplit.usage.cache_write_1h_tokens == 300


def test_prompt_caching_takes_only_the_lifetimes_the_api_has() -> None:
    from relay_nb.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="'5m' or '1h'"):
        AnthropicRuntime(api_key="k", prompt_caching="1d")  # type: ignore[arg-type]
    assert AnthropicRuntime(api_key="k", prompt_caching=True).capabilities().prompt_cache_ttl == (
        "5m"
    )
    assert AnthropicRuntime(api_key="k").capabilities().prompt_cache_ttl is None


# -- one accountant for the loop, compaction and ask_many ---------------------------------------


async def test_the_session_total_is_the_ledgers_sum_over_turns_ask_many_and_compaction(
    shop: SQLConnector, tmp_path: Path
) -> None:
    chatty = {"text": "word " * 1_500}  # ~1,900 tokens of history per turn
    runtime = ScriptedRuntime([chatty] * 10, model=SONNET)
    ledger = UsageLedger(tmp_path / "usage.sqlite")
    session = Session(
        runtime,
        connectors=[shop],
        settings={"context_window": 8_000},
        accountant=Accountant(ledger=ledger),
    )
    for i in range(3):
        await session.ask_async(f"question {i}")
    many = await session.ask_many(["a", "b"])
    assert session.history.compactions >= 1 and session.compaction_usage.cost_usd > 0
    rows = ledger.rows(session_id=session.id)
    assert any(rows["turn_id"].str.startswith("compaction-"))
    assert session.usage.cost_usd == pytest.approx(rows["cost_usd"].sum())
    turns = sum(t.usage.cost_usd for t in [*session.turns, *many])
    assert session.usage.cost_usd == pytest.approx(turns + session.compaction_usage.cost_usd)
    await session.aclose()
