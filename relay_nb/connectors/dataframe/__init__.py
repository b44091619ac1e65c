"""DataFrame connector: pandas DataFrames in the notebook, queried as SQL tables via DuckDB.

``DataFrameConnector("sales", df)`` or ``DataFrameConnector("shop", {"orders": o, ...})``;
see :mod:`relay_nb.connectors.dataframe.connector`. DuckDB is imported only when a connector
is created; the connector's module (and the SQL connector it builds on) on first access, so
that the kind's record (:mod:`.kind`: :data:`DATAFRAME_TYPE`, its options) stays cheap to
list.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay_nb.connectors.dataframe.connector import DUCKDB_CONFIG, DataFrameConnector
    from relay_nb.connectors.dataframe.frames import FrameSource
    from relay_nb.connectors.dataframe.kind import (
        DATAFRAME_TYPE,
        DataFrameKeywords,
        DataFrameOptions,
        is_frame,
    )

__all__ = [
    "DATAFRAME_TYPE",
    "DUCKDB_CONFIG",
    "DataFrameConnector",
    "DataFrameKeywords",
    "DataFrameOptions",
    "FrameSource",
    "is_frame",
]

_MODULES = {
    "DUCKDB_CONFIG": "connector",
    "DataFrameConnector": "connector",
    "FrameSource": "frames",
    "DATAFRAME_TYPE": "kind",
    "DataFrameKeywords": "kind",
    "DataFrameOptions": "kind",
    "is_frame": "kind",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
