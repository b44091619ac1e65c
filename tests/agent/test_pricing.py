"""Pricing: exact dollars per component, honest unknowns, model-id matching, user extension."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from importlib import resources

import pytest

from relay_nb.agent.pricing import ModelPrice, PriceTable, price_usage
from relay_nb.runtime.types import Usage

M = 1_000_000


@pytest.fixture(scope="module")
def table() -> PriceTable:
    return PriceTable.load()


def cost(table: PriceTable, model: str = "claude-sonnet-4-6", **kw) -> float | None:
    batch = kw.pop("batch", False)
    ttl = kw.pop("cache_ttl", "5m")
    kw.setdefault("input_tokens", 0)
    kw.setdefault("output_tokens", 0)
    priced, warnings = price_usage(Usage(**kw), model, table, batch=batch, cache_ttl=ttl)
    assert warnings == []
    return priced.cost_usd


def test_packaged_table_is_dated_and_sourced(table):
    raw = json.loads(resources.files("relay_nb.agent").joinpath("prices.json").read_text())
    assert date.fromisoformat(raw["as_of"]) == table.as_of
    assert table.source.startswith("https://")
    assert table.batch_discount == Decimal("0.5")
    for model in ("claude-opus-4-6", "claude-opus-4-5", "claude-sonnet-4-6", "claude-haiku-4-5"):
        assert model in table.models


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        ({"input_tokens": M}, 3.0),
        ({"output_tokens": M}, 15.0),
        ({"cache_read_tokens": M}, 0.30),
        ({"cache_write_tokens": M}, 3.75),
        ({"cache_write_tokens": M, "cache_ttl": "1h"}, 6.0),
        ({"input_tokens": M, "output_tokens": M, "batch": True}, 9.0),
        ({"cache_read_tokens": M, "batch": True}, 0.15),
        # 1,234 in + 567 out + 10,000 read + 2,000 written (5m) on Sonnet 4.6:
        # 0.003702 + 0.008505 + 0.003 + 0.0075 = 0.022707
        (
            {
                "input_tokens": 1_234,
                "output_tokens": 567,
                "cache_read_tokens": 10_000,
                "cache_write_tokens": 2_000,
            },
            0.022707,
        ),
    ],
)
def test_each_component_in_exact_dollars(table, tokens, expected):
    assert cost(table, **tokens) == expected


def test_models_differ_by_tier(table):
    assert cost(table, "claude-opus-4-6", input_tokens=M, output_tokens=M) == 30.0
    assert cost(table, "claude-haiku-4-5", input_tokens=M, output_tokens=M) == 6.0
    assert cost(table, "claude-opus-4-1", cache_write_tokens=M, cache_ttl="1h") == 30.0


def test_rounds_half_up_to_six_decimals(table):
    # one Haiku input token is $0.000001 exactly; a Haiku cache read is $0.0000001
    assert cost(table, "claude-haiku-4-5", input_tokens=1) == 0.000001
    assert cost(table, "claude-haiku-4-5", cache_read_tokens=25) == 0.000003  # 0.0000025 up
    assert cost(table, "claude-haiku-4-5", cache_read_tokens=24) == 0.000002  # 0.0000024 down


def test_unknown_model_has_no_cost_and_says_how_to_add_one(table):
    priced, warnings = price_usage(
        Usage(input_tokens=100, output_tokens=10), "gpt-imaginary-9", table
    )
    assert priced.cost_usd is None
    assert priced.input_tokens == 100
    assert len(warnings) == 1
    assert "gpt-imaginary-9" in warnings[0] and "with_prices" in warnings[0]


def test_floating_alias_is_not_guessed(table):
    priced, warnings = price_usage(Usage(input_tokens=1, output_tokens=1), "sonnet", table)
    assert priced.cost_usd is None and warnings


def test_provider_reported_cost_is_kept(table):
    usage = Usage(input_tokens=M, output_tokens=M, cost_usd=0.1234)
    priced, warnings = price_usage(usage, "claude-sonnet-4-6", table)
    assert priced.cost_usd == 0.1234 and warnings == []
    priced, _ = price_usage(usage, "no-such-model", table)
    assert priced.cost_usd == 0.1234


def test_missing_token_counts_leave_cost_unknown(table):
    priced, warnings = price_usage(Usage(input_tokens=10), "claude-sonnet-4-6", table)
    assert priced.cost_usd is None
    assert len(warnings) == 1 and "output_tokens" in warnings[0]


def test_estimated_usage_is_priced_but_stays_estimated(table):
    usage = Usage(input_tokens=M, output_tokens=0, estimated=True)
    priced, warnings = price_usage(usage, "claude-sonnet-4-6", table)
    assert priced.cost_usd == 3.0 and priced.estimated is True and warnings == []


def test_input_usage_is_not_mutated(table):
    usage = Usage(input_tokens=M, output_tokens=0)
    priced, _ = price_usage(usage, "claude-sonnet-4-6", table)
    assert usage.cost_usd is None and priced is not usage


@pytest.mark.parametrize(
    ("model_id", "key"),
    [
        ("claude-sonnet-4-6", "claude-sonnet-4-6"),
        ("claude-sonnet-4-6-20260101", "claude-sonnet-4-6"),
        ("  Claude-Haiku-4-5-20251001 ", "claude-haiku-4-5"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("claude-opus-4-20250514", "claude-opus-4-0"),
        ("claude-sonnet-4-6-2026", None),  # not a date: no match
        ("claude-sonnet-4-6-extra", None),
    ],
)
def test_model_id_matching(table, model_id, key):
    assert table.resolve(model_id) == key


def test_exact_dated_entry_beats_the_stripped_one(table):
    custom = table.with_prices({"claude-sonnet-4-6-20990101": {"input": 1, "output": 1}})
    assert cost(custom, "claude-sonnet-4-6-20990101", input_tokens=M) == 1.0
    assert cost(custom, "claude-sonnet-4-6-20990202", input_tokens=M) == 3.0


def test_with_prices_adds_and_overrides_without_touching_the_original(table):
    extended = table.with_prices(
        {
            "my-model": ModelPrice(input=Decimal(2), output=Decimal(8)),
            "claude-sonnet-4-6": {"input": "2.5", "output": 15, "cache_read": "0.25"},
        },
        aliases={"mine": "my-model"},
    )
    assert cost(extended, "mine", input_tokens=M, output_tokens=M) == 10.0
    assert cost(extended, "claude-sonnet-4-6", input_tokens=M) == 2.5
    assert cost(table, "claude-sonnet-4-6", input_tokens=M) == 3.0
    assert table.resolve("my-model") is None


def test_missing_cache_price_is_unknown_not_zero(table):
    extended = table.with_prices({"my-model": {"input": 2, "output": 8}})
    assert cost(extended, "my-model", input_tokens=M, cache_read_tokens=0) == 2.0
    priced, warnings = price_usage(
        Usage(input_tokens=1, output_tokens=1, cache_read_tokens=5), "my-model", extended
    )
    assert priced.cost_usd is None and "cache_read" in warnings[0]


def test_per_model_batch_discount_overrides_the_table(table):
    extended = table.with_prices({"m": {"input": 10, "output": 10, "batch_discount": "0.25"}})
    assert cost(extended, "m", input_tokens=M, batch=True) == 2.5


def test_user_price_file_merges_into_the_packaged_table(tmp_path):
    extra = tmp_path / "my_prices.json"
    extra.write_text(
        json.dumps(
            {
                "as_of": "2030-01-02",
                "source": "our contract",
                "models": {"claude-sonnet-4-6": {"input": 0.30, "output": 1.5}},
                "aliases": {"house": "claude-sonnet-4-6"},
            }
        )
    )
    merged = PriceTable.load(extra=extra)
    assert merged.as_of == date(2030, 1, 2) and "our contract" in merged.source
    assert cost(merged, "house", input_tokens=M) == 0.3
    assert cost(merged, "claude-haiku-4-5", input_tokens=M) == 1.0


def test_full_table_from_path(tmp_path):
    path = tmp_path / "table.json"
    path.write_text(
        '{"as_of": "2025-01-01", "source": "test", "batch_discount": 0.4,'
        ' "models": {"x": {"input": 0.1, "output": 0.2}}}'
    )
    loaded = PriceTable.load(path)
    assert loaded.models["x"].input == Decimal("0.1")
    assert cost(loaded, "x", input_tokens=M, output_tokens=M, batch=True) == 0.12
    assert loaded.resolve("claude-sonnet-4-6") is None


def test_bad_prices_are_rejected(table):
    with pytest.raises(ValueError, match="greater than or equal"):
        table.with_prices({"m": {"input": -1, "output": 1}})
    with pytest.raises(ValueError, match="extra"):
        table.with_prices({"m": {"input": 1, "output": 1, "inptu": 3}})
