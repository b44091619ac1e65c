"""The ``dataframe`` connector kind: pandas DataFrames as SQL tables, from Python only.

``relay.connect("sales", df)`` takes a DataFrame, a function returning one (read again at
every query), or a mapping of table names to either; its options are declared once below,
with the defaults :class:`~relay_nb.connectors.dataframe.connector.DataFrameConnector` takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.options import max_result_bytes, max_value_bytes, option, required
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
    return isinstance(target, Mapping)  # checked entry by entry in _from_target


def _from_target(target: Any) -> Mapping[str, Any]:
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
