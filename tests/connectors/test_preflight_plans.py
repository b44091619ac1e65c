"""The preflight's row estimate cannot be made small (issue 38, item 4): on a real
PostgreSQL, each payload is first shown to read more than the threshold (``EXPLAIN
ANALYZE``'s own count of the rows its scans read, run as the admin), then gated through the
public path (a turn with a scripted model): the approver is asked. Benign queries of the
same shapes are estimated within a factor of two of what they read, and run unasked.

The red team's classes: a filter on a function of a column under a LIMIT (the planner's
guessed selectivity said the scan stops early), a correlated subquery (the plan's rows per
run, not per query), an index scan whose filter the planner guessed, statistics older than
the table, a recursive query (iterations unknown: no figure, so the gate asks)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from sqlalchemy.pool import NullPool

from relay_nb.agent.approval import ApprovalRequest
from relay_nb.agent.loop import run_turn
from relay_nb.agent.services import TurnServices
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.connectors.sql.estimate.conditions import (
    MAX_CONDITION,
    guessed,
    guessed_keep,
    qualifiers,
)
from relay_nb.runtime.scripted import ScriptedRuntime

THRESHOLD = 100_000
ROWS = 400_000

HARMFUL = {
    "a function of a column under the LIMIT": "SELECT * FROM t WHERE lower(name) = 'abc'",
    "arithmetic on a column under the LIMIT": "SELECT * FROM t WHERE grp + 0 = -1",
    "a cast of a column under the LIMIT": "SELECT * FROM t WHERE (grp)::numeric = 1001",
    "a guessed filter on an ordered index scan": (
        "SELECT * FROM t WHERE abs(grp) = 1001 ORDER BY id"
    ),
    "a correlated subquery in the select list": (
        "SELECT id, (SELECT count(*) FROM u WHERE u.grp = t.grp) AS n FROM t"
    ),
    "a correlated subquery in the filter": (
        "SELECT * FROM t WHERE id < 50 AND (SELECT max(u.id) FROM u WHERE u.grp = t.grp) < 0"
    ),
    "statistics older than the table": "SELECT * FROM grown ORDER BY grp",
}
BENIGN = {
    "a plain read": "SELECT * FROM t",
    "an equality the statistics know": "SELECT * FROM t WHERE grp = 5",
    "an index range": "SELECT * FROM t WHERE id < 1000",
    "an index plus a guessed filter": "SELECT * FROM t WHERE grp = 5 AND lower(name) LIKE 'a%'",
    "an index range plus a guessed filter": "SELECT * FROM t WHERE id < 5000 AND lower(name) = 'x'",
    "an index nested loop": "SELECT count(*) FROM t a JOIN t b ON a.id = b.id WHERE a.grp = 5",
    "an uncorrelated IN": "SELECT * FROM t WHERE grp IN (SELECT grp FROM u WHERE id < 10)",
    "a correlated subquery on a small outer set": (
        "SELECT (SELECT count(*) FROM t t2 WHERE t2.grp = t.grp) FROM t WHERE id < 500"
    ),
    "a join filtered on the small side": (
        "SELECT t.id FROM t JOIN u ON u.grp = t.grp WHERE t.id < 100"
    ),
}
RECURSIVE = (
    "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL "
    "SELECT n + 1 FROM r JOIN u ON u.id = r.n WHERE n < 100) SELECT * FROM r"
)


@pytest.fixture(scope="module")
def plans_db(pg_urls) -> Iterator[str]:
    """A scratch database: ``t`` (400,000 rows, indexes on ``id`` and ``grp``), ``u`` (30,000
    rows), and ``grown`` (analysed at 1,000 rows, then grown to 400,000 with autovacuum off),
    dropped afterwards."""
    name = f"relay_plans_{uuid.uuid4().hex[:8]}"
    server = sa.create_engine(pg_urls.admin, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = sa.make_url(pg_urls.admin).set(database=name)
    engine = sa.create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            for statement in (
                "CREATE TABLE t AS SELECT g AS id, md5(g::text) AS name, mod(g, 1000) AS grp "
                f"FROM generate_series(1, {ROWS}) g",
                "CREATE INDEX t_id ON t (id)",
                "CREATE INDEX t_grp ON t (grp)",
                "CREATE TABLE u AS SELECT g AS id, mod(g, 1000) AS grp "
                "FROM generate_series(1, 30000) g",
                "CREATE TABLE grown (id int, grp int) WITH (autovacuum_enabled = false)",
                "INSERT INTO grown SELECT g, g FROM generate_series(1, 1000) g",
                "ANALYZE",
                f"INSERT INTO grown SELECT g, mod(g, 1000) FROM generate_series(1, {ROWS}) g",
            ):
                conn.exec_driver_sql(statement)
        yield url.render_as_string(hide_password=False)
    finally:
        engine.dispose()
        with server.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        server.dispose()


def rows_read(url: str, sql: str) -> int:
    """What the query's scans read when it runs (``EXPLAIN ANALYZE``, as the admin): each
    scan's rows kept and removed by its filters, times its runs."""
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SET statement_timeout = '60s'")
            explain = f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}".replace("%", "%%")
            plan = conn.exec_driver_sql(explain).scalar_one()
    finally:
        engine.dispose()
    total, stack = 0, [plan[0]["Plan"]]
    while stack:
        node: dict[str, Any] = stack.pop()
        if "Relation Name" in node:
            kept = node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
            total += (kept + node.get("Rows Removed by Index Recheck", 0)) * node["Actual Loops"]
        stack.extend(node.get("Plans", ()))
    return int(total)


def limited(sql: str) -> str:
    return f"{sql} LIMIT 201"  # what the guard sends at the default row limit


def asked_for(connector: SQLConnector, sql: str) -> list[ApprovalRequest]:
    asked: list[ApprovalRequest] = []

    def deny(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    call = {"tool_calls": [{"name": "query_plans", "input": {"sql": sql}}]}
    runtime = ScriptedRuntime([call, {"text": "done"}])
    services = TurnServices(runtime=runtime, tools=connector.tools(), approver=deny)
    asyncio.run(run_turn("q", services))
    return asked


@pytest.fixture(scope="module")
def gated(plans_db: str) -> Iterator[SQLConnector]:
    connector = SQLConnector("plans", plans_db, approve_above_rows=THRESHOLD)
    yield connector
    connector.close()


@pytest.mark.parametrize("shape", sorted(HARMFUL))
def test_a_query_that_reads_more_than_the_threshold_is_asked_about(
    plans_db: str, gated: SQLConnector, shape: str
) -> None:
    sql = HARMFUL[shape]
    assert rows_read(plans_db, limited(sql)) > THRESHOLD  # harmful: it reads that much
    estimate = gated.estimate(sql)
    assert estimate is not None and estimate.rows_scanned is not None
    assert estimate.rows_scanned > THRESHOLD, estimate.summary()
    (request,) = asked_for(gated, sql)
    assert "above the 100k rows 'plans' runs unasked" in request.reason


def test_a_correlated_subquery_counts_each_of_its_runs(plans_db: str, gated: SQLConnector) -> None:
    sql = HARMFUL["a correlated subquery in the select list"]
    read = rows_read(plans_db, limited(sql))  # 201 outer rows, 30,000 inner rows each
    assert read > 6_000_000
    estimate = gated.estimate(sql)
    assert estimate is not None and estimate.rows_scanned is not None
    assert read / 2 <= estimate.rows_scanned <= read * 2


@pytest.mark.parametrize("shape", sorted(BENIGN))
def test_a_benign_query_is_estimated_close_and_runs_unasked(
    plans_db: str, gated: SQLConnector, shape: str
) -> None:
    sql = BENIGN[shape]
    read = rows_read(plans_db, limited(sql))
    estimate = gated.estimate(sql)
    assert estimate is not None and estimate.rows_scanned is not None
    assert read / 2 <= estimate.rows_scanned <= max(read * 2, 10), (read, estimate.summary())
    assert asked_for(gated, sql) == []


def test_a_recursive_query_has_no_figure_and_is_asked_about(gated: SQLConnector) -> None:
    estimate = gated.estimate(RECURSIVE)
    assert estimate is not None and estimate.rows_scanned is None
    assert "recursive" in estimate.source
    (request,) = asked_for(gated, RECURSIVE)
    assert "without the figure 'plans' checks" in request.reason


def test_statistics_older_than_the_table_are_scaled_to_its_pages(
    plans_db: str, gated: SQLConnector
) -> None:
    sql = "SELECT * FROM grown ORDER BY grp"  # reads all of it
    read = rows_read(plans_db, limited(sql))
    assert read == ROWS + 1000
    estimate = gated.estimate(sql)
    assert estimate is not None and estimate.rows_scanned is not None
    assert read / 2 <= estimate.rows_scanned <= read * 2


# -- which conditions the planner guesses ---------------------------------------------------------


@pytest.mark.parametrize(
    ("condition", "guess"),
    [
        ("(t.grp = 5)", False),
        ("((t.grp = 5) AND (t.id > 100))", False),
        ("(t.grp = ANY ('{1,2,3}'::integer[]))", False),
        ("((t.name)::text = 'x'::text)", False),  # a varchar column compared as text
        ("(t.name ~~ 'a%'::text)", False),
        ("(t.at > '2024-01-01 00:00:00'::timestamp without time zone)", False),
        ("(t.a > -5)", False),
        ("(t.note IS NULL)", False),
        ('("T"."Weird-Name" = 5)', False),
        ("(t.name = 'lower(x) + 1 $0 SubPlan'::text)", False),  # constants are not read
        ("(lower(t.name) = 'abc'::text)", True),
        ("((t.id)::numeric = 5.0)", True),
        ("((t.id - 3) > 2)", True),
        ("((t.id + 0) < 1000)", True),
        ("(t.at > (now() - '1 day'::interval))", True),
        ("(t.grp = $0)", True),
        ("((SubPlan 1) > 10)", True),
        ("(t.data @> '{\"a\": 1}'::jsonb)", True),
        ("((t.data ->> 'a'::text) = '1'::text)", True),
        ("(CASE WHEN (t.a = 1) THEN true ELSE false END)", True),
    ],
)  # fmt: skip
def test_a_condition_is_guessed_when_the_statistics_cannot_back_it(condition, guess) -> None:
    assert guessed(condition) is guess


def test_the_least_share_a_guessed_filter_kept() -> None:
    assert guessed_keep("((t.grp = 5) AND (t.id > 100))") == 1.0
    assert guessed_keep("(lower(t.name) = 'x'::text)") == pytest.approx(0.005)
    assert guessed_keep("((t.id)::numeric > (SubPlan 1))") == pytest.approx(1 / 3)
    both = "((lower(t.name) ~~ 'a%'::text) AND ((t.id + 1) < 5) AND (t.grp = 5))"
    assert guessed_keep(both) == pytest.approx(0.005 / 3)


def test_worst_case_conditions_are_read_in_linear_time() -> None:
    assert guessed("(t.a = 1)" + " " * MAX_CONDITION)  # too long to read: counted as a guess
    # each pattern's worst input (a quadratic one would take minutes; the suite's timeout
    # stops it)
    for text in ("a" * 19_000, "'" * 19_999, "(" * 19_999, " " * 19_998 + "-", "a." * 9_000):
        guessed(text)
        qualifiers(text)
    assert qualifiers("((t.grp = u.grp) AND (\"T\".x = 'a.b'))") == {"t", "u", "T"}


# -- TPC-H as sqlglot's fixtures write it ---------------------------------------------------------

TPCH = Path(__file__).parent / "corpus" / "tpch" / "schema_postgres.sql"


@pytest.fixture(scope="module")
def tpch_db(pg_urls) -> Iterator[str]:
    """TPC-H's tables (``corpus/tpch/schema_postgres.sql``: about scale factor 0.01,
    generated rows) in a scratch database, dropped afterwards."""
    import psycopg

    name = f"relay_tpch_{uuid.uuid4().hex[:8]}"
    server = sa.create_engine(pg_urls.admin, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    with server.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = sa.make_url(pg_urls.admin).set(database=name)
    try:
        plain = url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(TPCH.read_text())  # type: ignore[arg-type]  # our own fixture file
        yield url.render_as_string(hide_password=False)
    finally:
        with server.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        server.dispose()


def tpch_queries() -> list[tuple[str, str]]:
    corpus = yaml.safe_load((Path(__file__).parent / "corpus/world/postgres.yaml").read_text())
    found = [(q["source"], q["sql"]) for q in corpus["queries"] if ":tpc-h.sql:" in q["source"]]
    assert len(found) == 22
    return found


def test_tpch_queries_are_never_estimated_small(tpch_db: str) -> None:
    """The 22 TPC-H queries (sqlglot's PostgreSQL fixtures; correlated subqueries in Q2, Q4,
    Q17, Q20, Q21, Q22): each estimate at least half of what the query's scans read, and
    none so large that a benign query is asked about for nothing (within 6x)."""
    connector = SQLConnector("tpch", tpch_db, preflight=True)
    try:
        ratios = {}
        for source, sql in tpch_queries():
            guarded = connector.guard(sql)
            estimate = connector.estimate(sql)
            assert estimate is not None and estimate.rows_scanned is not None, source
            ratios[source] = estimate.rows_scanned / max(rows_read(tpch_db, guarded.sql), 1)
        assert all(0.5 <= ratio <= 6 for ratio in ratios.values()), ratios
    finally:
        connector.close()
