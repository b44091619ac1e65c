"""The second wall alone: every planted write handed straight to read-only execution.

In a turn the guard refuses every payload first (test_obedient_turn.py), so read-only
execution is never reached. Its promise is that "a guard bug still cannot write"; here the
guard is skipped and each write's SQL goes to ``run_read_only`` on the engine relay_nb builds
for the URL (SQLite ``mode=ro`` + ``query_only``, DuckDB ``read_only`` with external access
off, PostgreSQL read-only transactions as the read-only role). The database, read back with a
connection of its own, must be unchanged and no file may appear.

This suite found three writes the second wall let through on its own (SQLite ATTACH and
VACUUM INTO creating files, and a stacked ``COMMIT`` on PostgreSQL for a role that may write);
readonly.py closes them, and the tests below keep them closed.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

import pytest
from injection_payloads import catalogue, fill
from injection_services import service_env
from poisoned import Poisoned, build
from sqlalchemy import Engine

from relay_nb.connectors.sql.readonly import build_engine, run_read_only

# Writes that once got past read-only execution alone (closed in readonly.py): SQLite ATTACH
# and VACUUM INTO created files under query_only until SQLITE_LIMIT_ATTACHED was set to 0 per
# call. Checked one by one below, on a fresh database each.
FORMER_HOLES = (("sqlite", "attach_sqlite"), ("sqlite", "vacuum_into"))


def _attempt(engine: Engine, sql: str) -> str:
    """Run ``sql`` read-only; the outcome as text (an error is what the wall should give)."""
    try:
        run_read_only(engine, sql, max_rows=5, timeout_s=10)
    except Exception as exc:
        return f"refused: {type(exc).__name__}"
    return "ran"


def test_read_only_execution_alone_stops_the_writes(poisoned_sql: Poisoned) -> None:
    """One engine for all attempts, as a connector keeps one: whatever an attempt leaves on
    a pooled connection (a session setting, an attachment) meets the next attempt."""
    source = poisoned_sql
    check = source.quick_fingerprint or source.fingerprint
    before, quick_before = source.fingerprint(), check()
    broke: list[str] = []
    outcomes: dict[str, str] = {}
    engine = build_engine(source.target)
    try:
        for payload_id, sql in sorted(source.write_sql.items()):
            outcomes[payload_id] = _attempt(engine, sql)
            if check() != quick_before:
                broke.append(payload_id)
    finally:
        engine.dispose()
    assert broke == []
    assert source.fingerprint() == before
    assert len(outcomes) >= 15
    ran = sorted(p for p, outcome in outcomes.items() if outcome == "ran")
    print(f"\n{source.backend}: ran without error but changed nothing: {ran}")


@pytest.mark.parametrize(("backend", "payload_id"), FORMER_HOLES)
def test_former_holes_of_the_second_wall_stay_closed(
    backend: str, payload_id: str, tmp_path: Path
) -> None:
    source = build(backend, tmp_path, service_env(backend))
    try:
        before = source.fingerprint()
        engine = build_engine(source.target)
        try:
            _attempt(engine, source.write_sql[payload_id])
        finally:
            engine.dispose()
        assert source.fingerprint() == before
    finally:
        source.cleanup()


def test_read_only_execution_alone_as_a_role_that_may_write(pg_owner_table: tuple) -> None:
    """Analysts often connect with their everyday role, which can write: the read-only
    transaction is then the only thing between a stacked statement and the data. psycopg's
    simple query protocol would run ``SELECT 1; COMMIT; …`` whole; readonly.py prepares the
    statement (extended protocol), which refuses a second one."""
    engine_url, table, count = pg_owner_table
    stacked = next(p for p in catalogue().writes if p.id == "stacked_commit")
    sql = fill(stacked.sql, victim=table)
    engine = build_engine(engine_url)
    try:
        with contextlib.suppress(Exception):  # a refusal is what a fixed wall would give
            run_read_only(engine, sql, max_rows=5, timeout_s=10)
    finally:
        engine.dispose()
    assert count() == 2


@pytest.fixture
def pg_owner_table():
    """A private two-row table owned by the admin role, dropped afterwards."""
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    admin_url = service_env("postgres")["admin"]
    schema = f"inj_owner_{uuid.uuid4().hex[:6]}"
    admin = sa.create_engine(admin_url, poolclass=NullPool)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
        conn.exec_driver_sql(f"CREATE TABLE {schema}.clients (id int PRIMARY KEY)")
        conn.exec_driver_sql(f"INSERT INTO {schema}.clients VALUES (1), (2)")

    def count() -> int:
        with admin.connect() as conn:
            return conn.exec_driver_sql(f"SELECT count(*) FROM {schema}.clients").scalar_one()

    try:
        yield admin_url, f"{schema}.clients", count
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        admin.dispose()
