"""Fixtures for the fault suite: a stub model server, a seeded SQLite shop, a ledger reader,
and a private throwaway PostgreSQL cluster that tests may stop and start at will.

The shared services (scripts/services) are never touched: other test runs use them
concurrently, and "the database went away" must be something this suite can do on purpose.
The private cluster lives in its own temp directory on a free port of 127.0.0.1, runs as the
``postgres`` user when we are root (PostgreSQL refuses to run as root), with durability off
(``-F -c fsync=off``) since its data is generated and thrown away at the end of the session.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from relay_nb.agent.ledger import UsageLedger
from relay_nb.testing.anthropic_stub import AnthropicStub
from relay_nb.testing.seed import seed_database

PG_READONLY_USER = "relay_ro"
PG_DATABASE = "shop"
_WAIT_S = 30


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own key, base URL or model profile must not change what we see."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "RELAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[AnthropicStub]:
    with AnthropicStub() as server:
        yield server


@pytest.fixture(scope="session")
def shop_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('faults_shop') / 'shop.sqlite'}"
    seed_database(url)
    return url


class LedgerFile:
    """A real ledger file in a test's tmp_path, read back through the public API."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def rows(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Every recorded call (oldest first) as plain dicts; NA becomes None."""
        with UsageLedger(self.path) as ledger:
            frame = ledger.rows(session_id=session_id)
        records = frame.astype(object).where(frame.notna(), None).to_dict("records")
        return [dict(record) for record in records]


@pytest.fixture
def ledger_file(tmp_path: Path) -> LedgerFile:
    return LedgerFile(tmp_path / "usage.sqlite")


# -- a private PostgreSQL cluster ------------------------------------------------------------


def _pg_bindir() -> Path | None:
    override = os.environ.get("RELAY_PG_BIN")
    candidates = [Path(override)] if override else []
    candidates += sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: [int(x) if x.isdigit() else x for x in p.parent.name.split(".")],
        reverse=True,
    )
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class PrivatePostgres:
    """One throwaway cluster; ``stop``/``start`` are what the fault tests use."""

    bindir: Path
    base: Path
    port: int
    password: str
    run_as: str | None
    """The OS user the server runs as (``postgres`` when we are root), or None: ourselves."""

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base / "run"

    @property
    def url(self) -> str:
        """The read-only role over TCP, with its password (the connector must never show it)."""
        return (
            f"postgresql+psycopg://{PG_READONLY_USER}:{self.password}@127.0.0.1:{self.port}/"
            f"{PG_DATABASE}"
        )

    @property
    def admin_url(self) -> str:
        """The superuser over the private Unix socket (trust auth; the directory is private)."""
        return (
            f"postgresql+psycopg://postgres@/{PG_DATABASE}?host={self.socket_dir}&port={self.port}"
        )

    def _pg_ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / "pg_ctl"), *args]
        if self.run_as is not None:
            command = ["runuser", "-u", self.run_as, "--", *command]
        done = subprocess.run(command, cwd="/", capture_output=True, text=True, timeout=_WAIT_S + 5)
        if check and done.returncode != 0:
            log = (self.base / "postgres.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"pg_ctl {args[0]} failed: {done.stderr.strip()}\n{log}")
        return done

    def running(self) -> bool:
        return self._pg_ctl("status", "-D", str(self.data), check=False).returncode == 0

    def start(self) -> None:
        options = (
            f"-F -c fsync=off -c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.socket_dir} -c max_connections=30"
        )
        self._pg_ctl(
            "start", "-D", str(self.data), "-l", str(self.base / "postgres.log"),
            "-w", "-t", str(_WAIT_S), "-o", options,
        )  # fmt: skip

    def stop(self, mode: str = "immediate") -> None:
        """``immediate``: every backend is killed at once, as in a crash or a pulled plug."""
        self._pg_ctl("stop", "-D", str(self.data), "-m", mode, "-w", "-t", str(_WAIT_S))

    def ensure_running(self) -> None:
        if not self.running():
            self.start()

    def admin_query(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        """Run one statement as the superuser on a fresh connection (nothing pooled)."""
        import psycopg

        with psycopg.connect(
            host=str(self.socket_dir), port=self.port, user="postgres", dbname=PG_DATABASE,
            autocommit=True, connect_timeout=10,
        ) as conn:  # fmt: skip
            cursor = conn.execute(sql, params or None)
            return cursor.fetchall() if cursor.description else []

    def active_queries(self, like: str) -> list[str]:
        """Statements of the read-only role that are running now and contain ``like``."""
        rows = self.admin_query(
            "SELECT query FROM pg_stat_activity WHERE usename = %s AND state = 'active' "
            "AND position(%s in query) > 0",
            PG_READONLY_USER,
            like,
        )
        return [row[0] for row in rows]

    def wait_for_query(self, like: str, timeout_s: float = 15.0) -> None:
        """Until a statement containing ``like`` is running (so a stop hits it mid-query)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.active_queries(like):
                return
            time.sleep(0.05)
        raise AssertionError(f"no running query containing {like!r} within {timeout_s} s")


def _create_cluster(bindir: Path, base: Path) -> PrivatePostgres:
    run_as = None
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise RuntimeError("running as root but there is no 'postgres' OS user") from None
        run_as = "postgres"
    base.chmod(0o755)
    cluster = PrivatePostgres(bindir, base, _free_port(), secrets.token_urlsafe(18), run_as)
    (base / "data").mkdir()
    (base / "run").mkdir()
    pwfile = base / "superuser.pw"
    pwfile.write_text(secrets.token_urlsafe(18) + "\n")
    if run_as is not None:
        for path in (base, base / "data", base / "run", pwfile):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    (base / "data").chmod(0o700)
    (base / "run").chmod(0o700)
    initdb = [
        str(bindir / "initdb"), "-D", str(base / "data"), "-U", "postgres", "--no-sync",
        "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}",
        "--encoding=UTF8", "--locale=C",
    ]  # fmt: skip
    if run_as is not None:
        initdb = ["runuser", "-u", run_as, "--", *initdb]
    done = subprocess.run(initdb, cwd="/", capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed: {done.stderr.strip()[-2000:]}")
    pwfile.unlink()
    cluster.start()
    return cluster


def _seed(cluster: PrivatePostgres) -> None:
    import psycopg

    with psycopg.connect(
        host=str(cluster.socket_dir), port=cluster.port, user="postgres", dbname="postgres",
        autocommit=True,
    ) as conn:  # fmt: skip
        conn.execute(f"CREATE DATABASE {PG_DATABASE}")
        conn.execute(
            f"CREATE ROLE {PG_READONLY_USER} LOGIN PASSWORD '{cluster.password}' "
            "NOSUPERUSER NOCREATEDB NOCREATEROLE"
        )
    seed_database(cluster.admin_url)
    cluster.admin_query(
        f"GRANT USAGE ON SCHEMA public TO {PG_READONLY_USER}; "
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {PG_READONLY_USER}"
    )


@pytest.fixture(scope="session")
def private_pg() -> Iterator[PrivatePostgres]:
    """A seeded cluster for the session; skipped (failed under CI) without the binaries."""
    bindir = _pg_bindir()
    if bindir is None or (os.geteuid() == 0 and shutil.which("runuser") is None):
        reason = (
            "the fault suite's private PostgreSQL needs initdb and pg_ctl under "
            "/usr/lib/postgresql/*/bin (Debian package 'postgresql'; or set RELAY_PG_BIN)"
            + (" and runuser" if bindir is not None else "")
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    # not under pytest's basetemp: that is 0700 and root's, which the postgres user cannot enter
    base = Path(tempfile.mkdtemp(prefix="relay_faults_pg_"))
    cluster: PrivatePostgres | None = None
    try:
        cluster = _create_cluster(bindir, base)
        _seed(cluster)
        yield cluster
    finally:
        if cluster is not None and cluster.running():
            cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg(private_pg: PrivatePostgres) -> PrivatePostgres:
    """The private cluster, running at the start of the test (a test may stop it)."""
    private_pg.ensure_running()
    return private_pg
