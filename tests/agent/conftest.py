"""Shared fixtures: a seeded SQLite shop and its read-only connector."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.testing.seed import seed_database


@pytest.fixture(scope="session")
def shop_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agent_shop") / "shop.sqlite"
    seed_database(f"sqlite:///{path}")
    return path


@pytest.fixture
def shop(shop_db: Path) -> Iterator[SQLConnector]:
    connector = SQLConnector("shop", f"sqlite:///{shop_db}", statement_timeout_s=5)
    yield connector
    connector.close()
