"""Turn token counts into dollars from a dated, user-extendable price table.

Why a file and not constants: list prices change, and an analyst reading a cost needs to know
*which* prices produced it. The packaged ``prices.json`` carries ``as_of`` and ``source``; a
user adds or overrides models with :meth:`PriceTable.with_prices` or a JSON file of the same
shape (:meth:`PriceTable.load` ``extra=``), without waiting for a release.

Honesty rules (DESIGN.md §6): a cost the provider reported is kept as is; an unknown model or
missing token counts give ``cost_usd=None`` plus a warning, never a made-up number; an
estimated usage is priced but stays ``estimated=True``. Arithmetic is in :class:`~decimal.Decimal`
so 1,000,000 tokens at $3/MTok is exactly $3.000000, rounded half-up to 6 decimals.

Model id matching (:meth:`PriceTable.resolve`), first hit wins:

1. the id as given, trimmed and lower-cased, as a ``models`` key;
2. the same id through ``aliases`` (e.g. ``claude-opus-4`` → ``claude-opus-4-0``);
3. the id with a trailing release date removed — ``-YYYYMMDD`` (Anthropic API) or
   ``@YYYYMMDD`` (Vertex AI) — as a key, then through ``aliases``; so
   ``claude-sonnet-4-6-20260101`` prices as ``claude-sonnet-4-6`` and
   ``claude-opus-4-20250514`` as ``claude-opus-4-0``.

An exact entry always beats a stripped one, so a user can price one dated snapshot
differently. Floating aliases such as ``sonnet`` are not matched on purpose: they move
between models over time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from relay_nb.runtime.types import (
    InvocationRequest,
    InvocationResult,
    Usage,
    estimate_output_tokens,
    estimate_request_tokens,
)

__all__ = [
    "CallRates",
    "ModelPrice",
    "PriceTable",
    "price_usage",
    "usage_with_estimates",
    "worst_case_rates",
]

_MTOK = Decimal(1_000_000)
_MICRO_USD = Decimal("0.000001")
_DATE_SUFFIX = re.compile(r"[-@](\d{8})$")


class ModelPrice(BaseModel):
    """USD per million tokens for one model. A missing cache price is unknown, not zero."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: Decimal = Field(ge=0)
    output: Decimal = Field(ge=0)
    cache_write_5m: Decimal | None = Field(default=None, ge=0)
    cache_write_1h: Decimal | None = Field(default=None, ge=0)
    cache_read: Decimal | None = Field(default=None, ge=0)
    batch_discount: Decimal | None = Field(default=None, gt=0, le=1)
    """Overrides the table's factor for this model (None: use the table's)."""


class PriceTable(BaseModel):
    """A dated table of model prices; immutable, extended by building a new table."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    as_of: date
    source: str
    batch_discount: Decimal = Field(default=Decimal("0.5"), gt=0, le=1)
    models: dict[str, ModelPrice] = Field(default_factory=dict)
    aliases: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None = None, *, extra: str | Path | None = None) -> PriceTable:
        """Read a full table (the packaged one when ``path`` is None), then merge ``extra``.

        ``extra`` is a user JSON file with ``models`` and optionally ``aliases``,
        ``as_of`` and ``source``; its entries override the base table's.
        """
        if path is None:
            table = _packaged_copy() if cls is PriceTable else cls.model_validate(_packaged())
        else:
            table = cls.model_validate(_parse(Path(path).read_text("utf-8")))
        return table.merge_file(extra) if extra is not None else table

    def merge_file(self, path: str | Path) -> PriceTable:
        """A new table with the models and aliases of a user JSON file merged in."""
        data = _parse(Path(path).read_text("utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a price file must hold a JSON object")
        table = self.with_prices(data.get("models", {}), aliases=data.get("aliases"))
        updates: dict[str, Any] = {}
        if "as_of" in data:
            updates["as_of"] = date.fromisoformat(str(data["as_of"]))
        if "source" in data:
            updates["source"] = f"{self.source}; {data['source']}"
        return table.model_copy(update=updates) if updates else table

    def with_prices(
        self,
        prices: Mapping[str, ModelPrice | Mapping[str, Any]],
        *,
        aliases: Mapping[str, str] | None = None,
    ) -> PriceTable:
        """A new table where ``prices`` (model id → prices) add to or replace entries.

        >>> table.with_prices({"my-model": {"input": 2, "output": 8}})  # doctest: +SKIP
        """
        models = dict(self.models)
        for model_id, price in prices.items():
            models[_norm(model_id)] = ModelPrice.model_validate(price)
        merged_aliases = dict(self.aliases)
        merged_aliases.update({_norm(k): _norm(v) for k, v in (aliases or {}).items()})
        return type(self).model_validate(
            {**self.model_dump(), "models": models, "aliases": merged_aliases}
        )

    def resolve(self, model: str) -> str | None:
        """The table key that prices ``model`` (see the module docstring), or None."""
        candidates = [_norm(model)]
        stripped = _DATE_SUFFIX.sub("", candidates[0])
        if stripped != candidates[0]:
            candidates.append(stripped)
        for candidate in candidates:
            if candidate in self.models:
                return candidate
            target = self.aliases.get(candidate)
            if target is not None and target in self.models:
                return target
        return None

    def price_for(self, model: str) -> ModelPrice | None:
        """The prices for ``model``, or None when the table does not know it."""
        key = self.resolve(model)
        return None if key is None else self.models[key]


class CallRates(NamedTuple):
    """The most one token of a call's prompt and of its output can cost (USD per MTok),
    discounts applied: what a usage cap plans against (see :func:`worst_case_rates`)."""

    prompt: Decimal
    output: Decimal


def worst_case_rates(
    price: ModelPrice,
    table: PriceTable,
    *,
    batch: bool = False,
    cache_ttl: Literal["5m", "1h"] | None = None,
) -> CallRates:
    """The rates a cap's worst case uses, from the same table :func:`price_usage` reads.

    A prompt token is billed as plain input or, when the runtime writes a prompt cache
    (``cache_ttl``), possibly as a cache write, which costs more (1.25x input for 5 minutes,
    2x for an hour): the worst case is the dearer one. ``batch`` applies the batch discount
    to both, as it does to the bill.
    """
    rates = _rates(price, table, batch=batch)
    prompt = rates["input"]
    output = rates["output"]
    assert prompt is not None and output is not None  # input and output prices are required
    if cache_ttl is not None:
        write = rates[f"cache_write_{cache_ttl}"]
        if write is not None:
            prompt = max(prompt, write)
    return CallRates(prompt=prompt, output=output)


def price_usage(
    usage: Usage,
    model: str,
    table: PriceTable,
    *,
    batch: bool = False,
    cache_ttl: Literal["5m", "1h"] = "5m",
) -> tuple[Usage, list[str]]:
    """A copy of ``usage`` with ``cost_usd`` set, and the warnings a user should see.

    Cache writes the provider reports as 1-hour ones (``cache_write_1h_tokens``) are priced
    at ``cache_write_1h``; the others at the ``cache_ttl`` price. ``batch`` applies the
    Message Batches discount to the whole call. A missing cache count is taken as zero
    (providers without caching send none); a missing input or output count leaves the cost
    unknown.
    """
    if usage.cost_usd is not None:
        return usage.model_copy(), []  # provider-reported (e.g. the claude CLI): the truth
    unknown = usage.model_copy(update={"cost_usd": None})
    price = table.price_for(model)
    if price is None:
        return unknown, [
            f"no price for model {model!r} in the price table (as of {table.as_of}); "
            f"cost is unknown. Add one with PriceTable.with_prices({{{model!r}: "
            '{"input": ..., "output": ..., "cache_write_5m": ..., "cache_write_1h": ..., '
            '"cache_read": ...}}) or a JSON file passed to PriceTable.load(extra=...) '
            "(USD per million tokens)."
        ]
    if usage.input_tokens is None or usage.output_tokens is None:
        missing = [
            name for name in ("input_tokens", "output_tokens") if getattr(usage, name) is None
        ]
        return unknown, [f"usage for {model!r} lacks {', '.join(missing)}; cost is unknown"]
    writes = usage.cache_write_tokens or 0
    long_writes = min(usage.cache_write_1h_tokens or 0, writes)
    if cache_ttl == "1h":
        long_writes = writes
    rates = _rates(price, table, batch=batch)
    parts: list[tuple[int, str]] = [
        (usage.input_tokens, "input"),
        (usage.output_tokens, "output"),
        (usage.cache_read_tokens or 0, "cache_read"),
        (writes - long_writes, "cache_write_5m"),
        (long_writes, "cache_write_1h"),
    ]
    total = Decimal(0)
    for tokens, name in parts:
        if not tokens:
            continue
        rate = rates[name]
        if rate is None:
            return unknown, [
                f"model {model!r} has no {name} price in the price table but the call "
                f"used {tokens} such tokens; cost is unknown"
            ]
        total += Decimal(tokens) * rate / _MTOK
    cost = float(total.quantize(_MICRO_USD, rounding=ROUND_HALF_UP))
    return usage.model_copy(update={"cost_usd": cost}), []


def _rates(price: ModelPrice, table: PriceTable, *, batch: bool) -> dict[str, Decimal | None]:
    """USD per MTok of each kind of token, the batch discount applied when ``batch``: the
    one place a bill (:func:`price_usage`) and a cap's worst case (:func:`worst_case_rates`)
    take their numbers from."""
    factor = Decimal(1)
    if batch:
        factor = price.batch_discount if price.batch_discount is not None else table.batch_discount
    rates = {
        "input": price.input,
        "output": price.output,
        "cache_read": price.cache_read,
        "cache_write_5m": price.cache_write_5m,
        "cache_write_1h": price.cache_write_1h,
    }
    return {name: None if rate is None else rate * factor for name, rate in rates.items()}


def _norm(model_id: str) -> str:
    return model_id.strip().lower()


def _parse(text: str) -> Any:
    # floats as Decimal so "0.30" stays 0.30, not 0.299999…
    return json.loads(text, parse_float=Decimal)


def usage_with_estimates(result: InvocationResult, request: InvocationRequest) -> Usage:
    """Provider counts as reported; a missing input or output count becomes chars/4 and
    the receipt says ``estimated`` (DESIGN.md §6), so caps and costs never read it as 0."""
    usage = result.usage
    if usage.input_tokens is not None and usage.output_tokens is not None:
        return usage
    return Usage(
        input_tokens=usage.input_tokens
        if usage.input_tokens is not None
        else estimate_request_tokens(request),
        output_tokens=usage.output_tokens
        if usage.output_tokens is not None
        else estimate_output_tokens(result.output_text, result.tool_calls),
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_write_1h_tokens=usage.cache_write_1h_tokens,
        cost_usd=usage.cost_usd,
        estimated=True,
    )


@cache
def _packaged() -> Any:
    return _parse(resources.files("relay_nb.agent").joinpath("prices.json").read_text("utf-8"))


@cache
def _packaged_table() -> PriceTable:
    """The packaged table, read once per process: a session that prices every call with the
    default table used to re-read and re-validate the file on every turn."""
    return PriceTable.model_validate(_packaged())


def _packaged_copy() -> PriceTable:
    """The cached table with its own dicts: a caller that edits ``models`` (the model is
    frozen, its dicts are not) must not change the table every later session gets."""
    table = _packaged_table()
    return table.model_copy(update={"models": dict(table.models), "aliases": dict(table.aliases)})
