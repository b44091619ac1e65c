"""ConnectorRegistry: replace/remove close, schema TTL, status rows, no leaked connections."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from relay_nb import Relay, ScriptedRuntime
from relay_nb.connectors.base import Connector
from relay_nb.connectors.registry import ConnectorRegistry
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import ConfigurationError
from relay_nb.tools import Tool


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Hanging(Connector):
    """A system that never answers: its status row must not hold the others up."""

    kind = "test"
    target = "nowhere"

    def __init__(self, release: threading.Event) -> None:
        self.id = self.name = "hanging"
        self.release = release

    def tools(self) -> list[Tool]:
        return []

    def prompt_context(self, *, max_tokens: int | None = None, question: str | None = None) -> str:
        return ""

    def object_names(self) -> list[str]:
        self.release.wait(10)
        return []


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_replace_and_remove_close_the_old_connector(sqlite_shop: Path) -> None:
    registry = ConnectorRegistry()
    first = SQLConnector("shop", f"sqlite:///{sqlite_shop}")
    first.query("SELECT 1 AS one")  # a pooled connection now exists
    registry.add(first)
    with pytest.raises(ConfigurationError, match="already registered; remove it first"):
        registry.add(SQLConnector("shop", f"sqlite:///{sqlite_shop}"))
    second = SQLConnector("shop", f"sqlite:///{sqlite_shop}")
    version = registry.version
    assert registry.add(second, replace=True) is first
    assert first.engine.pool.checkedin() == 0  # disposed
    assert registry.version > version and dict(registry) == {"shop": second}
    with pytest.raises(ConfigurationError, match=r"no connector 'nope'; registered: \['shop'\]"):
        registry.remove("nope")
    registry.remove("shop")
    assert len(registry) == 0


def test_a_schema_older_than_the_ttl_is_read_again_before_the_next_turn(
    tmp_path: Path,
) -> None:
    path = tmp_path / "live.sqlite"
    admin = sa.create_engine(f"sqlite:///{path}", poolclass=NullPool)
    with admin.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    clock = Clock()
    registry = ConnectorRegistry(schema_ttl_s=60, clock=clock)
    shop = SQLConnector("shop", f"sqlite:///{path}")
    registry.add(shop)
    assert shop.object_names() == ["orders"]
    with admin.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE refunds (id INTEGER PRIMARY KEY)")
    clock.now += 59
    assert registry.refresh_stale() == [] and shop.object_names() == ["orders"]
    clock.now += 1
    assert registry.refresh_stale() == ["shop"]
    assert shop.object_names() == ["orders", "refunds"]
    assert registry.stale() == []  # fresh again
    shop.close()


def test_a_turn_after_the_ttl_sees_a_new_table(tmp_path: Path) -> None:
    path = tmp_path / "live.sqlite"
    admin = sa.create_engine(f"sqlite:///{path}", poolclass=NullPool)
    with admin.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    model = ScriptedRuntime([{"text": "one"}, {"text": "two"}])
    relay = Relay(model, ledger=False, schema_ttl_s=0.05)
    relay.connect("shop", f"sqlite:///{path}")
    relay.ask("what tables?")
    with admin.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE refunds (id INTEGER PRIMARY KEY)")
    threading.Event().wait(0.1)
    relay.ask("and now?")
    assert "refunds" not in model.requests[0].system_text()
    assert "refunds" in model.requests[1].system_text()
    relay.close()


def test_status_rows_show_errors_and_do_not_wait_for_a_hung_system(
    sqlite_shop: Path, tmp_path: Path
) -> None:
    registry = ConnectorRegistry()
    registry.add(SQLConnector("shop", f"sqlite:///{sqlite_shop}", tables=["orders"]))
    registry.add(SQLConnector("gone", f"sqlite:///{tmp_path / 'missing.sqlite'}"))
    release = threading.Event()
    registry.add(Hanging(release))
    try:
        rows = {row.id: row for row in registry.statuses(timeout_s=0.5)}
    finally:
        release.set()
    assert (rows["shop"].objects, rows["shop"].status) == (["orders"], "ok")
    assert rows["gone"].status.startswith("error: could not read the schema of 'gone'")
    assert rows["hanging"].status == "error: no answer within 0.5 s"
    registry.close()


def test_the_ttl_must_be_positive() -> None:
    with pytest.raises(ConfigurationError, match="schema_ttl_s must be a positive number"):
        ConnectorRegistry(schema_ttl_s=0)


def test_connect_replace_disconnect_leaks_no_file_handles(
    sqlite_shop: Path, duckdb_shop: Path
) -> None:
    relay = Relay(ScriptedRuntime(), ledger=False)

    def cycle() -> None:
        for url in (f"sqlite:///{sqlite_shop}", f"duckdb:///{duckdb_shop}"):
            relay.connect("db", url).query("SELECT COUNT(*) AS n FROM orders")  # type: ignore[attr-defined]
            relay.connect("db", url).query("SELECT 1 AS one")  # type: ignore[attr-defined]
        relay.disconnect("db")

    cycle()  # first use loads drivers, which may keep files open for good
    before = open_fds()
    for _ in range(10):
        cycle()
    assert open_fds() <= before
    relay.close()


def test_postgres_connections_are_closed_on_replace_and_disconnect(pg_urls) -> None:
    admin = sa.create_engine(pg_urls.admin, poolclass=NullPool)

    def relay_ro_connections() -> int:
        with admin.connect() as conn:
            return conn.exec_driver_sql(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = 'relay_ro'"
            ).scalar_one()

    baseline = relay_ro_connections()
    relay = Relay(ScriptedRuntime(), ledger=False)
    for _ in range(3):
        relay.connect("pg", pg_urls.ro).query("SELECT 1 AS one")  # type: ignore[attr-defined]
        assert relay_ro_connections() == baseline + 1  # the replaced pool was disposed
    relay.disconnect("pg")
    assert relay_ro_connections() == baseline
    relay.connect("pg", pg_urls.ro).query("SELECT 1 AS one")  # type: ignore[attr-defined]
    relay.close()
    assert relay_ro_connections() == baseline
    admin.dispose()


def test_an_expired_schema_is_dropped_only_for_the_turns_connectors_and_never_read_there(
    sqlite_shop: Path,
) -> None:
    clock = Clock()
    registry = ConnectorRegistry(schema_ttl_s=60, clock=clock)
    shop = SQLConnector("shop", f"sqlite:///{sqlite_shop}")
    release = threading.Event()
    hanging = Hanging(release)
    hanging.refresh = lambda: release.wait(10)  # type: ignore[method-assign]
    registry.add(shop)
    registry.add(hanging)
    before = shop.catalog
    clock.now += 61
    assert registry.refresh_stale(["shop"]) == ["shop"]  # the hanging one is not touched
    assert shop._catalog is before  # checked, unchanged: the same object, nothing rebuilt
    assert registry.stale() == ["hanging"]
    release.set()
    registry.close()


def test_refreshing_everything_goes_on_past_a_failing_system(
    sqlite_shop: Path, tmp_path: Path
) -> None:
    registry = ConnectorRegistry()
    registry.add(SQLConnector("gone", f"sqlite:///{tmp_path / 'missing.sqlite'}"))
    registry.add(SQLConnector("shop", f"sqlite:///{sqlite_shop}"))
    outcome = registry.refresh()
    assert outcome["gone"].startswith("error: could not read the schema of 'gone'")
    assert outcome["shop"] == "ok"
    with pytest.raises(Exception, match="could not read the schema of 'gone'"):
        registry.refresh("gone")
    registry.close()


def test_a_closed_connector_does_not_reconnect(sqlite_shop: Path) -> None:
    shop = SQLConnector("shop", f"sqlite:///{sqlite_shop}")
    shop.close()
    with pytest.raises(Exception, match="the connector 'shop' is closed; connect the database"):
        shop.refresh()
    with pytest.raises(Exception, match="is closed"):
        shop.query("SELECT 1 AS one")


def test_a_password_in_the_query_string_is_masked_in_the_target() -> None:
    shop = SQLConnector("pg", "postgresql+psycopg://reader@127.0.0.1:1/shop?password=hunter2x")
    assert shop.target == "postgresql+psycopg://reader@127.0.0.1:1/shop?password=[REDACTED]"
    shop.close()


def test_a_connector_failing_its_change_check_is_logged_and_skipped(
    sqlite_shop: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One connector's fault at TTL expiry must not fail a turn about the others, and the
    log line says which connector and what kind of error — never what the error said."""
    clock = Clock()
    registry = ConnectorRegistry(schema_ttl_s=60, clock=clock)
    shop = SQLConnector("shop", f"sqlite:///{sqlite_shop}")
    broken = SQLConnector("broken", f"sqlite:///{sqlite_shop}")

    def fail(**_: object) -> bool:
        raise RuntimeError("hunter2-in-the-error two files clash")

    broken.refresh_if_changed = fail  # type: ignore[method-assign]
    registry.add(broken)
    registry.add(shop)
    before = shop.catalog
    version = registry.version
    clock.now += 61
    with caplog.at_level("WARNING", logger="relay_nb.connectors.registry"):
        assert registry.refresh_stale() == ["broken", "shop"]
    assert shop._catalog is before and registry.stale() == ["broken"]  # tried again next turn
    assert registry.version == version  # nothing changed: no cache is dropped
    (record,) = caplog.records
    assert record.getMessage().startswith("connector 'broken': checking its expired schema")
    assert "(RuntimeError)" in record.getMessage() and "hunter2" not in record.getMessage()
    registry.close()


def test_a_connector_failing_to_forget_its_schema_is_logged_and_skipped(
    sqlite_shop: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same for a connector without a change check, whose expired schema is dropped."""
    clock = Clock()
    registry = ConnectorRegistry(schema_ttl_s=60, clock=clock)
    broken = Hanging(threading.Event())

    def fail() -> None:
        raise RuntimeError("hunter2")

    broken.invalidate = fail  # type: ignore[method-assign]
    registry.add(broken)
    clock.now += 61
    with caplog.at_level("WARNING", logger="relay_nb.connectors.registry"):
        assert registry.refresh_stale() == ["hanging"]
    assert registry.stale() == ["hanging"]
    (record,) = caplog.records
    assert record.getMessage().startswith("connector 'hanging': forgetting its expired schema")
    assert "hunter2" not in record.getMessage()
    registry.close()


def test_an_expired_schema_check_is_waited_for_briefly_and_never_twice(sqlite_shop: Path) -> None:
    """A check that hangs holds the turn up CHANGE_CHECK_WAIT_S at most, and the next turn
    does not start a second one; an unchanged schema costs no cache its life."""
    import time

    from relay_nb.connectors.registry import CHANGE_CHECK_WAIT_S

    clock = Clock()
    registry = ConnectorRegistry(schema_ttl_s=60, clock=clock)
    shop = SQLConnector("shop", f"sqlite:///{sqlite_shop}")
    slow = SQLConnector("slow", f"sqlite:///{sqlite_shop}")
    release = threading.Event()
    checks: list[int] = []

    def hang(**_: object) -> bool:
        checks.append(1)
        release.wait(10)
        return False

    slow.refresh_if_changed = hang  # type: ignore[method-assign]
    registry.add(shop)
    registry.add(slow)
    before, version = shop.catalog, registry.version
    clock.now += 61
    started = time.monotonic()
    assert registry.refresh_stale() == ["shop", "slow"]
    waited = time.monotonic() - started
    assert CHANGE_CHECK_WAIT_S * 0.8 <= waited < CHANGE_CHECK_WAIT_S + 2
    assert shop._catalog is before and registry.version == version
    assert registry.stale() == ["slow"]
    registry.refresh_stale()  # still checking: not started again
    assert checks == [1]
    release.set()
    registry.close()


def test_an_expired_dataframe_schema_is_still_the_frames() -> None:
    """The DataFrame connector is a SQL connector underneath: its expiry must not read the
    DuckDB engine's own catalog in place of the frames."""
    import pandas as pd

    from relay_nb.connectors.dataframe.connector import DataFrameConnector

    clock = Clock()
    registry = ConnectorRegistry(schema_ttl_s=60, clock=clock)
    sales = pd.DataFrame({"region": ["north", "south"], "amount": [3.5, 4.0]})
    frames = DataFrameConnector("frames", {"sales": sales})
    registry.add(frames)
    before = frames.catalog
    clock.now += 61
    assert registry.refresh_stale() == ["frames"]
    assert frames.catalog is before and [t.name for t in before.tables] == ["sales"]
    assert registry.refresh() == {"frames": "ok"}
    assert [t.name for t in frames.catalog.tables] == ["sales"]
    assert frames.query("SELECT sum(amount) AS total FROM sales").df["total"][0] == 7.5
    registry.close()


def test_a_connector_removed_while_its_check_runs_is_closed_after_it(sqlite_shop: Path) -> None:
    """A check may open a connection on a connector removed meanwhile: it is closed again
    once the check ends, so nothing stays open."""
    clock = Clock()
    registry = ConnectorRegistry(schema_ttl_s=60, clock=clock)
    shop = SQLConnector("shop", f"sqlite:///{sqlite_shop}")
    started, release = threading.Event(), threading.Event()
    closes: list[int] = []
    real_close = shop.close

    def slow(**_: object) -> bool:
        started.set()
        release.wait(10)
        return True

    def counted_close() -> None:
        closes.append(1)
        real_close()

    shop.refresh_if_changed = slow  # type: ignore[method-assign]
    shop.close = counted_close  # type: ignore[method-assign]
    registry.add(shop)
    clock.now += 61
    registry.refresh_stale()  # the check outlives the turn's wait
    assert started.wait(5)
    registry.remove("shop")
    assert closes == [1]
    release.set()
    deadline = time.monotonic() + 5
    while len(closes) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert closes == [1, 1]
    assert "shop" not in registry and registry.stale() == []
