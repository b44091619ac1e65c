"""Fixtures of the secrets suite: the run's canaries, an environment holding them, relay_nb's
log at DEBUG, the services (a missing one skips locally and fails under ``CI=true``), and the
notebook and demo runs — started with the session, so they run while the in-process tests do.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from secret_runs import RunBatch, start_runs
from secret_scan import Canaries, Evidence, make_canaries

_RUNS_MODULE = "test_notebooks_and_demo.py"


def _require_env(name: str) -> str:
    """A service URL from ``scripts/services``; skip without it (fail under CI)."""
    value = os.environ.get(name)
    if value:
        return value
    message = f"{name} is not set: run scripts/services start and source its env file"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: the secrets suite must run whole)", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def pg_url() -> str:
    """The real read-only PostgreSQL URL: its password is one of the secrets."""
    return _require_env("RELAY_TEST_PG_URL")


@pytest.fixture
def mongo_service() -> str:
    """SecantusDB, the MongoDB-wire server the canary Mongo URLs point at."""
    return _require_env("RELAY_TEST_SECANTUS_URL")


@pytest.fixture(scope="session")
def canaries() -> Canaries:
    mongo = os.environ.get("RELAY_TEST_SECANTUS_URL")
    host = urlsplit(mongo).netloc if mongo else "127.0.0.1:9"
    return make_canaries(pg_url=os.environ.get("RELAY_TEST_PG_URL"), mongo_host=host)


@pytest.fixture
def canary_env(canaries: Canaries, monkeypatch: pytest.MonkeyPatch) -> Canaries:
    """This process's environment with every canary set, as in the kernel and CLI runs."""
    for name, value in canaries.env.items():
        monkeypatch.setenv(name, value)
    return canaries


@pytest.fixture
def debug_log(tmp_path: Path) -> Iterator[Path]:
    """relay_nb's loggers at DEBUG into a file (plus every other logger's warnings)."""
    path = tmp_path / "relay_nb-debug.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    relay_logger = logging.getLogger("relay_nb")
    level = relay_logger.level
    logging.getLogger().addHandler(handler)
    relay_logger.setLevel(logging.DEBUG)
    try:
        yield path
    finally:
        relay_logger.setLevel(level)
        logging.getLogger().removeHandler(handler)
        handler.close()


@pytest.fixture
def evidence() -> Evidence:
    return Evidence()


@pytest.fixture(scope="session")
def run_batch(canaries: Canaries, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunBatch]:
    """Every notebook and demo run, submitted once (see ``secret_runs``)."""
    batch = start_runs(canaries, tmp_path_factory.mktemp)
    try:
        yield batch
    finally:
        batch.close()


@pytest.fixture(scope="session", autouse=True)
def _start_the_runs_first(request: pytest.FixtureRequest) -> None:
    """The kernel runs take most of the suite's time and mostly wait on each other; started
    before the first test, they overlap with the in-process tests instead of following them."""
    if any(item.path.name == _RUNS_MODULE for item in request.session.items):
        request.getfixturevalue("run_batch")
