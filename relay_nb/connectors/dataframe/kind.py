"""The ``dataframe`` connector kind: pandas DataFrames as SQL tables, from Python only.

``relay.connect("sales", df)`` takes a DataFrame, a function returning one (read again at
every query), or a mapping of table names to either; its options are declared once below,
with the defaults :class:`~relay_nb.connectors.dataframe.connector.DataFrameConnector` takes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.options import max_result_bytes, max_value_bytes, option, required
from relay_nb.connectors.sql.urls import data_file
from relay_nb.connectors.types import ConnectorType, LazyFactory
from relay_nb.errors import ConfigurationError

__all__ = ["DATAFRAME_TYPE", "DataFrameKeywords", "DataFrameOptions", "is_frame"]


class DataFrameOptions(BaseModel):
    """Every ``relay.connect`` / ``DataFrameConnector`` keyword (only Python builds one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    frames: Any = required(
        "a DataFrame, a function returning one (read again at every query), or a mapping of "
        "table names to either (``relay.connect``'s target)"
    )
    row_limit: int = option(200, "rows a query returns at most (its LIMIT is injected or clamped)")
    statement_timeout_s: float = option(30.0, "seconds a query may run before it is cancelled")
    max_value_bytes: int = max_value_bytes()
    max_result_bytes: int = max_result_bytes()


class DataFrameKeywords(TypedDict, total=False):
    """``relay.connect(id, df, **options)``'s options, typed as ``DataFrameConnector`` takes
    them (checked against its signature and :class:`DataFrameOptions` by the tests)."""

    row_limit: int
    statement_timeout_s: float
    name: str | None
    description: str | None
    max_value_bytes: int
    max_result_bytes: int


def is_frame(value: object) -> bool:
    """A pandas DataFrame, without importing pandas when the caller has not."""
    cls = type(value)
    return cls.__name__ == "DataFrame" and cls.__module__.startswith("pandas")


def _frames_like(target: Any) -> bool:
    if is_frame(target) or (callable(target) and not isinstance(target, type)):
        return True
    if data_file(target) is not None:  # a CSV, TSV or Parquet file's path
        return True
    return isinstance(target, Mapping)  # checked entry by entry in _from_target


MAX_FILE_BYTES = 2 << 30
"""The largest file ``relay.connect`` reads into memory itself (a bigger one is better put
in DuckDB or a database, or read in part with pandas)."""


def _read_file(path: Path) -> Mapping[str, Any]:
    """A data file as one table named after it (``sales-2024.csv`` -> ``sales_2024``)."""
    import pandas as pd

    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ConfigurationError(
            f"{path.name} is {size / (1 << 30):.1f} GiB, more than relay.connect reads into "
            "memory (2 GiB); read the part you need with pandas and connect that DataFrame"
        )
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        frame = pd.read_parquet(path)
    else:
        frame = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
    table = re.sub(r"\W+", "_", path.stem).strip("_").lower() or "data"
    if table[0].isdigit():
        table = f"t_{table}"
    return {"frames": {table: frame}}


def _from_target(target: Any) -> Mapping[str, Any]:
    path = data_file(target)
    if path is not None:
        return _read_file(path)
    if isinstance(target, Mapping):
        if target and all(is_frame(v) or callable(v) for v in target.values()):
            return {"frames": dict(target)}
        raise ConfigurationError(
            "connect() takes a mapping only of table names to DataFrames, e.g. "
            "relay.connect('sales', {'orders': orders_df, 'customers': customers_df})"
        )
    return {"frames": target}


DATAFRAME_TYPE = ConnectorType(
    name="dataframe",
    factory=LazyFactory("relay_nb.connectors.dataframe.connector:DataFrameConnector"),
    accepts=_frames_like,
    from_url=_from_target,
    description="pandas DataFrames as SQL tables: relay.connect(id, df)",
    in_config=False,
    python_keywords=True,
    keywords_model=DataFrameOptions,
    builtin=True,
)
