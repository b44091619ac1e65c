"""Poisoned sources for the prompt-injection suite, one per backend.

SQLite, DuckDB and the DataFrames are built in-process; PostgreSQL and SecantusDB (Mongo
wire) come from ``scripts/services start`` (``RELAY_TEST_PG_ADMIN_URL`` / ``RELAY_TEST_PG_URL``
and ``RELAY_TEST_SECANTUS_URL``). Each server source lives in a private schema or database
with a unique name, dropped at teardown, so the shared ``shop`` data is never touched. As in
``tests/connectors``, a missing server skips locally and fails under ``CI=true``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from injection_services import service_env
from poisoned import Poisoned, build

BACKENDS = ("sqlite", "duckdb", "postgres", "dataframe", "mongo")


def _source(backend: str, factory: pytest.TempPathFactory) -> Iterator[Poisoned]:
    source = build(backend, factory.mktemp(f"poisoned_{backend}"), service_env(backend))
    try:
        yield source
    finally:
        source.cleanup()


@pytest.fixture(scope="module", params=BACKENDS)
def poisoned(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A poisoned source per backend, built once per test module."""
    yield from _source(request.param, tmp_path_factory)


@pytest.fixture(scope="module", params=("sqlite", "duckdb", "postgres"))
def poisoned_sql(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The SQL databases whose engines relay_nb opens itself (for the second-wall tests)."""
    yield from _source(request.param, tmp_path_factory)
