"""``%%relay_sql`` attacked through a real ipykernel (issue 38), driven over its channels as
a frontend drives it. Each payload is first run through the raw ``sqlite3`` module on a copy
of the database, to show what it would do there; through the cell it is one line of error,
the data untouched, and the next cell runs.

The classes: writes (DML, DDL, a statement stacked after a read), reaching outside the
database (``ATTACH`` creating a file), the notebook's variables pasted into the SQL (IPython
fills ``{name}`` and ``$name`` into a line magic unless told not to), markup in a value
reaching the page, and a query that never ends (the kernel interrupt cancels it; the
session stays usable)."""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_client import Kernel, of, running, texts

pytestmark = pytest.mark.timeout(180)

SETUP = """
import relay_nb
from relay_nb import Relay, ScriptedRuntime
from relay_nb.facade import default as facade
from relay_nb.testing.seed import seed_database

url = "sqlite:///{path}"
seed_database(url)
relay = Relay(ScriptedRuntime([{{"text": "unused"}}]), ledger=False)
relay.connect("shop", url)
facade._default = relay
payload = "1; DELETE FROM orders"
%load_ext relay_nb
"""

WRITES = {
    "a DELETE": "DELETE FROM orders",
    "a DROP": "DROP TABLE orders",
    "a write stacked after a read": "SELECT 1; DELETE FROM orders",
    "an UPDATE in a CTE's shadow": "WITH x AS (SELECT 1) UPDATE orders SET total = 0",
    "a pragma that changes the file": "PRAGMA user_version = 7",
}
SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000000) "
    "SELECT max(x) AS counted FROM c"
)


@pytest.fixture(scope="module")
def database(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sqlcell") / "shop.sqlite"


@pytest.fixture(scope="module")
def kernel(database: Path) -> Iterator[Kernel]:
    with running(SETUP.format(path=database)) as kernel:
        yield kernel


def counts(path: Path) -> tuple[int, int, int]:
    """Orders, orders with a total, and the file's ``user_version`` (-1: no orders table)."""
    with sqlite3.connect(path) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        try:
            orders = conn.execute("SELECT count(*) FROM orders").fetchone()[0]
            nonzero = conn.execute("SELECT count(*) FROM orders WHERE total <> 0").fetchone()[0]
        except sqlite3.OperationalError:
            return -1, -1, version
    return orders, nonzero, version


def raw_effect(database: Path, tmp_path: Path, sql: str) -> tuple[int, int, int] | str:
    """What ``sql`` does to a copy of the database through the raw driver."""
    copy = tmp_path / "copy.sqlite"
    shutil.copy(database, copy)
    try:
        with sqlite3.connect(copy) as conn:
            conn.executescript(sql)
    except sqlite3.Error as exc:
        return str(exc)
    return counts(copy)


def run_cell(kernel: Kernel, code: str) -> tuple[str, list[dict]]:
    msg_id = kernel.execute(code)
    seen = kernel.until_idle(msg_id)
    return texts(seen, msg_id), of(seen, msg_id, "error")


@pytest.mark.parametrize("shape", sorted(WRITES))
def test_a_write_is_one_line_and_the_data_is_untouched(
    kernel: Kernel, database: Path, tmp_path: Path, shape: str
) -> None:
    sql = WRITES[shape]
    before = counts(database)
    harm = raw_effect(database, tmp_path, sql)
    assert harm != before  # harmful through the raw driver: rows gone, or the file changed
    _, errors = run_cell(kernel, f"%%relay_sql shop\n{sql}")
    (error,) = errors
    assert error["ename"] in ("RelayCellError", "UnsafeQueryError")
    assert "\n" not in error["evalue"] and len(error["evalue"]) < 400
    assert counts(database) == before
    text, errors = run_cell(kernel, "%relay_sql shop SELECT count(*) AS n FROM orders")
    assert not errors and f"{before[0]}" in text  # the next cell runs


def test_attach_cannot_create_a_file(kernel: Kernel, database: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.sqlite"
    sql = f"ATTACH DATABASE '{outside}' AS o"
    raw_effect(database, tmp_path, sql)
    assert outside.exists()  # through the raw driver: a new database file
    outside.unlink()
    _, errors = run_cell(kernel, f"%%relay_sql shop\n{sql}")
    assert errors and not outside.exists()


@pytest.mark.parametrize("written", ["{payload}", "$payload"])
def test_notebook_variables_are_never_pasted_into_the_sql(
    kernel: Kernel, database: Path, written: str
) -> None:
    """``payload = "1; DELETE FROM orders"``: IPython fills it into a line magic's text
    unless the magic says not to; pasted, the statement would be a write."""
    before = counts(database)
    for code in (f"%relay_sql shop SELECT {written}", f"%%relay_sql shop\nSELECT {written}"):
        _, errors = run_cell(kernel, code)
        (error,) = errors  # the name as written reached the database, which knows no such
        assert "payload" in error["evalue"] or "bindings" in error["evalue"]  # thing
        assert "statements" not in error["evalue"]  # pasted: "found 2 statements"
        assert counts(database) == before


def test_markup_in_a_value_reaches_the_page_as_text(kernel: Kernel) -> None:
    msg_id = kernel.execute(
        "%relay_sql shop SELECT '<img src=x onerror=alert(1)><script>alert(2)</script>' AS v"
    )
    seen = kernel.until_idle(msg_id)
    html = "".join(c["data"].get("text/html", "") for c in of(seen, msg_id, "execute_result"))
    assert "&lt;img src=x" in html and "<img" not in html and "<script>" not in html


def test_interrupting_a_query_that_never_ends_leaves_the_session_usable(
    kernel: Kernel, database: Path
) -> None:
    msg_id = kernel.execute(f"%%relay_sql shop\n{SLOW}")
    time.sleep(1.5)
    started = time.monotonic()
    kernel.manager.interrupt_kernel()
    seen = kernel.until_idle(msg_id)
    assert time.monotonic() - started < 10
    (error,) = of(seen, msg_id, "error")
    assert "cancelled" in error["evalue"] and "session is ready" in error["evalue"]
    text, errors = run_cell(kernel, "%relay_sql shop SELECT count(*) AS n FROM orders")
    assert not errors and str(counts(database)[0]) in text
