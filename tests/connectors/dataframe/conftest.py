"""Frames and a connector factory for the DataFrame connector tests.

Frames are generated from a fixed seed, so every expected value is computed by pandas from
the same frame in the test itself, never written down.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from relay_nb.connectors.dataframe import DataFrameConnector

REGIONS = np.array(["north", "south", "east", "west"])


def make_sales(rows: int = 500, seed: int = 11) -> pd.DataFrame:
    """Numeric, text, nullable, categorical and time-zone-aware columns, as notebooks have."""
    rng = np.random.default_rng(seed)
    amount = rng.random(rows) * 100
    amount[::17] = np.nan
    qty = pd.array(rng.integers(1, 10, rows), dtype="Int64")
    qty[::13] = pd.NA
    return pd.DataFrame(
        {
            "store_id": rng.integers(1, 9, rows),
            "region": pd.array(REGIONS[rng.integers(0, 4, rows)], dtype="string"),
            "amount": amount,
            "qty": qty,
            "channel": pd.Categorical(rng.choice(["web", "shop", "phone"], rows)),
            "sold_at": pd.date_range("2025-01-01", periods=rows, freq="7h", tz="Europe/Paris"),
        }
    )


def make_shop(seed: int = 5) -> dict[str, pd.DataFrame]:
    """Three related frames for JOINs: customers 1..40, products 1..12, 300 orders."""
    rng = np.random.default_rng(seed)
    customers = pd.DataFrame(
        {
            "customer_id": np.arange(1, 41),
            "country": rng.choice(["FR", "DE", "US"], 40),
            "plan": pd.Categorical(rng.choice(["free", "pro"], 40)),
        }
    )
    products = pd.DataFrame(
        {"product_id": np.arange(1, 13), "price": np.round(rng.random(12) * 50 + 1, 2)}
    )
    orders = pd.DataFrame(
        {
            "order_id": np.arange(1, 301),
            "customer_id": rng.integers(1, 41, 300),
            "product_id": rng.integers(1, 13, 300),
            "quantity": rng.integers(1, 5, 300),
        }
    )
    return {"orders": orders, "customers": customers, "products": products}


@pytest.fixture
def sales() -> pd.DataFrame:
    return make_sales()


@pytest.fixture
def shop() -> dict[str, pd.DataFrame]:
    return make_shop()


@pytest.fixture
def connect() -> Iterator[Callable[..., DataFrameConnector]]:
    """Build connectors; all are closed at teardown."""
    made: list[DataFrameConnector] = []

    def build(connector_id: str, frames: Any, **options: Any) -> DataFrameConnector:
        connector = DataFrameConnector(connector_id, frames, **options)
        made.append(connector)
        return connector

    yield build
    for connector in made:
        connector.close()
