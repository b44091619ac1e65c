"""Value profiles never show credentials, whatever their column is called (issue 38, item 1).

A real SQLite table holds credentials in low-cardinality text columns — few distinct values, so
the profile's category rule would list them all — under names the old rules passed
(``card``, ``note``, ``cvv2``, ``mfa_seed``, ``session_cookie``, ``access_key``, ``passcode``,
``recovery_code``, ``bearer``, ``credit_card``). The harm is shown first: the values are
there, and the columns are categories. Then no value reaches the prompt, the ``describe_``
tool's answer, ``%relay --describe``'s table or the opt-in ``sample_values``; the columns
whose *values* gave them away are marked so the analyst knows why; a benign category column
beside them is still listed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from relay_nb.connectors.sql.connector import SQLConnector
from relay_nb.secret_shapes import secret_kind
from relay_nb.sql.prompt.describe import describe_tables
from relay_nb.views.table_detail import table_frame

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlLWJ5dGVz"
CARD = "4111 1111 1111 1111"
ROWS = [
    # tier, card, note, cvv2, mfa_seed, session_cookie, access_key, passcode, recovery_code,
    # bearer, credit_card
    (
        "gold",
        CARD,
        JWT,
        "123",
        "JBSWY3DPEHPK3PXP",
        "s3ss10n-c00k13-v4lu3",
        "AKIAIOSFODNN7EXAMPLE",
        "hunter22",
        "rc-1111-2222",
        "tok-abc",
        "5500 0000 0000 0004",
    ),
    (
        "silver",
        "5555 5555 5555 4444",
        JWT,
        "456",
        "KRSXG5CTMVRXEZLU",
        "c00k13-tw0-v4lu3s",
        "AKIAI44QH8DHBEXAMPLE",
        "hunter33",
        "rc-3333-4444",
        "tok-def",
        "4012 8888 8888 1881",
    ),
]
COLUMNS = (
    "tier", "card", "note", "cvv2", "mfa_seed", "session_cookie", "access_key", "passcode",
    "recovery_code", "bearer", "credit_card",
)  # fmt: skip
SECRETS = {value for row in ROWS for value in row[1:]}


@pytest.fixture
def accounts(tmp_path: Path) -> str:
    path = tmp_path / "accounts.sqlite"
    with sqlite3.connect(path) as conn:
        declared = ", ".join(f"{column} TEXT" for column in COLUMNS)
        conn.execute(f"CREATE TABLE accounts (id INTEGER PRIMARY KEY, {declared})")
        for index in range(60):  # low cardinality: every column is a "category"
            row = ROWS[index % 2]
            conn.execute(
                f"INSERT INTO accounts VALUES (?, {', '.join('?' * len(COLUMNS))})", (index, *row)
            )
    return f"sqlite:///{path}"


def test_the_values_are_there_and_would_be_categories(accounts: str) -> None:
    path = accounts.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        for column in COLUMNS:
            (distinct,) = conn.execute(f"SELECT COUNT(DISTINCT {column}) FROM accounts").fetchone()
            assert 1 <= distinct <= 2  # a category by the profile's rule (few distinct values)
    # the value shapes: what a name cannot tell
    assert secret_kind(CARD) == "a card number" and secret_kind(JWT) == "a JSON Web Token"


def test_no_credential_reaches_the_model_or_the_analyst(accounts: str) -> None:
    shop = SQLConnector("acct", accounts, sample_values=5)
    try:
        catalog = shop.catalog
        table = catalog.tables[0]
        shown = {
            "prompt": shop.prompt_context(),
            "describe": describe_tables(catalog, ["accounts"]),
            "--describe": table_frame(catalog, table).to_string(),
            "samples": repr(shop.samples()),
        }
    finally:
        shop.close()
    for where, text in shown.items():
        leaked = sorted(secret for secret in SECRETS if secret in text)
        assert not leaked, f"{where} shows {leaked}"
    profiles = {c.name: c.profile for c in table.columns}
    assert profiles["tier"] is not None and set(profiles["tier"].values) == {"gold", "silver"}
    assert "'gold'" in shown["prompt"]  # a benign category beside them is still listed
    # named innocently, given away by their values: marked, so the analyst knows why
    assert profiles["card"].withheld == "values look like a card number"
    assert profiles["note"].withheld == "values look like a JSON Web Token"
    assert "card" in shown["prompt"] and "(values withheld)" in shown["prompt"]
    assert "values look like a card number: not shown" in shown["--describe"]
    # named like credentials: never profiled at all
    for name in COLUMNS[3:]:
        assert profiles[name] is None, name
