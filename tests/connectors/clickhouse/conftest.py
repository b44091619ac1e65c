"""ClickHouse for real: chDB (ClickHouse embedded in the process) behind the SQL connector.

chDB hosts one database directory per process, so each module seeds a directory of its own
(:func:`chdb_database`) and closes every connection to it when it is done (the next module, or
the ClickHouse corpus in ``test_dialect_corpora.py``, opens another). chdb and chdb-sqlalchemy
are dev dependencies: a missing one fails under ``CI=true`` and skips elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from chdb_helpers import Statement, StatementLog, require_chdb, run_raw


@pytest.fixture(scope="module")
def chdb_database(tmp_path_factory) -> Callable[[Sequence[str]], Path]:
    """Seeds a fresh database directory with ``statements`` (once per module)."""
    require_chdb()

    def seed(statements: Sequence[str]) -> Path:
        path = tmp_path_factory.mktemp("chdb")
        run_raw(path, statements)
        return path

    return seed


@pytest.fixture
def statement_log(monkeypatch) -> StatementLog:
    """Every statement any chDB DB-API cursor runs (relay_nb's catalog reads, its profiling,
    its queries), with the rows the engine read for it, measured by the engine."""
    import chdb.dbapi.cursors

    log = StatementLog()
    original = chdb.dbapi.cursors.Cursor.execute

    def execute(self: Any, query: str, args: Any = None) -> int:
        result = original(self, query, args)
        engine_cursor = self._cursor._cursor  # chdb.state.sqlitelike.Cursor's native cursor
        log.statements.append(Statement(self._executed, engine_cursor.storage_rows_read()))
        return result

    monkeypatch.setattr(chdb.dbapi.cursors.Cursor, "execute", execute)
    return log
