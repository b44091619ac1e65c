"""DuckDB's columnar read (connectors/sql/columnar.py) answers as the row path does: the same
DataFrame, the same rows kept, the same values clipped and redacted, the same notes — on
the DuckDB queries of the world corpus (sqlglot's tests and TPC fixtures, MIT) and on a
table of every type it reads, under budgets that cut and clip."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from relay_nb.connectors.bounds import ResultBudget
from relay_nb.connectors.results import build_frame
from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.connectors.sql.readonly import build_engine, run_read_only
from relay_nb.redaction import REDACTED

WORLD = Path(__file__).parent / "corpus" / "world" / "duckdb.yaml"
SECRET = "c0lumnar-s3cret-T0ken-value"
_VOLATILE = ("random", "localtime", "now()", "uuid", "current_", "gen_random", "duckdb_functions")
"""Queries whose result may differ between two reads: time, randomness, and DuckDB's function
catalog (it grows as extensions autoload, and a ROW_NUMBER over overloads of one name picks
either: sqlglot's test_duckdb.py L766 once read differently, in a clean clone's slow suite)."""


@pytest.fixture(autouse=True)
def known_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNAR_TEST_API_TOKEN", SECRET)


@pytest.fixture(scope="module")
def typed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """5,000 rows of every type the columnar path reads, NULLs in each column, long and
    non-ASCII text, a secret in some values."""
    import duckdb

    path = tmp_path_factory.mktemp("columnar") / "typed.duckdb"
    connection = duckdb.connect(str(path))
    connection.execute(
        f"""
        CREATE TABLE typed AS
        SELECT i AS id,
               CASE WHEN i % 7 = 0 THEN NULL ELSE i * 3 END::INTEGER AS maybe_int,
               (i % 5)::TINYINT AS tiny,
               CASE WHEN i % 11 = 0 THEN NULL ELSE i::UBIGINT END AS unsigned,
               i * 0.25 AS dbl,
               (i / 3)::FLOAT AS flt,
               CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 1.5)::DECIMAL(12, 2) END AS dec,
               ((i - 2500) * 1000000)::DECIMAL(18, 0) AS wide_dec,
               i % 2 = 0 AS flag,
               CASE WHEN i % 3 = 0 THEN NULL ELSE i % 2 = 1 END AS maybe_flag,
               CASE WHEN i % 17 = 0 THEN NULL
                    WHEN i % 29 = 0 THEN 'key ' || '{SECRET}' || ' here'
                    WHEN i % 31 = 0 THEN repeat('long text ', 30)
                    WHEN i % 37 = 0 THEN 'ünïcödé ' || repeat('é', i % 50)
                    ELSE 'label ' || (i % 97) END AS label,
               DATE '2024-01-01' + (i % 400)::INTEGER AS day,
               CASE WHEN i % 19 = 0 THEN NULL
                    ELSE TIMESTAMP '2025-01-01' + INTERVAL (i % 1000) MINUTE END AS ts,
               TIMESTAMPTZ '2025-01-01 00:00:00+00' + INTERVAL (i) SECOND AS tstz,
               TIME '10:00' + INTERVAL (i % 60) MINUTE AS at,
               CASE WHEN i % 23 = 0 THEN NULL ELSE ('bytes' || i)::BLOB END AS raw
        FROM range(1, 5001) t(i)
        """
    )
    connection.close()
    return f"duckdb:///{path}"


def _both(engine: Any, sql: str, value_bytes: int, result_bytes: int, max_rows: int = 10_001):
    """The same statement read both ways: (frame, budget, columnar?) each."""
    out = []
    for frame in (True, False):
        budget = ResultBudget(value_bytes, result_bytes)
        fetched = run_read_only(
            engine, sql, max_rows=max_rows, timeout_s=30, budget=budget, query=True, frame=frame
        )
        df = (
            fetched.frame
            if fetched.frame is not None
            else build_frame(fetched.columns, fetched.rows)
        )
        out.append((df, budget, fetched.frame is not None))
    return out


def _same(columnar, rows) -> None:
    pd.testing.assert_frame_equal(columnar[0], rows[0])
    a, b = columnar[1], rows[1]
    assert (a.kept, a.full, a.clipped, a.used) == (b.kept, b.full, b.clipped, b.used)
    assert a.notes() == b.notes()


def _same_but_ordered(columnar, rows) -> bool:
    """The same rows in another order (a query that orders nothing, or not every row, may
    come back in any), read whole both ways."""
    if columnar[1].full or rows[1].full:
        return False

    def ordered(frame: pd.DataFrame) -> pd.DataFrame:
        keys = frame.astype(str).apply(tuple, axis=1)
        return frame.iloc[sorted(range(len(frame)), key=keys.iloc.__getitem__)].reset_index(
            drop=True
        )

    try:
        pd.testing.assert_frame_equal(ordered(columnar[0]), ordered(rows[0]))
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize(
    ("value_bytes", "result_bytes"),
    [(1 << 20, 1 << 26), (64, 1 << 26), (64, 150_000), (300, 4_000), (100, 600), (8, 600)],
)
def test_a_table_of_every_type_reads_as_the_row_path_reads_it(typed, value_bytes, result_bytes):
    engine = build_engine(typed)
    try:
        columnar, rows = _both(engine, "SELECT * FROM typed ORDER BY id", value_bytes, result_bytes)
    finally:
        engine.dispose()
    # the first went the columnar way (the row path's, below a 64-byte value limit)
    assert columnar[2] == (value_bytes >= 64) and not rows[2]
    _same(columnar, rows)


def test_secrets_are_redacted_and_long_values_clipped_on_the_columnar_path(typed):
    connector = SQLConnector("typed", typed, row_limit=5_000, max_value_bytes=100)
    try:
        result = connector.query("SELECT id, label FROM typed ORDER BY id")
    finally:
        connector.close()
    labels = result.df["label"].dropna().tolist()
    assert not any(SECRET in value for value in labels)
    assert sum(REDACTED in value for value in labels) == len(range(29, 5001, 29)) - len(
        [i for i in range(29, 5001, 29) if i % 17 == 0]
    )
    assert any(value.endswith("…[clipped]") for value in labels)
    assert result.df["id"].dtype == "int64" and result.row_count == 5_000


def test_a_type_the_columnar_path_does_not_read_takes_the_row_path(typed):
    engine = build_engine(typed)
    try:
        sql = "SELECT id, [id, id + 1] AS pair, id::HUGEINT AS huge FROM typed ORDER BY id"
        columnar, rows = _both(engine, sql, 1 << 20, 1 << 26)
    finally:
        engine.dispose()
    assert not columnar[2]
    _same(columnar, rows)


def test_the_row_limit_cuts_the_columnar_read_where_the_row_path_cuts(typed):
    engine = build_engine(typed)
    try:
        columnar, rows = _both(engine, "SELECT * FROM typed ORDER BY id", 1 << 20, 1 << 26, 1234)
    finally:
        engine.dispose()
    assert len(columnar[0]) == 1234
    _same(columnar, rows)


def _read(engine: Any, sql: str, value_bytes: int, result_bytes: int, frame: bool):
    """One way's (frame, budget, columnar?), or the type of the error it raised."""
    budget = ResultBudget(value_bytes, result_bytes)
    try:
        fetched = run_read_only(
            engine, sql, max_rows=10_001, timeout_s=30, budget=budget, query=True, frame=frame
        )
    except Exception as exc:
        return type(exc)
    df = fetched.frame if fetched.frame is not None else build_frame(fetched.columns, fetched.rows)
    return df, budget, fetched.frame is not None


@pytest.mark.slow  # 3,000 statements, ~10 s: with the real-engine suites CI runs after
def test_the_world_corpus_duckdb_queries_read_alike_both_ways():
    """Every DuckDB query of the world corpus (sqlglot's dialect tests and TPC fixtures, in
    tests/connectors/corpus/world/duckdb.yaml) read both ways on an empty database: those
    that fail (a table it lacks) fail alike; the rest (literals, CTEs, table functions) give
    the same frame and budget, with room and again with budgets that clip and cut."""
    queries = yaml.safe_load(WORLD.read_text())["queries"]
    engine = build_engine("duckdb:///:memory:")
    ran = columnar_count = failed = 0
    try:
        for query in queries:
            sql = query["sql"]
            if any(word in sql.lower() for word in _VOLATILE):
                continue
            for value_bytes, result_bytes in ((1 << 20, 1 << 24), (64, 200)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    columnar = _read(engine, sql, value_bytes, result_bytes, frame=True)
                    rows = _read(engine, sql, value_bytes, result_bytes, frame=False)
                if isinstance(columnar, type) or isinstance(rows, type):
                    assert columnar == rows, f"{query['source']}: {sql}"
                    failed += 1
                    break  # a statement that cannot run: once is enough
                try:
                    _same(columnar, rows)
                except AssertionError as exc:
                    if not _same_but_ordered(columnar, rows):
                        raise AssertionError(f"{query['source']}: {sql}") from exc
                ran += 1
                columnar_count += columnar[2]
    finally:
        engine.dispose()
    assert ran >= 1_000 and columnar_count >= 800 and failed < 600, (ran, columnar_count, failed)


def test_repeated_column_names_are_made_distinct_alike_both_ways(typed):
    """``SELECT a.*, b.*`` of two tables with an ``id`` (issue 37, item 7): one column each,
    ``id`` and ``id_2``, past a name the result already has."""
    engine = build_engine(typed)
    try:
        sql = (
            "SELECT a.id, b.id, a.label AS id_2 FROM typed a JOIN typed b ON a.id = b.id + 1 "
            "ORDER BY a.id"
        )
        columnar, rows = _both(engine, sql, 1 << 20, 1 << 26)
    finally:
        engine.dispose()
    assert columnar[2]
    _same(columnar, rows)
    assert columnar[0].columns.tolist() == ["id", "id_3", "id_2"]
    assert columnar[0]["id"].tolist()[:2] == [2, 3] and columnar[0]["id_3"].tolist()[:2] == [1, 2]
