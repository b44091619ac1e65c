"""Cost preflight: ask the engine what a query will scan before running it.

Where an engine can estimate a query without running it (PostgreSQL and DuckDB ``EXPLAIN``,
BigQuery's dry run, Snowflake's and Trino's ``EXPLAIN``, ClickHouse's ``EXPLAIN ESTIMATE``,
Spark's optimized plan), a connector with a preflight asks first. Before the query runs, its
step in the trace shows one line with both costs — what the model has spent on the turn so
far and what the engine expects the query to scan (priced when the connector has a
``price_per_tb``): ``≈ $0.004 model · ≈ 1.2 GB scanned (≈ $0.0075 at your price)``. The
estimate is kept with the result, and above the connector's threshold (bytes, rows, or
dollars of scan) the query waits for the analyst's approval — the same approver, and in a
notebook the same Approve / Deny buttons, as a tool marked ``requires_approval``. Denied
(or with nobody to ask: a script, an evaluation run), the model is told the estimate and the
threshold, so it can narrow the query.

The parts: :class:`Estimate` (what the engine said), :class:`Preflight` (a connector's
settings: thresholds in rows, bytes or dollars scanned, a price per terabyte),
:func:`cost_line` (the one line), and :func:`approve_if_costly`, the one gate every
connector's query tool calls, which shows the line first.
"""

from __future__ import annotations

import math
import re

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.bounds import describe_bytes
from relay_nb.errors import ConfigurationError
from relay_nb.tools import ModelSpend, ToolResult, ask_approval, model_spend, report_status

__all__ = [
    "Estimate",
    "Preflight",
    "approve_if_costly",
    "cost_line",
    "describe_count",
    "is_money",
    "money",
    "parse_bytes",
    "parse_dollars",
]

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_AMOUNT = re.compile(r"^(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$|^\.\d+$")
_AMOUNT_HINT = "write e.g. '$0.50', '0.50 USD' or '$1,200'"


def is_money(value: str) -> bool:
    """Whether an ``approve_above`` value is written as dollars (``"$0.50"``, ``"2 USD"``)."""
    text = value.strip().lower()
    return text.startswith(("$", "usd")) or text.endswith("usd")


def parse_dollars(value: str, option: str = "approve_above") -> float:
    """``"$0.50"``, ``"0.50 USD"``, ``"USD 2"``, ``"$1,200"`` -> dollars."""
    text = value.strip()
    lowered = text.lower()
    if lowered.startswith("usd"):
        text = text[3:]
    elif lowered.endswith("usd"):
        text = text[:-3]
    text = text.strip()
    text = text[1:].strip() if text.startswith("$") else text
    if not _AMOUNT.match(text):
        raise ConfigurationError(f"{option}={value!r} is not an amount; {_AMOUNT_HINT}")
    amount = float(text.replace(",", ""))
    if not math.isfinite(amount) or amount <= 0:
        raise ConfigurationError(f"{option} must be a positive amount, not {value!r}")
    return amount


def money(amount: float, *, exact: bool = False) -> str:
    """Dollars as people read them: ``"$0.004"``, ``"$0.0075"``, ``"$0.50"``, ``"$1.20"``,
    ``"$1,200.00"`` — cents from a dollar up, two significant digits below (never
    ``1e-05``); ``exact`` keeps every digit below a dollar (a threshold as it was set)."""
    if amount >= 1 or amount <= 0:
        return f"${max(amount, 0.0):,.2f}"
    decimals = 12 if exact else max(2, 1 - math.floor(math.log10(amount)))
    whole, fraction = f"{amount:.{decimals}f}".split(".")
    return f"${whole}.{fraction.rstrip('0').ljust(2, '0')}"


def parse_bytes(value: int | float | str, option: str = "approve_above") -> int:
    """``10_000_000``, ``"500MB"``, ``"1.5 GB"``, ``"2GiB"`` -> bytes (decimal units, as
    warehouses bill them; ``KiB``… binary)."""
    if isinstance(value, bool):
        raise ConfigurationError(f"{option} takes a size such as '10GB' or a number of bytes")
    if isinstance(value, int | float):
        number, unit = float(value), ""
    else:
        match = _SIZE.match(str(value))
        if match is None or match.group(2).lower() not in _UNITS:
            raise ConfigurationError(
                f"{option}={value!r} is not a size; write e.g. '500MB', '10GB' or '1TB' "
                "(or dollars of scan: '$0.50')"
            )
        number, unit = float(match.group(1)), match.group(2).lower()
    if not math.isfinite(number) or number <= 0:
        raise ConfigurationError(f"{option} must be a positive size, not {value!r}")
    return int(number * _UNITS[unit])


def describe_count(count: int) -> str:
    """``2_000_000`` -> ``"2M"``."""
    for unit, scale in (("B", 10**9), ("M", 10**6), ("k", 10**3)):
        if count >= scale:
            return f"{count / scale:.3g}{unit}"
    return str(count)


class Estimate(BaseModel):
    """What the engine expects a query to cost, before it runs. A figure the engine does not
    give is None (DuckDB's EXPLAIN has rows, not bytes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rows_scanned: int | None = None
    """Rows the query's scans read (PostgreSQL: whole tables for sequential scans)."""
    bytes_scanned: int | None = None
    result_rows: int | None = None
    """Rows the engine expects the query to return (before the row limit)."""
    dollars: float | None = None
    """Bytes scanned at the connector's ``price_per_tb``, when one is configured."""
    source: str = ""
    """Where the figures come from ("PostgreSQL EXPLAIN", "Spark's optimized plan")."""

    def summary(self) -> str:
        """``"≈ 2M rows, 1.4 GB scanned, ≈ $0.0088 (Spark's optimized plan)"``."""
        text = self.brief()
        return f"{text} ({self.source})" if self.source else text

    def brief(self) -> str:
        """:meth:`summary` without the source, for a trace's status line."""
        text = self.scanned(rows=True) or "no estimate"
        if self.dollars is not None:
            text += f", ≈ {money(self.dollars)}"
        return text

    def scanned(self, *, rows: bool = False) -> str:
        """``"≈ 1.2 GB scanned"``; rows where the engine gives no bytes (``"≈ 2M rows
        scanned"``), or beside them with ``rows``; ``""`` when it gives neither."""
        parts = []
        if self.rows_scanned is not None and (rows or self.bytes_scanned is None):
            parts.append(f"{describe_count(self.rows_scanned)} rows")
        if self.bytes_scanned is not None:
            parts.append(describe_bytes(self.bytes_scanned, decimal=True))
        return "≈ " + ", ".join(parts) + " scanned" if parts else ""


def cost_line(estimate: Estimate | None, spend: ModelSpend | None, *, rows: bool = False) -> str:
    """The one line a query's step shows before the query runs:
    ``"≈ $0.004 model · ≈ 1.2 GB scanned (≈ $0.0075 at your price)"``.

    The model part is what the model has cost the turn so far (``spend``; the call that
    wrote this query included): ``≈`` where some token counts were estimated,
    ``(not spent)`` for a scripted or replayed model, ``model cost unknown`` for a model
    with no price, left out outside a turn. The scan part is the engine's estimate — bytes,
    or rows where the engine gives rows only (``rows``: both, for a connector that gates on
    rows) — with its dollars at the connector's ``price_per_tb`` when one is set. ``""``
    when the engine gave no estimate: no line is better than a made-up one."""
    scan = "" if estimate is None else estimate.scanned(rows=rows)
    if not scan:
        return ""
    if estimate is not None and estimate.dollars is not None:
        scan += f" (≈ {money(estimate.dollars)} at your price)"
    if spend is None:
        return scan
    if spend.cost_usd is None:
        model = "model cost unknown"
    else:
        model = ("≈ " if spend.estimated else "") + f"{money(spend.cost_usd)} model"
        model += " (not spent)" if spend.simulated else ""
    return f"{model} · {scan}"


class Preflight(BaseModel):
    """A connector's preflight settings (see the module docstring).

    ``enabled`` is on when asked for, or when a threshold or a price is set; Spark's is on by
    default (its estimate costs no round trip: the optimized plan is built anyway).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    approve_above_bytes: int | None = None
    approve_above_usd: float | None = None
    """Dollars of the query's scan at ``price_per_tb`` (``approve_above="$0.50"``); the
    model's own spend is not counted here: the turn and session cost caps bound it."""
    approve_above_rows: int | None = None
    price_per_tb: float | None = None

    @classmethod
    def from_options(
        cls,
        preflight: bool | None,
        approve_above: int | float | str | None,
        approve_above_rows: int | None,
        price_per_tb: float | None,
        *,
        default: bool = False,
    ) -> Preflight:
        """The connector's keyword options, checked; ``default`` when ``preflight`` is None
        and no threshold or price asks for it. ``approve_above`` is a size (``"10GB"``) or
        dollars of scan (``"$0.50"``, which needs ``price_per_tb``)."""
        if preflight is not None and not isinstance(preflight, bool):
            raise ConfigurationError("preflight takes True or False")
        limit_bytes = limit_usd = None
        if isinstance(approve_above, str) and is_money(approve_above):
            limit_usd = parse_dollars(approve_above)
        elif approve_above is not None:
            limit_bytes = parse_bytes(approve_above)
        if approve_above_rows is not None and (
            isinstance(approve_above_rows, bool)
            or not isinstance(approve_above_rows, int)
            or approve_above_rows < 1
        ):
            raise ConfigurationError("approve_above_rows must be a positive number of rows")
        if price_per_tb is not None and (
            isinstance(price_per_tb, bool)
            or not isinstance(price_per_tb, int | float)
            or not math.isfinite(price_per_tb)
            or price_per_tb < 0
        ):
            raise ConfigurationError("price_per_tb is dollars per terabyte scanned, e.g. 6.25")
        if limit_usd is not None and price_per_tb is None:
            raise ConfigurationError(
                f"approve_above={approve_above!r} is dollars of scan and needs your price: "
                "add price_per_tb (e.g. 6.25), or write a size such as '10GB'"
            )
        wanted = limit_bytes is not None or limit_usd is not None
        wanted = wanted or approve_above_rows is not None or price_per_tb is not None
        if preflight is False and wanted:
            raise ConfigurationError(
                "approve_above / approve_above_rows / price_per_tb need the preflight; "
                "drop preflight=False"
            )
        enabled = preflight if preflight is not None else (wanted or default)
        return cls(
            enabled=enabled,
            approve_above_bytes=limit_bytes,
            approve_above_usd=limit_usd,
            approve_above_rows=approve_above_rows,
            price_per_tb=None if price_per_tb is None else float(price_per_tb),
        )

    @property
    def needs(self) -> frozenset[str]:
        """The figures a threshold is set on (``"bytes"``, ``"rows"``; a threshold in dollars
        is on bytes, which the price turns into dollars)."""
        on_bytes = self.approve_above_bytes is not None or self.approve_above_usd is not None
        wanted = {"bytes"} if on_bytes else set()
        return frozenset(wanted | ({"rows"} if self.approve_above_rows is not None else set()))

    def check_figures(self, figures: frozenset[str], engine: str) -> None:
        """Refuse a threshold on a figure the engine's estimate never gives (it would never
        fire): DuckDB's EXPLAIN has rows, not bytes."""
        missing = self.needs - figures
        if missing:
            option = "approve_above_rows" if "rows" in figures else "approve_above"
            raise ConfigurationError(
                f"{engine}'s estimate gives {' and '.join(sorted(figures))}, not "
                f"{' and '.join(sorted(missing))}: use {option}"
            )

    def priced(self, estimate: Estimate) -> Estimate:
        """The estimate with its dollars, where bytes and a price are known."""
        if self.price_per_tb is None or estimate.bytes_scanned is None:
            return estimate
        dollars = estimate.bytes_scanned / 10**12 * self.price_per_tb
        return estimate.model_copy(update={"dollars": dollars})

    def over(self, estimate: Estimate) -> str | None:
        """Which threshold the estimate passes ("1 GB", "$0.50 at your price", "500 rows",
        "1 GB and 500 rows"), or None when it passes none (or the engine gave no figure to
        compare)."""
        passed = []
        if (
            self.approve_above_bytes is not None
            and estimate.bytes_scanned is not None
            and estimate.bytes_scanned > self.approve_above_bytes
        ):
            passed.append(describe_bytes(self.approve_above_bytes, decimal=True))
        if (
            self.approve_above_usd is not None
            and estimate.dollars is not None
            and estimate.dollars > self.approve_above_usd
        ):
            passed.append(f"{money(self.approve_above_usd, exact=True)} at your price")
        if (
            self.approve_above_rows is not None
            and estimate.rows_scanned is not None
            and estimate.rows_scanned > self.approve_above_rows
        ):
            passed.append(f"{describe_count(self.approve_above_rows)} rows")
        return " and ".join(passed) or None


async def approve_if_costly(
    preflight: Preflight, estimate: Estimate | None, *, connector_id: str
) -> ToolResult | None:
    """Show the query's cost line in the trace (:func:`cost_line`, before the query runs),
    then gate it: None when the query may run; else, after asking the analyst (the request's
    reason starts with the same line), the refusal the model reads (the estimate, the
    threshold, how to narrow the query). With a threshold set, a query the engine could not
    estimate — or gave no figure for — is asked about too: the gate fails closed."""
    line = cost_line(estimate, model_spend(), rows="rows" in preflight.needs)
    report_status(line)
    if not preflight.needs:
        return None  # estimates shown, nothing gated
    source = f" ({estimate.source})" if estimate is not None and estimate.source else ""
    if estimate is None:
        told = f"not estimated (the engine could not say what it scans), and {connector_id!r}"
        told += " asks before running a query it cannot estimate"
        reason = told
    elif any(getattr(estimate, f"{figure}_scanned") is None for figure in preflight.needs):
        told = f"estimated {estimate.summary()}, without the figure {connector_id!r} checks"
        reason = f"{line}, without the figure {connector_id!r} checks{source}" if line else told
    else:
        over = preflight.over(estimate)
        if over is None:
            return None
        told = f"estimated {estimate.summary()}, above the {over} {connector_id!r} runs unasked"
        reason = f"{line}: above the {over} {connector_id!r} runs unasked{source}"
    approved, why_not = await ask_approval(reason)
    if approved:
        return None
    nobody = "no approver" in why_not or "nobody" in why_not
    who = "nobody was there to approve it" if nobody else "the analyst did not approve it"
    return ToolResult(
        content=(
            f"not run: this query is {told}, and {who}. A narrower query that scans less "
            "runs without asking: filter on partition or date columns, select fewer columns, "
            "aggregate a smaller range"
        ),
        is_error=True,
        failure="denied",
    )
