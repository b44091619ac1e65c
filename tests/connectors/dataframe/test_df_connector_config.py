"""Connecting frames: table naming, the connector contract, and every bad input refused at
connect with a message that says how to fix it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relay_nb.connectors.base import Connector
from relay_nb.connectors.dataframe import DataFrameConnector
from relay_nb.errors import ConfigurationError
from relay_nb.redaction import REDACTED, register_secret


def test_one_frame_is_a_table_named_like_the_connector(connect, sales) -> None:
    connector = connect("sales", sales, name="Sales 2025", description="Weekly export")
    assert isinstance(connector, Connector) and connector.kind == "dataframe"
    assert connector.object_names() == ["sales"]
    assert connector.target == "1 DataFrame: sales"
    assert [t.name for t in connector.tools()] == ["query_sales", "describe_sales"]
    assert all(t.metadata == {"connector": "sales", "kind": "dataframe"} for t in connector.tools())
    context = connector.prompt_context()
    assert context.startswith("### DataFrame connector: sales (Sales 2025)")
    assert "Weekly export" in context and "query_sales" in context
    assert connector.query("SELECT COUNT(*) AS n FROM sales").df["n"].iloc[0] == len(sales)


def test_a_mapping_is_one_table_per_key_in_the_given_order(connect, shop) -> None:
    connector = connect("shop", shop)
    assert connector.object_names() == ["orders", "customers", "products"]
    assert connector.target == "3 DataFrames: orders, customers, products"
    for table, frame in shop.items():
        counted = connector.query(f"SELECT COUNT(*) AS n FROM {table}").df["n"].iloc[0]
        assert counted == len(frame)


def test_a_reserved_word_is_a_valid_table_name_and_is_shown_quoted(connect, shop) -> None:
    connector = connect("shop", {"order": shop["orders"]})
    assert '"order"(' in connector.prompt_context()
    result = connector.query('SELECT SUM(quantity) AS q FROM "order"')
    assert result.df["q"].iloc[0] == shop["orders"]["quantity"].sum()


@pytest.mark.parametrize("bad", ["Sales", "2024_sales", "my-table", "sales data", "", "x" * 64])
def test_table_names_must_be_snake_case(connect, sales, bad: str) -> None:
    with pytest.raises(ConfigurationError, match="must be snake_case") as caught:
        connect("shop", {bad: sales})
    assert "rename the key" in str(caught.value)


def test_a_table_name_must_be_a_string(connect, sales) -> None:
    with pytest.raises(ConfigurationError, match="snake_case"):
        connect("shop", {3: sales})


def test_the_connector_id_must_be_snake_case(connect, sales) -> None:
    with pytest.raises(ConfigurationError, match="snake_case"):
        connect("Sales", sales)


def test_an_empty_mapping_is_refused(connect) -> None:
    with pytest.raises(ConfigurationError, match="at least one"):
        connect("shop", {})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([1, 2, 3], "got list, not a pandas DataFrame"),
        ({"a": [1, 2]}, "snake_case|got list"),  # a dict is read as a mapping of tables
        (42, "got int, not a pandas DataFrame"),
        (np.arange(3), "got ndarray, not a pandas DataFrame"),
        (pd.DataFrame, "got type, not a pandas DataFrame"),
        (pd.Series([1, 2]), r"series\.to_frame\(\)"),
    ],
)
def test_values_that_are_not_frames_are_refused(connect, value, expected: str) -> None:
    with pytest.raises(ConfigurationError, match=expected):
        connect("sales", value)


def test_a_series_inside_a_mapping_names_its_table(connect, sales) -> None:
    with pytest.raises(ConfigurationError, match=r"table 'amounts': got a pandas Series"):
        connect("shop", {"sales": sales, "amounts": sales["amount"]})


def test_a_callable_that_raises_at_connect_is_a_configuration_error(connect) -> None:
    def missing() -> pd.DataFrame:
        raise NameError("name 'sales' is not defined")

    with pytest.raises(ConfigurationError) as caught:
        connect("sales", missing)
    message = str(caught.value)
    assert "reading its DataFrame failed (NameError: name 'sales' is not defined)" in message
    assert "define the variable again" in message


def test_a_callable_returning_something_else_is_a_configuration_error(connect) -> None:
    with pytest.raises(ConfigurationError, match="returns list, not a pandas DataFrame"):
        connect("sales", lambda: [1, 2])


def test_secrets_in_a_failing_callable_never_reach_the_message(connect) -> None:
    secret = "df-test-secret-7f3a9c"
    register_secret(secret)

    def leaky() -> pd.DataFrame:
        raise RuntimeError(f"could not log in with {secret}")

    with pytest.raises(ConfigurationError) as caught:
        connect("sales", leaky)
    assert secret not in str(caught.value) and REDACTED in str(caught.value)


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (["a", "a"], "columns 'a' and 'a' have the same name"),
        (["amount", "Amount"], "differ only in case, which SQL ignores"),
        ([("x", "sum"), "x_sum"], "columns 'x_sum' and 'x_sum' have the same name"),
    ],
)
def test_columns_that_collide_in_sql_are_refused(connect, columns, expected: str) -> None:
    frame = pd.DataFrame([[1, 2]], columns=pd.Index(columns, tupleize_cols=False))
    with pytest.raises(ConfigurationError, match=expected) as caught:
        connect("sales", frame)
    assert "rename one" in str(caught.value)


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("row_limit", 0, "row_limit must be a positive integer"),
        ("row_limit", 2.5, "row_limit must be a positive integer"),
        ("statement_timeout_s", 0, "statement_timeout_s must be a positive number"),
    ],
)
def test_bad_options_are_refused(connect, sales, option: str, value, expected: str) -> None:
    with pytest.raises(ConfigurationError, match=expected):
        connect("sales", sales, **{option: value})


def test_the_public_signature_is_what_relay_connect_calls() -> None:
    import inspect

    parameters = inspect.signature(DataFrameConnector).parameters
    assert list(parameters) == [
        "id",
        "frames",
        "row_limit",
        "statement_timeout_s",
        "name",
        "description",
        "max_value_bytes",
        "max_result_bytes",
    ]
    keyword_only = [n for n, p in parameters.items() if p.kind is p.KEYWORD_ONLY]
    assert keyword_only == list(parameters)[2:]
