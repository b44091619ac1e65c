"""The agent loop layer: loop, sessions, skills, pricing, usage ledger.

This session lands pricing (a dated, user-extendable price table and ``price_usage``) and the
usage ledger (an append-only record of every model call). SQLAlchemy and pandas load only
when the ledger is first used.
"""

from __future__ import annotations

from relay_nb.agent.ledger import LedgerRow, UsageLedger, default_ledger_path
from relay_nb.agent.pricing import ModelPrice, PriceTable, price_usage

__all__ = [
    "LedgerRow",
    "ModelPrice",
    "PriceTable",
    "UsageLedger",
    "default_ledger_path",
    "price_usage",
]
