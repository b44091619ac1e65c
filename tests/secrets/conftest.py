"""Fixtures of the secrets suite: the run's canaries, an environment holding them, relay_nb's
log at DEBUG, the services (a missing one skips locally and fails under ``CI=true``), and the
notebook and demo runs — started once the tests are collected, so they run while the
in-process tests do.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from secret_runs import RunBatch, start_runs
from secret_scan import Canaries, Evidence, make_canaries

_RUNS_MODULE = "test_notebooks_and_demo.py"
_STARTED = pytest.StashKey[tuple[Canaries, Path, RunBatch]]()
"""The canaries, the runs' directory and the runs, once started (``pytest_collection_finish``)."""


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


def _make_canaries() -> Canaries:
    mongo = os.environ.get("RELAY_TEST_SECANTUS_URL")
    host = urlsplit(mongo).netloc if mongo else "127.0.0.1:9"
    return make_canaries(pg_url=os.environ.get("RELAY_TEST_PG_URL"), mongo_host=host)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the notebook and demo runs as soon as the tests are collected, when their
    module is among them: the kernels then run while the in-process tests do (one core each
    is mostly idle) instead of after them."""
    if not any(item.path.name == _RUNS_MODULE for item in session.items):
        return
    canaries = _make_canaries()
    base = Path(tempfile.mkdtemp(prefix="relay-nb-secret-runs-"))

    def make_dir(name: str) -> Path:
        path = base / name
        path.mkdir()
        return path

    session.config.stash[_STARTED] = (canaries, base, start_runs(canaries, make_dir))


def pytest_sessionfinish(session: pytest.Session) -> None:
    started = session.config.stash.get(_STARTED, None)
    if started is not None:
        _, base, batch = started
        batch.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def canaries(request: pytest.FixtureRequest) -> Canaries:
    """The session's canaries: those the runs started with, when they started."""
    started = request.config.stash.get(_STARTED, None)
    return started[0] if started is not None else _make_canaries()


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
def run_batch(request: pytest.FixtureRequest) -> RunBatch:
    """Every notebook and demo run, started after collection (see ``secret_runs``)."""
    started = request.config.stash.get(_STARTED, None)
    if started is None:
        pytest.fail(f"the runs start when {_RUNS_MODULE} is collected; it was not")
    return started[2]
