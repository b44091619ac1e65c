"""The service URLs the server backends need, checked reachable.

As in ``tests/connectors``: a missing or unreachable server skips locally and fails under
``CI=true`` (a skip there would hide a broken setup).
"""

from __future__ import annotations

import os

import pytest

__all__ = ["service_env"]

SERVICES_HINT = "run scripts/services start (and source its env file)"


def _unavailable(message: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: server tests must run, not skip)", pytrace=False)
    pytest.skip(f"{message}: {SERVICES_HINT}")


def service_env(backend: str) -> dict[str, str]:
    """The URLs a server backend needs, checked reachable (skip or fail otherwise)."""
    if backend == "postgres":
        import sqlalchemy as sa
        from sqlalchemy.pool import NullPool

        admin, ro = os.environ.get("RELAY_TEST_PG_ADMIN_URL"), os.environ.get("RELAY_TEST_PG_URL")
        if not admin or not ro:
            _unavailable("PostgreSQL: RELAY_TEST_PG_ADMIN_URL / RELAY_TEST_PG_URL are not set")
        assert admin and ro
        engine = sa.create_engine(admin, poolclass=NullPool, connect_args={"connect_timeout": 5})
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
        except sa.exc.DBAPIError as exc:
            _unavailable(f"PostgreSQL is unreachable: {type(exc.orig).__name__}")
        finally:
            engine.dispose()
        role = sa.make_url(ro).username or ""
        return {"admin": admin, "ro": ro, "role": role}
    if backend == "mongo":
        import pymongo

        base = os.environ.get("RELAY_TEST_SECANTUS_URL")
        if not base:
            _unavailable("SecantusDB: RELAY_TEST_SECANTUS_URL is not set")
        assert base
        try:
            with pymongo.MongoClient(base, serverSelectionTimeoutMS=3000) as client:
                client.admin.command("ping")
        except pymongo.errors.PyMongoError as exc:
            _unavailable(f"SecantusDB is unreachable: {type(exc).__name__}")
        return {"base": base}
    return {}
