"""Queries on real DuckDB over real frames: results checked against pandas on the same frame,
dtypes, column and index naming, changes made in the notebook, failures, timeouts, close."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from df_connector_helpers import table_line

from relay_nb.errors import ConfigurationError, QueryExecutionError

# --------------------------------------------------------------------------- results


def test_group_by_matches_pandas_groupby(connect, sales) -> None:
    connector = connect("sales", sales)
    result = connector.query(
        "SELECT region, SUM(amount) AS total, COUNT(*) AS n FROM sales "
        "GROUP BY region ORDER BY region"
    )
    expected = (
        sales.groupby("region")
        .agg(total=("amount", "sum"), n=("amount", "size"))
        .reset_index()
        .sort_values("region", ignore_index=True)
    )
    assert result.df["region"].tolist() == expected["region"].tolist()
    assert result.df["n"].tolist() == expected["n"].tolist()
    np.testing.assert_allclose(result.df["total"], expected["total"])
    assert result.executed_sql.endswith("LIMIT 201") and result.tables == ("sales",)
    assert result.connector_id == "sales" and not result.truncated


def test_the_row_limit_truncates_and_says_so(connect, sales) -> None:
    connector = connect("sales", sales, row_limit=25)
    result = connector.query("SELECT * FROM sales ORDER BY sold_at")
    assert result.row_count == 25 and result.truncated and len(result.df) == 25
    assert result.df["sold_at"].tolist() == sales["sold_at"].head(25).tolist()


def test_a_join_across_frames_matches_pandas_merge(connect, shop) -> None:
    connector = connect("shop", shop)
    result = connector.query(
        "SELECT c.country, SUM(o.quantity * p.price) AS revenue "
        "FROM orders AS o JOIN customers AS c ON c.customer_id = o.customer_id "
        "JOIN products AS p ON p.product_id = o.product_id "
        "GROUP BY c.country ORDER BY c.country"
    )
    merged = (
        shop["orders"]
        .merge(shop["customers"], on="customer_id")
        .merge(shop["products"], on="product_id")
    )
    expected = (merged["quantity"] * merged["price"]).groupby(merged["country"]).sum().sort_index()
    assert result.df["country"].tolist() == expected.index.tolist()
    np.testing.assert_allclose(result.df["revenue"], expected.to_numpy())
    assert result.tables == ("customers", "orders", "products")


# --------------------------------------------------------------------------- dtypes


def test_nullable_categorical_string_and_time_zone_columns_query_correctly(connect, sales) -> None:
    connector = connect("sales", sales)
    counts = connector.query(
        "SELECT COUNT(qty) AS qty_known, COUNT(amount) AS amount_known, "
        "SUM(qty) AS qty_total FROM sales"
    ).df.iloc[0]
    assert counts["qty_known"] == sales["qty"].notna().sum()
    assert counts["amount_known"] == sales["amount"].notna().sum()
    assert counts["qty_total"] == sales["qty"].sum()

    web = connector.query("SELECT COUNT(*) AS n FROM sales WHERE channel = 'web'").df
    assert web["n"].iloc[0] == (sales["channel"] == "web").sum()

    text = connector.query("SELECT COUNT(*) AS n FROM sales WHERE region LIKE 'no%'").df
    assert text["n"].iloc[0] == sales["region"].str.startswith("no").sum()

    # the instants survive; SQL sees them in UTC
    first = connector.query("SELECT sold_at FROM sales ORDER BY sold_at LIMIT 1").df
    assert first["sold_at"].iloc[0] == sales["sold_at"].min()
    days = connector.query("SELECT COUNT(DISTINCT CAST(sold_at AS DATE)) AS days FROM sales").df
    assert days["days"].iloc[0] == sales["sold_at"].dt.tz_convert("UTC").dt.date.nunique()


def test_the_prompt_shows_sql_types_nullability_and_dtype_notes(connect, sales) -> None:
    line = table_line(connect("sales", sales).prompt_context(), "sales")
    assert "store_id bigint," in line  # numpy ints cannot be missing: no '?'
    assert "region varchar?" in line
    assert "amount double?" in line
    assert "qty bigint?" in line  # nullable Int64
    assert 'channel enum? "categories: phone, shop, web"' in line
    assert 'sold_at timestamptz? "time zone Europe/Paris; SQL sees UTC"' in line
    assert line.endswith('-- "DataFrame, 500 rows"')


def test_many_categories_are_listed_only_in_part(connect) -> None:
    frame = pd.DataFrame({"code": pd.Categorical([f"c{i:02d}" for i in range(30)])})
    line = table_line(connect("codes", frame).prompt_context(), "codes")
    assert "c00, c01" in line and "c29" not in line and "…" in line


@pytest.mark.parametrize(
    ("column", "shown"),
    [
        (pd.array([True, None, False], dtype="boolean"), "v bool?"),
        (np.array([True, False, True]), "v bool"),
        (pd.array([1.5, None, 2.0], dtype="Float64"), "v double?"),
        (np.array([1, 2, 3], dtype="uint8"), "v utinyint"),
        (pd.to_datetime(["2025-01-01", None, "2025-03-01"]), "v timestamp?"),
        (pd.to_timedelta([1, None, 3], unit="D"), "v interval?"),
        (np.array(["a", None, "c"], dtype=object), "v varchar?"),
    ],
)
def test_other_dtypes_get_their_duckdb_type(connect, column, shown: str) -> None:
    frame = pd.DataFrame({"v": column})
    connector = connect("t", frame)
    assert table_line(connector.prompt_context(), "t").startswith(f"t({shown}) --")
    known = connector.query("SELECT COUNT(v) AS n FROM t").df["n"].iloc[0]
    assert known == frame["v"].notna().sum()


def test_dtypes_duckdb_cannot_scan_are_converted_and_noted(connect) -> None:
    frame = pd.DataFrame(
        {
            "month": pd.period_range("2025-01", periods=4, freq="M"),
            "band": pd.interval_range(0, 4),
            "z": np.array([1 + 2j, 3j, 0, 1]),
            "sparse": pd.arrays.SparseArray([0, 0, 5, 0]),
        }
    )
    connector = connect("odd", frame)
    line = table_line(connector.prompt_context(), "odd")
    assert 'month varchar? "period[M] as text"' in line
    assert "sparse bigint," in line or "sparse bigint)" in line  # densified: ints again
    assert 'band varchar? "interval as text"' in line and 'z varchar? "complex as text"' in line
    rows = connector.query("SELECT month, band, z, sparse FROM odd ORDER BY month").df
    assert rows["month"].tolist() == frame["month"].astype(str).tolist()
    assert rows["band"].tolist() == frame["band"].astype(str).tolist()
    assert rows["sparse"].tolist() == frame["sparse"].sparse.to_dense().tolist()


def test_binned_categories_become_text_in_bin_order(connect, sales) -> None:
    frame = sales.assign(band=pd.cut(sales["amount"], bins=[0, 25, 50, 100]))
    connector = connect("sales", frame)
    assert 'band enum? "categories: (0, 25], (25, 50], (50, 100]"' in table_line(
        connector.prompt_context(), "sales"
    )
    rows = connector.query(
        "SELECT band, COUNT(*) AS n FROM sales WHERE band IS NOT NULL GROUP BY band ORDER BY band"
    ).df
    expected = frame["band"].value_counts(sort=False)
    assert rows["band"].tolist() == [str(b) for b in expected.index]  # bin order, not text order
    assert rows["n"].tolist() == expected.tolist()


def test_an_unreadable_dtype_is_named_with_a_fix(connect) -> None:
    decimal_array = pytest.importorskip("pandas.tests.extension.decimal").DecimalArray
    from decimal import Decimal

    frame = pd.DataFrame({"ok": [1, 2], "price": decimal_array([Decimal("1.5"), Decimal("2")])})
    with pytest.raises(ConfigurationError) as caught:
        connect("t", frame)
    message = str(caught.value)
    assert "column 'price' has dtype decimal, which DuckDB cannot read" in message
    assert "df['price'] = df['price'].astype(str)" in message


def test_a_frame_that_becomes_unreadable_fails_at_query_with_the_fix(connect, sales) -> None:
    decimal_array = pytest.importorskip("pandas.tests.extension.decimal").DecimalArray
    from decimal import Decimal

    namespace = {"sales": sales}
    connector = connect("sales", lambda: namespace["sales"])
    namespace["sales"] = sales.assign(
        amount=decimal_array([Decimal(str(i)) for i in range(len(sales))])
    )
    assert "\"unavailable: column 'amount' cannot be read\"" in connector.prompt_context()
    with pytest.raises(QueryExecutionError, match="column 'amount' has dtype decimal"):
        connector.query("SELECT COUNT(*) FROM sales")


# --------------------------------------------------------------------------- names


def test_non_string_column_labels_are_stringified(connect, sales) -> None:
    summary = sales.groupby("region").agg({"amount": ["sum", "mean"], "store_id": ["max"]})
    assert isinstance(summary.columns, pd.MultiIndex)  # ("amount", "sum"), …
    connector = connect("summary", summary)
    line = table_line(connector.prompt_context(), "summary")
    assert 'region varchar? "index"' in line  # the named index came back as a column
    assert "amount_sum double?" in line and "store_id_max bigint" in line
    rows = connector.query("SELECT region, amount_sum FROM summary ORDER BY region").df
    np.testing.assert_allclose(rows["amount_sum"], summary[("amount", "sum")].sort_index())

    numbered = connect("numbered", pd.DataFrame([[1, 2], [3, 4]]))
    assert table_line(numbered.prompt_context(), "numbered").startswith('numbered("0" bigint')
    assert numbered.query('SELECT SUM("1") AS s FROM numbered').df["s"].iloc[0] == 6


def test_index_levels_worth_a_column_are_exposed(connect, sales) -> None:
    by_time = sales.set_index("sold_at")
    line = table_line(connect("by_time", by_time).prompt_context(), "by_time")
    assert line.startswith('by_time(sold_at timestamptz? "index"')

    unnamed_dates = sales.set_index("sold_at").rename_axis(None)
    line = table_line(connect("dated", unnamed_dates).prompt_context(), "dated")
    assert line.startswith('dated(index timestamptz? "index"')

    filtered = sales[sales["amount"] > 50]  # an integer index of row positions: not a column
    connector = connect("filtered", filtered)
    assert "index" not in table_line(connector.prompt_context(), "filtered")
    n = connector.query("SELECT COUNT(*) AS n FROM filtered").df["n"].iloc[0]
    assert n == len(filtered)

    kept = sales.set_index("region", drop=False)  # already a column: not exposed twice
    names = [c.name for c in connect("kept", kept).catalog.tables[0].columns]
    assert names.count("region") == 1


# --------------------------------------------------------------------------- changes


def test_a_column_added_in_place_is_seen_by_the_next_prompt_and_query(connect, sales) -> None:
    connector = connect("sales", sales)
    assert "discount" not in connector.prompt_context()
    sales["discount"] = sales["amount"] * 0.1
    assert "discount double?" in connector.prompt_context()
    total = connector.query("SELECT SUM(discount) AS d FROM sales").df["d"].iloc[0]
    assert total == pytest.approx(sales["discount"].sum())


def test_values_edited_in_place_are_seen_by_the_next_query(connect, sales) -> None:
    connector = connect("sales", sales)
    before = connector.catalog
    sales.loc[0, "store_id"] = 1000
    sales["amount"] = sales["amount"].fillna(0) + 1  # same dtype: same schema, new values
    assert connector.catalog is before  # the schema did not change: nothing re-described
    row = connector.query("SELECT MAX(store_id) AS s, SUM(amount) AS a FROM sales").df.iloc[0]
    assert row["s"] == 1000 and row["a"] == pytest.approx(sales["amount"].sum())


def test_a_dtype_change_updates_the_prompt(connect, sales) -> None:
    connector = connect("sales", sales)
    sales["store_id"] = sales["store_id"].astype("string")
    assert "store_id varchar?" in connector.prompt_context()
    assert connector.query("SELECT MIN(store_id) AS s FROM sales").df["s"].iloc[0] == min(
        sales["store_id"]
    )


def test_a_callable_source_sees_the_variable_rebound(connect, sales) -> None:
    namespace = {"sales": sales}
    connector = connect("sales", lambda: namespace["sales"])
    namespace["sales"] = pd.concat([sales, sales.head(10)], ignore_index=True)
    assert '"DataFrame, 510 rows"' in connector.prompt_context()
    assert connector.query("SELECT COUNT(*) AS n FROM sales").df["n"].iloc[0] == 510
    namespace["sales"] = sales[sales["region"] == "north"]
    n = connector.query("SELECT COUNT(*) AS n FROM sales").df["n"].iloc[0]
    assert n == (sales["region"] == "north").sum()


def test_a_source_that_breaks_is_marked_and_the_other_tables_keep_working(connect, shop) -> None:
    namespace = dict(shop)
    connector = connect("shop", {t: (lambda t=t: namespace[t]) for t in shop})
    del namespace["orders"]
    context = connector.prompt_context()
    assert "orders(" in context and '"unavailable: reading it failed (KeyError)"' in context
    with pytest.raises(QueryExecutionError, match="table 'orders': reading its DataFrame failed"):
        connector.query("SELECT COUNT(*) FROM orders")
    assert connector.query("SELECT COUNT(*) AS n FROM customers").df["n"].iloc[0] == 40

    namespace["orders"] = "not a frame"
    assert "unavailable: it is now a str, not a DataFrame" in connector.prompt_context()
    with pytest.raises(QueryExecutionError, match="assign a DataFrame to the variable again"):
        connector.query("SELECT COUNT(*) FROM orders")

    namespace["orders"] = shop["orders"].set_axis(["a", "A", "b", "c"], axis=1)
    with pytest.raises(QueryExecutionError, match="differ only in case"):
        connector.query("SELECT COUNT(*) FROM orders")

    namespace["orders"] = shop["orders"]
    assert "unavailable" not in connector.prompt_context()
    assert connector.query("SELECT COUNT(*) AS n FROM orders").df["n"].iloc[0] == 300


def test_refresh_describes_every_frame_again(connect, sales) -> None:
    connector = connect("sales", sales)
    before = connector.catalog
    assert connector.catalog is before
    after = connector.refresh()
    assert after is not before and after == before


async def test_the_describe_tool_serves_full_details(connect, shop) -> None:
    connector = connect("shop", shop)
    describe = {t.name: t for t in connector.tools()}["describe_shop"]
    result = await describe.run({"tables": ["customers"]})
    assert not result.is_error
    assert "customers (table, 3 columns)" in result.content and "free, pro" in result.content


# --------------------------------------------------------------------------- execution


def test_a_timeout_stops_the_query_and_the_next_one_works(connect, sales) -> None:
    connector = connect("sales", sales, statement_timeout_s=0.3)
    started = time.perf_counter()
    with pytest.raises(QueryExecutionError, match=r"ran longer than 0\.3 s"):
        connector.query("SELECT COUNT(*) FROM range(1000000000000) AS r(i)")
    assert time.perf_counter() - started < 5
    # the pool discarded the interrupted connection: a fresh, equally sealed one serves now
    n = connector.query("SELECT COUNT(*) AS n FROM sales").df["n"].iloc[0]
    assert n == len(sales)
    with connector._driver() as driver:
        settings = driver.execute(
            "SELECT current_setting('enable_external_access'), "
            "current_setting('lock_configuration')"
        ).fetchone()
    assert settings == (False, True)


async def test_cancelling_a_query_task_interrupts_it(connect, sales) -> None:
    connector = connect("sales", sales, statement_timeout_s=20)
    task = asyncio.create_task(
        connector.aquery("SELECT COUNT(*) FROM range(1000000000000) AS r(i)")
    )
    await asyncio.sleep(0.2)
    started = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - started < 5
    result = await connector.aquery("SELECT COUNT(*) AS n FROM sales")
    assert result.df["n"].iloc[0] == len(sales)


async def test_concurrent_queries_take_turns_and_are_all_correct(connect, sales) -> None:
    connector = connect("sales", sales)
    stores = sorted(sales["store_id"].unique())
    results = await asyncio.gather(
        *(connector.aquery(f"SELECT COUNT(*) AS n FROM sales WHERE store_id = {s}") for s in stores)
    )
    counts = sales["store_id"].value_counts()
    assert [r.df["n"].iloc[0] for r in results] == [counts[s] for s in stores]


def test_close_closes_duckdb_and_later_use_says_so(connect, sales) -> None:
    connector = connect("sales", sales)
    with connector._driver() as driver:
        pass
    connector.close()
    with pytest.raises(Exception, match=r"(?i)closed"):
        driver.execute("SELECT 1")
    with pytest.raises(QueryExecutionError, match="connector 'sales' is closed; connect"):
        connector.query("SELECT COUNT(*) FROM sales")
    with pytest.raises(QueryExecutionError, match="is closed"):
        connector.prompt_context()
    connector.close()  # twice is fine


async def test_a_closed_connector_is_a_tool_error_the_model_reads(connect, sales) -> None:
    connector = connect("sales", sales)
    (query, _) = connector.tools()
    connector.close()
    result = await query.run({"sql": "SELECT 1 AS one FROM sales"})
    assert result.is_error and "is closed" in result.content


# --------------------------------------------------------------------------- no copy


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux /proc")
def test_connecting_a_big_frame_copies_nothing(connect) -> None:
    connect("warm_up", pd.DataFrame({"x": [1]}))  # DuckDB's own library loads once
    rng = np.random.default_rng(3)
    rows = 3_000_000
    frame = pd.DataFrame({k: rng.random(rows) for k in ("a", "b", "c", "d")})  # 96 MB
    size = frame.memory_usage().sum()
    before = _rss()
    started = time.perf_counter()
    connector = connect("big", frame)
    connect_s = time.perf_counter() - started
    grown = _rss() - before
    assert grown < size / 4, f"connecting grew memory by {grown / 1e6:.0f} MB"
    assert connect_s < 2.0
    total = connector.query("SELECT SUM(a) AS s FROM big").df["s"].iloc[0]
    assert total == pytest.approx(frame["a"].sum())
    assert _rss() - before < size / 4


def test_a_tight_prompt_budget_keeps_the_relevant_tables_and_points_to_describe(connect) -> None:
    frames = {
        f"table_{i:02d}": pd.DataFrame({f"col_{j}": [1] for j in range(12)}) for i in range(30)
    }
    frames["refunds"] = pd.DataFrame({"refund_id": [1], "reason": ["late"]})
    connector = connect("many", frames)
    full = connector.prompt_context()
    tight = connector.prompt_context(max_tokens=300, question="how many refunds were late?")
    assert len(tight) < len(full) / 3
    assert table_line(tight, "refunds") and "describe_many" in tight


def test_relabelled_frames_share_the_original_data_and_never_write_to_it(sales) -> None:
    from relay_nb.connectors.dataframe.frames import sql_frame

    frame = sales.set_index("sold_at")
    frame.columns = [1, ("region", ""), "amount", "qty", "channel"]  # forces a relabelled view
    frame = frame.assign(month=pd.period_range("2025-01", periods=len(frame), freq="D"))
    snapshot = frame.copy(deep=True)
    prepared = sql_frame("sales", frame)
    assert list(prepared.frame.columns) == [
        "sold_at", "1", "region", "amount", "qty", "channel", "month"
    ]  # fmt: skip
    assert np.shares_memory(prepared.frame["amount"].to_numpy(), frame["amount"].to_numpy())
    assert np.shares_memory(prepared.frame["1"].to_numpy(), frame[1].to_numpy())
    pd.testing.assert_frame_equal(frame, snapshot)
