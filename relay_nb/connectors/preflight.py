"""Cost preflight: ask the engine what a query will scan before running it.

Where an engine can estimate a query without running it (PostgreSQL and DuckDB ``EXPLAIN``,
Spark's optimized plan), a connector with a preflight asks first. The estimate is kept with
the result (the trace shows it), and above the connector's threshold the query waits for the
analyst's approval — the same approver, and in a notebook the same Approve / Deny buttons, as
a tool marked ``requires_approval``. Denied (or with nobody to ask: a script, an evaluation
run), the model is told the estimate and the threshold, so it can narrow the query.

The parts: :class:`Estimate` (what the engine said), :class:`Preflight` (a connector's
settings: thresholds in rows and bytes scanned, a price per terabyte), and
:func:`approve_if_costly`, the one gate every connector's query tool calls.
"""

from __future__ import annotations

import math
import re

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.bounds import describe_bytes
from relay_nb.errors import ConfigurationError
from relay_nb.tools import ToolResult, ask_approval

__all__ = ["Estimate", "Preflight", "approve_if_costly", "describe_count", "parse_bytes"]

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


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
                f"{option}={value!r} is not a size; write e.g. '500MB', '10GB' or '1TB'"
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
        parts = []
        if self.rows_scanned is not None:
            parts.append(f"{describe_count(self.rows_scanned)} rows")
        if self.bytes_scanned is not None:
            parts.append(describe_bytes(self.bytes_scanned, decimal=True))
        text = "≈ " + ", ".join(parts) + " scanned" if parts else "no estimate"
        if self.dollars is not None:
            text += f", ≈ ${self.dollars:.2g}" if self.dollars < 1 else f", ≈ ${self.dollars:,.2f}"
        return text


class Preflight(BaseModel):
    """A connector's preflight settings (see the module docstring).

    ``enabled`` is on when asked for, or when a threshold or a price is set; Spark's is on by
    default (its estimate costs no round trip: the optimized plan is built anyway).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    approve_above_bytes: int | None = None
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
        and no threshold or price asks for it."""
        if preflight is not None and not isinstance(preflight, bool):
            raise ConfigurationError("preflight takes True or False")
        limit_bytes = None if approve_above is None else parse_bytes(approve_above)
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
        wanted = limit_bytes is not None or approve_above_rows is not None
        wanted = wanted or price_per_tb is not None
        if preflight is False and wanted:
            raise ConfigurationError(
                "approve_above / approve_above_rows / price_per_tb need the preflight; "
                "drop preflight=False"
            )
        enabled = preflight if preflight is not None else (wanted or default)
        return cls(
            enabled=enabled,
            approve_above_bytes=limit_bytes,
            approve_above_rows=approve_above_rows,
            price_per_tb=None if price_per_tb is None else float(price_per_tb),
        )

    def priced(self, estimate: Estimate) -> Estimate:
        """The estimate with its dollars, where bytes and a price are known."""
        if self.price_per_tb is None or estimate.bytes_scanned is None:
            return estimate
        dollars = estimate.bytes_scanned / 10**12 * self.price_per_tb
        return estimate.model_copy(update={"dollars": dollars})

    def over(self, estimate: Estimate) -> str | None:
        """Why the estimate needs approval ("1.4 GB scanned, above 1 GB"), or None."""
        reasons = []
        if (
            self.approve_above_bytes is not None
            and estimate.bytes_scanned is not None
            and estimate.bytes_scanned > self.approve_above_bytes
        ):
            reasons.append(
                f"{describe_bytes(estimate.bytes_scanned, decimal=True)} scanned is above "
                f"{describe_bytes(self.approve_above_bytes, decimal=True)}"
            )
        if (
            self.approve_above_rows is not None
            and estimate.rows_scanned is not None
            and estimate.rows_scanned > self.approve_above_rows
        ):
            reasons.append(
                f"{describe_count(estimate.rows_scanned)} rows scanned is above "
                f"{describe_count(self.approve_above_rows)}"
            )
        return " and ".join(reasons) or None


async def approve_if_costly(
    preflight: Preflight, estimate: Estimate | None, *, connector_id: str
) -> ToolResult | None:
    """None when the query may run; else the refusal the model reads (the estimate and the
    threshold, and how to narrow the query), after asking the analyst."""
    if estimate is None:
        return None
    over = preflight.over(estimate)
    if over is None:
        return None
    reason = f"estimated {estimate.summary()}: {over}, the limit {connector_id!r} runs unasked"
    approved, _why_not = await ask_approval(reason)
    if approved:
        return None
    return ToolResult(
        content=(
            f"not run: this query is {reason}, and it was not approved. Narrow "
            "it so it scans less — filter on partition or date columns, select fewer "
            "columns, aggregate a smaller range — or ask the analyst to approve it"
        ),
        is_error=True,
        failure="denied",
    )
