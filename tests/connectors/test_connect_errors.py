"""Connecting with a bad URL or a missing driver: a short error that says the fix, and never
the password."""

from __future__ import annotations

import pytest

from relay_nb import ConfigurationError, SQLConnector


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("not a url", "not a database URL or a database file that exists; use a path to a SQLite"),
        ("notadb://u@h/db", "unknown database kind 'notadb'"),
        (
            "postgresql+asyncpg://u:hunter2@127.0.0.1/db",
            "the database driver 'asyncpg' for postgresql+asyncpg://u:[REDACTED]@127.0.0.1/db "
            "is not installed; pip install 'relay-nb[postgres]', or use the driver it installs: "
            "postgresql+psycopg://USER@HOST/DB",
        ),
        ("mssql+pyodbc://u:hunter2@h/db", "install the 'pyodbc' package"),
        # a password with ':' or '@' left unencoded turns part of it into the "port"
        ("postgresql+psycopg://u:hun@ter2@h:5x/db", "the database URL's port is not a number"),
    ],
)
def test_bad_urls_and_missing_drivers_say_the_fix(url: str, expected: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        SQLConnector("x", url)
    assert expected in str(caught.value)
    assert "hunter2" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
