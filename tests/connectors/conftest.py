"""Seeded shop databases for the SQL connector tests: SQLite, DuckDB, PostgreSQL, MariaDB.

SQLite and DuckDB are seeded in-process into files of their own. The servers come from
``scripts/services start``, which exports their URLs (``RELAY_TEST_PG_URL`` …) in
``$RELAY_SERVICES_DIR/services.env``. A missing or unreachable server *fails* under
``CI=true`` — the issue requires server tests to run for real there, and a skip would hide a
broken setup — and skips elsewhere, so a quick local run needs no servers.

Fixture names are a contract other test modules rely on: ``sqlite_shop``, ``duckdb_shop``,
``pg_urls``, ``mariadb_urls`` and ``shop_db`` (parametrized: sqlite, duckdb, postgres, mariadb).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb.testing.seed import scratch_database, seed_database

SERVICES_HINT = "run scripts/services start (and source its env file)"
_DEFAULT_SERVICES_DIR = "/tmp/relay_nb_services"


@dataclass(frozen=True)
class ServerURLs:
    """Connection URLs of one seeded server: ``ro`` is the ``relay_ro`` login under test,
    ``admin`` owns the data (setup, fingerprints); ``paths`` are dirs worth fingerprinting."""

    ro: str
    admin: str
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShopDB:
    """One seeded shop database, whatever the dialect; ``dialect`` is sqlglot's name."""

    dialect: str
    ro_url: str
    admin_url: str
    paths: tuple[str, ...] = field(default=())


def _unavailable(message: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message} (CI=true: server tests must run, not skip)", pytrace=False)
    pytest.skip(f"{message}: {SERVICES_HINT}")


def _server(kind: str, env_prefix: str, paths: tuple[str, ...]) -> ServerURLs:
    ro = os.environ.get(f"RELAY_TEST_{env_prefix}_URL")
    admin = os.environ.get(f"RELAY_TEST_{env_prefix}_ADMIN_URL")
    if not ro or not admin:
        _unavailable(f"{kind}: RELAY_TEST_{env_prefix}_URL / _ADMIN_URL are not set")
    assert ro and admin
    for url in (ro, admin):
        engine = sa.create_engine(url, poolclass=NullPool, connect_args={"connect_timeout": 5})
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
        except sa.exc.DBAPIError as exc:
            shown = sa.make_url(url).render_as_string(hide_password=True)
            _unavailable(f"{kind} at {shown} is unreachable: {exc.orig}")
        finally:
            engine.dispose()
    return ServerURLs(ro=ro, admin=admin, paths=paths)


def _services_dir() -> Path:
    return Path(os.environ.get("RELAY_SERVICES_DIR", _DEFAULT_SERVICES_DIR))


@pytest.fixture(scope="session")
def sqlite_shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seeded SQLite file, alone in its directory (so that directory can be fingerprinted)."""
    path = tmp_path_factory.mktemp("sqlite_shop") / "shop.sqlite"
    seed_database(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def duckdb_shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seeded DuckDB file, alone in its directory; the seeding engine is closed again."""
    path = tmp_path_factory.mktemp("duckdb_shop") / "shop.duckdb"
    seed_database(f"duckdb:///{path}")
    return path


@pytest.fixture(scope="session")
def pg_urls() -> ServerURLs:
    """PostgreSQL from ``scripts/services``; paths: the cluster's data directory."""
    data = os.environ.get("RELAY_TEST_PG_DATA_DIR", str(_services_dir() / "postgres/data"))
    return _server("PostgreSQL", "PG", (data,))


@pytest.fixture(scope="session")
def mariadb_urls() -> ServerURLs:
    """MariaDB from ``scripts/services``; paths: the shop database's directory and the
    ``secure_file_priv`` directory (the only place the server may write files)."""
    data = os.environ.get("RELAY_TEST_MARIADB_DATA_DIR", str(_services_dir() / "mariadb/data"))
    files = os.environ.get("RELAY_TEST_MARIADB_FILES_DIR", str(_services_dir() / "mariadb/files"))
    return _server("MariaDB", "MARIADB", (str(Path(data) / "shop"), files))


@pytest.fixture(params=["sqlite", "duckdb", "postgres", "mariadb"])
def shop_db(request: pytest.FixtureRequest) -> ShopDB:
    """The same seeded shop once per dialect. For the file databases ``ro_url`` is the plain
    file URL: opening it read-only is the connector's own job, and part of what is tested."""
    kind = request.param
    if kind in ("sqlite", "duckdb"):
        path: Path = request.getfixturevalue(f"{kind}_shop")
        url = f"{kind}:///{path}"
        return ShopDB(dialect=kind, ro_url=url, admin_url=url, paths=(str(path.parent),))
    server: ServerURLs = request.getfixturevalue(
        "pg_urls" if kind == "postgres" else "mariadb_urls"
    )
    dialect = "postgres" if kind == "postgres" else "mysql"
    return ShopDB(dialect=dialect, ro_url=server.ro, admin_url=server.admin, paths=server.paths)


@pytest.fixture(params=["sqlite", "duckdb", "postgres", "mariadb"])
def scratch_shop(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ShopDB]:
    """A private seeded database a test may damage; the shared ``shop`` stays untouched.

    Tests that connect with the OWNER's credentials, or that write on purpose, use this, so
    a failing defence can never corrupt the database every other test reads.
    """
    kind = request.param
    if kind in ("sqlite", "duckdb"):
        url = f"{kind}:///{tmp_path / ('shop.' + kind)}"
        seed_database(url)
        yield ShopDB(dialect=kind, ro_url=url, admin_url=url, paths=(str(tmp_path),))
        return
    server: ServerURLs = request.getfixturevalue(
        "pg_urls" if kind == "postgres" else "mariadb_urls"
    )
    with scratch_database(server.admin, "shop_scratch") as url:
        seed_database(url)
        dialect = "postgres" if kind == "postgres" else "mysql"
        yield ShopDB(dialect=dialect, ro_url=url, admin_url=url, paths=())
