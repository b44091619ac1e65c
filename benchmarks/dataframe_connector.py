"""DataFrame connector on 1e6 rows: registration cost and GROUP BY vs pandas' own groupby.

Registration must scan pandas memory in place, not copy it: the connect time (open the
sealed database, register, ``DESCRIBE``) is reported next to the frame's size, and the
process's resident memory is measured around it. The GROUP BY runs through the whole
``DataFrameConnector.query`` path (guard, re-registration, read-only execution, DataFrame
build) and is compared with ``DataFrame.groupby`` on the same frame in the same run; both
results are checked equal, so a fast wrong answer cannot pass.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from relay_nb.connectors.dataframe import DataFrameConnector

ROWS = 1_000_000
GROUPS = 1_000
REPEAT = 5
_PAGE = 4096


def _median_s(work: Callable[[], object], repeat: int = REPEAT) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _rss_bytes() -> int | None:
    """Resident memory from /proc (Linux); None elsewhere."""
    statm = Path("/proc/self/statm")
    if not statm.exists():
        return None
    return int(statm.read_text().split()[1]) * _PAGE


def sample_frame(rows: int = ROWS, seed: int = 7) -> pd.DataFrame:
    """Numeric, text (pandas' string dtype) and categorical columns, as analysts have them."""
    rng = np.random.default_rng(seed)
    regions = np.array(["north", "south", "east", "west"])
    return pd.DataFrame(
        {
            "store_id": rng.integers(0, GROUPS, rows),
            "amount": rng.random(rows) * 100,
            "qty": rng.integers(1, 10, rows),
            "region": pd.array(regions[rng.integers(0, 4, rows)], dtype="string"),
            "channel": pd.Categorical(rng.choice(["web", "shop", "phone"], rows)),
        }
    )


def bench_dataframe_connector(rows: int = ROWS) -> dict:
    frame = sample_frame(rows)
    frame_mb = frame.memory_usage(deep=False).sum() / 1e6
    started = time.perf_counter()  # loading DuckDB itself is paid once per process
    DataFrameConnector("warm_up", sample_frame(10)).close()
    first_connect_s = time.perf_counter() - started

    rss_before = _rss_bytes()
    started = time.perf_counter()
    connector = DataFrameConnector("sales", frame, row_limit=10 * GROUPS)
    connect_s = time.perf_counter() - started
    rss_after = _rss_bytes()
    try:
        with connector._driver() as driver:  # the raw register call alone, for reference
            register_s = _median_s(lambda: driver.register("sales", frame))

        by_store = (
            "SELECT store_id, SUM(amount) AS total, COUNT(*) AS n FROM sales "
            "GROUP BY store_id ORDER BY store_id"
        )
        by_region = "SELECT region, SUM(qty) AS qty FROM sales GROUP BY region ORDER BY region"
        connector_s = _median_s(lambda: connector.query(by_store))
        pandas_s = _median_s(
            lambda: frame.groupby("store_id").agg(total=("amount", "sum"), n=("amount", "size"))
        )
        text_connector_s = _median_s(lambda: connector.query(by_region))
        text_pandas_s = _median_s(lambda: frame.groupby("region")["qty"].sum())
        overhead_s = _median_s(lambda: connector.query("SELECT 1 AS one FROM sales LIMIT 1"))

        ours = connector.query(by_store).df
        theirs = (
            frame.groupby("store_id")
            .agg(total=("amount", "sum"), n=("amount", "size"))
            .reset_index()
        )
        same = (
            ours["store_id"].tolist() == theirs["store_id"].tolist()
            and ours["n"].tolist() == theirs["n"].tolist()
            and bool(np.allclose(ours["total"], theirs["total"]))
        )
    finally:
        connector.close()

    result = {
        "rows": rows,
        "frame_mb": round(frame_mb, 1),
        "first_connect_ms": first_connect_s * 1000,
        "connect_ms": connect_s * 1000,
        "register_ms": register_s * 1000,
        "rss_growth_mb": None
        if rss_before is None or rss_after is None
        else round((rss_after - rss_before) / 1e6, 1),
        "query_overhead_ms": overhead_s * 1000,
        "groupby_int_connector_ms": connector_s * 1000,
        "groupby_int_pandas_ms": pandas_s * 1000,
        "groupby_int_ratio": connector_s / pandas_s,
        "groupby_text_connector_ms": text_connector_s * 1000,
        "groupby_text_pandas_ms": text_pandas_s * 1000,
        "groupby_text_ratio": text_connector_s / text_pandas_s,
        "results_equal": same,
    }
    print(f"first connector in the process (loads DuckDB): {first_connect_s * 1000:.0f} ms")
    print(
        f"{rows:,} rows ({result['frame_mb']} MB): connect {result['connect_ms']:.1f} ms, "
        f"register {result['register_ms']:.2f} ms, resident memory +{result['rss_growth_mb']} MB"
    )
    print(f"per-query overhead (guard, re-register, run, frame): {overhead_s * 1000:.2f} ms")
    print(f"{'GROUP BY':<22} {'connector ms':>13} {'pandas ms':>10} {'ratio':>6}")
    for label, key in (("store_id (1,000 keys)", "int"), ("region (string dtype)", "text")):
        print(
            f"{label:<22} {result[f'groupby_{key}_connector_ms']:>13.1f} "
            f"{result[f'groupby_{key}_pandas_ms']:>10.1f} {result[f'groupby_{key}_ratio']:>6.2f}"
        )
    print(f"results equal to pandas: {same}")
    return result


def run() -> dict:
    return bench_dataframe_connector()


if __name__ == "__main__":
    run()
