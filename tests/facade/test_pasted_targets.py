"""Addresses as analysts paste them (issue 37, item 12): ``postgres://`` from a cloud
console, a driverless ``postgresql://`` or ``mysql://``, a bare ``chinook.sqlite`` or
``lake.duckdb``, a CSV, TSV or Parquet file — each connects, on the real servers of
``scripts/services`` where it names one; a missing file says so in one line."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy.engine import make_url

import relay_nb
from relay_nb.connectors.sql.urls import database_url
from relay_nb.errors import ConfigurationError


@pytest.fixture
def relay() -> Iterator[relay_nb.Relay]:
    session = relay_nb.Relay(relay_nb.ScriptedRuntime(), ledger=False)
    yield session
    session.close()


def _service(name: str) -> str:
    url = os.environ.get(name)
    if not url:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} is not set (scripts/services start)")
        pytest.skip(f"{name} is not set: run scripts/services start")
    return url


@pytest.mark.parametrize("scheme", ["postgres", "postgresql"])
def test_a_postgres_url_as_consoles_write_it(relay, scheme):
    url = make_url(_service("RELAY_TEST_PG_URL"))
    pasted = url.set(drivername=scheme).render_as_string(hide_password=False)
    assert database_url(pasted).startswith("postgresql+psycopg://")
    connector = relay.connect("pg", pasted)
    assert int(connector.query("SELECT count(*) AS n FROM customers").df["n"][0]) > 0


def test_a_driverless_mysql_url(relay):
    url = make_url(_service("RELAY_TEST_MARIADB_URL"))
    pasted = url.set(drivername="mysql").render_as_string(hide_password=False)
    connector = relay.connect("maria", pasted)
    assert int(connector.query("SELECT count(*) AS n FROM customers").df["n"][0]) > 0


def test_a_driver_named_in_the_url_is_kept():
    assert database_url("postgresql+pg8000://u@h/d") == "postgresql+pg8000://u@h/d"
    assert database_url("sqlite:///x.db") == "sqlite:///x.db"


def test_bare_database_files_relative_or_absolute(relay, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with sqlite3.connect(tmp_path / "chinook.sqlite") as db:
        db.execute("CREATE TABLE track (id INTEGER, name TEXT)")
        db.execute("INSERT INTO track VALUES (1, 'So What')")
    import duckdb

    lake = duckdb.connect(str(tmp_path / "lake.duckdb"))
    lake.execute("CREATE TABLE trips AS SELECT 7 AS n")
    lake.close()
    assert relay.connect("music", "chinook.sqlite").query("SELECT name FROM track").df[
        "name"
    ].tolist() == ["So What"]
    assert relay.connect("lake", str(tmp_path / "lake.duckdb")).object_names() == ["main.trips"]


def test_csv_tsv_and_parquet_files_become_tables_named_after_them(relay, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    frame = pd.DataFrame({"region": ["EU", "US"], "revenue": [10.5, 20.0]})
    frame.to_csv("Sales-2024.csv", index=False)
    frame.to_csv("2023 sales.tsv", index=False, sep="\t")
    frame.to_parquet("sales.parquet")
    assert relay.connect("csv", "Sales-2024.csv").object_names() == ["sales_2024"]
    assert relay.connect("tsv", "2023 sales.tsv").object_names() == ["t_2023_sales"]
    result = relay.connect("pq", "sales.parquet").query("SELECT sum(revenue) AS r FROM sales")
    assert result.df["r"].tolist() == [30.5]


@pytest.mark.parametrize("name", ["missing.sqlite", "missing.csv", "gone/lake.duckdb"])
def test_a_missing_file_says_so_in_one_line(relay, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match=rf"there is no file '{name}'") as raised:
        relay.connect("x", name)
    assert "\n" not in str(raised.value)
    assert not Path(name).exists()  # nothing was created in its place


def test_the_magic_connects_a_pasted_file(tmp_path, monkeypatch):
    from relay_nb.testing.shell import TestingShell

    monkeypatch.chdir(tmp_path)
    with sqlite3.connect(tmp_path / "shop.db") as db:
        db.execute("CREATE TABLE orders (id INTEGER)")
    shell = TestingShell()
    assert "connected 'pasted'" in shell.run("%relay --connect pasted shop.db").stdout
