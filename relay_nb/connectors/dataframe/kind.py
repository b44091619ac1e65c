"""The ``dataframe`` connector kind: pandas DataFrames as SQL tables, from Python only.

``relay.connect("sales", df)`` takes a DataFrame, a function returning one (read again at
every query), or a mapping of table names to either; defaults are
:class:`~relay_nb.connectors.dataframe.connector.DataFrameConnector`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from relay_nb.connectors.types import ConnectorType, LazyFactory
from relay_nb.errors import ConfigurationError

__all__ = ["DATAFRAME_TYPE", "is_frame"]


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
    builtin=True,
)
