"""How many rows a result cut at the row limit had in all: "200 of 3,503 rows".

Asked only after a query came back with more rows than the connector's row limit, and only
where the answer is cheap:

- A **count**, on the engines a second statement costs nothing but time (the local and
  server databases: SQLite, DuckDB, PostgreSQL, MySQL/MariaDB, SQL Server, Oracle,
  ClickHouse and chDB): ``SELECT count(*) FROM (<the guarded query, its LIMIT at the cap>)``,
  read-only like the query, stopping at :data:`COUNT_CAP` rows ("more than 100,000"). It
  may take as long as the query itself took (at least :data:`COUNT_FLOOR_S`, at most
  :data:`COUNT_BUDGET_S`), so a result arrives in at most about twice the driver's time; it
  is skipped after a query slower than that budget, whose count would redo the same work.
  Where the cap is the query's only limit, its ORDER BY is left out of the count.
- Where the count was skipped or ran out of time, the **planner's estimate** of the query's
  rows (PostgreSQL's and DuckDB's ``EXPLAIN``: no row is read), shown with ``≈``.
- Nothing on the warehouses that bill each statement (BigQuery, Snowflake, Trino, Databricks,
  Redshift): the result says "more exist", and the analyst can raise the limit.

The count's statement is built from the guard's output (one checked ``SELECT``), not from
the model's text, so it reads nothing the query could not.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import sqlglot
from sqlalchemy import Engine
from sqlglot import exp

from relay_nb.connectors.results import RowTotal
from relay_nb.connectors.sql.estimate import estimate_query
from relay_nb.connectors.sql.readonly import CancelHandle, run_read_only

__all__ = ["COUNT_BUDGET_S", "COUNT_CAP", "COUNT_FLOOR_S", "COUNTED", "ESTIMATED", "row_total"]

logger = logging.getLogger(__name__)

COUNT_BUDGET_S = 0.5
"""The longest a count may take, and the longest the query may have taken for one to run."""
COUNT_FLOOR_S = 0.1
"""A count may take as long as the query took, and at least this."""
COUNT_CAP = 100_000
"""A count stops here: past it, the total reads "more than 100,000"."""

COUNTED = frozenset(
    {"sqlite", "duckdb", "postgresql", "mysql", "mariadb", "mssql", "oracle"}
    | {"clickhouse", "clickhousedb", "chdb"}
)
"""SQLAlchemy backends whose statements cost only time: a bounded count runs there."""
ESTIMATED = frozenset({"postgresql", "duckdb"})
"""Backends whose planner's estimate of a query's rows is used when no count ran."""


def row_total(
    engine: Engine,
    dialect: str,
    guarded_at: Callable[[int], str],
    *,
    row_limit: int,
    elapsed_ms: float,
    timeout_s: float,
    cancel: CancelHandle,
    search_path: str | None,
    reset_session: bool,
) -> RowTotal | None:
    """The total of a query cut at ``row_limit``; None when it is not cheap to know.

    ``guarded_at(n)`` is the guarded query with its outermost LIMIT at ``n`` (a LIMIT the
    query wrote below ``n`` stays); ``dialect`` is its sqlglot dialect."""
    if cancel.cancelled:  # interrupted: the turn is stopping, ask nothing more
        return None
    backend = engine.dialect.name
    # the count may take as long as the query did (at least COUNT_FLOOR_S): at most double
    budget = min(COUNT_BUDGET_S, timeout_s, max(COUNT_FLOOR_S, elapsed_ms / 1000))
    if backend in COUNTED and elapsed_ms <= COUNT_BUDGET_S * 1000:
        statement = _count_statement(guarded_at(COUNT_CAP + 1), dialect, COUNT_CAP + 1)
        # its own handle, so its timeout does not mark the query cancelled; Ctrl-C on the
        # query's handle reaches it
        counting = CancelHandle()
        cancel.arm(lambda: counting.cancel(cancel.reason))
        try:
            fetched = run_read_only(
                engine,
                statement,
                max_rows=1,
                timeout_s=budget,
                cancel=counting,
                search_path=search_path,
                reset_session=reset_session,
            )
            counted = int(fetched.rows[0][0])
        except Exception:  # out of time, or the engine cannot count it: no total
            logger.debug("no row count from %s", backend, exc_info=True)
        else:
            if counted > COUNT_CAP:
                return RowTotal(rows=COUNT_CAP, how="more_than")
            return RowTotal(rows=counted, how="counted") if counted > row_limit else None
        finally:
            cancel.disarm()
    if backend in ESTIMATED and not cancel.cancelled:
        return _estimated(engine, guarded_at, row_limit, timeout_s, search_path)
    return None


def _count_statement(sql: str, dialect: str, cap: int) -> str:
    """``SELECT count(*) FROM (<sql>) AS relay_total``, written for ``dialect`` (Oracle takes
    no ``AS`` before a table alias; sqlglot writes each engine's form). Where the outermost
    query's limit is the cap (not one the query wrote) and it skips no rows, its ORDER BY
    goes: the order cannot change how many rows there are, and without it the engine can
    stop at the cap instead of sorting every row first."""
    inner = sqlglot.parse_one(sql, read=dialect)
    if isinstance(inner, exp.Select) and _limit_of(inner) == cap and not inner.args.get("offset"):
        inner.set("order", None)
    alias = exp.TableAlias(this=exp.to_identifier("relay_total"))
    counting = sqlglot.select("count(*)").from_(exp.Subquery(this=inner, alias=alias))
    return counting.sql(dialect=dialect)


def _limit_of(select: exp.Select) -> int | None:
    """The outermost ``LIMIT``/``FETCH``/``TOP`` as a number (None if it is not one)."""
    limit = select.args.get("limit")
    if isinstance(limit, exp.Limit):
        value = limit.expression
    elif isinstance(limit, exp.Fetch):
        value = limit.args.get("count")
    else:
        return None
    if isinstance(value, exp.Literal) and value.is_int:
        return int(value.this)
    return None


def _estimated(
    engine: Engine,
    guarded_at: Callable[[int], str],
    row_limit: int,
    timeout_s: float,
    search_path: str | None,
) -> RowTotal | None:
    cap = 10**12  # the planner's own figure, not one bounded by a LIMIT
    try:
        found = estimate_query(
            engine,
            guarded_at(cap),
            limit=cap,
            timeout_s=min(COUNT_BUDGET_S, timeout_s),
            search_path=search_path,
        )
    except Exception:
        logger.debug("no row estimate from %s", engine.dialect.name, exc_info=True)
        return None
    rows: Any = None if found is None else found.result_rows
    # an estimate below what already came back is wrong: better none than a false one
    return RowTotal(rows=rows, how="estimated") if rows and rows > row_limit else None
