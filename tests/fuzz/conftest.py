"""Fixtures of the guard fuzz tests: the hypothesis profile and the databases they run on.

The profile (``relay-fuzz``, defined in ``fuzz_support``) is registered, not loaded: each
property applies it through ``fuzz_settings(n)``, so hypothesis tests elsewhere in the suite
keep their own settings. It never writes an example database (``database=None``).

``fuzz_db(dialect)`` hands out one private writable shop per dialect and session (see
``fuzz_databases``). PostgreSQL and MariaDB come from ``scripts/services``; the availability
check is the SQL connector tests' own (``tests/connectors/conftest.py``): missing servers
skip locally and fail under ``CI=true``. ``secantus`` is the seeded SecantusDB of the Mongo
connector tests, through their own fixture code (``tests/connectors/mongo``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz_databases import FuzzDatabase, open_file_database, open_server_database
from fuzz_support import load_sibling, mongo_helpers

_connectors = load_sibling("connectors/conftest.py", "relay_connectors_conftest_for_fuzz")


@pytest.fixture(scope="session")
def secantus() -> Any:
    """The seeded SecantusDB (a ``mongo_support.MongoServer``); skips or fails like the
    Mongo connector tests when it is not running."""
    conftest, _ = mongo_helpers()
    return conftest._server(*conftest._KINDS["secantus"])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``RELAY_FUZZ_EXAMPLES`` (a long local run) the suite's per-test timeout would cut
    the fuzzing short: lift it for the tests of this directory only."""
    if not os.environ.get("RELAY_FUZZ_EXAMPLES"):
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.timeout(0))


def _open(
    dialect: str, stack: contextlib.ExitStack, tmp_path_factory: pytest.TempPathFactory
) -> FuzzDatabase:
    """A new private seeded database, closed (and dropped) when ``stack`` closes."""
    if dialect in ("sqlite", "duckdb"):
        directory = tmp_path_factory.mktemp(f"fuzz_{dialect}")
        return stack.enter_context(open_file_database(dialect, directory))
    if dialect == "postgres":
        server = _connectors._server("PostgreSQL", "PG", ())
        return stack.enter_context(open_server_database("postgres", server.admin))
    if dialect == "mysql":
        server = _connectors._server("MariaDB", "MARIADB", ())
        files = os.environ.get(
            "RELAY_TEST_MARIADB_FILES_DIR", str(_connectors._services_dir() / "mariadb/files")
        )
        paths = (files,) if Path(files).is_dir() else ()
        return stack.enter_context(open_server_database("mysql", server.admin, paths))
    raise ValueError(f"no fuzz database for {dialect!r}")


@pytest.fixture(scope="session")
def fuzz_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], FuzzDatabase]]:
    """``fuzz_db("sqlite" | "duckdb" | "postgres" | "mysql")``: opened on first use, shared
    by the session (the properties only read it, and check that)."""
    opened: dict[str, FuzzDatabase] = {}
    with contextlib.ExitStack() as stack:

        def get(dialect: str) -> FuzzDatabase:
            if dialect not in opened:
                opened[dialect] = _open(dialect, stack, tmp_path_factory)
            return opened[dialect]

        yield get


@pytest.fixture
def scratch_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], FuzzDatabase]]:
    """``scratch_db(dialect)``: a fresh private database for one test, which may write to it."""
    with contextlib.ExitStack() as stack:
        yield lambda dialect: _open(dialect, stack, tmp_path_factory)


@pytest.fixture(scope="module")
def unchanged(
    fuzz_db: Callable[[str], FuzzDatabase],
) -> Iterator[Callable[[str], FuzzDatabase]]:
    """``unchanged(dialect)``: the session's database for that dialect, fingerprinted when
    the module first asks for it and again after the module's last test, which must match:
    whatever the guard accepted in between was read-only on its own."""
    before: dict[str, dict[str, str]] = {}

    def get(dialect: str) -> FuzzDatabase:
        db = fuzz_db(dialect)
        before.setdefault(dialect, db.state())
        return db

    yield get
    for dialect, state in before.items():
        after = fuzz_db(dialect).state()
        changed = sorted(k for k in set(state) | set(after) if state.get(k) != after.get(k))
        assert not changed, f"{dialect}: something the guard accepted changed {changed}"
