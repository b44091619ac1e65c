"""Worst-case inputs for the patterns and matchers that read text a model, a database value,
a search provider or a connection URL controls (issue 38; a helper's audit timed each
through its public function: 2 to 88 s at 100,000 characters before these fixes). Each
input here is the shape that was quadratic, at the size that took seconds; the suite's
per-test timeout is the bound (10 s, far above the milliseconds each takes now)."""

from __future__ import annotations

import pytest

from relay_nb.connectors.websearch.hits import clean_text
from relay_nb.errors import UnsafeQueryError
from relay_nb.redaction import option_secrets
from relay_nb.runtime.codex_cli import _failure_report
from relay_nb.secret_shapes import secret_kind
from relay_nb.sql.catalog.model import Catalog, ColumnInfo, TableInfo
from relay_nb.sql.guard.query import guard_query
from relay_nb.sql.prompt.describe import MAX_DESCRIBED, describe_request
from relay_nb.views.session import plain_answer

pytestmark = pytest.mark.timeout(10)

N = 100_000
WIDE = 400_000
"""For the credential shapes: 4 s at 100,000 characters before, so 16x that here."""


@pytest.mark.parametrize("value", ["eyJ-" * (WIDE // 4), "a1" * (WIDE // 2)])
def test_a_long_database_value_is_screened_for_credentials_at_once(value: str) -> None:
    assert secret_kind(value) is None  # a JWT's / a URL password's shape, never completed
    assert secret_kind("x" * 5000 + " eyJhbGciOiJI.eyJzdWIiOiIx.sig") is None  # past the read
    assert secret_kind("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc") is not None


@pytest.mark.parametrize("answer", [" " * N + "x", "[" * N, " *a" * (N // 3)])
def test_the_history_strips_markup_from_any_answer_at_once(answer: str) -> None:
    assert len(plain_answer(answer)) <= 300
    assert plain_answer("| a | b |\n|---|---|\n| 1 | 2 |") == "a | b; 1 | 2"


def test_an_interval_of_digits_without_a_unit_is_read_at_once() -> None:
    sql = (
        "SELECT * FROM generate_series(TIMESTAMP '2024-01-01', TIMESTAMP '2024-02-01', "
        f"INTERVAL '{'1' * 20_000}')"  # 29 s before
    )
    with pytest.raises(UnsafeQueryError):
        guard_query(sql, dialect="duckdb", allowed_tables=[], default_schema="main", row_limit=200)


@pytest.mark.parametrize("message", ["http" + " " * N, "status" + "\n" * N])
def test_a_codex_error_s_status_is_read_at_once(message: str) -> None:
    assert _failure_report([{"type": "error", "message": message}]) == (message, None)


def test_a_search_snippet_of_unclosed_comments_is_cleaned_at_once() -> None:
    assert len(clean_text("<!--" * WIDE, 1000)) <= 1000  # 10 s at 100,000 before


def test_a_long_url_option_without_items_is_read_at_once() -> None:
    assert option_secrets("options", "a" * N) == []  # 7 s at 20,000 before
    assert option_secrets("authMechanismProperties", "AWS_SESSION_TOKEN:abc") == ["abc"]


def test_describe_on_ten_thousand_tables_with_many_long_guesses() -> None:
    column = ColumnInfo(name="id", type="INTEGER")
    tables = tuple(
        TableInfo(schema_name="main", name=f"table_{n:05d}_{'x' * 40}", columns=(column,))
        for n in range(10_000)
    )
    catalog = Catalog(dialect="duckdb", default_schema="main", tables=tables)
    guesses = [f"guess_{n}_{'y' * 100}" for n in range(100)]
    text = describe_request(catalog, guesses, "a" * N, connector_id="lake")
    assert f"{100 - MAX_DESCRIBED} more names not described" in text
