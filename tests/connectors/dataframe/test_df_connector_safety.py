"""Safety against the real DuckDB: every attack in the corpus is refused by the guard, the
sealed connection itself refuses what needs files, network or settings, and the analyst's
DataFrame is unchanged after every attempt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
import yaml

from relay_nb.connectors.dataframe import DUCKDB_CONFIG
from relay_nb.errors import UnsafeQueryError

CORPUS = yaml.safe_load((Path(__file__).with_name("corpus") / "df_attacks.yaml").read_text())
_RAW_OUTCOMES = {"runs", "error"}


def test_the_corpus_is_well_formed_and_covers_the_issue() -> None:
    ids = [entry["id"] for entry in CORPUS]
    assert len(ids) == len(set(ids)) >= 50
    for entry in CORPUS:
        assert set(entry) == {"id", "sql", "rule", "raw"}, entry["id"]
    text = " ".join(entry["sql"].lower() for entry in CORPUS)
    for needed in (
        "read_csv('/etc/passwd')", "read_parquet", "copy ", "attach", "install", "load ",
        "set enable_external_access", "create table", "insert into sales", "pragma",
        "getenv(", "glob(",
    ):  # fmt: skip
        assert needed in text, needed


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {"region": ["north", "south", "north", "east"], "amount": [10.0, 20.5, 7.25, 3.0]}
    )


def _run_raw(driver: Any, sql: str) -> str | None:
    """Run ``sql`` straight on DuckDB; None when it ran, else DuckDB's error text."""
    secret_df = pd.DataFrame({"password": ["hunter2"]})  # noqa: F841 - bait for replacement scans
    try:
        driver.execute(sql)
        driver.fetchall()
    except duckdb.Error as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("entry", CORPUS, ids=[entry["id"] for entry in CORPUS])
async def test_attack_is_refused_and_changes_nothing(connect, frame, entry) -> None:
    snapshot = frame.copy(deep=True)
    connector = connect("sales", frame)
    (query, _describe) = connector.tools()

    # what the model gets: a tool error naming the rule, and nothing ran
    result = await query.run({"sql": entry["sql"]})
    assert result.is_error and result.rule == entry["rule"], result.content
    with pytest.raises(UnsafeQueryError) as caught:
        connector.guard(entry["sql"])
    assert caught.value.rule == entry["rule"]
    pd.testing.assert_frame_equal(frame, snapshot)

    # defense in depth: the same text straight on the connector's own DuckDB connection
    with connector._driver() as driver:
        error = _run_raw(driver, entry["sql"])
    expected = entry["raw"]
    if expected == "runs":
        assert error is None, error
    elif expected == "error":
        assert error is not None
    else:
        assert expected not in _RAW_OUTCOMES
        assert error is not None and expected in error, error

    # the frame is untouched, and the connector still serves it exactly
    pd.testing.assert_frame_equal(frame, snapshot)
    rows = connector.query("SELECT region, amount FROM sales ORDER BY amount").df
    expected_rows = snapshot.sort_values("amount", ignore_index=True)
    assert rows["region"].tolist() == expected_rows["region"].tolist()
    assert rows["amount"].tolist() == expected_rows["amount"].tolist()


def test_the_connection_is_sealed(connect, frame) -> None:
    connector = connect("sales", frame)
    with connector._driver() as driver:
        settings = dict(
            driver.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN ("
                "'enable_external_access', 'lock_configuration', 'python_enable_replacements', "
                "'temp_directory', "
                "'allowed_directories', 'autoload_known_extensions', "
                "'autoinstall_known_extensions', 'allow_community_extensions', 'TimeZone')"
            ).fetchall()
        )
    assert settings == {
        "enable_external_access": "false",
        "lock_configuration": "true",
        "python_enable_replacements": "false",
        "temp_directory": "",
        "allowed_directories": "[]",
        "autoload_known_extensions": "false",
        "autoinstall_known_extensions": "false",
        "allow_community_extensions": "false",
        "TimeZone": "UTC",
    }


def test_an_unsealed_duckdb_would_have_read_what_the_sealed_one_refuses(tmp_path) -> None:
    """The raw checks above can fail: a default DuckDB connection reads files and Python
    variables by name, the very things the sealed connection refuses."""
    secret_file = tmp_path / "secret.csv"
    secret_file.write_text("token\nabc123\n")
    plain = duckdb.connect(":memory:")
    try:
        assert _run_raw(plain, f"SELECT * FROM read_csv('{secret_file}')") is None
        assert _run_raw(plain, "SELECT * FROM secret_df") is None  # the bait in _run_raw
    finally:
        plain.close()
    sealed = duckdb.connect(":memory:", config=dict(DUCKDB_CONFIG))
    try:
        error = _run_raw(sealed, f"SELECT * FROM read_csv('{secret_file}')")
        assert error is not None and "disabled by configuration" in error
        assert "does not exist" in (_run_raw(sealed, "SELECT * FROM secret_df") or "")
    finally:
        sealed.close()


def test_the_spill_directory_is_not_a_way_to_read_files(tmp_path, monkeypatch) -> None:
    """DuckDB lets a connection without external access read its own temp directory
    (``.tmp`` under the working directory by default); the connector sets none."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "planted.csv").write_text("token\nabc123\n")
    sql = f"SELECT * FROM read_csv('{tmp_path / '.tmp' / 'planted.csv'}')"
    default = duckdb.connect(":memory:", config={"enable_external_access": False})
    try:
        assert _run_raw(default, sql) is None  # the gap the setting closes
    finally:
        default.close()
    sealed = duckdb.connect(":memory:", config=dict(DUCKDB_CONFIG))
    try:
        assert "disabled by configuration" in (_run_raw(sealed, sql) or "")
    finally:
        sealed.close()


async def test_a_query_cannot_write_back_into_the_frame(connect, frame) -> None:
    """Even where the guard lets SQL through, DuckDB only scans the frame: a query that
    "changes" values changes the result, never the DataFrame."""
    snapshot = frame.copy(deep=True)
    connector = connect("sales", frame)
    result = connector.query("SELECT region, amount * 0 AS amount FROM sales")
    assert (result.df["amount"] == 0).all()
    pd.testing.assert_frame_equal(frame, snapshot)
