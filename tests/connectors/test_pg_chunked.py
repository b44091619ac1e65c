"""Large PostgreSQL reads come in chunks (libpq 17's chunked mode), with the server's byte
bounds kept: a row over the result's limit is never sent, the rows sent stop past twice the
limit, and a read the server cuts is read again row by row from a savepoint, so every row
before the cut is kept and the transaction keeps its read-only settings."""

from __future__ import annotations

import pytest

from relay_nb.connectors.sql import fetch
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.errors import QueryExecutionError
from relay_nb.testing.seed import ALLOWED_TABLES

pytestmark = pytest.mark.skipif(not fetch._chunked(), reason="libpq older than 17")

LONG = "repeat(md5(CAST(id AS text)), 157)"  # 5,024 characters per row of orders


@pytest.fixture
def shop(pg_urls):
    connector = SQLConnector(
        "shop",
        pg_urls.ro,
        tables=list(ALLOWED_TABLES),
        row_limit=5_000,
        max_value_bytes=6_000,
        max_result_bytes=40_000,
    )
    yield connector
    connector.close()


@pytest.fixture
def statements(monkeypatch):
    """The queries' reads, in order (the catalog's and the profiles' are not queries)."""
    seen: list[str] = []
    real = fetch._stream

    def recorded(conn, sql, max_rows, budget, sized):
        if "relay_row" in sql:
            # what the transaction is at each read: read-only, and under its timeout
            settings = conn.execute(
                "SELECT current_setting('transaction_read_only'), "
                "current_setting('statement_timeout')"
            ).fetchone()
            seen.append(("chunked " if sized else "rows ") + repr(settings) + " " + sql)
        return real(conn, sql, max_rows, budget, sized)

    monkeypatch.setattr(fetch, "_stream", recorded)
    return seen


def test_a_large_read_comes_in_chunks_with_the_same_rows(pg_urls, statements):
    connector = SQLConnector("shop", pg_urls.ro, tables=list(ALLOWED_TABLES), row_limit=5_000)
    try:
        result = connector.query("SELECT n, n * 2 AS twice FROM generate_series(1, 4000) AS n")
    finally:
        connector.close()
    assert statements[0].startswith("chunked ") and len(statements) == 1
    assert list(result.df.columns) == ["n", "twice"]  # the size columns are dropped
    assert list(result.df["n"]) == list(range(1, 4001)) and not result.truncated


def test_a_read_the_server_cuts_is_read_again_row_by_row_keeping_every_row_before(shop, statements):
    # 300 rows of 5 KB: the server stops at 80,000 bytes of text, inside the first chunk
    result = shop.query(f"SELECT id, {LONG} AS body FROM orders ORDER BY id")
    assert [s.split(" ", 1)[0] for s in statements] == ["chunked", "rows"]
    assert result.truncated and result.limit == "bytes"
    assert list(result.df["id"]) == list(range(1, result.row_count + 1))
    assert 5 <= result.row_count <= 8  # 40,000 bytes of ~5,050-byte rows, as the budget reads
    # the transaction went back to its savepoint: still read-only, still bounded
    assert all(" ('on', '30s') " in s for s in statements), statements


def test_a_first_row_over_the_limit_is_still_refused_with_the_fix(shop, statements):
    columns = ", ".join(f"{LONG} AS c{i}" for i in range(9))  # 45 KB: over 40,000
    with pytest.raises(QueryExecutionError, match="max_result_bytes"):
        shop.query(f"SELECT {columns} FROM orders")
    assert int(shop.query("SELECT COUNT(*) FROM orders").df.iloc[0, 0]) == 300


def test_a_small_read_is_row_by_row(pg_urls, statements):
    connector = SQLConnector("shop", pg_urls.ro, tables=list(ALLOWED_TABLES))  # row_limit 200
    try:
        connector.query("SELECT id FROM orders")
    finally:
        connector.close()
    assert [s.split(" ", 1)[0] for s in statements] == ["rows"]
